"""Elementwise ops that XLA:CPU runs in place (:mod:`solver.layout_assignment.in_place`).

The oracle is XLA's own buffer assignment: the expected answers below are what XLA:CPU
(jaxlib 0.10) dumped for these modules (``--xla_dump_to``), and the ``xla``-marked test
compiles generated modules and compares every elementwise op with XLA's dump.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from hlo.parser import parse_module
from hlo.target import load_target
from solver.layout_assignment.assign import score
from service.xla.buffer_assignment import xla_in_place
from solver.layout_assignment.in_place import in_place_reads

F = "f32[256,256]{1,0}"
T = "f32[256,256]{0,1}"

# XLA's layouts for x -> transpose -> add -> *2 -> tanh -> dot: XLA's dump (the transpose a
# bitcast, as XLA's simplifier writes it) puts add in the copy's buffer, mul in add's and
# tanh in mul's (the chain joins the result's allocation).
CHAIN = f"""HloModule chain, entry_computation_layout={{({F}, {F})->{F}}}
ENTRY e {{
  b = {F} parameter(1)
  a = {F} parameter(0)
  t = {T} transpose(a), dimensions={{1,0}}
  c = {F} copy(t)
  add = {F} add(c, b)
  two = f32[] constant(2)
  twos = {F} broadcast(two), dimensions={{}}
  mul = {F} multiply(add, twos)
  tanh = {F} tanh(mul)
  dot = {F} dot(b, tanh), lhs_contracting_dims={{0}}, rhs_contracting_dims={{0}}
  ROOT sub = {F} subtract(dot, a)
}}
"""
# The same with tanh in the other layout: relayout copies on both sides. XLA's dump: tanh
# writes a fresh buffer (18 % faster measured, BENCHMARKS.md).
AROUND = CHAIN.replace(
    f"  tanh = {F} tanh(mul)\n",
    f"  mul.r = {T} copy(mul)\n  tanh.r = {T} tanh(mul.r)\n  tanh = {F} copy(tanh.r)\n")


def test_the_chain_is_predicted_as_xla_assigns_it():
    found = in_place_reads(parse_module(CHAIN).entry)
    assert {k: v.name for k, v in found.items()} == {"add": "c", "mul": "add", "tanh": "mul"}
    assert found["tanh"].operand == 0 and found["mul"].operand == 0
    around = in_place_reads(parse_module(AROUND).entry)
    assert "tanh.r" not in around and around["mul"].name == "add"


USED_LATER = f"""HloModule k, entry_computation_layout={{({F})->({F}, {F})}}
ENTRY e {{
  p = {F} parameter(0)
  x = {F} exponential(p)
  y = {F} tanh(x)
  z = {F} add(y, x)
  ROOT r = ({F}, {F}) tuple(z, y)
}}
"""


def test_an_operand_used_later_or_a_parameter_is_not_overwritten():
    found = in_place_reads(parse_module(USED_LATER).entry)
    # exponential reads a parameter, tanh's operand lives on to z; z may overwrite x (dead
    # there) but not y (a result).
    assert "x" not in found and "y" not in found
    assert found["z"].name == "x"


def test_the_score_prices_an_overwriting_tanh_apart_from_the_layout_cost():
    # The EPYC's calibration of 2026-11-28, which priced both opcodes (its recalibration
    # left an overwriting multiply unpriced).
    cpu = load_target(Path(__file__).resolve().parents[2] / "data" / "cpu-epyc-2026-11-28.toml")
    chain = score(parse_module(CHAIN), cpu)
    terms = {t.instruction: t for t in chain.terms if t.kind == "in_place"}
    # Both overwriting ops are priced per element of their opcode (tanh far more than mul).
    assert set(terms) == {"tanh", "mul"}
    for name, opcode in (("tanh", "tanh"), ("mul", "multiply")):
        assert terms[name].ns == math.ceil(256 * 256 * cpu.in_place.price(opcode))
    assert terms["tanh"].ns > 10 * terms["mul"].ns
    assert chain.in_place == terms["tanh"].ns + terms["mul"].ns
    assert chain.predicted == chain.total + chain.in_place
    layout_terms = sum(t.ns for t in chain.terms if t.kind != "in_place")
    assert chain.total == layout_terms
    around = score(parse_module(AROUND), cpu)
    assert around.in_place == terms["mul"].ns and around.total > chain.total


def test_a_target_without_prices_charges_nothing():
    gpu = load_target("gpu")
    assert gpu.in_place.price("tanh") == 0.0
    assert score(parse_module(CHAIN), gpu).in_place == 0


def test_only_an_untiled_target_may_price_it():
    from hlo.target import TargetError

    data = load_target("tpu").model_dump()
    data["in_place"] = {"ns_per_element": {"tanh": 1.0}}
    with pytest.raises((TargetError, ValueError), match="row_major"):
        load_target(data)


def _generated(seed: int) -> str:
    """A random chain of elementwise ops, transposes and copies over ``f32[32,48]`` values
    (some kept as results), XLA's kind of module with layouts already assigned."""
    import random

    rng = random.Random(seed)
    a, b = "f32[32,48]{1,0}", "f32[32,48]{0,1}"
    lines = [f"p0 = {a} parameter(0)", f"p1 = {a} parameter(1)"]
    values = [("p0", a), ("p1", a)]
    for i in range(14):
        kind = rng.random()
        x, xs = rng.choice(values[-4:])
        if kind < 0.2:
            ys = b if xs == a else a
            lines.append(f"v{i} = {ys} copy({x})")
            values.append((f"v{i}", ys))
        elif kind < 0.6:
            op = rng.choice(["exponential", "tanh", "negate", "sqrt"])
            lines.append(f"v{i} = {xs} {op}({x})")
            values.append((f"v{i}", xs))
        else:
            same = [v for v, s in values if s == xs and v != x] or [x]
            op = rng.choice(["add", "multiply", "maximum"])
            lines.append(f"v{i} = {xs} {op}({x}, {rng.choice(same)})")
            values.append((f"v{i}", xs))
    kept = [values[-1]] + rng.sample(values[2:-1], 2)
    shapes = ", ".join(s for _, s in kept)
    lines.append(f"ROOT r = ({shapes}) tuple({', '.join(v for v, _ in kept)})")
    body = "\n  ".join(lines)
    return (f"HloModule g{seed}, entry_computation_layout={{({a}, {a})->({shapes})}}\n"
            f"ENTRY e {{\n  {body}\n}}\n")


