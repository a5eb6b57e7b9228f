"""Layout verifier: XLA's own answers pass, mutations of them are caught.

Oracles: XLA's ``after_layout``/``final`` modules (layouts XLA's verifier accepted),
XLA's ``before_layout`` -> ``after_layout`` fixes, and a brute-force numpy model
of untiled strides for the bitcast rule.
"""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest
from conftest import shared_path
from test_verifier import CORPUS_FILES, parsed

from hlo.errors import VerifyError
from hlo.ir import Computation, Instruction, Module
from hlo.bitcast import bitcast_kind
from hlo.layout_verifier import check_layouts, verify_layouts
from hlo.opcode_facts import TIED as TIED_OPCODES
from hlo.parser import parse_module
from hlo.shape import ArrayShape, Layout, Tile, TupleShape

LAID_OUT = [f for f in CORPUS_FILES if ".after_layout." in f or ".final." in f]


def corpus(name: str) -> Module:
    (module,) = parsed(str(shared_path("corpus", name)))
    return module


@pytest.mark.parametrize("path", LAID_OUT, ids=lambda p: p.rsplit("/", 1)[-1])
def test_xla_layouts_pass(path):
    """``after_layout`` is XLA's layout assignment; ``final`` is fused and scheduled and
    holds XLA's bitcasts (reshapes and transposes turned free): both must pass."""
    (module,) = parsed(path)
    assert verify_layouts(module) == []


def test_before_layout_violations_are_what_xla_fixed():
    """Every tie XLA's input breaks is one XLA's layout assignment changed."""
    checked = 0
    for name in ("mlp_train", "transformer_block_train", "lstm_train", "flax_resnet_train"):
        before = corpus(f"{name}.before_layout.hlo")
        after = corpus(f"{name}.after_layout.hlo")
        violations = [v for v in verify_layouts(before) if v.rule == "tie"]
        assert violations, name
        for v in violations:
            b_comp = before.computation(v.computation)
            a_comp = next(c for c in after.computations
                          if v.instruction in {i.name for i in c.instructions})
            b, a = b_comp.instruction(v.instruction), a_comp.instruction(v.instruction)
            b_ops = [(n, b_comp.instruction(n).shape) for n in b.operands]
            a_ops = [(n, a_comp.instruction(n).shape) for n in a.operands]
            assert b.shape != a.shape or b_ops != a_ops, (name, v)
            checked += 1
    assert checked >= 10


# ---------------------------------------------------------------------------
# Mutations
# ---------------------------------------------------------------------------


def edit(module: Module, comp_name: str, target: str, **changes) -> Module:
    comps = tuple(
        dataclasses.replace(c, instructions=tuple(
            dataclasses.replace(i, **changes) if i.name == target else i
            for i in c.instructions)) if c.name == comp_name else c
        for c in module.computations)
    return dataclasses.replace(module, computations=comps)


def rules_at(violations, instruction: str) -> set[str]:
    return {v.rule for v in violations if v.instruction == instruction}


def flipped(shape: ArrayShape) -> ArrayShape:
    mtm = shape.layout.minor_to_major
    return shape.with_layout(dataclasses.replace(shape.layout, minor_to_major=mtm[::-1]))


def test_tie_breaking_elementwise_layout_is_caught():
    module = corpus("mlp_train.after_layout.hlo")
    comp, add = next((c, i) for c in module.computations for i in c.instructions
                     if i.opcode == "add" and isinstance(i.shape, ArrayShape)
                     and i.shape.rank == 2 and i.shape.dims[0] != 1 and i.shape.dims[1] != 1)
    violations = verify_layouts(edit(module, comp.name, add.name, shape=flipped(add.shape)))
    tie = [v for v in violations if v.instruction == add.name and v.rule == "tie"]
    assert tie and tie[0].line == add.span.line
    assert tie[0].expected == str(flipped(add.shape).layout)
    assert add.name in str(tie[0])


