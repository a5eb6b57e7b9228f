"""Shared fixtures: the shared data folder that lives beside the repository."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("HLO_LAYOUT_SHARED", REPO.parent / "shared"))


def shared_path(*parts: str) -> Path:
    """A path under the shared data folder; a missing folder is an error, not a skip."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        raise FileNotFoundError(
            f"{path} is missing: the shared data folder must sit beside the repository "
            "(or be named by HLO_LAYOUT_SHARED)"
        )
    return path


@pytest.fixture(scope="session")
def shared() -> Path:
    return shared_path()


def gpu_pricing_column_reductions_as_transposes() -> dict:
    """The built-in ``gpu`` target with its ``row_reduction`` rule priced as XLA's GPU layout
    assignment assumes (a column reduction costs the transpose that makes it a row one),
    not as measured on an H200 (next to nothing): what the tests of the row-reduction
    machinery (the preference, the normalization it leaves work for) need."""
    import tomllib

    root = Path(__file__).resolve().parents[1]
    spec = tomllib.loads((root / "hlo" / "targets" / "gpu.toml").read_text())
    for rule in spec["op_rules"]:
        if rule["kind"] == "row_reduction":
            rule["params"]["cost_factor"] = 1.0
    return spec
