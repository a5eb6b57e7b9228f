"""Layout-sensitive ops go through the physical image: a wrong bitcast gives wrong numbers."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from conftest import shared_path

from hlo.equivalence import compare_modules
from hlo.interpreter import InterpretError, evaluate
from hlo.ir import Module
from hlo.parser import parse_file, parse_module
from hlo.shape import ArrayShape, Layout


def run(body: str, *args):
    return evaluate(parse_module(f"HloModule t\n\nENTRY e {{\n{body}\n}}\n", "t.hlo"), list(args))


def test_bitcast_to_column_major_is_a_transpose():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    got = run("  a = f32[2,3]{1,0} parameter(0)\n  ROOT b = f32[3,2]{0,1} bitcast(a)", x)
    assert got.tolist() == x.T.tolist()
    same = run("  a = f32[2,3]{1,0} parameter(0)\n  ROOT b = f32[3,2]{1,0} bitcast(a)", x)
    assert same.tolist() == x.reshape(3, 2).tolist()


def test_bitcast_through_tiles_exposes_padding():
    # f32[3,5]{1,0:T(2,2)}: element (2,3) is at linear position 17 (tile (1,1), in-tile (0,1)).
    x = np.arange(1, 16, dtype=np.float32).reshape(3, 5)
    got = run("  a = f32[3,5]{1,0:T(2,2)} parameter(0)\n  ROOT b = f32[24]{0} bitcast(a)", x)
    assert got[17] == x[2, 3]
    assert got[:4].tolist() == [x[0, 0], x[0, 1], x[1, 0], x[1, 1]]
    # the padded row 3 and column 5 read as zeros: 24 slots, 15 values
    assert np.count_nonzero(got) == 15
    back = run("  a = f32[24]{0} parameter(0)\n  ROOT b = f32[3,5]{1,0:T(2,2)} bitcast(a)", got)
    assert back.tolist() == x.tolist()


def test_bitcast_convert_across_widths_is_little_endian_bytes():
    x = np.array([1.0, -2.0], np.float32)
    got = run("  a = f32[2]{0} parameter(0)\n  ROOT b = u8[2,4]{1,0} bitcast-convert(a)", x)
    assert got.tolist() == [list(x[0:1].view(np.uint8)), list(x[1:2].view(np.uint8))]
    back = run("  a = u8[2,4]{1,0} parameter(0)\n  ROOT b = f32[2]{0} bitcast-convert(a)", got)
    assert back.tolist() == x.tolist()
    # The same convert with the byte dim major in memory reads other bytes.
    wrong = run("  a = f32[2]{0} parameter(0)\n  ROOT b = u8[2,4]{0,1} bitcast-convert(a)", x)
    assert wrong.tolist() != got.tolist()


def test_bitcast_of_different_size_is_an_error():
    with pytest.raises(InterpretError, match="same number of bits"):
        run("  a = f32[2,3]{1,0} parameter(0)\n  ROOT b = f32[7]{0} bitcast(a)", np.zeros((2, 3), np.float32))


def _transposes_as_bitcasts(module: Module, *, wrong: bool) -> tuple[Module, int]:
    """Replace every ``transpose`` by a ``bitcast`` (with the result layout XLA chose, or a wrong one)."""
    count = 0
    comps = []
    for comp in module.computations:
        instrs = []
        for instr in comp.instructions:
            if instr.opcode == "transpose":
                shape = instr.shape
                assert isinstance(shape, ArrayShape)
                if wrong:
                    shape = shape.with_layout(Layout(tuple(range(shape.rank - 1, -1, -1))))
                attrs = tuple((k, v) for k, v in instr.attributes if k != "dimensions")
                instr = dataclasses.replace(instr, opcode="bitcast", shape=shape, attributes=attrs)
                count += 1
            instrs.append(instr)
        comps.append(dataclasses.replace(comp, instructions=tuple(instrs)))
    return dataclasses.replace(module, computations=tuple(comps)), count


@pytest.mark.parametrize("name", ["attention_fwd", "transpose_reshape_chain", "einsum_zoo"])
def test_xla_transposes_are_bitcasts_and_wrong_layouts_are_caught(name):
    # XLA:CPU makes every transpose bitcast-like and moves data with a copy, so
    # its transposes must execute identically as bitcasts through memory ...
    after = parse_file(shared_path("corpus", f"{name}.after_layout.hlo"))
    as_bitcasts, count = _transposes_as_bitcasts(after, wrong=False)
    assert count > 0
    report = compare_modules(after, as_bitcasts, exact=True)
    assert report.equivalent and report.exact, report.difference
    # ... and the same bitcasts with the default (wrong) layout produce other numbers.
    mutated, _ = _transposes_as_bitcasts(after, wrong=True)
    report = compare_modules(after, mutated)
    assert not report.equivalent
    assert report.difference is not None and report.difference.mismatches > 0
