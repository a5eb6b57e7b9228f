"""``normalize-reductions`` and ``group-reductions`` on random reduces.

Random input dims, random (tiled, aligned, combined-dim) layouts, random reduced
dims and result layouts, one or two inputs; integer data so every result must
match exactly. The oracle is the reference interpreter, which runs every
bitcast through the physical byte image: a wrong bitcast gives wrong numbers.
"""

from __future__ import annotations

import dataclasses

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from hlo.equivalence import compare_modules
from hlo.errors import HloError
from hlo.ir import Module
from hlo.layout_verifier import verify_layouts
from hlo.parser import parse_module
from hlo.passes import apply_passes, run_passes
from hlo.passes.group_reductions import dim_groups, group_reductions
from hlo.passes.normalize_reductions import (
    is_canonical_reduce,
    non_canonical_reduces,
    normalize_reductions,
    normalize_reductions_with_notes,
)
from hlo.printer import print_module
from hlo.shape import COMBINED, ArrayShape, Layout, Tile
from hlo.tiling import physical_element_count
from hlo.verifier import verify_module

ADD = """
add {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT r = s32[] add(a, b)
}

add2 {
  a0 = s32[] parameter(0)
  a1 = s32[] parameter(1)
  b0 = s32[] parameter(2)
  b1 = s32[] parameter(3)
  s0 = s32[] add(a0, b0)
  s1 = s32[] add(a1, b1)
  ROOT t = (s32[], s32[]) tuple(s0, s1)
}
"""


def reduce_module(
    inp: ArrayShape, out: ArrayShape, reduced: tuple[int, ...], variadic: bool
) -> Module:
    dims = "{" + ",".join(map(str, reduced)) + "}"
    if variadic:
        body = f"""ENTRY e {{
  p0 = {inp} parameter(0)
  p1 = {inp} parameter(1)
  z = s32[] constant(0)
  ROOT r = ({out}, {out}) reduce(p0, p1, z, z), dimensions={dims}, to_apply=add2
}}"""
    else:
        body = f"""ENTRY e {{
  p0 = {inp} parameter(0)
  z = s32[] constant(0)
  ROOT r = {out} reduce(p0, z), dimensions={dims}, to_apply=add
}}"""
    return parse_module("HloModule m\n" + ADD + body)


#: Tilings to draw from: none, TPU-like 2-D, 1-D, repeated, and a combined dim.
TILINGS = ((), (Tile((2, 2)),), (Tile((3,)),), (Tile((2, 4)), Tile((2, 1))), (Tile((COMBINED, 2)),))


@st.composite
def layouts(draw, rank: int, tiled: bool, allow_properties: bool = False):  # noqa: ANN201
    mtm = tuple(draw(st.permutations(range(rank))))
    return Layout(mtm, tiles=draw(st.sampled_from(TILINGS)) if tiled else ())


@st.composite
def reduces(draw):  # noqa: ANN201
    rank = draw(st.integers(1, 4))
    dims = tuple(draw(st.lists(st.integers(1, 5), min_size=rank, max_size=rank)))
    layout = draw(layouts(rank, tiled=draw(st.booleans()), allow_properties=False))
    try:
        inp = ArrayShape("s32", dims, layout)
        physical_element_count(inp)
    except HloError:
        assume(False)
    reduced = tuple(sorted(draw(st.sets(st.integers(0, rank - 1)))))
    kept = tuple(dims[d] for d in range(rank) if d not in reduced)
    out_layout = draw(layouts(len(kept), tiled=draw(st.booleans()), allow_properties=False))
    try:
        out = ArrayShape("s32", kept, out_layout)
        physical_element_count(out)
    except HloError:
        assume(False)

    assume(physical_element_count(inp) <= 4000 and physical_element_count(out) <= 4000)
    return reduce_module(inp, out, reduced, draw(st.booleans()))


def _proved(original: Module, rewritten: Module) -> None:
    verify_module(rewritten)
    assert verify_layouts(rewritten) == []
    report = compare_modules(original, rewritten, seed=1, exact=True)
    assert report.equivalent, f"{report.difference}\n{print_module(rewritten, short=True)}"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(reduces())
def test_random_reduces_become_canonical_and_stay_equivalent(module: Module) -> None:
    out, skipped, rewritten = normalize_reductions_with_notes(module)
    assert skipped == () and rewritten == tuple(non_canonical_reduces(module))
    assert non_canonical_reduces(out) == []
    _proved(module, out)
    assert normalize_reductions(out) == out
    grouped = group_reductions(out)
    assert non_canonical_reduces(grouped) == []
    _proved(module, grouped)
    assert group_reductions(grouped) == grouped
    both = run_passes(
        module, ["normalize-layouts", "normalize-reductions", "group-reductions"], verify=True
    )
    _proved(module, both)


def test_canonical_reduce_is_left_alone() -> None:
    module = reduce_module(
        ArrayShape("s32", (4, 6), None).with_layout(_mtm(1, 0)),
        ArrayShape("s32", (6,), _mtm(0)),
        (0,),
        False,
    )
    assert non_canonical_reduces(module) == []
    assert normalize_reductions(module) == module


def _mtm(*mtm: int) -> Layout:
    return Layout(tuple(mtm))


