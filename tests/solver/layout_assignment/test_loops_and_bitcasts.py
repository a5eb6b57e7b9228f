"""Loop trip counts weight what runs inside a loop; ``emit_bitcasts`` writes free
transposes/reshapes as ``bitcast`` and the result still verifies and computes the same."""

from __future__ import annotations

from fractions import Fraction

import pytest
from conftest import shared_path

from hlo.bitcast import bitcast_kind, transpose_is_bitcast
from hlo.equivalence import compare_modules
from hlo.layout_verifier import verify_layouts
from hlo.parser import parse_file, parse_module
from solver.layout_assignment.assign import assign, score
from solver.layout_assignment.layout_graph import computation_weights
from solver.layout_assignment.options import AssignOptions

TRIP = ', backend_config={"known_trip_count":{"n":"10"}}'

#: ``b`` is loop-invariant and read transposed in the body: either the body transposes it
#: every iteration, or the loop carries it in the transposed layout (one copy before it).
LOOP = """HloModule loop, entry_computation_layout={(f32[256,512]{1,0}, f32[512,256]{1,0})->f32[256,512]{1,0}}

cond {
  cp = (s32[], f32[256,512], f32[512,256]) parameter(0)
  ci = s32[] get-tuple-element(cp), index=0
  n = s32[] constant(10)
  ROOT lt = pred[] compare(ci, n), direction=LT
}

body {
  bp = (s32[], f32[256,512], f32[512,256]) parameter(0)
  i = s32[] get-tuple-element(bp), index=0
  x = f32[256,512] get-tuple-element(bp), index=1
  b = f32[512,256] get-tuple-element(bp), index=2
  t = f32[256,512] transpose(b), dimensions={1,0}
  y = f32[256,512] add(x, t)
  one = s32[] constant(1)
  j = s32[] add(i, one)
  ROOT r = (s32[], f32[256,512], f32[512,256]) tuple(j, y, b)
}

ENTRY e {
  a = f32[256,512] parameter(0)
  w = f32[512,256] parameter(1)
  zero = s32[] constant(0)
  init = (s32[], f32[256,512], f32[512,256]) tuple(zero, a, w)
  loop = (s32[], f32[256,512], f32[512,256]) while(init), condition=cond, body=body{TRIP}
  ROOT out = f32[256,512] get-tuple-element(loop), index=1
}
"""


def _loop(trip: bool):
    return parse_module(LOOP.replace("{TRIP}", TRIP if trip else ""), "loop")


def test_weights_follow_the_known_trip_count():
    assert computation_weights(_loop(True)) == {"e": 1, "body": 10, "cond": 11}
    assert computation_weights(_loop(False)) == {"e": 1, "body": 1, "cond": 2}


def test_weights_do_not_depend_on_the_order_computations_are_written_in() -> None:
    # Callers written before their callees: each is still weighted before its callees.
    module = parse_module(
        "HloModule m\n\nENTRY e {\n  p = f32[4] parameter(0)\n"
        "  ROOT c = f32[4] call(p), to_apply=outer\n}\n\n"
        "outer {\n  q = f32[4] parameter(0)\n  ROOT d = f32[4] call(q), to_apply=inner\n}\n\n"
        "inner {\n  r = f32[4] parameter(0)\n  ROOT n = f32[4] negate(r)\n}\n")
    assert [c.name for c in module.computations] == ["e", "outer", "inner"]
    assert computation_weights(module) == {"e": 1, "outer": 1, "inner": 1}


#: The same two copies, in one of a conditional's two branches and in the entry.
BRANCHES = """HloModule cond

b0 {
  x = f32[256,512]{1,0} parameter(0)
  ROOT n = f32[256,512]{1,0} negate(x)
}

b1 {
  x = f32[256,512]{1,0} parameter(0)
  t = f32[256,512]{0,1} copy(x)
  ROOT u = f32[256,512]{1,0} copy(t)
}

ENTRY e {
  p = s32[] parameter(0)
  a = f32[256,512]{1,0} parameter(1)
  ROOT c = f32[256,512]{1,0} conditional(p, a, a), branch_computations={b0, b1}
}
"""

FLAT = """HloModule flat

ENTRY e {
  a = f32[256,512]{1,0} parameter(0)
  t = f32[256,512]{0,1} copy(a)
  ROOT u = f32[256,512]{1,0} copy(t)
}
"""


