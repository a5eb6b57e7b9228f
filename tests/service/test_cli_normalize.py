"""``hlo-layout normalize``: passes from the command line, output, exit codes, errors."""

from __future__ import annotations

from pathlib import Path

from conftest import shared_path
from typer.testing import CliRunner

from hlo.equivalence import compare_modules
from hlo.parser import parse_file, parse_module
from hlo.passes.normalize_reductions import non_canonical_reduces
from hlo.passes.physical_shapes import is_descending
from service.cli import build_app

CASES = ("xla-cases", "reduction_layout_normalizer_test")


def run(*args: str):  # noqa: ANN201
    return CliRunner().invoke(build_app(), ["normalize", *args])


def test_default_pass_canonicalizes_reductions() -> None:
    path = shared_path(*CASES, "LayoutCanonicalizerTest.hlo")
    result = run(str(path))
    assert result.exit_code == 0, result.output
    out = parse_module(result.stdout)
    original = parse_file(path)
    assert non_canonical_reduces(original) and not non_canonical_reduces(out)
    assert "f32[5,3,3,4,12,12,16,5]{7,6,5,4,3,2,1,0} bitcast" in result.stdout
    assert compare_modules(original, out).equivalent


COPY = """HloModule m

ENTRY main {
  p = f32[3,4,5]{0,1,2} parameter(0)
  t = f32[3,4,5]{2,1,0} copy(p)
  ROOT out = f32[3,4,5]{2,1,0} abs(t)
}
"""


def test_passes_in_order_to_a_file_with_verification(tmp_path: Path) -> None:
    path = tmp_path / "copy.hlo"
    path.write_text(COPY)
    target = tmp_path / "out.hlo"
    result = run(
        str(path),
        "--passes",
        "normalize-layouts,normalize-reductions",
        "-o",
        str(target),
        "--verify",
    )
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    out = parse_file(target)
    entry = out.entry
    inner = [
        i for i in entry.instructions if i.opcode not in ("parameter",) and i.name != entry.root
    ]
    assert all(is_descending(i.shape) for i in inner)
    assert any(i.opcode == "transpose" for i in entry.instructions)
    assert compare_modules(parse_file(path), out).equivalent


def test_verify_reports_a_module_without_layouts() -> None:
    path = shared_path(
        "xla-cases", "layout_normalization_test", "Copy.hlo"
    )  # ROOT written without a layout
    result = run(str(path), "--passes", "normalize-layouts", "--verify")
    assert result.exit_code == 1
    assert "has no layout" in result.stderr


def test_short_aliases_and_grouping() -> None:
    path = shared_path(*CASES, "LayoutCanonicalizerTest.hlo")
    result = run(str(path), "-p", "reductions,grouping", "--short")
    assert result.exit_code == 0, result.output
    assert "f32[45,4,144,16,5]{4,3,2,1,0} bitcast(arg0.physical)" in result.stdout


def test_variadic_reduce_with_two_layouts_is_bad_input() -> None:
    path = shared_path(*CASES, "LayoutCanonicalizerTestVariadicDifferentLayouts.hlo")
    result = run(str(path))
    assert result.exit_code == 2
    first = result.stderr.splitlines()[0]
    assert first.startswith(f"{path}:26:3: error: ") and "Layout assignment" in first
    assert "Traceback" not in result.output


def test_unknown_pass_missing_file_and_parse_error(tmp_path: Path) -> None:
    path = shared_path(*CASES, "LayoutCanonicalizerTest.hlo")
    result = run(str(path), "--passes", "normalize-everything")
    assert result.exit_code == 2 and "unknown pass 'normalize-everything'" in result.stderr
    result = run(str(path), "--passes", ",")
    assert result.exit_code == 2
    result = run(str(tmp_path / "missing.hlo"))
    assert result.exit_code == 2 and "missing.hlo: error:" in result.stderr
    bad = tmp_path / "bad.hlo"
    bad.write_text(
        "HloModule m\n\nENTRY e {\n  p = f32[2]{0} parameter(0)\n"
        "  ROOT r = f32[2]{0} frobnicate(p)\n}\n"
    )
    result = run(str(bad))
    assert result.exit_code == 2
    assert result.stderr.startswith(f"{bad}:5:")
    assert "Traceback" not in result.output


def test_stdin() -> None:
    text = shared_path(*CASES, "LayoutCanonicalizerTest.hlo").read_text()
    result = CliRunner().invoke(build_app(), ["normalize", "-"], input=text)
    assert result.exit_code == 0, result.output
    assert non_canonical_reduces(parse_module(result.stdout)) == []
