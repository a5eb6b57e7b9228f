"""Control flow and calls: ``while``, ``conditional``, ``call``, ``fusion``."""

from __future__ import annotations

import numpy as np

from hlo.interpreter.machine import Machine, computation_attr, error_at, register
from hlo.interpreter.values import Value
from hlo.ir import ComputationRef, Instruction


@register("call")
def _call(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    return m.run(computation_attr(instr, "to_apply"), ops)


@register("fusion")
def _fusion(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    return m.run(computation_attr(instr, "calls"), ops)


@register("while")
def _while(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    condition = m.computation(computation_attr(instr, "condition"))
    body = m.computation(computation_attr(instr, "body"))
    state = ops[0]
    while bool(np.asarray(m.run(condition, [state]))):
        state = m.run(body, [state])
    return state


@register("conditional")
def _conditional(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    selector = np.asarray(ops[0])
    branches = instr.attr("branch_computations")
    if branches is not None:
        names = [b.name if isinstance(b, ComputationRef) else str(b) for b in branches]
        index = int(selector.astype(np.int64))
        # An index out of range runs the last branch (XLA semantics).
        if not 0 <= index < len(names):
            index = len(names) - 1
        return m.run(names[index], [ops[1 + index]])
    true_name = computation_attr(instr, "true_computation")
    false_name = computation_attr(instr, "false_computation")
    if bool(selector):
        return m.run(true_name, [ops[1]])
    return m.run(false_name, [ops[2]])
