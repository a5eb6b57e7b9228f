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
