"""Result shapes per opcode, layout-insensitive (XLA's ``ShapeInference``).

:func:`infer_shape` returns the shape an instruction must have given its operands'
shapes and attributes (element types and dims; layouts are not looked at), or
``None`` when the result is free (``parameter``, ``custom-call``, ``bitcast``,
async wrappers, host transfers). It raises :class:`~hlo.errors.VerifyError`
(without a location) when operands and attributes are inconsistent.

>>> # add(f32[2,3], f32[2,3]) -> f32[2,3]; dot(f32[2,3], f32[3,5]) -> f32[2,5]

Operand counts are checked separately by :func:`operand_count_problem`, so that
rules may index operands freely.
"""

from __future__ import annotations

from typing import Callable

from hlo.ir import Computation, Instruction
from hlo.opcode_facts import ELEMENTWISE_BINARY, ELEMENTWISE_UNARY
from hlo.shape import Shape
from hlo.shape_inference import collectives, contraction, control, elementwise, movement
from hlo.shape_inference import numerics, reduction
from hlo.shape_inference.operands import Context, compatible, fail

__all__ = [
    "KNOWN_OPCODES",
    "compatible",
    "infer_shape",
    "operand_count_problem",
]

Rule = Callable[[Context], "Shape | None"]

_RULES: dict[str, Rule] = {
    **elementwise.RULES,
    **movement.RULES,
    **contraction.RULES,
    **reduction.RULES,
    **control.RULES,
    **collectives.RULES,
    **numerics.RULES,
}

#: Opcodes whose result shape is set by the producer, not derivable from operands.
FREE_OPCODES = frozenset({
    "parameter", "custom-call", "bitcast", "async-start", "async-update", "async-done",
    "all-reduce-start", "all-reduce-done", "all-gather-start", "all-gather-done",
    "collective-permute-start", "collective-permute-done", "send", "send-done", "recv",
    "recv-done", "infeed", "outfeed", "ragged-all-to-all", "ragged-dot", "composite", "scan",
})

KNOWN_OPCODES = frozenset(_RULES) | FREE_OPCODES


def _is_async_form(opcode: str) -> bool:
    """``custom-call-start`` and friends: XLA's sugar for async wrappers of an op."""
    for suffix in ("-start", "-update", "-done"):
        if opcode.endswith(suffix) and opcode[: -len(suffix)] in KNOWN_OPCODES:
            return True
    return False

# (minimum, maximum or None for unbounded) operand counts. Opcodes with a
# parity rule (reduce: N inputs + N inits) are refined in the rules themselves.
_EXACT = {
    **{op: 1 for op in ELEMENTWISE_UNARY},
    **{op: 2 for op in ELEMENTWISE_BINARY},
    "reduce-precision": 1, "convert": 1, "bitcast-convert": 1, "select": 3, "clamp": 3,
    "broadcast": 1, "reshape": 1, "transpose": 1, "slice": 1, "pad": 2, "reverse": 1,
    "iota": 0, "gather": 2, "convolution": 2, "get-tuple-element": 1, "while": 1,
    "bitcast": 1, "fft": 1, "cholesky": 1, "triangular-solve": 2, "batch-norm-training": 3,
    "batch-norm-inference": 5, "batch-norm-grad": 5, "select-and-scatter": 3, "rng": 2,
    "rng-bit-generator": 1, "rng-get-and-update-state": 0, "parameter": 0, "constant": 0,
    "partition-id": 0, "replica-id": 0, "topk": 1, "opt-barrier": 1, "domain": 1,
    "add-dependency": 2, "get-dimension-size": 1, "set-dimension-size": 2, "copy-start": 1,
    "copy-done": 1, "send": 2, "send-done": 1, "recv": 1, "recv-done": 1, "infeed": 1,
    "outfeed": 2, "all-reduce-done": 1, "all-gather-done": 1,
    "collective-permute-done": 1, "async-update": 1, "async-done": 1,
}
_AT_LEAST = {
    "dot": 2, "sort": 1, "reduce": 2, "reduce-window": 2, "scatter": 3,
    "dynamic-slice": 2, "dynamic-update-slice": 3, "concatenate": 1, "map": 1,
    "conditional": 2, "all-reduce": 1, "all-gather": 1, "all-to-all": 1, "reduce-scatter": 1,
    "collective-broadcast": 1, "collective-permute": 1, "dynamic-reshape": 1,
}


def operand_count_problem(opcode: str, count: int) -> str | None:
    """Why ``count`` operands are wrong for ``opcode``, or ``None`` when they are fine."""
    if opcode in _EXACT and count != _EXACT[opcode]:
        return f"{opcode} takes {_EXACT[opcode]} operand(s), got {count}"
    if opcode in _AT_LEAST and count < _AT_LEAST[opcode]:
        return f"{opcode} takes at least {_AT_LEAST[opcode]} operand(s), got {count}"
    if opcode in ("reduce", "reduce-window") and count % 2:
        return f"{opcode} takes N inputs and N init values, got {count} operands"
    if opcode == "scatter" and count % 2 == 0:
        return f"scatter takes N operands, the indices and N updates, got {count} operands"
    return None


def infer_shape(
    instr: Instruction,
    operands: tuple[Shape, ...],
    lookup: Callable[[str], Computation],
) -> Shape | None:
    """The layout-free shape ``instr`` must have, or ``None`` when it is free.

    ``operands`` are the operand shapes in order; ``lookup`` finds a called
    computation by name (the caller checks that it exists).
    """
    rule = _RULES.get(instr.opcode)
    if rule is None:
        if instr.opcode in FREE_OPCODES or _is_async_form(instr.opcode):
            return None
        fail(f"unknown opcode '{instr.opcode}'")
    return rule(Context(instr, operands, lookup))