def test_tie_compares_size_one_dims_exactly_like_xla():
    text = """HloModule m
ENTRY main {
  a = f32[1,8]{0,1} parameter(0)
  ROOT n = f32[1,8]{1,0} negate(a)
}
"""
    (v,) = verify_layouts(parse_module(text, "m"))
    assert (v.rule, v.instruction, v.expected, v.actual) == ("tie", "n", "{1,0}", "{0,1}")


def test_tiles_count_in_ties_unless_asked_for_xla_behaviour():
    text = """HloModule m
ENTRY main {
  a = f32[8,128]{1,0:T(8,128)} parameter(0)
  b = f32[8,128]{1,0} parameter(1)
  ROOT s = f32[8,128]{1,0:T(8,128)} add(a, b)
}
"""
    module = parse_module(text, "m")
    assert [(v.rule, v.instruction) for v in verify_layouts(module)] == [("tie", "s")]
    assert verify_layouts(module, compare_tiles=False) == []


def test_tiles_of_tied_operands_compared_only_at_equal_element_widths_and_dims():
    # The TPU tile is a function of the width and the shape: convert f32 -> bf16 must go
    # from T(8,128) to T(8,128)(2,1), compare -> pred to the pred tile, and the f32[2,256]
    # update of a dynamic-update-slice takes the compact T(2,128); a bf16 -> f16 convert
    # (same width) with other tiles, or an f32 negate with other tiles, hides a relayout.
    text = """HloModule m
ENTRY main {
  a = f32[16,256]{1,0:T(8,128)} parameter(0)
  h = bf16[16,256]{1,0:T(8,128)(2,1)} convert(a)
  c = pred[16,256]{1,0:T(32,128)(32,1)} compare(a, a), direction=LT
  s = f32[16,256]{1,0:T(8,128)} select(c, a, a)
  w = f32[16,256]{1,0:T(8,128)(2,1)} negate(a)
  e = f32[16,256]{1,0:E(16)T(8,128)(2,1)} convert(a)
  g = f16[16,256]{1,0:T(8,128)} convert(h)
  f = f32[16,256]{0,1:T(8,128)} convert(h)
  u = f32[2,256]{1,0:T(2,128)} parameter(1)
  i = s32[] parameter(2)
  d = f32[16,256]{1,0:T(8,128)} dynamic-update-slice(a, u, i, i)
  v = f32[2,256]{1,0:T(2,128)} negate(u)
  x = f32[2,256]{1,0:T(8,128)} negate(u)
  b = u8[16,256]{1,0:T(8,128)(4,1)} convert(c)
  ROOT t = (bf16[16,256]{1,0:T(8,128)(2,1)}, f32[16,256]{1,0:T(8,128)}, f32[16,256]{1,0:T(8,128)(2,1)}, f32[16,256]{1,0:E(16)T(8,128)(2,1)}, f16[16,256]{1,0:T(8,128)}, f32[16,256]{0,1:T(8,128)}, f32[16,256]{1,0:T(8,128)}, f32[2,256]{1,0:T(2,128)}, f32[2,256]{1,0:T(8,128)}, u8[16,256]{1,0:T(8,128)(4,1)}) tuple(h, s, w, e, g, f, d, v, x, b)
}
"""
    found = {(v.rule, v.instruction) for v in verify_layouts(parse_module(text, "m"))}
    # w, x: same width and dims, other tiles; g: bf16 -> f16 is the same width; f: the dim
    # order is still compared across widths. h, c, s, e (E(16) is the stored width), d
    # (its update has other dims), v and b (pred, 8-bit in memory, has a tile of its own)
    # pass.
    assert found == {("tie", "w"), ("tie", "g"), ("tie", "f"), ("tie", "x")}
    assert verify_layouts(parse_module(text, "m"), compare_tiles=False) == [
        v for v in verify_layouts(parse_module(text, "m")) if v.instruction == "f"]


