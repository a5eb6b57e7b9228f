"""Every command that reads HLO reports bad input the same way: exit 2, ``FILE:LINE:COL:
error: message`` with the source line and a caret for text that is not HLO, ``FILE: error:
reason`` for a file that cannot be read (``service/cli/source.py``)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from service.cli import build_app

runner = CliRunner()
BAD = "HloModule m\n\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT r = f32[2] frobnicate(p)\n}\n"
GOOD = "HloModule m\n\nENTRY e {\n  ROOT p = f32[2]{0} parameter(0)\n}\n"


def _args(command: str, path: str, good: str) -> list[str]:
    if command == "verify":
        return [command, good, path]
    if command in ("assign", "score"):
        return [command, path, "-t", "cpu"]
    return [command, path]


@pytest.mark.parametrize("command", ["check", "fmt", "normalize", "assign", "score", "verify"])
def test_not_hlo_is_a_located_error_with_the_source_line(command: str, tmp_path) -> None:
    bad, good = tmp_path / "bad.hlo", tmp_path / "good.hlo"
    bad.write_text(BAD)
    good.write_text(GOOD)
    result = runner.invoke(build_app(), _args(command, str(bad), str(good)))
    assert result.exit_code == 2, result.output
    lines = result.stderr.splitlines()
    assert lines[0].startswith(f"{bad}:5:19: error: unknown opcode: frobnicate"), lines
    assert "frobnicate(p)" in lines[1] and lines[2].strip() == "^", lines
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("command", ["check", "fmt", "normalize", "assign", "score", "verify"])
def test_unreadable_file_names_the_file(command: str, tmp_path) -> None:
    good = tmp_path / "good.hlo"
    good.write_text(GOOD)
    missing = tmp_path / "missing.hlo"
    result = runner.invoke(build_app(), _args(command, str(missing), str(good)))
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"{missing}: error: No such file or directory"), result.stderr
