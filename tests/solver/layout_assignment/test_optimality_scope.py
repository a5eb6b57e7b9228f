"""What OPTIMAL covers: the report names the candidate cap, and a cap of 64 prices every dim
order of arrays up to rank 4 (checked against brute force over all orders)."""

from __future__ import annotations

import itertools

from hlo.parser import parse_module
from solver.layout_assignment.assign import assign, score
from solver.layout_assignment.options import AssignOptions
from solver.layout_assignment.report import to_json

# Three transposes between fixed entry layouts: the free arrays t and u (rank 3) have 6 orders
# each.
TEXT = """HloModule m, entry_computation_layout={(f32[8,16,32]{2,1,0})->f32[8,32,16]{2,1,0}}
ENTRY e {
  p = f32[8,16,32]{2,1,0} parameter(0)
  t = f32[32,16,8] transpose(p), dimensions={2,1,0}
  u = f32[16,32,8] transpose(t), dimensions={1,0,2}
  ROOT r = f32[8,32,16]{2,1,0} transpose(u), dimensions={2,1,0}
}
"""


def _with(t: tuple[int, ...], u: tuple[int, ...]) -> str:
    text = TEXT.replace("f32[32,16,8] transpose", f"f32[32,16,8]{{{','.join(map(str, t))}}} transpose")
    return text.replace("f32[16,32,8] transpose", f"f32[16,32,8]{{{','.join(map(str, u))}}} transpose")


def test_the_report_says_what_optimal_covers():
    module = parse_module(TEXT)
    wide = assign(module, "cpu", AssignOptions(time_limit_s=5, max_candidates=64))
    scope = to_json(wide, include_hlo=False)["optimality_scope"]
    assert scope == {"max_candidates": 64, "free_arrays": scope["free_arrays"],
                     "arrays_capped": 0, "covers": "every dim order of every free array"}
    narrow = assign(module, "cpu", AssignOptions(time_limit_s=5, max_candidates=2))
    assert narrow.scope["arrays_capped"] > 0
    assert "at most 2" in narrow.scope["covers"]


def test_every_order_optimum_is_the_brute_force_minimum():
    result = assign(parse_module(TEXT), "cpu", AssignOptions(time_limit_s=10,
                                                      max_candidates=64))
    assert result.status == "OPTIMAL"
    brute = min(score(parse_module(_with(t, u)), "cpu").total
                for t in itertools.permutations(range(3))
                for u in itertools.permutations(range(3)))
    # Brute force writes no copies (each transpose moves what it must); the solver may also
    # copy, so it can only be cheaper or equal.
    assert result.objective <= brute


def test_a_reduce_writing_another_layout_than_its_natural_one_is_scored():
    """The scorer names the bytes of the reduce's output (it used the operand's rank)."""
    text = """HloModule m, entry_computation_layout={(f32[8,16,32]{2,1,0})->f32[8,32]{0,1}}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  p = f32[8,16,32]{2,1,0} parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[8,32]{0,1} reduce(p, z), dimensions={1}, to_apply=add
}
"""
    result = score(parse_module(text), "cpu")
    written = [t for t in result.terms if t.kind == "reduce"]
    assert len(written) == 1 and written[0].bytes == 8 * 32 * 4
