"""``reduce``, ``reduce-window``, ``select-and-scatter``, ``map``.

A reducer that is exactly one of add/multiply/maximum/minimum/and/or/xor of
its two parameters runs as one numpy reduction (float add/multiply accumulate
in f64 and round once, see :mod:`hlo.interpreter.dot_conv`). Any other reducer,
and every variadic reduce, applies the ``to_apply`` computation faithfully:
element by element along the reduced dims in index order, batched over all
output positions at once.
"""

from __future__ import annotations

import numpy as np

from hlo.interpreter.dot_conv import accumulation_dtype
from hlo.interpreter.machine import Machine, computation_attr, error_at, ints, register
from hlo.interpreter.shape_ops import pad_array
from hlo.interpreter.values import Value
from hlo.ir import Instruction, PaddingConfig, PaddingDim, Window

_SIMPLE_REDUCERS = frozenset({"add", "multiply", "maximum", "minimum", "and", "or", "xor"})


def simple_reducer(m: Machine, name: str) -> str | None:
    """The opcode when computation ``name`` is ``op(p0, p1)`` of one binary op, else None."""
    comp = m.computation(name)
    root = comp.root_instruction
    params = comp.parameter_instructions()
    if len(params) != 2 or root.opcode not in _SIMPLE_REDUCERS or len(comp.instructions) != 3:
        return None
    if sorted(root.operands) != sorted(p.name for p in params):
        return None
    return root.opcode


def _fold(op: str, x: np.ndarray, axes: tuple[int, ...], init: np.ndarray) -> np.ndarray:
    """Reduce ``x`` over ``axes`` with a simple ``op``, combined with ``init``."""
    out_dtype = x.dtype
    if op in ("add", "multiply") and x.dtype != np.bool_:
        acc = accumulation_dtype(out_dtype)
        wide = x.astype(acc)
        folded = wide.sum(axis=axes) if op == "add" else wide.prod(axis=axes)
        folded = folded + init.astype(acc) if op == "add" else folded * init.astype(acc)
        return np.asarray(folded).astype(out_dtype)
    ufunc = {
        "maximum": np.maximum, "minimum": np.minimum,
        "and": np.logical_and if x.dtype == np.bool_ else np.bitwise_and,
        "or": np.logical_or if x.dtype == np.bool_ else np.bitwise_or,
        "xor": np.logical_xor if x.dtype == np.bool_ else np.bitwise_xor,
        "add": np.logical_or, "multiply": np.logical_and,
    }[op]
    wide = x.astype(np.float32) if x.dtype.kind == "V" or (x.dtype.itemsize < 4 and x.dtype.kind == "f" and x.dtype != np.float16) else x
    out_shape = tuple(s for d, s in enumerate(x.shape) if d not in axes)
    if any(x.shape[d] == 0 for d in axes):
        return np.broadcast_to(init, out_shape).astype(out_dtype)
    folded = ufunc.reduce(wide, axis=axes) if axes else wide
    return np.asarray(ufunc(folded, init.astype(wide.dtype))).astype(out_dtype)


def _fold_sequential(m: Machine, name: str, xs: list[np.ndarray], axes: tuple[int, ...], inits: list[np.ndarray]) -> list[np.ndarray]:
    keep = [d for d in range(xs[0].ndim) if d not in axes]
    out_shape = tuple(xs[0].shape[d] for d in keep)
    moved = [np.transpose(x, (*keep, *axes)).reshape(*out_shape, -1) for x in xs]
    acc = [np.broadcast_to(i, out_shape).copy() for i in inits]
    for k in range(moved[0].shape[-1] if moved[0].ndim else 1):
        value = m.apply_scalar(name, [*acc, *(x[..., k] for x in moved)])
        acc = list(value) if isinstance(value, tuple) else [value]
    return acc


