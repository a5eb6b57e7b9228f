"""Data movement opcodes: the result depends on logical values only.

``bitcast`` is the exception: it goes through :mod:`hlo.interpreter.physical`.
"""

from __future__ import annotations

import numpy as np

from hlo.interpreter.elementwise import convert_array
from hlo.interpreter.machine import Machine, error_at, ints, register
from hlo.interpreter.values import TOKEN, Value, dtype_of
from hlo.ir import Instruction, Literal, PaddingConfig, SliceRange
from hlo.shape import ArrayShape, TupleShape


def literal_value(literal: Literal, instr: Instruction) -> Value:
    shape = literal.shape
    if isinstance(shape, TupleShape):
        return tuple(literal_value(e, instr) for e in literal.elements)
    if not isinstance(shape, ArrayShape):
        raise error_at(instr, f"constant of shape {shape} is not supported")
    if literal.values is None:
        raise error_at(instr, "constant value was elided ({...}); it cannot be executed")
    dtype = dtype_of(shape.element_type)
    values = literal.values
    if len(values) == 1 and shape.element_count != 1:
        values = values * shape.element_count
    if len(values) != shape.element_count:
        raise error_at(instr, f"constant has {len(values)} values for {shape.dims_text()}")
    if dtype.kind in "iu" or dtype == np.bool_:
        array = np.array([int(v) for v in values], dtype=object).astype(dtype)
    else:
        array = np.array(values, dtype=np.complex128 if dtype.kind == "c" else np.float64).astype(dtype)
    return array.reshape(shape.dims)


@register("constant")
def _constant(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    for _, value in instr.attributes:
        if isinstance(value, Literal):
            return literal_value(value, instr)
    raise error_at(instr, "constant without a literal")


@register("tuple")
def _tuple(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    return tuple(ops)


@register("get-tuple-element")
def _gte(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    return ops[0][int(instr.attr("index"))]


@register("copy", "opt-barrier", "optimization-barrier")
def _copy(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    return ops[0]


@register("after-all", "add-dependency")
def _after_all(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    return ops[0] if instr.opcode == "add-dependency" else TOKEN


@register("bitcast")
def _bitcast(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    if m.batched:
        return ops[0]
    from hlo.interpreter.physical import reinterpret_physical

    return reinterpret_physical(m, instr, ops[0])


@register("broadcast")
def _broadcast(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    x = ops[0]
    if m.batched:
        return x
    out_dims = instr.array_shape.dims
    dims = ints(instr, "dimensions", ())
    order = sorted(range(len(dims)), key=lambda k: dims[k])
    x = np.transpose(x, order)
    view = [1] * len(out_dims)
    for k in order:
        view[dims[k]] = x.shape[order.index(k)]
    # A read-only view: handlers never write into their operands.
    return np.broadcast_to(x.reshape(view), out_dims)


@register("reshape")
def _reshape(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    if m.batched:
        return ops[0]
    return ops[0].reshape(instr.array_shape.dims)


@register("transpose")
def _transpose(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    return np.array(np.transpose(ops[0], ints(instr, "dimensions")), order="C")


@register("slice")
def _slice(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    ranges = instr.attr("slice")
    if ranges is None:
        raise error_at(instr, "missing attribute 'slice'")
    if isinstance(ranges, SliceRange):
        ranges = (ranges,)
    index = tuple(slice(r.start, r.limit, r.stride) for r in ranges)
    return ops[0][index].copy()


def pad_array(x: np.ndarray, value: np.ndarray, config: PaddingConfig) -> np.ndarray:
    """XLA ``pad``: low/high edge padding (negative crops) and interior padding."""
    out = x
    for dim, p in enumerate(config.dims):
        n = out.shape[dim]
        dilated = (n - 1) * (p.interior + 1) + 1 if n > 0 else 0
        low, high = max(p.low, 0), max(p.high, 0)
        shape = list(out.shape)
        shape[dim] = low + dilated + high
        buf = np.full(shape, value, dtype=x.dtype)
        place = [slice(None)] * out.ndim
        place[dim] = slice(low, low + dilated, p.interior + 1)
        buf[tuple(place)] = out
        crop = [slice(None)] * out.ndim
        crop[dim] = slice(-p.low if p.low < 0 else 0, shape[dim] - (-p.high if p.high < 0 else 0))
        out = buf[tuple(crop)]
    return np.array(out, order="C")


@register("pad")
def _pad(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    config = instr.attr("padding")
    if not isinstance(config, PaddingConfig):
        raise error_at(instr, "missing attribute 'padding'")
    return pad_array(ops[0], ops[1], config)


@register("concatenate")
def _concatenate(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    return np.concatenate(ops, axis=ints(instr, "dimensions")[0])


@register("reverse")
def _reverse(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    return np.flip(ops[0], axis=ints(instr, "dimensions")).copy()


@register("iota")
def _iota(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    shape = instr.array_shape
    dim = ints(instr, "iota_dimension")[0]
    view = [1] * shape.rank
    view[dim] = shape.dims[dim]
    values = np.arange(shape.dims[dim], dtype=np.int64).reshape(view)
    out = convert_array(values, dtype_of(shape.element_type))
    return np.broadcast_to(out, shape.dims)


def _start_indices(instr: Instruction, starts: list[np.ndarray], operand: tuple[int, ...], sizes: tuple[int, ...]) -> tuple[int, ...]:
    if len(starts) == 1 and starts[0].ndim == 1 and len(operand) != 1:
        starts = list(starts[0])  # the old single-index-vector form
    if len(starts) != len(operand):
        raise error_at(instr, f"{len(starts)} start indices for a rank-{len(operand)} operand")
    # Start indices are clamped so the whole slice stays inside the operand.
    return tuple(
        int(min(max(int(np.asarray(s).astype(np.int64)), 0), d - k))
        for s, d, k in zip(starts, operand, sizes)
    )


@register("dynamic-slice")
def _dynamic_slice(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    x = ops[0]
    sizes = ints(instr, "dynamic_slice_sizes")
    start = _start_indices(instr, ops[1:], x.shape, sizes)
    return x[tuple(slice(s, s + k) for s, k in zip(start, sizes))].copy()


@register("dynamic-update-slice")
def _dynamic_update_slice(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    x, update = ops[0], ops[1]
    start = _start_indices(instr, ops[2:], x.shape, update.shape)
    out = x.copy()
    out[tuple(slice(s, s + k) for s, k in zip(start, update.shape))] = update
    return out
