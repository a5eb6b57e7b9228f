"""Control flow and calls: ``while``, ``conditional``, ``call``, ``fusion``, ``scan``."""

from __future__ import annotations

import numpy as np

from hlo.interpreter.machine import Machine, computation_attr, ints, register
from hlo.interpreter.values import Value, zeros_for
from hlo.ir import ComputationRef, Instruction
from hlo.shape import TupleShape


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


@register("scan")
def _scan(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    """XLA's ``scan`` (what its ScanExpander lowers to a while loop).

    Operands are ``inputs..., inits...`` (``num_carries`` inits). Step ``i`` (from
    the last index down when ``is_reverse``) calls ``to_apply(inputs[..i..],
    carries...)`` with the inputs sliced at ``i`` along ``dimensions={d}`` (that
    dim removed); it returns ``(outputs..., new carries...)`` (a lone value when
    there is one output or one carry). Output ``j`` stacks the step outputs at
    their step's index along ``d``. The result is ``(outputs..., final
    carries...)``, or its only element when the shape is not a tuple. A length-0
    scan gives zero outputs and the inits.
    """
    carries_count = int(instr.attr("num_carries", 0))
    dim = int(ints(instr, "dimensions")[0])
    inputs, carries = list(ops[: len(ops) - carries_count]), list(ops[len(ops) - carries_count:])
    shapes = instr.shape.elements if isinstance(instr.shape, TupleShape) else (instr.shape,)
    out_shapes = shapes[: len(shapes) - carries_count]
    outputs = [zeros_for(s) for s in out_shapes]
    length = inputs[0].shape[dim] if inputs else (outputs[0].shape[dim] if outputs else 0)
    name = computation_attr(instr, "to_apply")
    steps = range(length - 1, -1, -1) if bool(instr.attr("is_reverse", False)) else range(length)
    for i in steps:
        sliced = [np.take(x, i, axis=dim) for x in inputs]
        value = m.run(name, [*sliced, *carries])
        parts = list(value) if isinstance(value, tuple) else [value]
        for out, part in zip(outputs, parts[: len(outputs)]):
            index = [slice(None)] * out.ndim
            index[dim] = i
            out[tuple(index)] = part
        carries = parts[len(outputs):]
    result = [*outputs, *carries]
    return tuple(result) if isinstance(instr.shape, TupleShape) else result[0]
