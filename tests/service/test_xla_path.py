"""The XLA:CPU execution path (service.xla): outputs, refusals, XLA's layouts, stages.

The oracles are numpy (what the small modules compute) and XLA's own compiler (what it
refuses). No test asserts a time: timing runs only check the shape of what comes back.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from conftest import shared_path

from hlo.parser import parse_file, parse_module
from service.xla import availability
from service.xla.errors import XlaUnavailable
from service.xla.execution import abort_message, run_modules
from service.xla.layout_pass import xla_layout_assignment
from service.xla.refusals import refusal_reason
from service.xla.stages import dump_stages

pytestmark = pytest.mark.xla

ROW_MAJOR = """HloModule transpose_row, entry_computation_layout={(f32[3,5]{1,0})->f32[5,3]{1,0}}
ENTRY %e (p: f32[3,5]) -> f32[5,3] {
  %p = f32[3,5]{1,0} parameter(0)
  %t = f32[5,3]{0,1} transpose(%p), dimensions={1,0}
  ROOT %c = f32[5,3]{1,0} copy(%t)
}
"""

# The same function with the parameter column-major and a standalone transpose.
COLUMN_MAJOR = """HloModule transpose_col, entry_computation_layout={(f32[3,5]{0,1})->f32[5,3]{1,0}}
ENTRY %e (p: f32[3,5]) -> f32[5,3] {
  %p = f32[3,5]{0,1} parameter(0)
  %n = f32[3,5]{0,1} negate(%p)
  %m = f32[3,5]{0,1} negate(%n)
  ROOT %t = f32[5,3]{1,0} transpose(%m), dimensions={1,0}
}
"""

# Wrong on purpose: it negates once, so its outputs differ from the reference.
NEGATED = COLUMN_MAJOR.replace("  %m = f32[3,5]{0,1} negate(%n)\n", "").replace("(%m)", "(%n)")

TOPK = """HloModule topk, entry_computation_layout={(f32[4,16]{1,0})->(f32[4,3]{1,0}, s32[4,3]{1,0})}
%greater (a: f32[], b: f32[], c: s32[], d: s32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  %c = s32[] parameter(2)
  %d = s32[] parameter(3)
  ROOT %gt = pred[] compare(%a, %b), direction=GT
}
ENTRY %e (x: f32[4,16]) -> (f32[4,3], s32[4,3]) {
  %x = f32[4,16]{1,0} parameter(0)
  %y = f32[4,16]{LAYOUT} copy(%x)
  ROOT %top = (f32[4,3]{1,0}, s32[4,3]{1,0}) custom-call(%y), custom_call_target="TopK", called_computations={%greater}
}
"""


def test_outputs_match_numpy_whatever_the_layouts():
    x = np.arange(15, dtype=np.float32).reshape(3, 5) - 7.0
    run = run_modules(
        [("row", parse_module(ROW_MAJOR)), ("col", parse_module(COLUMN_MAJOR)),
         ("neg", parse_module(NEGATED))],
        inputs=[x],
    )
    assert [e.refusal for e in run.executions] == [None, None, None]
    for execution in run.executions[:2]:
        np.testing.assert_array_equal(execution.outputs[0], x.T)
    np.testing.assert_array_equal(run.executions[2].outputs[0], -x.T)
    assert run.matches(1).ok and run.matches(1).exact
    assert not run.matches(2).ok and run.matches(2).difference is not None


def test_timing_rounds_and_the_reference_twice():
    run = run_modules([("row", parse_module(ROW_MAJOR)), ("col", parse_module(COLUMN_MAJOR))],
                      seed=3, reps=4, warmup=1)
    assert [len(e.times_ms) for e in run.executions] == [4, 4]
    assert len(run.reference_again_ms) == 4
    assert run.ratio(1).rounds == 4 and run.noise().rounds == 4
    assert run.ratio(1).low <= run.ratio(1).median <= run.ratio(1).high
    assert all(t > 0 for t in run.executions[0].times_ms)


def test_a_timed_sample_of_a_tiny_module_is_many_runs_and_times_stay_per_run():
    modules = [("row", parse_module(ROW_MAJOR)), ("col", parse_module(COLUMN_MAJOR))]
    single = run_modules(modules, seed=3, reps=3, sample_ms=0)
    batched = run_modules(modules, seed=3, reps=3, sample_ms=20)
    assert single.runs_per_sample == 1
    assert batched.runs_per_sample > 10  # a 3x5 transpose runs far below 2 ms
    # Per run either way: a sample of many runs is divided by their number (a run of this
    # module is microseconds; a sample of the batch lasts about 20 ms).
    assert max(batched.executions[0].times_ms) < 2.0
    assert len(batched.executions[1].times_ms) == 3 and len(batched.reference_again_ms) == 3


def test_rounds_shared_among_processes_add_up_and_keep_the_first_ones_outputs():
    modules = [("row", parse_module(ROW_MAJOR)), ("col", parse_module(COLUMN_MAJOR))]
    run = run_modules(modules, seed=3, reps=5, sessions=2, sample_ms=0)
    assert run.sessions == 2
    assert [len(e.times_ms) for e in run.executions] == [5, 5] and len(run.reference_again_ms) == 5
    assert run.matches(1).ok and run.executions[1].outputs[0].shape == (5, 3)
    # More processes than rounds: one round each, never a process without one.
    assert run_modules(modules, seed=3, reps=2, sessions=4, sample_ms=0).sessions == 2
    assert run_modules(modules, seed=3, reps=0, sessions=4).sessions == 1


def test_topk_operand_layout_is_checked_by_xla_compiler_not_only_its_parser():
    x = np.random.default_rng(0).standard_normal((4, 16)).astype(np.float32)
    good = parse_module(TOPK.replace("LAYOUT", "1,0"))
    bad = parse_module(TOPK.replace("LAYOUT", "0,1"))
    run = run_modules([("good", good), ("bad", bad)], inputs=[x])
    values, indices = run.executions[0].outputs
    np.testing.assert_array_equal(values, -np.sort(-x, axis=1)[:, :3])
    np.testing.assert_array_equal(np.take_along_axis(x, indices, 1), values)
    assert run.executions[1].refusal.startswith("XLA refused to compile or run it")
    assert "Dim0Major" in run.executions[1].refusal


RESHAPE = """HloModule r, entry_computation_layout={(f32[64,64]{0,1})->f32[64,4,16]{2,1,0}}
ENTRY e {
  p = f32[64,64]{0,1} parameter(0)
  ROOT r = f32[64,4,16]{2,1,0} reshape(p)
}
"""


def test_a_reshape_rewritten_as_copy_then_bitcast_reshape_runs_and_computes_the_reshape():
    from solver.layout_assignment.assign import assign
    from solver.layout_assignment.options import AssignOptions

    x = np.random.default_rng(1).standard_normal((64, 64)).astype(np.float32)
    ours = assign(parse_module(RESHAPE), "cpu", AssignOptions(time_limit_s=5)).module
    assert any(i.opcode == "copy" for i in ours.entry.instructions)
    run = run_modules([("as written", parse_module(RESHAPE)), ("ours", ours)], inputs=[x])
    assert [e.refusal for e in run.executions] == [None, None]
    for execution in run.executions:
        np.testing.assert_array_equal(execution.outputs[0], x.reshape(64, 4, 16))


TRANSPOSE = """HloModule t, entry_computation_layout={(f32[256,64]{1,0})->f32[64,256]{1,0}}
ENTRY e {
  p = f32[256,64]{1,0} parameter(0)
  ROOT t = f32[64,256]{1,0} transpose(p), dimensions={1,0}
}
"""


def test_a_transpose_rewritten_in_xlas_form_runs_and_computes_the_transpose():
    from solver.layout_assignment.assign import assign
    from solver.layout_assignment.options import AssignOptions

    x = np.random.default_rng(2).standard_normal((256, 64)).astype(np.float32)
    ours = assign(parse_module(TRANSPOSE), "cpu", AssignOptions(time_limit_s=5)).module
    # XLA's form: the transpose a bitcast of the parameter, a copy to the result's layout.
    assert [i.opcode for i in ours.entry.instructions] == ["parameter", "transpose", "copy"]
    run = run_modules([("as written", parse_module(TRANSPOSE)), ("ours", ours)], inputs=[x])
    assert [e.refusal for e in run.executions] == [None, None]
    for execution in run.executions:
        np.testing.assert_array_equal(execution.outputs[0], x.T)


def test_xlas_form_of_fft_1ds_transposes_keeps_xlas_temporary_buffers():
    # The copy of a transpose written before it (the transpose then a bitcast of the copy):
    # XLA:CPU's scheduler ran that copy while four c64[64,256] buffers were live, 512 KiB of
    # temporaries against 384 KiB for XLA's own layouts (and 1.036-1.071 of its time in four
    # runs). Written after the transpose, as XLA writes it, the buffers are XLA's own.
    from solver.layout_assignment.assign import assign
    from solver.layout_assignment.options import AssignOptions

    before = parse_file(shared_path("corpus", "fft_1d.before_layout.hlo"))
    theirs = parse_file(shared_path("corpus", "fft_1d.after_layout.hlo"))
    ours = assign(before, "cpu", AssignOptions(time_limit_s=5)).module
    run = run_modules([("xla", theirs), ("ours", ours)], outputs=False)
    xla, mine = run.executions
    assert xla.temp_bytes == 384 * 1024 and mine.temp_bytes == xla.temp_bytes


@pytest.mark.parametrize(
    ("name", "stage", "expected"),
    [("scatter_ops", "after_layout", None), ("rnn_scan_fwd", "after_layout", None),
     ("attention_fwd", "after_layout", None),
     ("bf16_mixed_precision", "after_layout", "is a bf16 x bf16 = f32 dot")],
)
def test_refusals_of_corpus_modules(name, stage, expected):
    reason = refusal_reason(parse_file(shared_path("corpus", f"{name}.{stage}.hlo")))
    assert reason == expected if expected is None else expected in reason


def test_dots_in_the_types_xla_cpu_lacks_unfused_are_refused():
    # Measured: bf16 x bf16 = f32 and f16 x f16 = f32 "Unsupported element type for
    # DotThunk::Execute", bf16 x bf16 = bf16 a RET_CHECK in the dot emitter; f16 and f32 run.
    dot = ("HloModule d, entry_computation_layout={(IN[8,8]{1,0}, IN[8,8]{1,0})->OUT[8,8]{1,0}}\n"
           "ENTRY e {\n  a = IN[8,8]{1,0} parameter(0)\n  b = IN[8,8]{1,0} parameter(1)\n"
           "  ROOT d = OUT[8,8]{1,0} dot(a, b), lhs_contracting_dims={1}, "
           "rhs_contracting_dims={0}\n}\n")
    for t, r in (("bf16", "f32"), ("bf16", "bf16"), ("f16", "f32")):
        refused = refusal_reason(parse_module(dot.replace("IN", t).replace("OUT", r)))
        assert refused is not None and f"%d in e is a {t} x {t} = {r} dot" in refused
    for t in ("f32", "f16"):
        assert refusal_reason(parse_module(dot.replace("IN", t).replace("OUT", t))) is None


def test_a_module_without_layouts_is_refused_before_running():
    text = re.sub(r"\]\{[0-9,]*\}", "]", ROW_MAJOR)  # every shape's layout, not dimensions=
    run = run_modules([("plain", parse_module(text))])
    assert "has no layout" in run.executions[0].refusal


def test_abort_message_names_the_check_that_failed():
    stderr = "noise\nF0000 00:00 buffer_assignment.cc:1] Check failed: x == y \n*** Check failure\n"
    assert abort_message(-6, stderr) == (
        "XLA aborted the process (SIGABRT): F0000 00:00 buffer_assignment.cc:1] Check failed: x == y"
    )


def test_xla_layout_assignment_of_a_corpus_module_runs_and_agrees():
    before = shared_path("corpus", "reduce_3d.before_layout.hlo").read_text()
    theirs = parse_module(xla_layout_assignment(before))
    assert refusal_reason(theirs) is None
    reference = parse_file(shared_path("corpus", "reduce_3d.after_layout.hlo"))
    run = run_modules([("corpus", reference), ("fresh", theirs)], seed=1)
    assert run.matches(1).ok


def test_dump_stages_gives_three_parseable_stages():
    stages = dump_stages(lambda x: (x @ x.T).sum(0), np.ones((8, 4), np.float32), name="gram")
    assert stages.name == "gram"
    modules = [parse_module(t) for t in (stages.pre, stages.before_layout, stages.after_layout)]
    assert refusal_reason(modules[2]) is None
    assert any(i.opcode == "dot" for i in modules[1].entry.instructions)


def test_missing_jax_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(availability.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(XlaUnavailable, match=r"pip install 'hlo-layout\[xla\]'"):
        run_modules([("row", parse_module(ROW_MAJOR))])


def test_the_calibration_pairs_compute_the_same_in_xla():
    # XLA's own execution as the oracle: each pair the fit compares does the same work in two
    # forms, so XLA must give the same outputs for both (an argmax column and row reduction,
    # a major-only transpose standalone and in XLA's form).
    from service.calibration.microbenchmarks import (MAJOR_SHAPES, major_transpose_group,
                                                     reduction_group)

    argmax = {b.kind: b.module for b in reduction_group(32, elements=1 << 12).benches}
    major = {b.kind: b.module for b in major_transpose_group(*MAJOR_SHAPES[0]).benches}
    a, b, c = MAJOR_SHAPES[0]
    for first, second in ((argmax["argcol_32"], argmax["argrow_32"]),
                          (major[f"mform_{a}x{b}x{c}"], major[f"major_{a}x{b}x{c}"])):
        run = run_modules([("one", first), ("two", second)], seed=1)
        assert all(e.refusal is None for e in run.executions)
        compared = run.matches(1)
        assert compared is not None and compared.ok and compared.exact


def test_the_childs_time_limit_grows_with_the_instructions_it_compiles():
    from service.xla.execution import TIMEOUT_BASE_S, TIMEOUT_PER_INSTRUCTION_S, default_timeout_s

    module = parse_module(TRANSPOSE)
    count = sum(len(c.instructions) for c in module.computations)
    assert default_timeout_s([]) == TIMEOUT_BASE_S
    assert default_timeout_s([module] * 3) == TIMEOUT_BASE_S + 3 * count * TIMEOUT_PER_INSTRUCTION_S
