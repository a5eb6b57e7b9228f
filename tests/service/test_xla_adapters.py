"""Scatters and loops on the XLA:CPU execution path: :mod:`service.xla.adapters` gives them
what XLA's fusion and copy insertion would have, so they run (unadapted, XLA:CPU refuses the
scatter and aborts on the loop, ORACLES §3). Oracles: numpy, and XLA's own pipeline."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import shared_path

from hlo.parser import parse_file, parse_module
from service.xla.adapters import adapt_for_xla
from service.xla.execution import run_modules
from service.xla.refusals import refusal_reason

# In the form XLA's scatter simplifier gives every scatter before layout assignment (the only
# form XLA:CPU's scatter emitter accepts: a window per index row, no inserted window dims).
SCATTER = """HloModule s, entry_computation_layout={(f32[8,4]{LAYOUT}, s32[3,1]{1,0}, f32[3,1,4]{2,1,0})->f32[8,4]{LAYOUT}}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[8,4]{LAYOUT} parameter(0)
  i = s32[3,1]{1,0} parameter(1)
  u = f32[3,1,4]{2,1,0} parameter(2)
  ROOT s = f32[8,4]{LAYOUT} scatter(x, i, u), update_window_dims={1,2}, inserted_window_dims={}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
}
"""

# The loop state starts from a constant: the case that aborts buffer assignment unadapted.
WHILE = """HloModule w, entry_computation_layout={(f32[4,3]{LAYOUT})->f32[4,3]{LAYOUT}}
cond {
  s = (s32[], f32[4,3]{LAYOUT}) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[4,3]{LAYOUT}) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = f32[4,3]{LAYOUT} get-tuple-element(s), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  y = f32[4,3]{LAYOUT} add(x, x)
  ROOT t = (s32[], f32[4,3]{LAYOUT}) tuple(j, y)
}
ENTRY e {
  p = f32[4,3]{LAYOUT} parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[4,3]{LAYOUT}) tuple(zero, p)
  w = (s32[], f32[4,3]{LAYOUT}) while(init), condition=cond, body=body
  ROOT r = f32[4,3]{LAYOUT} get-tuple-element(w), index=1
}
"""


def test_a_scatter_becomes_a_copy_and_a_fusion_holding_it_with_its_layouts():
    module = parse_module(SCATTER.replace("LAYOUT", "0,1"))
    adapted = adapt_for_xla(module)
    entry = {i.name: i for i in adapted.entry.instructions}
    fusion = entry["s"]
    assert fusion.opcode == "fusion" and fusion.attr("kind") == "kLoop"
    copied = entry[fusion.operands[0]]
    assert copied.opcode == "copy" and copied.operands == ("x",)
    assert str(copied.shape) == "f32[8,4]{0,1}" and str(fusion.shape) == "f32[8,4]{0,1}"
    called = adapted.computation(fusion.called_computations()[0])
    assert called.root_instruction.opcode == "scatter"


def test_a_scatter_xla_cpu_cannot_emit_is_refused_with_the_reason():
    module = parse_module(SCATTER.replace("LAYOUT", "1,0").replace(
        "f32[3,1,4]{2,1,0}", "f32[3,4]{1,0}").replace("update_window_dims={1,2}, inserted_window_dims={}",
                                            "update_window_dims={1}, inserted_window_dims={0}"))
    assert "not in the simplified form" in refusal_reason(module)


@pytest.mark.xla
@pytest.mark.parametrize("layout", ["1,0", "0,1"])
def test_a_scatter_runs_in_xla_cpu_and_adds_like_numpy(layout):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((8, 4)).astype(np.float32)
    idx = np.array([[1], [5], [1]], dtype=np.int32)
    upd = rng.standard_normal((3, 1, 4)).astype(np.float32)
    module = parse_module(SCATTER.replace("LAYOUT", layout))
    assert refusal_reason(module) is None
    run = run_modules([("scatter", module)], inputs=[x, idx, upd])
    assert run.executions[0].refusal is None
    want = x.copy()
    np.add.at(want, idx[:, 0], upd[:, 0])
    np.testing.assert_allclose(run.executions[0].outputs[0], want, rtol=1e-6)


@pytest.mark.xla
@pytest.mark.parametrize("layout", ["1,0", "0,1"])
def test_a_loop_with_a_constant_in_its_state_runs_in_xla_cpu(layout):
    x = np.random.default_rng(3).standard_normal((4, 3)).astype(np.float32)
    module = parse_module(WHILE.replace("LAYOUT", layout))
    body = adapt_for_xla(module).computation("body")
    assert sum(i.opcode == "copy" for i in body.instructions) == 4  # 2 read, 2 in the root
    run = run_modules([("loop", module)], inputs=[x], reps=2)
    assert run.executions[0].refusal is None
    np.testing.assert_array_equal(run.executions[0].outputs[0], 8 * x)


@pytest.mark.xla
@pytest.mark.parametrize("name", ["scatter_ops", "rnn_scan_fwd"])
def test_corpus_modules_with_scatters_and_loops_match_xla_own_pipeline(name):
    xla = parse_file(shared_path("corpus", f"{name}.after_layout.hlo"))
    pre = parse_file(shared_path("corpus", f"{name}.pre.hlo"))
    run = run_modules([("after_layout", xla), ("pre", pre)], plain={"pre"})
    assert [e.refusal for e in run.executions] == [None, None]
    assert run.matches(1).ok


@pytest.mark.xla
def test_our_layouts_of_in_place_lapack_calls_compute_what_xla_own_pipeline_computes():
    """LAPACK custom-calls write into their operand (``output_to_operand_aliasing``); our
    rewrite shares one copy among uses, and only the copy insertion the adapter adds keeps
    the other uses' values (without it ours computed wrong numbers on this path)."""
    from solver.layout_assignment.assign import assign
    from solver.layout_assignment.options import AssignOptions

    before = parse_file(shared_path("corpus", "linalg_custom_calls.before_layout.hlo"))
    pre = parse_file(shared_path("corpus", "linalg_custom_calls.pre.hlo"))
    ours = assign(before, "cpu", AssignOptions(time_limit_s=5)).module
    adapted = adapt_for_xla(ours)
    by_name = {i.name: i for c in adapted.computations for i in c.instructions}
    for instr in by_name.values():
        for alias in instr.attr("output_to_operand_aliasing") or ():
            assert by_name[instr.operands[alias.operand]].opcode in ("copy", "tuple")
    run = run_modules([("ours", ours), ("pre", pre)], plain={"pre"})
    assert [e.refusal for e in run.executions] == [None, None]
    assert run.matches(1).ok, run.matches(1).difference