def untiled_offsets(shape: ArrayShape) -> np.ndarray:
    """Physical offset of every logical index from plain strides (the oracle)."""
    strides = [0] * shape.rank
    step = 1
    for d in shape.layout.minor_to_major:
        strides[d] = step
        step *= shape.dims[d]
    grids = np.indices(shape.dims)
    return sum(g * s for g, s in zip(grids, strides)) if shape.rank else np.zeros(())


def oracle_is_bitcast(src: ArrayShape, dst: ArrayShape) -> bool:
    a, b = untiled_offsets(src), untiled_offsets(dst)
    if np.array_equal(a.ravel(), b.ravel()):
        return True
    return any(np.array_equal(a.transpose(p), b)
               for p in itertools.permutations(range(src.rank))
               if tuple(src.dims[d] for d in p) == dst.dims)


def final_bitcasts(name: str) -> list[tuple[Computation, Instruction, ArrayShape]]:
    module = corpus(name)
    out = []
    for comp in module.computations:
        by_name = {i.name: i for i in comp.instructions}
        for i in comp.instructions:
            if i.opcode == "bitcast" and isinstance(i.shape, ArrayShape) and i.shape.rank >= 2:
                out.append((comp, i, by_name[i.operands[0]].shape))
    return out


@pytest.mark.parametrize("name", ["transpose_reshape_chain.final.hlo",
                                  "conv_grouped_dilated.final.hlo",
                                  "attention_fwd.final.hlo"])
def test_bitcast_rule_agrees_with_brute_force_on_every_result_layout(name):
    bitcasts = final_bitcasts(name)
    assert bitcasts
    for _, instr, src in bitcasts[:6]:
        dst = instr.shape
        for mtm in itertools.permutations(range(dst.rank)):
            candidate = dst.with_layout(Layout(mtm))
            assert (bitcast_kind(src, candidate) is not None) == oracle_is_bitcast(src, candidate)


def test_wrong_bitcast_is_caught():
    module = corpus("transpose_reshape_chain.final.hlo")
    mutated = None
    for comp, instr, src in final_bitcasts("transpose_reshape_chain.final.hlo"):
        for mtm in itertools.permutations(range(instr.shape.rank)):
            candidate = instr.shape.with_layout(Layout(mtm))
            if not oracle_is_bitcast(src, candidate):
                mutated = (comp, instr, candidate)
                break
        if mutated:
            break
    comp, instr, candidate = mutated
    violations = verify_layouts(edit(module, comp.name, instr.name, shape=candidate))
    assert "bitcast" in rules_at(violations, instr.name)
    # Padding from a tile changes the buffer size: also not a bitcast.
    tiled = instr.shape.with_layout(dataclasses.replace(instr.shape.layout,
                                                        tiles=(Tile((8, 128)),)))
    violations = verify_layouts(edit(module, comp.name, instr.name, shape=tiled))
    assert any(v.rule == "bitcast" and "buffer size" in v.message and v.instruction == instr.name
               for v in violations)


def test_mismatched_while_body_layout_is_caught():
    module = corpus("rnn_scan_fwd.after_layout.hlo")
    comp, loop = next((c, i) for c in module.computations for i in c.instructions
                      if i.opcode == "while")
    body = module.computation(loop.attr("body").name)
    (param,) = body.parameter_instructions()
    k = next(k for k, e in enumerate(param.shape.elements)
             if isinstance(e, ArrayShape) and e.rank == 2)
    elements = list(param.shape.elements)
    elements[k] = flipped(elements[k])
    violations = verify_layouts(edit(module, body.name, param.name,
                                     shape=TupleShape(tuple(elements))))
    loop_v = [v for v in violations if v.instruction == loop.name and v.rule == "while"]
    assert loop_v and f"{{{k}}}" in loop_v[0].message and loop_v[0].line == loop.span.line


