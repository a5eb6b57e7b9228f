"""``gather`` and ``scatter`` with full dimension numbers (incl. batching dims).

Gather clamps each slice start into the operand (XLA semantics). Scatter skips
an update whose whole window does not fit inside the operand, and applies the
``to_apply`` combiner to colliding indices one after another in the order of
the updates (row-major over the update scatter dims), as a sequential
implementation would.
"""

from __future__ import annotations

import numpy as np

from hlo.interpreter.machine import Machine, computation_attr, ints, register
from hlo.interpreter.values import Value
from hlo.ir import Instruction


def _index_array(indices: np.ndarray, index_vector_dim: int) -> np.ndarray:
    """Indices with the index vector as the last dim (int64)."""
    idx = indices.astype(np.int64)
    if index_vector_dim == idx.ndim:
        return idx[..., None]
    return np.moveaxis(idx, index_vector_dim, -1)


def _batch_position(indices_dim: int, index_vector_dim: int) -> int:
    """Position of an indices dim among the batch dims (indices dims minus the vector dim)."""
    return indices_dim - (1 if indices_dim > index_vector_dim else 0)


def _place(values: np.ndarray, dims: list[int], rank: int) -> np.ndarray:
    """Put the axes of ``values`` at output dims ``dims`` (size-1 elsewhere)."""
    view = [1] * rank
    for axis, d in enumerate(dims):
        view[d] = values.shape[axis]
    return values.reshape(view)


