"""Architecture contracts: layers point one way, networkx stays behind hlo.graph, ortools
behind solver.cpsat."""

from __future__ import annotations

import shutil
import subprocess
import sys

from conftest import REPO


def test_import_contracts_hold() -> None:
    exe = shutil.which("lint-imports")
    cmd = [exe] if exe else [sys.executable, "-m", "importlinter.cli"]
    result = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: " in result.stdout and "0 broken" in result.stdout, result.stdout