def test_a_conditional_runs_one_branch_each_branch_counts_its_share():
    module = parse_module(BRANCHES, "cond")
    assert computation_weights(module) == {"e": 1, "b0": Fraction(1, 2), "b1": Fraction(1, 2)}
    # Inside a loop of 10 iterations, each branch runs 5 times per execution (in expectation).
    looped = parse_module(LOOP.replace("{TRIP}", TRIP).replace(
        "  t = f32[256,512] transpose(b), dimensions={1,0}\n",
        "  t = f32[256,512] transpose(b), dimensions={1,0}\n"
        "  k = s32[] constant(0)\n  s = f32[256,512] conditional(k, x, x), "
        "branch_computations={b0, b1}\n") + BRANCHES.split("ENTRY")[0].split("HloModule cond")[1],
        "looped")
    weights = computation_weights(looped)
    assert weights["body"] == 10 and weights["b0"] == weights["b1"] == 5
    # Each copy in a branch costs half of the same copy run on every execution.
    branch = {t.instruction: t for t in score(module, "cpu").terms if t.kind == "copy"}
    flat = {t.instruction: t for t in score(parse_module(FLAT, "flat"), "cpu").terms
            if t.kind == "copy"}
    assert set(branch) == set(flat) == {"t", "u"}
    for name in ("t", "u"):
        assert branch[name].ns == -(-flat[name].ns // 2)
        assert "x1/2" in branch[name].reason


def test_a_known_trip_count_moves_the_relayout_out_of_the_loop():
    module = _loop(True)
    result = assign(module, "cpu", AssignOptions(time_limit_s=10))
    assert result.status == "OPTIMAL" and result.violations == ()
    # One copy of w before the loop; the body's transpose became free.
    assert [(x.computation, x.value, x.path, x.runs)
            for x in result.inserted] == [("e", "init", (2,), 1)]
    body = next(c for c in result.module.computations if c.name == "body")
    t = body.instruction("t")
    assert transpose_is_bitcast(body.instruction("b").shape, t.shape, (1, 0))
    # The all-default answer moves 512x256 floats on each of the 10 iterations (its body's
    # transpose written in XLA's form, a bitcast then a copy); ours copies once.
    assert result.baselines["default"] == 10 * result.objective
    assert score(result.module, "cpu").total == result.objective
    assert compare_modules(module, result.module, seed=4).equivalent


def test_without_a_trip_count_the_body_runs_once_in_the_model():
    module = _loop(False)
    result = assign(module, "cpu", AssignOptions(time_limit_s=10))
    assert result.status == "OPTIMAL" and result.violations == ()
    # The body runs once in the model: one copy before the loop or one in the body (its
    # transpose written in XLA's form, a bitcast then a copy of its result) cost the same,
    # as does the all-default answer (its transpose written the same way).
    assert [(x.computation, x.value, x.path) for x in result.inserted] in (
        [("e", "init", (2,))], [("body", "t", ())])
    assert result.baselines["default"] == result.objective


def _count(module, opcode: str) -> int:
    return sum(1 for c in module.computations for i in c.instructions if i.opcode == opcode)


@pytest.mark.parametrize("target", ["cpu", "tpu"])
@pytest.mark.parametrize("name", ["transpose_reshape_chain", "attention_fwd", "einsum_zoo"])
def test_emit_bitcasts_writes_free_transposes_and_reshapes_as_bitcasts(name, target):
    path = shared_path("corpus") / f"{name}.before_layout.hlo"
    original = parse_file(path)
    plain = assign(original, target, AssignOptions(time_limit_s=5))
    cast = assign(original, target, AssignOptions(time_limit_s=5, emit_bitcasts=True))
    assert cast.violations == () and verify_layouts(cast.module) == []
    bitcasts = _count(cast.module, "bitcast")
    moved = (_count(plain.module, "transpose") + _count(plain.module, "reshape")
             - _count(cast.module, "transpose") - _count(cast.module, "reshape"))
    assert bitcasts > 0 and bitcasts == moved
    # Every bitcast moves no byte (checked by the verifier's brute-force-tested rule).
    for comp in cast.module.computations:
        shapes = {i.name: i.shape for i in comp.instructions}
        for instr in comp.instructions:
            if instr.opcode == "bitcast":
                assert bitcast_kind(shapes[instr.operands[0]], instr.shape) is not None
    # The interpreter runs bitcasts through the physical byte image (tiles included).
    report = compare_modules(original, cast.module, seed=5)
    assert report.equivalent, (name, target, report.to_json()["first_difference"])
    assert score(cast.module, target).total == cast.objective == plain.objective


def test_loop_with_emit_bitcasts_is_equivalent():
    module = _loop(True)
    result = assign(module, "cpu", AssignOptions(time_limit_s=10, emit_bitcasts=True))
    body = next(c for c in result.module.computations if c.name == "body")
    assert body.instruction("t").opcode == "bitcast"
    assert result.violations == ()
    assert compare_modules(module, result.module, seed=6).equivalent
