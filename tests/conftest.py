"""Shared fixtures: the shared data folder that lives beside the repository."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# The built-in ``cpu`` means this host's calibration; the suite's expected numbers come from
# ``cpu-epyc``, on every host (the selection itself is tested in tests/hlo/test_targets.py).
os.environ["HLO_LAYOUT_CPU_TARGET"] = "cpu-epyc"
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
    from hlo.target import read_target_file

    spec = read_target_file(Path(__file__).resolve().parents[1] / "hlo" / "targets" / "gpu.toml")
    for rule in spec["op_rules"]:
        if rule["kind"] == "row_reduction":
            rule["params"]["cost_factor"] = 1.0
    return spec


def written_target(tmp_path: Path, coefficients, platform: str = "cpu"):
    """The target that a calibration on ``platform`` with ``coefficients`` writes, loaded
    back (machine ``m``, date 2026-01-01)."""
    from hlo.target import load_target, read_target_file
    from service.calibration.run import Calibration
    from service.calibration.target_file import target_toml

    path = tmp_path / f"{platform}.toml"
    path.write_text(target_toml(Calibration(platform, "m", "2026-01-01 00:00 UTC",
                                            (1.0, 1.0, 1.0), 5, coefficients, ())))
    return load_target(read_target_file(path))