# One product returned twice, a parameter and a constant returned as they are.
SHARED_RESULTS = """HloModule r, entry_computation_layout={(f32[4,3]{1,0})->(f32[4,3]{1,0}, f32[4,3]{1,0}, f32[4,3]{1,0}, f32[], f32[3,4]{0,1})}
ENTRY e {
  x = f32[4,3]{1,0} parameter(0)
  m = f32[4,3]{1,0} multiply(x, x)
  t = (f32[4,3]{1,0}, f32[4,3]{1,0}) tuple(m, x)
  g = f32[4,3]{1,0} get-tuple-element(t), index=0
  c = f32[] constant(2)
  b = f32[3,4]{0,1} bitcast(g)
  ROOT r = (f32[4,3]{1,0}, f32[4,3]{1,0}, f32[4,3]{1,0}, f32[], f32[3,4]{0,1}) tuple(m, g, x, c, b)
}
"""


def test_each_leaf_of_the_result_gets_a_buffer_of_its_own():
    adapted = adapt_for_xla(parse_module(SHARED_RESULTS))
    entry = {i.name: i for i in adapted.entry.instructions}
    root = adapted.entry.root_instruction
    # The first return of the product stays; its return through the tuple (read as the
    # tuple's element itself, the tuple gone as XLA's tuple simplifier leaves it), through
    # the bitcast, and the parameter and the constant returned are copies.
    assert root.operands[0] == "m"
    assert "t" not in entry and "g" not in entry and entry["b"].operands == ("m",)
    for k, source in ((1, "m"), (2, "x"), (3, "c"), (4, "b")):
        assert entry[root.operands[k]].opcode == "copy"
        assert entry[root.operands[k]].operands == (source,)
    assert str(entry[root.operands[4]].shape) == "f32[3,4]{0,1}"  # the layout as written
    # The negation returned twice: its first return stays, the second is a copy (with the
    # constant's and the bitcast's, 3 copies).
    distinct = parse_module(SHARED_RESULTS.replace("tuple(m, g, x, c, b)", "tuple(m, n, n, c, b)")
                            .replace("  ROOT", "  n = f32[4,3]{1,0} negate(x)\n  ROOT"))
    root = adapt_for_xla(distinct).entry.root_instruction
    assert root.operands[:2] == ("m", "n") and root.operands[2] != "n"
    assert sum(i.opcode == "copy" for i in adapt_for_xla(distinct).entry.instructions) == 3
    # Nothing shared, nothing returned as it came in: the module comes back as it was.
    apart = parse_module("""HloModule a, entry_computation_layout={(f32[4]{0})->(f32[4]{0}, f32[4]{0})}
ENTRY e {
  x = f32[4]{0} parameter(0)
  n = f32[4]{0} negate(x)
  m = f32[4]{0} multiply(x, x)
  ROOT r = (f32[4]{0}, f32[4]{0}) tuple(n, m)
}
""")
    assert adapt_for_xla(apart) is apart


