"""``hlo-layout verify``: exit codes 0 (equivalent), 1 (first differing element), 2 (bad input)."""

from __future__ import annotations

import json

from conftest import shared_path
from typer.testing import CliRunner

from service.cli import build_app

runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(build_app(), ["verify", *map(str, args)])


def test_equivalent_pair_exits_0():
    pre = shared_path("corpus", "mlp_train.pre.hlo")
    after = shared_path("corpus", "mlp_train.after_layout.hlo")
    result = invoke(pre, after, "--seed", "3", "--trials", "2")
    assert result.exit_code == 0, result.output
    assert "equivalent on 2 random input set(s), seed 3" in result.output
    assert "layouts: verified" in result.output


def test_mutated_pair_exits_1_naming_the_first_difference(tmp_path):
    text = shared_path("corpus", "transpose_reshape_chain.after_layout.hlo").read_text()
    # Turn the first transpose into a bitcast with the default layout: wrong data movement.
    start = text.index(" transpose(")
    line_start = text.rindex("\n", 0, start) + 1
    line_end = text.index("\n", start)
    line = text[line_start:line_end]
    name_shape, rest = line.split(" transpose(", 1)
    shape_text = name_shape.split("= ", 1)[1]
    dims = shape_text[shape_text.index("[") + 1 : shape_text.index("]")].split(",")
    default = "{" + ",".join(str(d) for d in reversed(range(len(dims)))) + "}"
    new_shape = shape_text[: shape_text.index("]") + 1] + default
    operand = rest.split(")", 1)[0]
    mutated_line = name_shape.split("= ", 1)[0] + "= " + new_shape + f" bitcast({operand})"
    mutated = tmp_path / "mutated.hlo"
    mutated.write_text(text[:line_start] + mutated_line + text[line_end:])
    original = shared_path("corpus", "transpose_reshape_chain.after_layout.hlo")

    result = invoke(original, mutated)
    assert result.exit_code == 1, result.output
    assert "NOT equivalent: output" in result.output and "element [" in result.output

    as_json = invoke(original, mutated, "--json")
    assert as_json.exit_code == 1
    report = json.loads(as_json.output)
    assert report["equivalent"] is False
    first = report["first_difference"]
    assert first["element_index"] and first["original"] != first["rewritten"]


def test_bad_file_exits_2(tmp_path):
    bad = tmp_path / "bad.hlo"
    bad.write_text("HloModule m\n\nENTRY e {\n  ROOT x = f32[2] bogus-op()\n}\n")
    good = shared_path("corpus", "mlp_fwd_tiny.pre.hlo")
    result = invoke(good, bad)
    assert result.exit_code == 2
    assert f"{bad}:4:" in result.output
    missing = invoke(good, tmp_path / "missing.hlo")
    assert missing.exit_code == 2


def test_incomparable_modules_exit_2():
    a = shared_path("corpus", "mlp_fwd_tiny.pre.hlo")
    b = shared_path("corpus", "reduce_2d.pre.hlo")
    result = invoke(a, b)
    assert result.exit_code == 2
    assert "entry parameters differ" in result.output


def test_equivalent_pair_with_layout_violations_exits_1(tmp_path):
    # an elementwise op whose result layout differs from its operands': same values, bad layout
    text = "HloModule m\n\nENTRY e {{\n  a = f32[4,6]{{1,0}} parameter(0)\n  ROOT n = f32[4,6]{{{}}} negate(a)\n}}\n"
    good, bad = tmp_path / "good.hlo", tmp_path / "bad.hlo"
    good.write_text(text.format("1,0"))
    bad.write_text(text.format("0,1"))
    result = invoke(good, bad)
    assert result.exit_code == 1, result.output
    assert "equivalent on 1 random input set(s)" in result.output
    assert "layouts: 1 violation(s)" in result.output
    report = json.loads(invoke(good, bad, "--json").output)
    assert report["equivalent"] is True and report["ok"] is False and len(report["violations"]) == 1
