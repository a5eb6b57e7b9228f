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
    result = assign(parse_module(stages.before_layout), AssignOptions(target="cpu", time_limit=5))
    calls = [i for i in result.module.entry.instructions if i.opcode == "custom-call"]
    assert len(calls) == 1
    operand = result.module.entry.instruction(calls[0].operands[0])
    assert operand.shape.layout.minor_to_major == (1, 0)
    run = run_modules([("xla", parse_module(stages.after_layout)), ("ours", result.module)],
                      seed=2)
    assert run.executions[1].refusal is None
    assert run.matches(1).ok
