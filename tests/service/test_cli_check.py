"""``hlo-layout check``: exit codes, located errors on stderr, no tracebacks."""

from __future__ import annotations

import gzip

from conftest import shared_path
from typer.testing import CliRunner

from service.cli import build_app

RUNNER = CliRunner()


def run(*args: str):
    return RUNNER.invoke(build_app(), ["check", *args])


def test_ok_prints_a_summary():
    path = shared_path("corpus", "mlp_train.after_layout.hlo")
    result = run(str(path), "--layouts")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.strip() == (
        f"{path}: OK: module 'jit_mlp_train', 9 computations, 123 instructions, layouts OK")


def test_gzipped_input(tmp_path):
    source = shared_path("corpus", "conv2d_nchw.after_layout.hlo")
    target = tmp_path / "conv.hlo.gz"
    target.write_bytes(gzip.compress(source.read_bytes()))
    result = run(str(target))
    assert result.exit_code == 0 and ": OK: " in result.stdout


def test_parse_error_is_located(tmp_path):
    bad = tmp_path / "bad.hlo"
    bad.write_text("HloModule m\n\nENTRY main {\n  p = f32[2] parameter(0)\n"
                   "  ROOT q = f32[2] frobnicate(p)\n}\n")
    result = run(str(bad))
    assert result.exit_code == 2
    first = result.stderr.splitlines()[0]
    assert first.startswith(f"{bad}:5:")
    assert ": error: " in first and "Traceback" not in result.stderr
    assert result.stdout == ""


def test_verify_error_is_located_and_names_the_instruction():
    path = shared_path("xla-cases", "files", "tools__tests__data__invalid_concat.hlo")
    result = run(str(path))
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert lines[0].startswith(f"{path}:6:3: error: computation 'computation', "
                               f"instruction 'cat.3': concatenate")
    assert lines[1].lstrip().startswith("ROOT %cat.3")  # the source line and a caret
    assert lines[2] == "  ^"
    assert "Traceback" not in result.stderr


def test_layout_violations_exit_1():
    path = shared_path("corpus", "mlp_train.before_layout.hlo")
    result = run(str(path), "--layouts")
    assert result.exit_code == 1
    errors = [line for line in result.stderr.splitlines() if ": error: [" in line]
    assert errors and all(line.startswith(f"{path}:") for line in errors)
    assert result.stderr.splitlines()[-1] == f"{path}: {len(errors)} layout violation(s)"
    # Without --layouts the same module is structurally fine.
    assert run(str(path)).exit_code == 0


def test_missing_file_is_bad_input(tmp_path):
    result = run(str(tmp_path / "nope.hlo"))
    assert result.exit_code == 2
    assert "error" in result.stderr and "Traceback" not in result.stderr


def test_verify_error_source_line_counts_newlines_only(tmp_path):
    # A form feed inside a comment does not start a line for the lexer, so the
    # echoed source line must be the one the location names.
    bad = tmp_path / "ff.hlo"
    bad.write_text("HloModule m\n\n// page\x0cbreak\nENTRY main {\n  p = f32[2] parameter(0)\n"
                   "  ROOT q = f32[3] add(p, p)\n}\n")
    result = run(str(bad))
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert lines[0].startswith(f"{bad}:6:3: error: ")
    assert lines[1] == "  ROOT q = f32[3] add(p, p)"


def test_undecodable_file_is_bad_input(tmp_path):
    bad = tmp_path / "bin.hlo"
    bad.write_bytes(b"HloModule m\n\xff\xfe\n")
    result = run(str(bad))
    assert result.exit_code == 2
    assert result.stderr.startswith(f"{bad}: error: ") and "Traceback" not in result.stderr
