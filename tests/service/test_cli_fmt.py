"""``hlo-layout fmt``: canonical text out, located errors and exit code 2 for bad input."""

from __future__ import annotations

from conftest import shared_path
from typer.testing import CliRunner

from hlo.parser import parse_module, read_text
from hlo.printer import print_module
from service.cli import build_app

runner = CliRunner()
CASE = shared_path("xla-cases", "hlo_parser_test", "rt_long_Fusion.hlo")


def test_fmt_prints_canonical_text() -> None:
    result = runner.invoke(build_app(), ["fmt", str(CASE)])
    assert result.exit_code == 0, result.output
    assert result.stdout.rstrip() == read_text(CASE).rstrip()


def test_fmt_short_and_idempotent(tmp_path) -> None:
    first = runner.invoke(build_app(), ["fmt", "--short", str(CASE)])
    assert first.exit_code == 0
    again_file = tmp_path / "again.hlo"
    again_file.write_text(first.stdout)
    second = runner.invoke(build_app(), ["fmt", "--short", str(again_file)])
    assert second.stdout == first.stdout
    assert parse_module(first.stdout) == parse_module(read_text(CASE))


def test_fmt_reads_gzip() -> None:
    path = shared_path("corpus", "gpt_train_4l.pre_short.hlo.gz")
    result = runner.invoke(build_app(), ["fmt", "--short", str(path)])
    assert result.exit_code == 0
    assert result.stdout.rstrip() == print_module(parse_module(read_text(path)), short=True).rstrip()


def test_fmt_bad_input_exits_2_with_location(tmp_path) -> None:
    bad = tmp_path / "bad.hlo"
    bad.write_text("HloModule m\n\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT r = f32[2] frobnicate(p)\n}\n")
    result = runner.invoke(build_app(), ["fmt", str(bad)])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.startswith(f"{bad}:5:19: error: unknown opcode: frobnicate")
    assert "Traceback" not in result.stderr


def test_fmt_missing_file_exits_2(tmp_path) -> None:
    result = runner.invoke(build_app(), ["fmt", str(tmp_path / "nope.hlo")])
    assert result.exit_code == 2
    assert "error" in result.stderr and "Traceback" not in result.stderr


def test_fmt_keeps_several_modules(tmp_path) -> None:
    text = read_text(CASE)
    two = tmp_path / "two.hlo"
    two.write_text(text + "\n// -----\n" + text)
    result = runner.invoke(build_app(), ["fmt", str(two)])
    assert result.exit_code == 0
    assert result.stdout.count("HloModule") == 2