def test_non_canonical_detected_then_fixed_with_tiles() -> None:
    """A TPU-style tiled column-major input: the physical-order bitcast keeps the tiles."""
    module = parse_module("""HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}
ENTRY e {
  p = f32[6,10]{0,1:T(2,4)} parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[10]{0} reduce(p, z), dimensions={0}, to_apply=add
}""")
    reduce = module.entry.instruction("r")
    assert not is_canonical_reduce(module, reduce)
    out = normalize_reductions(module)
    texts = [str(i.shape) + " " + i.opcode for i in out.entry.instructions]
    assert "f32[10,6]{1,0:T(2,4)} bitcast" in texts
    reduce = next(i for i in out.entry.instructions if i.opcode == "reduce")
    assert reduce.attr("dimensions") == (1,)
    assert is_canonical_reduce(out, reduce)
    _proved(module, out)


def test_grouping_makes_a_column_reduction() -> None:
    """XLA's example input after normalization: three reduced dims merge into one
    major dim, the five kept dims (in result order) into one minor dim."""
    module = reduce_module(
        ArrayShape("s32", (5, 3, 3, 4, 12, 12, 16, 5), _mtm(7, 6, 5, 4, 3, 2, 1, 0)),
        ArrayShape("s32", (4, 12, 12, 16, 5), _mtm(4, 3, 2, 1, 0)),
        (0, 1, 2),
        False,
    )
    out = group_reductions(module)
    reduce = next(i for i in out.entry.instructions if i.opcode == "reduce")
    operand = out.entry.instruction(reduce.operands[0])
    assert str(operand.shape) == "s32[45,46080]{1,0}"
    assert str(reduce.shape) == "s32[46080]{0}" and reduce.attr("dimensions") == (0,)
    assert out.entry.root_instruction.opcode == "bitcast"
    _proved(module, out)


def test_grouping_respects_the_result_order() -> None:
    """Kept dims merge only where the result keeps them adjacent and in order."""
    assert dim_groups((2, 3, 4, 5), (0,), (0, 1, 2)) == [(True, (0,)), (False, (1, 2, 3))]
    assert dim_groups((2, 3, 4, 5), (0,), (2, 0, 1)) == [
        (True, (0,)),
        (False, (1, 2)),
        (False, (3,)),
    ]
    assert dim_groups((2, 1, 4, 5), (1, 3), (0, 1)) == [(False, (0, 2)), (True, (3,))]
    assert dim_groups((2, 1, 4), (1,), (0, 1)) is None


def test_variadic_reduce_shares_one_input_order() -> None:
    module = reduce_module(
        ArrayShape("s32", (3, 4, 5), _mtm(0, 2, 1)),
        ArrayShape("s32", (3, 5), _mtm(0, 1)),
        (1,),
        True,
    )
    out = normalize_reductions(module)
    reduce = next(i for i in out.entry.instructions if i.opcode == "reduce")
    shapes = {str(out.entry.instruction(n).shape) for n in reduce.operands[:2]}
    assert shapes == {"s32[4,5,3]{2,1,0}"}
    assert reduce.attr("dimensions") == (0,)
    _proved(module, out)


def test_the_pass_keeps_the_module_otherwise() -> None:
    module = reduce_module(
        ArrayShape("s32", (3, 4), _mtm(0, 1)), ArrayShape("s32", (3,), _mtm(0)), (1,), False
    )
    out = normalize_reductions(module)
    assert out.attributes == module.attributes
    assert [c.name for c in out.computations] == [c.name for c in module.computations]
    assert out.computations[0] == module.computations[0]
    assert dataclasses.replace(out, computations=module.computations) == module


def test_a_reduce_that_cannot_be_permuted_is_left_with_a_reason() -> None:
    module = parse_module("""HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}
ENTRY e {
  p = f32[4,6]{0,1:D(D,C)} parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[6]{0} reduce(p, z), dimensions={0}, to_apply=add
}""")
    out, skipped, rewritten = normalize_reductions_with_notes(module)
    assert out == module and rewritten == ()
    (note,) = skipped
    assert (note.computation, note.instruction) == ("e", "r")
    assert "sparse" in note.reason
    assert non_canonical_reduces(out) == [("e", "r")]
    # The pass loop reports the same note, by short name too.
    (run,) = apply_passes(module, ["reductions"])
    again, notes = run.after, run.notes
    assert again == out
    assert [(n.computation, n.instruction, n.reason, n.kind) for n in notes] == [
        ("e", "r", note.reason, "reduce")]
    assert str(notes[0]) == f"reduce left as it is: e/r: {note.reason}"
    assert next(apply_passes(module, ["normalize-layouts"])).notes == ()


def test_no_op_tiles_are_dropped_real_ones_kept() -> None:
    """``T(8,128)`` on a physical ``[16,128]`` is row-major already: the input is
    bitcast to the plain shape; on ``[16,256]`` the tiles reorder bytes and stay."""
    for minor, expected in (
        (128, "f32[16,128]{1,0} bitcast"),
        (256, "f32[16,256]{1,0:T(8,128)} bitcast"),
    ):
        module = parse_module(f"""HloModule m
add {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}}
ENTRY e {{
  p = f32[{minor},16]{{0,1:T(8,128)}} parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[16]{{0}} reduce(p, z), dimensions={{0}}, to_apply=add
}}""")
        out = normalize_reductions(module)
        assert expected in [f"{i.shape} {i.opcode}" for i in out.entry.instructions]
        assert non_canonical_reduces(out) == []
        _proved(module, out)