def test_missing_copy_is_caught():
    """Drop a layout-changing copy (its users read the copy's operand directly)."""
    found = 0
    for path in [f for f in CORPUS_FILES if ".after_layout." in f]:
        (module,) = parsed(path)
        for comp in module.computations:
            by_name = {i.name: i for i in comp.instructions}
            for copy in comp.instructions:
                if copy.opcode != "copy":
                    continue
                source = by_name[copy.operands[0]]
                if source.shape == copy.shape:
                    continue
                # Users that constrain this operand: a tied op whose result has the
                # copy's rank, or a layout-constrained custom-call.
                users = [u for u in comp.instructions if copy.name in u.operands and (
                    (u.opcode in TIED_OPCODES and isinstance(u.shape, ArrayShape)
                     and u.shape.rank == copy.shape.rank)
                    or u.attr("operand_layout_constraints") is not None)]
                if not users:
                    continue
                user = users[0]
                rewired = tuple(source.name if n == copy.name else n for n in user.operands)
                violations = verify_layouts(edit(module, comp.name, user.name, operands=rewired))
                assert rules_at(violations, user.name) & {"tie", "custom-call-operand-layout"}
                found += 1
                break
    assert found >= 3


def test_custom_call_operand_layout_constraint():
    module = corpus("linalg_custom_calls.after_layout.hlo")
    comp = module.entry
    call = next(i for i in comp.instructions if i.opcode == "custom-call"
                and i.attr("operand_layout_constraints") is not None)
    # The operand is a copy (free to change layout); give it the default layout instead.
    copy = comp.instruction(call.operands[0])
    assert copy.opcode == "copy" and copy.shape.layout.minor_to_major != (2, 1, 0)
    violations = verify_layouts(edit(module, comp.name, copy.name,
                                     shape=copy.shape.with_layout(Layout((2, 1, 0)))))
    assert rules_at(violations, call.name) == {"custom-call-operand-layout"}
    assert rules_at(violations, copy.name) == set()


def broadcast_with_matrix_operand() -> tuple[Module, Computation, Instruction]:
    for path in [f for f in CORPUS_FILES if ".after_layout." in f]:
        (module,) = parsed(path)
        for comp in module.computations:
            for i in comp.instructions:
                if i.opcode == "broadcast" and comp.instruction(i.operands[0]).shape.rank >= 2:
                    return module, comp, i
    raise LookupError("no broadcast of a matrix")


def test_broadcast_layout_rule():
    module, comp, bcast = broadcast_with_matrix_operand()
    operand = comp.instruction(bcast.operands[0]).shape
    dims = bcast.attr("dimensions")
    mutated = flipped(bcast.shape)
    # By hand: the flipped result order restricted to the broadcast dims, renumbered.
    restricted = tuple(dims.index(d) for d in mutated.layout.minor_to_major if d in dims)
    assert restricted != operand.layout.minor_to_major
    violations = verify_layouts(edit(module, comp.name, bcast.name, shape=mutated))
    (v,) = [v for v in violations if v.instruction == bcast.name]
    assert v.rule == "broadcast" and v.expected == "{" + ",".join(map(str, restricted)) + "}"


def test_entry_layout_rule():
    module = corpus("mlp_train.after_layout.hlo")
    entry = module.entry
    param = next(p for p in entry.parameter_instructions() if p.shape.rank == 2)
    violations = verify_layouts(edit(module, entry.name, param.name, shape=flipped(param.shape)))
    assert "entry-layout" in rules_at(violations, param.name)


def test_check_layouts_raises_with_every_violation():
    module = corpus("mlp_train.before_layout.hlo")
    violations = verify_layouts(module)
    with pytest.raises(VerifyError) as info:
        check_layouts(module, source_name="mlp.hlo")
    assert f"{len(violations)} layout violation(s)" in info.value.message
    for v in violations:
        assert v.instruction in info.value.message
    assert info.value.location.line == violations[0].line
