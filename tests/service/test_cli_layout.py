"""``targets`` and ``explain-layout`` on the command line."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from hlo.target import builtin_target_names
from service.cli import build_app

runner = CliRunner()


def run(*args: str):
    return runner.invoke(build_app(), list(args))


def test_explain_layout_seed_example() -> None:
    result = run("explain-layout", "f32[3,5]{1,0:T(2,2)}", "--index", "2,3")
    assert result.exit_code == 0, result.output
    assert "linear 17" in result.stdout
    assert "physical shape: [2,3,2,2]" in result.stdout
    # the picture: row 2 of the matrix as stored positions
    assert "12 13 16 17 20" in result.stdout


def test_explain_layout_json() -> None:
    result = run("explain-layout", "bf16[2048]{0:T(1024)(128)(2,1)}", "--index", "128", "--json")
    assert result.exit_code == 0, result.output
    info = json.loads(result.stdout)
    assert info["linear_index"] == 1 and info["physical_shape"] == [2, 4, 128, 2, 1]
    assert info["physical_bytes"] == 4096 and info["padding_bytes"] == 0


def test_explain_layout_large_shape_draws_no_picture(monkeypatch) -> None:
    # the per-element offsets are only needed for the picture
    import service.cli.layout_commands as commands

    def refuse(shape):
        raise AssertionError(f"offsets computed for {shape}")

    monkeypatch.setattr(commands, "physical_offsets", refuse)
    result = run("explain-layout", "f32[16384,16384]{1,0:T(8,128)}", "--json")
    assert result.exit_code == 0, result.output
    info = json.loads(result.stdout)
    assert "memory_order" not in info and info["physical_bytes"] == 16384 * 16384 * 4


def test_explain_layout_bad_input_exits_2() -> None:
    bad = run("explain-layout", "f32[3,5]{1,0:T(2,x)}")
    assert bad.exit_code == 2 and "<shape>:1:18: error:" in bad.output
    outside = run("explain-layout", "f32[3,5]", "--index", "3,0")
    assert outside.exit_code == 2 and "outside" in outside.output
    garbled = run("explain-layout", "f32[3,5]", "--index", "a,b")
    assert garbled.exit_code == 2 and "--index" in garbled.output
    tuple_shape = run("explain-layout", "(f32[2], f32[3])")
    assert tuple_shape.exit_code == 2 and "array shape" in tuple_shape.output
    assert "Traceback" not in bad.output + outside.output + garbled.output


def test_targets_lists_builtins() -> None:
    result = run("targets", "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [r["name"] for r in rows] == list(builtin_target_names())
    tpu = next(r for r in rows if r["name"] == "tpu")
    assert tpu["tiles_1024x1024"]["bf16"] == "(8,128)(2,1)"
    text = run("targets")
    assert text.exit_code == 0 and "tpu" in text.stdout and "GB/s" in text.stdout
