"""The linter's rules (``[tool.ruff.lint]`` in pyproject.toml) hold on the whole repository."""

from __future__ import annotations

import subprocess
import sys

from conftest import REPO


def test_ruff_finds_nothing() -> None:
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "."], cwd=REPO,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
