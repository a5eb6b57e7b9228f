"""Random arguments for a module's entry parameters, drawn inside the domains of the functions they feed.

Distributions (deterministic per generator): floats are standard normal (complex: normal real and
imaginary parts); ``pred`` is a fair coin; integers are uniform in ``[0, 8)`` (``[0, 2)`` for 1- to
4-bit types), which keeps every integer parameter a valid index for gathers, dynamic slices and
scatters and keeps loop bounds small.

Domain-aware floats: a float parameter that reaches an operand of a function defined only on part of
the real line (``log``, ``log-plus-one``, ``sqrt``, ``rsqrt``, the base of ``power``; ``acos``-like
expansions such as ``sqrt(1 - x*x)``) through elementwise and data-movement instructions of the same
computation is drawn uniform in ``[0.05, 0.95]``, which lies inside all of those domains. The walk
stops at instructions whose results no longer carry the sign or size of one input element (dots,
convolutions, reductions, ``exponential``, ``logistic``, ``abs``), so a ``log`` of a sum of
exponentials does not restrict the inputs of a softmax.
"""

from __future__ import annotations

import numpy as np

from hlo.interpreter.values import TOKEN, InterpretError, Value, dtype_of
from hlo.ir import Computation, Module
from hlo.shape import ArrayShape, Shape, TokenShape, TupleShape

#: opcode -> operand numbers that must lie in the function's domain.
DOMAIN_OPERANDS: dict[str, tuple[int, ...]] = {
    "log": (0,), "log-plus-one": (0,), "sqrt": (0,), "rsqrt": (0,), "power": (0,),
}
#: Instructions the walk back from a domain operand does not cross.
_STOP = frozenset({
    "dot", "convolution", "reduce", "reduce-window", "exponential", "logistic", "abs", "sort",
    "while", "conditional", "call", "custom-call", "fusion", "scatter", "select-and-scatter",
    "rng", "rng-bit-generator", "iota", "constant",
})
UNIT_INTERVAL = (0.05, 0.95)


def restricted_parameters(module: Module) -> frozenset[int]:
    """Numbers of the entry parameters drawn in :data:`UNIT_INTERVAL` (see the module docstring)."""
    return _walk(module.entry)


def _walk(comp: Computation) -> frozenset[int]:
    by_name = {i.name: i for i in comp.instructions}
    todo = [
        instr.operands[k]
        for instr in comp.instructions
        for k in DOMAIN_OPERANDS.get(instr.opcode, ())
        if k < len(instr.operands)
    ]
    seen: set[str] = set()
    found: set[int] = set()
    while todo:
        name = todo.pop()
        if name in seen or name not in by_name:
            continue
        seen.add(name)
        instr = by_name[name]
        if instr.opcode == "parameter":
            found.add(int(instr.attr("parameter_number", 0)))
        elif instr.opcode not in _STOP:
            todo.extend(instr.operands)
    return frozenset(found)


def random_value(
    shape: Shape, rng: np.random.Generator, float_scale: float = 1.0, restricted: bool = False
) -> Value:
    """A random argument for ``shape``; ``float_scale`` multiplies the spread of normal floats."""
    if isinstance(shape, TupleShape):
        return tuple(random_value(s, rng, float_scale, restricted) for s in shape.elements)
    if isinstance(shape, TokenShape):
        return TOKEN
    if not isinstance(shape, ArrayShape):
        raise InterpretError(f"cannot make an argument of shape {shape}")
    dtype = dtype_of(shape.element_type)
    dims = shape.dims
    if dtype == np.bool_:
        return rng.integers(0, 2, size=dims).astype(bool)
    if dtype.kind == "c":
        return np.asarray(float_scale * (rng.standard_normal(dims) + 1j * rng.standard_normal(dims))).astype(dtype)
    if dtype.kind in "iu" or shape.element_type[0] in "su":
        hi = 8 if shape.element_type not in ("s1", "u1", "s2", "u2", "s4") else 2
        return rng.integers(0, hi, size=dims).astype(np.int64).astype(dtype)
    if restricted:
        return rng.uniform(*UNIT_INTERVAL, size=dims).astype(dtype)
    return np.asarray(float_scale * rng.standard_normal(dims), np.float64).astype(dtype)


def random_arguments(module: Module, rng: np.random.Generator, float_scale: float = 1.0) -> list[Value]:
    restricted = restricted_parameters(module)
    return [
        random_value(p.shape, rng, float_scale, int(p.attr("parameter_number", n)) in restricted)
        for n, p in enumerate(module.entry.parameter_instructions())
    ]