@pytest.mark.xla
def test_a_module_returning_one_buffer_twice_runs_in_xla_cpu():
    # Unadapted, XLA:CPU's runtime aborts: "Check failed: ... Unexpected duplicate".
    x = np.random.default_rng(4).standard_normal((4, 3)).astype(np.float32)
    # b: a transpose
    _runs_and_returns(SHARED_RESULTS, x, (x * x, x * x, x, np.float32(2), (x * x).T))


def _runs_and_returns(text: str, x: np.ndarray, wants: tuple) -> None:
    """``text`` runs in XLA:CPU on ``x`` and returns exactly ``wants``."""
    run = run_modules([("m", parse_module(text))], inputs=[x])
    assert run.executions[0].refusal is None
    outputs = run.executions[0].outputs
    assert len(outputs) == len(wants)
    for got, want in zip(outputs, wants):
        np.testing.assert_array_equal(got, want)


@pytest.mark.xla
def test_modules_that_donate_their_parameters_share_the_inputs_with_the_others():
    # tuple_outputs_aliasing donates parameters 0-2 to its outputs and returns one product
    # twice: XLA's own pipeline first (it would delete the shared input buffers), then XLA's
    # layouts twice, timed.
    xla = parse_file(shared_path("corpus", "tuple_outputs_aliasing.after_layout.hlo"))
    pre = parse_file(shared_path("corpus", "tuple_outputs_aliasing.pre.hlo"))
    assert xla.attr("input_output_alias") is not None
    run = run_modules([("pre", pre), ("after_layout", xla), ("again", xla)], plain={"pre"},
                      reps=2, sample_ms=0)
    assert [e.refusal for e in run.executions] == [None, None, None]
    assert run.matches(1).ok and run.matches(2).ok


# A head split and merge: the first reshape and the transpose keep every element where it is
# (bitcasts in these layouts), the last reshape does not.
RESHAPES = """HloModule r, entry_computation_layout={(f32[8,12]{1,0})->(f32[2,4,12]{2,1,0}, f32[12,8]{0,1}, f32[4,24]{1,0})}
ENTRY e {
  x = f32[8,12]{1,0} parameter(0)
  n = f32[8,12]{1,0} negate(x)
  r = f32[2,4,12]{2,1,0} reshape(n)
  t = f32[12,8]{0,1} transpose(n), dimensions={1,0}
  c = f32[8,12]{0,1} copy(n)
  m = f32[4,24]{1,0} reshape(c)
  ROOT out = (f32[2,4,12]{2,1,0}, f32[12,8]{0,1}, f32[4,24]{1,0}) tuple(r, t, m)
}
"""


def test_reshapes_and_transposes_that_move_no_bytes_become_bitcasts():
    entry = {i.name: i for i in adapt_for_xla(parse_module(RESHAPES)).entry.instructions}
    assert entry["r"].opcode == "bitcast" and entry["t"].opcode == "bitcast"
    assert not entry["t"].has_attr("dimensions")
    assert entry["m"].opcode == "reshape"  # {0,1} read as [4,24]{1,0}: the bytes move
    assert str(entry["r"].shape) == "f32[2,4,12]{2,1,0}" and entry["r"].operands == ("n",)


@pytest.mark.xla
def test_bitcasts_in_place_of_reshapes_compute_the_reshapes():
    x = np.random.default_rng(5).standard_normal((8, 12)).astype(np.float32)
    _runs_and_returns(RESHAPES, x, ((-x).reshape(2, 4, 12), (-x).T, (-x).reshape(4, 24)))
