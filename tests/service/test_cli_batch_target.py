"""A target file given to ``batch`` that cannot be read is bad input: exit 2, no traceback."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from service.cli import build_app


def test_malformed_target_file_is_a_clean_error(tmp_path: Path) -> None:
    module = tmp_path / "m.hlo"
    module.write_text("HloModule m\nENTRY e { ROOT p = f32[2]{0} parameter(0) }\n")
    target = tmp_path / "mine.json"
    target.write_text("{not json")
    result = CliRunner().invoke(
        build_app(), ["batch", str(module), "--out", str(tmp_path / "out"), "-t", str(target)]
    )
    assert result.exit_code == 2, result.output
    assert "mine.json is not valid json" in result.output
    assert "Traceback" not in result.output
    assert isinstance(result.exception, SystemExit)  # a clean exit, not an escaped error