@pytest.mark.xla
@pytest.mark.parametrize("text", [CHAIN, AROUND, USED_LATER],
                         ids=["chain", "around", "used-later"])
def test_the_prediction_matches_xla_buffer_assignment(text):
    expected = xla_in_place(parse_module(text))
    found = in_place_reads(parse_module(text).entry)
    assert {k: bool(v) for k, v in expected.items()} == {k: k in found for k in expected}
    for name, operands in expected.items():
        if operands:
            assert found[name].name in operands


@pytest.mark.xla
def test_random_modules_agree_with_xla_on_nearly_every_op():
    # XLA's scheduler is replayed, not called: on random modules the prediction may differ
    # from XLA on a few ops (on the fidelity modules' 18,603 elementwise ops it agreed on
    # 97.6 %, BENCHMARKS.md). Here: at least 85 % of the ops, and on both sides some in place.
    agree = total = overwritten = predicted = 0
    for seed in range(14):
        text = _generated(seed)
        expected = xla_in_place(parse_module(text))
        found = in_place_reads(parse_module(text).entry)
        for name, operands in expected.items():
            total += 1
            agree += bool(operands) == (name in found)
            overwritten += bool(operands)
            predicted += name in found
    assert total >= 80 and overwritten >= 5 and predicted >= 5
    print(f"agreement {agree}/{total}, XLA {overwritten} in place, predicted {predicted}")
    assert agree >= 0.85 * total


def test_the_assign_report_gives_the_in_place_price_beside_the_objective():
    from solver.layout_assignment.assign import assign
    from solver.layout_assignment.options import AssignOptions
    from solver.layout_assignment.report import to_json

    report = to_json(assign(parse_module(CHAIN), "cpu", AssignOptions(time_limit_s=5)),
                     include_hlo=False)
    in_place = sum(t["ns"] for t in report["terms"] if t["kind"] == "in_place")
    assert report["in_place_ns"] == in_place > 0
    assert report["predicted_ns"] == report["objective"] + in_place
    assert report["status"] == "OPTIMAL"  # the layout cost is proven; the in-place price aside