@register("gather")
def _gather(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    operand, indices = ops
    offset_dims = ints(instr, "offset_dims", ())
    collapsed = ints(instr, "collapsed_slice_dims", ())
    start_index_map = ints(instr, "start_index_map", ())
    ivd = ints(instr, "index_vector_dim", (indices.ndim,))[0]
    slice_sizes = ints(instr, "slice_sizes")
    op_batching = ints(instr, "operand_batching_dims", ())
    idx_batching = ints(instr, "start_indices_batching_dims", ())

    idx = _index_array(indices, ivd)
    batch_shape = idx.shape[:-1]
    out_shape = instr.array_shape.dims
    out_rank = len(out_shape)
    batch_out_dims = [d for d in range(out_rank) if d not in offset_dims]
    window_operand_dims = [
        d for d in range(operand.ndim) if d not in collapsed and d not in op_batching
    ]
    index: list[np.ndarray] = []
    for d in range(operand.ndim):
        component = np.zeros((1,) * out_rank, np.int64)
        if d in start_index_map:
            k = start_index_map.index(d)
            start = np.clip(idx[..., k], 0, operand.shape[d] - slice_sizes[d])
            component = component + _place(start, batch_out_dims, out_rank)
        if d in op_batching:
            which = idx_batching[op_batching.index(d)]
            axis = _batch_position(which, ivd)
            iota = np.arange(batch_shape[axis], dtype=np.int64)
            component = component + _place(iota, [batch_out_dims[axis]], out_rank)
        if d in window_operand_dims:
            out_dim = offset_dims[window_operand_dims.index(d)]
            component = component + _place(np.arange(slice_sizes[d], dtype=np.int64), [out_dim], out_rank)
        index.append(component)
    return np.broadcast_to(operand[tuple(index)], out_shape).copy()


def combine_into(
    m: Machine, name: str, targets: list[np.ndarray], where: np.ndarray, updates: list[np.ndarray]
) -> list[np.ndarray]:
    """Apply ``targets[where[j]] = f(targets[where[j]], updates[j])`` for j in order.

    ``targets`` are flat arrays (copied, not modified). Colliding indices are
    applied in rounds, each round touching every index at most once, so the
    combiner runs batched but in the sequential order.
    """
    from hlo.interpreter.reduce_ops import simple_reducer

    out = [t.copy() for t in targets]
    if where.size == 0:
        return out
    op = simple_reducer(m, name) if len(out) == 1 else None
    native = out[0].dtype.kind in "iuf" and out[0].dtype.type.__module__ == "numpy"
    if op in ("add", "maximum", "minimum", "multiply") and native:
        ufunc = {"add": np.add, "maximum": np.maximum, "minimum": np.minimum, "multiply": np.multiply}[op]
        ufunc.at(out[0], where, updates[0].astype(out[0].dtype))
        return out
    order = np.argsort(where, kind="stable")
    sorted_where = where[order]
    group_start = np.r_[0, np.flatnonzero(np.diff(sorted_where)) + 1]
    starts = np.repeat(group_start, np.diff(np.r_[group_start, sorted_where.size]))
    rank = np.empty(where.size, np.int64)
    rank[order] = np.arange(where.size) - starts
    for r in range(int(rank.max()) + 1):
        sel = rank == r
        at = where[sel]
        value = m.apply_scalar(name, [*(t[at] for t in out), *(u[sel] for u in updates)])
        values = list(value) if isinstance(value, tuple) else [value]
        for t, v in zip(out, values):
            t[at] = v
    return out


@register("scatter")
def _scatter(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    n = (len(ops) - 1) // 2
    operands, indices, updates = ops[:n], ops[n], ops[n + 1 :]
    window_dims = ints(instr, "update_window_dims", ())
    inserted = ints(instr, "inserted_window_dims", ())
    to_operand = ints(instr, "scatter_dims_to_operand_dims", ())
    ivd = ints(instr, "index_vector_dim", (indices.ndim,))[0]
    in_batching = ints(instr, "input_batching_dims", ())
    idx_batching = ints(instr, "scatter_indices_batching_dims", ())
    name = computation_attr(instr, "to_apply")

    operand_shape = operands[0].shape
    rank = operands[0].ndim
    idx = _index_array(indices, ivd)
    upd = updates[0]
    scatter_dims = [d for d in range(upd.ndim) if d not in window_dims]
    window_operand_dims = [d for d in range(rank) if d not in inserted and d not in in_batching]
    window_size = [1] * rank
    for u_dim, o_dim in zip(window_dims, window_operand_dims):
        window_size[o_dim] = upd.shape[u_dim]

    # Per update-scatter position: the window start in the operand.
    scatter_shape = tuple(upd.shape[d] for d in scatter_dims)
    starts = []
    for d in range(rank):
        s = np.zeros(scatter_shape, np.int64)
        if d in to_operand:
            s = s + idx[..., to_operand.index(d)].reshape(scatter_shape)
        if d in in_batching:
            axis = _batch_position(idx_batching[in_batching.index(d)], ivd)
            s = s + _place(np.arange(scatter_shape[axis], dtype=np.int64), [axis], len(scatter_shape))
        starts.append(np.broadcast_to(s, scatter_shape))
    fits = np.ones(scatter_shape, bool)
    for d in range(rank):
        fits &= (starts[d] >= 0) & (starts[d] <= operand_shape[d] - window_size[d])

    # Full operand index of every update element, in update row-major order.
    u_rank = upd.ndim
    flat = np.zeros(upd.shape, np.int64)
    stride = 1
    for d in reversed(range(rank)):
        comp = _place(starts[d], scatter_dims, u_rank)
        if d in window_operand_dims:
            u_dim = window_dims[window_operand_dims.index(d)]
            comp = comp + _place(np.arange(upd.shape[u_dim], dtype=np.int64), [u_dim], u_rank)
        flat = flat + comp * stride
        stride *= operand_shape[d]
    ok = np.broadcast_to(_place(fits, scatter_dims, u_rank), upd.shape).reshape(-1)
    where = flat.reshape(-1)[ok]
    result = combine_into(
        m, name, [o.reshape(-1) for o in operands], where, [u.reshape(-1)[ok] for u in updates]
    )
    shaped = [r.reshape(operand_shape) for r in result]
    return tuple(shaped) if n > 1 else shaped[0]
