"""Custom-calls whose layouts XLA's compiler checks: the emitted module must compile, not only
parse. The oracle is XLA:CPU itself (its ``TopK`` requires a dim-0-major operand)."""

from __future__ import annotations

import numpy as np
import pytest

from hlo.parser import parse_module
from service.xla.execution import run_modules
from solver.layout_assignment.assign import assign
from solver.layout_assignment.options import AssignOptions

pytestmark = pytest.mark.xla


def test_topk_of_a_transpose_gets_a_dim0_major_operand_and_compiles():
    import jax

    from service.xla.stages import dump_stages

    stages = dump_stages(lambda x: jax.lax.top_k(x.T * 2.0, 5), np.ones((64, 32), np.float32),
                         name="topk_of_transpose")
    result = assign(parse_module(stages.before_layout), "cpu", AssignOptions(time_limit_s=5))
    calls = [i for i in result.module.entry.instructions if i.opcode == "custom-call"]
    assert len(calls) == 1
    operand = result.module.entry.instruction(calls[0].operands[0])
    assert operand.shape.layout.minor_to_major == (1, 0)
    run = run_modules([("xla", parse_module(stages.after_layout)), ("ours", result.module)],
                      seed=2)
    assert run.executions[1].refusal is None
    assert run.matches(1).ok


BATCHED_DOT = """HloModule bmm, entry_computation_layout={(f32[4,8,16,32]{3,2,1,0}, f32[4,8,32,16]{3,2,1,0})->f32[4,8,16,16]{3,2,1,0}}
ENTRY e {
  a = f32[4,8,16,32]{3,2,1,0} parameter(0)
  b = f32[4,8,32,16]{3,2,1,0} parameter(1)
  t = f32[8,4,16,32]{3,2,1,0} transpose(a), dimensions={1,0,2,3}
  u = f32[8,4,32,16]{3,2,1,0} transpose(b), dimensions={1,0,2,3}
  d = f32[8,4,16,16]{3,2,1,0} dot(t, u), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, rhs_contracting_dims={2}
  ROOT r = f32[4,8,16,16]{3,2,1,0} transpose(d), dimensions={1,0,2,3}
}
"""


def test_every_variant_of_a_batched_dot_compiles_in_xla():
    """XLA:CPU's dot emitter requires batch dims most major, in order (a hard rule of the cpu
    target; in another order it computes wrong numbers without an error):
    ours, all-default, greedy and random assignments all compile and agree."""
    from solver.layout_assignment.variants import layout_variants

    module = parse_module(BATCHED_DOT)
    options = AssignOptions(time_limit_s=5)
    variants = {"ours": assign(module, "cpu", options).module,
                **layout_variants(module, "cpu", options, count=4, seed=1)}
    run = run_modules([("input", module), *variants.items()], seed=3)
    assert [e.refusal for e in run.executions] == [None] * (1 + len(variants))
    assert all(run.matches(k).ok for k in range(1, len(run.executions)))


def test_fft_operands_are_dim0_major_so_the_result_compiles():
    """XLA:CPU's FFT checks IsMonotonicWithDim0Major when it compiles (a hard rule of the cpu
    target); without it ours gave an FFT a transposed operand that XLA refused."""
    from conftest import shared_path

    before = parse_module(shared_path("corpus", "fft_1d.before_layout.hlo").read_text())
    xla = parse_module(shared_path("corpus", "fft_1d.after_layout.hlo").read_text())
    ours = assign(before, "cpu", AssignOptions(time_limit_s=5)).module
    run = run_modules([("xla", xla), ("ours", ours)], seed=5)
    assert run.executions[1].refusal is None
    assert run.matches(1).ok