def test_an_f16_op_written_over_its_operand_pays_the_f16_price():
    # cpu-xeon's calibration measured f16 add and multiply in place apart (XLA:CPU's scalar
    # loop converts each element): 5x the same op into a fresh buffer, while an f32 add in
    # place costs about what the fresh one does (a fraction of an ns per element more, the
    # runs disagreeing on its sign).
    xeon = load_target("cpu-xeon")
    f16 = xeon.in_place.by_type["f16"]
    assert xeon.in_place.price("add", "f16") == f16["add"] > 1.0
    assert xeon.in_place.price("subtract", "f16") == f16["default"]
    assert 0.0 <= xeon.in_place.price("add", "f32") < 0.1 * f16["add"]
    assert xeon.in_place.price("tanh", "bf16") == xeon.in_place.price("tanh")
    h = "f16[256,256]{1,0}"
    text = f"""HloModule h, entry_computation_layout={{({h}, {h})->{h}}}
ENTRY e {{
  p = {h} parameter(0)
  q = {h} parameter(1)
  a = {h} multiply(p, p)
  ROOT s = {h} add(a, q)
}}
"""
    scored = score(parse_module(text), xeon)
    assert scored.in_place == math.ceil(256 * 256 * f16["add"])
    assert score(parse_module(text.replace("f16", "f32")), xeon).in_place == math.ceil(
        256 * 256 * xeon.in_place.price("add", "f32"))


# A result read through a bitcast of a dying value (XLA's form of an update through a
# transpose): XLA's buffer assignment compares the operand as its user reads it, the
# bitcast's layout, so the subtract writes into the product's buffer, and the product into
# the conversion's.
THROUGH_BITCAST = """HloModule b, entry_computation_layout={(f32[64,64]{1,0}, f16[64,64]{1,0})->f16[64,64]{1,0}}
ENTRY e {
  x = f32[64,64]{1,0} parameter(0)
  w = f16[64,64]{1,0} parameter(1)
  d = f32[64,64]{0,1} negate(x)
  c = f16[64,64]{0,1} convert(d)
  m = f16[64,64]{0,1} multiply(c, c)
  t = f16[64,64]{1,0} transpose(m), dimensions={1,0}
  ROOT s = f16[64,64]{1,0} subtract(w, t)
}
"""


def test_a_value_read_through_a_bitcast_is_overwritten_as_its_user_reads_it():
    found = in_place_reads(parse_module(THROUGH_BITCAST).entry)
    assert {k: v.name for k, v in found.items()} == {"m": "c", "s": "t"}


@pytest.mark.xla
def test_through_a_bitcast_xla_assigns_what_the_replay_predicts():
    expected = xla_in_place(parse_module(THROUGH_BITCAST))
    assert {k for k, v in expected.items() if v} == {"m", "s"} and expected["s"] == ["t"]


# A sort's (or a custom-call's, a while loop's) result read through get-tuple-element: XLA's
# dump gives the op reading it a buffer of its own (tanh), and the chain after it the usual
# in-place writes. linalg_custom_calls' selects over LAPACK results were priced as written
# over them before (61 us each on cpu-xeon, not in XLA's program).
S = "f32[64,256]{1,0}"
N = "s32[64,256]{1,0}"
THROUGH_TUPLE = f"""HloModule s, entry_computation_layout={{({S}, {N})->{S}}}
cmp {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ROOT lt = pred[] compare(a, b), direction=LT
}}
ENTRY e {{
  p = {S} parameter(0)
  q = {N} parameter(1)
  e = {S} exponential(p)
  s = ({S}, {N}) sort(e, q), dimensions={{1}}, to_apply=cmp
  g = {S} get-tuple-element(s), index=0
  h = {N} get-tuple-element(s), index=1
  c = {S} convert(h)
  t = {S} tanh(g)
  u = {S} multiply(t, c)
  ROOT r = {S} negate(u)
}}
"""


