"""``sort``: stable, multi-operand, ordered by the comparator computation; ``topk``.

A bottom-up merge sort over every row at once: when two sorted runs merge,
each element finds its place in the other run by binary search, asking the
comparator (run batched over all elements) ``log n`` times per level. The
comparator is called exactly as XLA calls it (parameters ``2i``/``2i+1`` are
the two elements of operand ``i``); a left element goes before equal right
elements, which makes the sort stable for any strict weak order.
"""

from __future__ import annotations

import numpy as np

from hlo.interpreter.machine import Machine, computation_attr, error_at, ints, register
from hlo.interpreter.values import Value
from hlo.ir import Instruction


def stable_order(m: Machine, name: str, rows: list[np.ndarray]) -> np.ndarray:
    """Permutation (per row) that sorts ``rows`` (each ``(R, n)``) by comparator ``name``."""
    r_count, n = rows[0].shape
    perm = np.broadcast_to(np.arange(n, dtype=np.int64), (r_count, n)).copy()
    row_ids = np.arange(r_count)[:, None]
    pos = np.arange(n, dtype=np.int64)[None, :]
    width = 1
    while width < n:
        run = pos // (2 * width)
        left_start = run * (2 * width)
        right_start = left_start + width
        within = pos - left_start
        is_left = within < width
        left_len = np.minimum(width, n - left_start)
        right_len = np.clip(n - right_start, 0, width)
        own_index = np.where(is_left, within, within - width)
        other_start = np.where(is_left, right_start, left_start)
        lo = np.zeros((r_count, n), np.int64)
        hi = np.broadcast_to(np.where(is_left, right_len, left_len), (r_count, n)).copy()
        own = [np.take_along_axis(v, perm, axis=1) for v in rows]
        while True:
            active = lo < hi
            if not active.any():
                break
            mid = (lo + hi) // 2
            other_pos = np.minimum(other_start + mid, n - 1)
            other_src = perm[row_ids, other_pos]
            other = [v[row_ids, other_src] for v in rows]
            args: list[np.ndarray] = []
            for mine, theirs in zip(own, other):
                # left elements ask less(other, self); right elements less(self, other).
                args.append(np.where(is_left, theirs, mine))
                args.append(np.where(is_left, mine, theirs))
            less = np.asarray(m.apply_scalar(name, args), bool)
            go_right = np.where(is_left, less, ~less)
            lo = np.where(active & go_right, mid + 1, lo)
            hi = np.where(active & ~go_right, mid, hi)
        target = left_start + own_index + lo
        new_perm = np.full((r_count, n), -1, np.int64)
        new_perm[row_ids, target] = perm
        if (new_perm < 0).any():
            raise ValueError("the sort comparator is not a strict weak order")
        perm = new_perm
        width *= 2
    return perm


@register("sort")
def _sort(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    dim = ints(instr, "dimensions")[0]
    name = computation_attr(instr, "to_apply")
    moved = [np.moveaxis(x, dim, -1) for x in ops]
    shape = moved[0].shape
    if len(shape) == 0:
        raise error_at(instr, "sort of a scalar")
    n = shape[-1]
    rows = [x.reshape(-1, n) for x in moved]
    if rows[0].shape[0] == 0 or n == 0:
        results = [x.copy() for x in ops]
    else:
        perm = stable_order(m, name, rows)
        results = [
            np.moveaxis(np.take_along_axis(r, perm, axis=1).reshape(shape), -1, dim).copy()
            for r in rows
        ]
    return tuple(results) if len(ops) > 1 else results[0]


def total_order_key(x: np.ndarray) -> np.ndarray:
    """Integer keys ordering ``x`` like XLA's total order.

    Floats: ``-NaN < -inf < ... < -0.0 < +0.0 < ... < inf < +NaN`` (the sign-magnitude
    bits of the f64 value made two's complement); integers and ``pred`` keep their
    own order.
    """
    if x.dtype == np.bool_:
        return x.astype(np.int8)
    if x.dtype.kind in "iu":
        return x
    bits = x.astype(np.float64).view(np.int64)
    return np.where(bits < 0, bits ^ np.int64(0x7FFFFFFFFFFFFFFF), bits)


@register("topk")
def _topk(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    """``topk(x), k, largest``: the ``k`` largest (smallest when ``largest=false``)
    elements of each row along the last dim, in descending (ascending) order, with
    their s32 indices. Ties keep the lower index first; floats follow the total
    order (NaN above +inf, +0.0 above -0.0), as XLA:CPU does."""
    x = ops[0]
    k = int(instr.attr("k"))
    if x.ndim == 0 or not 0 <= k <= x.shape[-1]:
        raise error_at(instr, f"k={k} does not fit the last dim of {list(x.shape)}")
    key = total_order_key(x)
    if bool(instr.attr("largest", True)):
        key = ~key  # reverses the order exactly (no overflow, unlike negation)
    order = np.argsort(key, axis=-1, kind="stable")[..., :k]
    return np.take_along_axis(x, order, axis=-1), order.astype(np.int32)