@register("reduce")
def _reduce(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    half = len(ops) // 2
    xs, inits = ops[:half], ops[half:]
    axes = tuple(sorted(ints(instr, "dimensions", ())))
    name = computation_attr(instr, "to_apply")
    op = simple_reducer(m, name) if half == 1 else None
    if op is not None:
        return _fold(op, xs[0], axes, inits[0])
    result = _fold_sequential(m, name, list(xs), axes, list(inits))
    return tuple(result) if half > 1 else result[0]


@register("map")
def _map(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    return m.apply_scalar(computation_attr(instr, "to_apply"), ops)


# ---------------------------------------------------------------------------
# Windows
# ---------------------------------------------------------------------------


def _window_dims(instr: Instruction, rank: int):
    window = instr.attr("window")
    if not isinstance(window, Window) or len(window.dims) != rank:
        raise error_at(instr, f"attribute 'window' must have {rank} dims")
    return window.dims


def _padded(x: np.ndarray, window, fill: np.ndarray) -> np.ndarray:
    config = PaddingConfig(
        tuple(PaddingDim(w.padding_low, w.padding_high, w.base_dilation - 1) for w in window)
    )
    return pad_array(x, fill, config)


def window_positions(window, padded_shape: tuple[int, ...], out_shape: tuple[int, ...]):
    """For each position inside the window, the strided slice of the padded operand."""
    for kpos in np.ndindex(*(w.size for w in window)):
        index = []
        for d, (k, w) in enumerate(zip(kpos, window)):
            start = k * w.window_dilation
            index.append(slice(start, start + (out_shape[d] - 1) * w.stride + 1, w.stride))
        yield kpos, tuple(index)


@register("reduce-window")
def _reduce_window(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    half = len(ops) // 2
    xs, inits = ops[:half], ops[half:]
    window = _window_dims(instr, xs[0].ndim)
    name = computation_attr(instr, "to_apply")
    padded = [_padded(x, window, i) for x, i in zip(xs, inits)]
    out_shape = tuple(
        max((p - ((w.size - 1) * w.window_dilation + 1)) // w.stride + 1, 0)
        for p, w in zip(padded[0].shape, window)
    )
    op = simple_reducer(m, name) if half == 1 else None
    if op is not None and op in ("add", "multiply") and xs[0].dtype != np.bool_:
        acc_dtype = accumulation_dtype(xs[0].dtype)
        acc = np.broadcast_to(inits[0].astype(acc_dtype), out_shape).copy()
        src = padded[0].astype(acc_dtype)
        for _, index in window_positions(window, padded[0].shape, out_shape):
            acc = acc + src[index] if op == "add" else acc * src[index]
        return acc.astype(xs[0].dtype)
    if op is not None:
        slices = [padded[0][index] for _, index in window_positions(window, padded[0].shape, out_shape)]
        if not slices:
            return np.broadcast_to(inits[0], out_shape).copy()
        stacked = np.stack(slices, axis=-1)
        return _fold(op, stacked, (stacked.ndim - 1,), inits[0])
    acc = [np.broadcast_to(i, out_shape).copy() for i in inits]
    for _, index in window_positions(window, padded[0].shape, out_shape):
        value = m.apply_scalar(name, [*acc, *(p[index] for p in padded)])
        acc = list(value) if isinstance(value, tuple) else [value]
    return tuple(acc) if half > 1 else acc[0]


@register("select-and-scatter")
def _select_and_scatter(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    from hlo.interpreter.gather_scatter import combine_into

    operand, source, init = ops
    window = _window_dims(instr, operand.ndim)
    select = computation_attr(instr, "select")
    scatter = computation_attr(instr, "scatter")
    # Track each padded position's flat operand index (-1 for padding).
    flat = np.arange(operand.size, dtype=np.int64).reshape(operand.shape)
    padded_index = _padded(flat, window, np.asarray(-1, np.int64))
    padded_value = _padded(operand, window, np.zeros((), operand.dtype))
    out_shape = source.shape
    chosen_index = np.full(out_shape, -1, np.int64)
    chosen_value = np.zeros(out_shape, operand.dtype)
    for _, index in window_positions(window, padded_value.shape, out_shape):
        cand_index = padded_index[index]
        cand_value = padded_value[index]
        valid = cand_index >= 0
        keep = np.asarray(m.apply_scalar(select, [chosen_value, cand_value]), bool)
        take = valid & ((chosen_index < 0) | ~keep)
        chosen_index = np.where(take, cand_index, chosen_index)
        chosen_value = np.where(take, cand_value, chosen_value)
    result = np.broadcast_to(init, operand.shape).copy().reshape(-1)
    hit = chosen_index.reshape(-1) >= 0
    combined = combine_into(
        m, scatter, [result], chosen_index.reshape(-1)[hit], [source.reshape(-1)[hit]]
    )
    return combined[0].reshape(operand.shape)