# A while loop's result: XLA keeps it in the buffer the loop carries its state in, which no
# other value joins, so the product of it is a temporary and the subtract (a result) writes
# over the product (XLA's dump; lstm_train's parameter updates have this form).
WHILE_RESULT = """HloModule w, entry_computation_layout={(f32[256]{0}, f32[256]{0})->f32[256]{0}}
cond {
  t = (s32[], f32[256]{0}) parameter(0)
  i = s32[] get-tuple-element(t), index=0
  four = s32[] constant(4)
  ROOT lt = pred[] compare(i, four), direction=LT
}
body {
  t = (s32[], f32[256]{0}) parameter(0)
  i = s32[] get-tuple-element(t), index=0
  v = f32[256]{0} get-tuple-element(t), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  u = f32[256]{0} multiply(v, v)
  ROOT r = (s32[], f32[256]{0}) tuple(j, u)
}
ENTRY e {
  p = f32[256]{0} parameter(0)
  w = f32[256]{0} parameter(1)
  c = f32[] constant(0.1)
  b = f32[256]{0} broadcast(c), dimensions={}
  z = s32[] constant(0)
  e = f32[256]{0} exponential(p)
  init = (s32[], f32[256]{0}) tuple(z, e)
  loop = (s32[], f32[256]{0}) while(init), condition=cond, body=body
  g = f32[256]{0} get-tuple-element(loop), index=1
  m = f32[256]{0} multiply(g, b)
  ROOT s = f32[256]{0} subtract(w, m)
}
"""


# Each module, the ops XLA's dump has written over an operand (and which), and the op that
# reads the tuple element, which XLA gives a buffer of its own.
TUPLE_ELEMENTS = [(THROUGH_TUPLE, {"u": "t", "r": "u"}, "t"), (WHILE_RESULT, {"s": "m"}, "m")]


@pytest.mark.parametrize(("text", "written", "fresh"), TUPLE_ELEMENTS, ids=["sort", "while"])
def test_a_tuple_element_an_op_returned_is_not_written_over(text, written, fresh):
    found = in_place_reads(parse_module(text).entry)
    assert {k: v.name for k, v in found.items()} == written and fresh not in found


@pytest.mark.xla
@pytest.mark.parametrize(("text", "written", "fresh"), TUPLE_ELEMENTS, ids=["sort", "while"])
def test_past_a_tuple_element_xla_assigns_what_the_replay_predicts(text, written, fresh):
    expected = xla_in_place(parse_module(text))
    assert {k: v for k, v in expected.items() if v} == {k: [v] for k, v in written.items()}
    assert expected[fresh] == []


@pytest.mark.xla
def test_assignment_returns_the_answer_with_the_least_predicted_time():
    # An f16 MLP training step (bench/programs/fidelity.py): the layout-cost optimum has the
    # f16 ops XLA:CPU writes over their operands cost 1.5 ms more than the greedy answer's
    # (measured there: 1.20x XLA's layouts against 1.0x). Without in-place prices the
    # optimum is returned; with them, the answer whose layout cost plus in-place writes is
    # least, FEASIBLE since its layout cost is above the bound.
    from bench.programs.fidelity import PROGRAMS
    from solver.layout_assignment.assign import assign
    from solver.layout_assignment.options import AssignOptions
    from service.xla.stages import dump_stages

    f, args = PROGRAMS["gen_mlp_train_f16"]()
    before = parse_module(dump_stages(f, *args, name="f16").before_layout)
    xeon = load_target("cpu-xeon")
    blind = xeon.model_copy(update={"in_place": type(xeon.in_place)()})
    options = AssignOptions(time_limit_s=10)
    optimum = assign(before, blind, options)
    chosen = assign(before, xeon, options)
    assert optimum.status == "OPTIMAL" and chosen.status == "FEASIBLE"
    assert chosen.chosen_by in ("greedy", "default", "in-place")
    assert chosen.objective > optimum.objective
    assert chosen.score.predicted < score(optimum.module, xeon).predicted


# A transposed chain with a tanh, as JAX lowers it (bench/programs/fidelity.py's
# ``transpose_heavy``, XLA's layout assignment still to come).
TRANSPOSED_CHAIN = f"""HloModule transposed_chain, entry_computation_layout={{({F}, {F})->f32[4,256,64]{{2,1,0}}}}
ENTRY e {{
  b = {F} parameter(1)
  a = {F} parameter(0)
  t = {T} transpose(a), dimensions={{1,0}}
  add = {T} add(t, b)
  two = f32[] constant(2)
  twos = {F} broadcast(two), dimensions={{}}
  mul = {T} multiply(add, twos)
  tanh = {T} tanh(mul)
  dot = {T} dot(b, tanh), lhs_contracting_dims={{0}}, rhs_contracting_dims={{0}}
  sub = {T} subtract(dot, a)
  r = f32[64,4,256]{{2,1,0}} reshape(sub)
  ROOT o = f32[4,256,64]{{1,0,2}} transpose(r), dimensions={{1,2,0}}
}}
"""


@pytest.mark.xla
def test_assignment_takes_an_op_off_its_operands_buffer_where_that_is_cheaper():
    # The layout-cost optimum has tanh write over its operand (XLA:CPU runs it scalar). The
    # in-place descent relabels around it: relayout copies that, as XLA's own buffer
    # assignment of the returned module confirms, give tanh a buffer of its own, for less
    # predicted time than the optimum's layout cost plus its in-place write.
    from solver.layout_assignment.assign import assign
    from solver.layout_assignment.options import AssignOptions

    xeon = load_target("cpu-xeon")
    blind = xeon.model_copy(update={"in_place": type(xeon.in_place)()})
    options = AssignOptions(time_limit_s=5)
    optimum = assign(parse_module(TRANSPOSED_CHAIN), blind, options)
    chosen = assign(parse_module(TRANSPOSED_CHAIN), xeon, options)
    assert optimum.status == "OPTIMAL" and chosen.chosen_by == "in-place"
    assert chosen.status == "FEASIBLE" and chosen.objective > optimum.objective
    assert chosen.score.predicted < score(optimum.module, xeon).predicted
    assert "tanh" in in_place_reads(optimum.module.entry)
    assert "tanh" not in in_place_reads(chosen.module.entry)
    assert xla_in_place(optimum.module).get("tanh") and not xla_in_place(chosen.module).get("tanh")
    assert chosen.score.in_place == sum(t.ns for t in chosen.score.terms if t.kind == "in_place")


def test_the_descent_leaves_a_module_that_calls_a_library_alone():
    # XLA:CPU runs a library call (LAPACK's) in place on copies of its operands, a buffer
    # assignment the replay does not model: with one in the entry, the descent is not run.
    from solver.layout_assignment.assign import assign
    from solver.layout_assignment.options import AssignOptions

    called = TRANSPOSED_CHAIN.replace(
        "  ROOT o = ",
        '  k = f32[256,256]{1,0} custom-call(b), custom_call_target="my_kernel"\n'
        "  ROOT o = ")
    xeon = load_target("cpu-xeon")
    options = AssignOptions(time_limit_s=5)
    plain = assign(parse_module(TRANSPOSED_CHAIN), xeon, options)
    with_call = assign(parse_module(called), xeon, options)
    assert plain.chosen_by == "in-place"
    assert with_call.chosen_by != "in-place" and with_call.score.in_place > 0


def test_the_descent_moves_no_softmax_onto_a_short_minor_dim(monkeypatch):
    # gpt_fwd_2l's attention softmax (f32[2,4,64,64]): without the guard the descent takes
    # its exponentials and selects off their operands by laying them out with the 4 heads
    # minor, where XLA:CPU's loops ran 4.9x slower (BENCHMARKS.md); with it, they keep a
    # minor dim of 64.
    from conftest import shared_path

    import solver.layout_assignment.assign as assign_module
    from hlo.parser import parse_file
    from solver.layout_assignment.options import AssignOptions

    before = parse_file(shared_path("corpus", "gpt_fwd_2l.before_layout.hlo"))

    def short_softmax_ops(module):
        return sorted(i.name for i in module.entry.instructions
                      if i.opcode in ("exponential", "select") and i.shape.rank == 4
                      and i.shape.dims[i.shape.layout.minor_to_major[0]] < 64)

    options = AssignOptions(time_limit_s=10)
    guarded = assign_module.assign(before, "cpu-xeon", options)
    monkeypatch.setattr(assign_module, "IN_PLACE_MIN_MINOR", 0)
    unguarded = assign_module.assign(before, "cpu-xeon", options)
    assert guarded.chosen_by == unguarded.chosen_by == "in-place"
    assert short_softmax_ops(unguarded.module) and not short_softmax_ops(guarded.module)
