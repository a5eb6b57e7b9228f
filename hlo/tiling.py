"""Tiled physical layouts: where every element of an array lives in memory.

An array ``f32[3,5]{1,0:T(2,2)}`` is stored in three steps:

1. **Permute** the logical dims into physical order, major to minor (the
   reverse of ``minor_to_major``): here ``(d0, d1) = (3, 5)``.
2. **Tile** the most-minor physical dims, one tile after another. A tile
   ``T(t_1..t_m)`` covers the ``m`` most-minor dims of the *current* shape
   (size-1 dims are prepended when the tile is longer than the shape). Each
   covered dim ``d`` is padded to ``⌈d/t⌉·t`` and split into ``(⌈d/t⌉, t)``;
   all outer parts come first, then all inner parts. A ``*`` tile dim merges
   its dim into the next more-minor one first. The next tile applies to the
   result, so ``(8,128)(2,1)`` splits the ``(8,128)`` tile dims again.
3. **Flatten** row-major. The linear position of ``(2,3)`` above is
   ``linear_index((1,1,0,1), (2,3,2,2)) = 17``.

Padding elements (from ``⌈d/t⌉·t > d`` and from the ``L(n)`` tail alignment)
hold no value but occupy memory: :func:`physical_size_bytes` counts them,
unlike XLA's open-source ``ShapeUtil::ByteSizeOf``.

The same plan serves scalar indices (:func:`linear_index`,
:func:`logical_index`) and whole arrays (:func:`physical_offsets`, vectorized
with numpy broadcasting), so the two can never disagree.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from hlo.errors import LayoutError
from hlo.shape import COMBINED, UNBOUNDED, ArrayShape, Layout, Tile, element_bits


# ---------------------------------------------------------------------------
# The plan: what each tile does to the current physical shape
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TileStep:
    """One tile applied to the current physical shape (major to minor).

    ``f32[2,7,8,11,10]`` with ``T(*,*,2,*,3)``: ``before = (2,7,8,11,10)``,
    ``prepended = 0``, ``groups = ((0,1,2),(3,4))`` (dims merged by ``*``),
    ``merged = (112, 110)``, ``tile = (2, 3)``,
    ``after = (56, 37, 2, 3)`` (outer parts, then inner parts).
    """

    before: tuple[int, ...]
    prepended: int
    head: int
    groups: tuple[tuple[int, ...], ...]
    merged: tuple[int, ...]
    tile: tuple[int, ...]
    after: tuple[int, ...]

    @property
    def padded(self) -> tuple[int, ...]:
        """The merged tiled dims rounded up to whole tiles (the "pad" of pad-reshape-transpose)."""
        return tuple(-(-d // t) * t for d, t in zip(self.merged, self.tile))

    @property
    def split(self) -> tuple[int, ...]:
        """The padded dims split into ``(outer, inner)`` pairs (the "reshape")."""
        out: list[int] = []
        for d, t in zip(self.merged, self.tile):
            out += [-(-d // t), t]
        return tuple(out)

    @property
    def permutation(self) -> tuple[int, ...]:
        """The "transpose" of the split dims: all outer parts, then all inner parts."""
        m = len(self.tile)
        return tuple(2 * i for i in range(m)) + tuple(2 * i + 1 for i in range(m))


@dataclass(frozen=True, slots=True)
class TilingPlan:
    """Everything needed to place elements of one array shape.

    ``physical_dims`` are the logical sizes in physical order (major to minor),
    ``steps`` the tiles in application order, ``expanded`` the final shape
    that is flattened row-major, ``element_count`` its size rounded up to the
    ``L(n)`` alignment.
    """

    physical_dims: tuple[int, ...]
    major_to_minor: tuple[int, ...]
    steps: tuple[TileStep, ...]
    expanded: tuple[int, ...]
    element_count: int


def _bounded_dims(shape: ArrayShape) -> tuple[int, ...]:
    for i, d in enumerate(shape.dims):
        if d == UNBOUNDED:
            raise LayoutError(f"dimension {i} of {shape} is unbounded: it has no physical size")
    return shape.dims


def _plan_step(dims: tuple[int, ...], tile: Tile) -> TileStep:
    t = tile.dims
    if t[-1] == COMBINED:
        raise LayoutError(f"tile {tile} ends in '*': there is no more-minor dim to merge into")
    prepended = max(0, len(t) - len(dims))
    full = (1,) * prepended + dims
    head = len(full) - len(t)
    groups: list[tuple[int, ...]] = []
    merged: list[int] = []
    values: list[int] = []
    pending: list[int] = []
    size = 1
    for offset, tv in enumerate(t):
        pending.append(head + offset)
        size *= full[head + offset]
        if tv == COMBINED:
            continue
        groups.append(tuple(pending))
        merged.append(size)
        values.append(tv)
        pending, size = [], 1
    outer = tuple(-(-d // v) for d, v in zip(merged, values))
    return TileStep(
        before=dims,
        prepended=prepended,
        head=head,
        groups=tuple(groups),
        merged=tuple(merged),
        tile=tuple(values),
        after=full[:head] + outer + tuple(values),
    )


@lru_cache(maxsize=4096)
def tiling_plan(shape: ArrayShape) -> TilingPlan:
    """The tiling plan of ``shape`` (cached: shapes are immutable values)."""
    dims = _bounded_dims(shape)
    layout = shape.effective_layout()
    mtm_major = layout.major_to_minor()
    current = tuple(dims[d] for d in mtm_major)
    physical = current
    steps = []
    for tile in layout.tiles:
        step = _plan_step(current, tile)
        steps.append(step)
        current = step.after
    count = 1
    for d in current:
        count *= d
    align = layout.tail_padding_alignment
    count = -(-count // align) * align
    return TilingPlan(physical, mtm_major, tuple(steps), current, count)


# ---------------------------------------------------------------------------
# Coordinates through the plan (ints or numpy arrays alike)
# ---------------------------------------------------------------------------


def _forward(plan: TilingPlan, coords: list[Any]) -> Any:
    """Physical coordinates (major to minor) -> linear position; works on arrays too."""
    linear: Any = 0
    for c, d in zip(_forward_coords(plan, coords), plan.expanded):
        linear = linear * d + c
    return linear


def _forward_coords(plan: TilingPlan, coords: list[Any]) -> list[Any]:
    """Physical coordinates (major to minor) -> coordinates in the expanded shape."""
    for step in plan.steps:
        coords = [0] * step.prepended + coords
        full = (1,) * step.prepended + step.before
        head = coords[: step.head]
        outer, inner = [], []
        for group, t in zip(step.groups, step.tile):
            c: Any = 0
            for axis in group:
                c = c * full[axis] + coords[axis]
            outer.append(c // t)
            inner.append(c % t)
        coords = head + outer + inner
    return coords


def _backward(plan: TilingPlan, linear: int) -> tuple[int, ...] | None:
    """Linear position -> physical coordinates, or None for a padding position."""
    coords: list[int] = []
    for d in reversed(plan.expanded):
        linear, r = divmod(linear, d) if d else (linear, 0)
        coords.append(r)
    coords.reverse()
    for step in reversed(plan.steps):
        full = (1,) * step.prepended + step.before
        m = len(step.tile)
        head = coords[: step.head]
        outer, inner = coords[step.head : step.head + m], coords[step.head + m :]
        restored = list(head)
        for group, size, o, i, t in zip(step.groups, step.merged, outer, inner, step.tile):
            c = o * t + i
            if c >= size:
                return None
            parts = []
            for axis in reversed(group):
                c, r = divmod(c, full[axis])
                parts.append(r)
            restored += reversed(parts)
        coords = restored[step.prepended :]
    return tuple(coords)


# ---------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------


def element_storage_bits(shape: ArrayShape) -> int:
    """Bits one element occupies: ``E(n)`` when the layout says so, else the type's width."""
    layout = shape.layout
    if layout is not None and layout.element_size_bits:
        return layout.element_size_bits
    return element_bits(shape.element_type)


def tiled_shape(shape: ArrayShape) -> tuple[int, ...]:
    """The fully expanded physical shape that is flattened row-major.

    ``f32[3,5]{1,0:T(2,2)}`` -> ``(2,3,2,2)``; ``bf16[2048]{0:T(1024)(128)(2,1)}``
    -> ``(2,4,128,2,1)``; untiled ``f32[2,3]{0,1}`` -> ``(3,2)``.
    """
    return tiling_plan(shape).expanded


def physical_element_count(shape: ArrayShape) -> int:
    """Elements in memory including tile padding and the ``L(n)`` tail."""
    return tiling_plan(shape).element_count


def physical_size_bytes(shape: ArrayShape) -> int:
    """Bytes in memory: padded element count × storage bits, rounded up to bytes."""
    return -(-physical_element_count(shape) * element_storage_bits(shape) // 8)


def logical_size_bytes(shape: ArrayShape) -> int:
    """Bytes the values alone would need (no padding), at the same storage width."""
    return -(-shape.element_count * element_storage_bits(shape) // 8)


def padding_bytes(shape: ArrayShape) -> int:
    """Physical bytes beyond the logical bytes (the waste the cost model charges)."""
    return physical_size_bytes(shape) - logical_size_bytes(shape)


def _check_index(shape: ArrayShape, index: tuple[int, ...] | list[int]) -> tuple[int, ...]:
    index = tuple(index)
    dims = _bounded_dims(shape)
    if len(index) != len(dims) or any(not 0 <= e < d for e, d in zip(index, dims)):
        raise LayoutError(f"index {list(index)} is outside {shape.dims_text()}")
    return index


def linear_index(shape: ArrayShape, index: tuple[int, ...] | list[int]) -> int:
    """Linear position (in elements) of the logical ``index``.

    ``f32[3,5]{1,0:T(2,2)}``, index ``(2,3)`` -> 17 (tile ``(1,1)``, in-tile ``(0,1)``).
    """
    index = _check_index(shape, index)
    plan = tiling_plan(shape)
    return int(_forward(plan, [index[d] for d in plan.major_to_minor]))


def logical_index(shape: ArrayShape, linear: int) -> tuple[int, ...] | None:
    """The logical index stored at ``linear``, or None when that position is padding."""
    plan = tiling_plan(shape)
    if not 0 <= linear < plan.element_count:
        raise LayoutError(
            f"position {linear} is outside the {plan.element_count} physical elements of {shape}"
        )
    expanded = 1
    for d in plan.expanded:
        expanded *= d
    if linear >= expanded:
        return None
    physical = _backward(plan, linear)
    if physical is None:
        return None
    index = [0] * len(physical)
    for position, dim in enumerate(plan.major_to_minor):
        index[dim] = physical[position]
    return tuple(index)


def physical_offsets(shape: ArrayShape) -> np.ndarray:
    """Every element's linear position: an int64 array with the shape's logical dims.

    ``physical_offsets(f32[2,3]{0,1})`` is ``[[0,2,4],[1,3,5]]``. A byte image of
    an array ``x`` is ``buf[physical_offsets(s)] = x`` over a buffer of
    :func:`physical_element_count` elements.
    """
    terms = offset_terms(shape)
    if shape.element_count > MAX_OFFSET_ELEMENTS:
        raise LayoutError(
            f"{shape.dims_text()} has {shape.element_count} elements: too many to list every "
            f"element's offset (at most {MAX_OFFSET_ELEMENTS})"
        )
    out = np.zeros(shape.dims, dtype=np.int64)
    for term in terms.values():
        out += term
    return out


#: Largest array whose offsets :func:`physical_offsets` lists element by element (1 GiB of int64).
MAX_OFFSET_ELEMENTS = 2**27


def offset_terms(shape: ArrayShape) -> dict[tuple[int, ...], np.ndarray]:
    """The linear position as a sum of terms, keyed by the logical dims each term depends on.

    Each term broadcasts against the logical dims (size 1 along the dims it does not depend on),
    so the terms stay small even for huge arrays: ``physical_offsets(s)`` is their sum.
    """
    plan = tiling_plan(shape)
    dims = shape.dims
    rank = len(dims)
    axes = []
    for dim in plan.major_to_minor:
        view = [1] * rank
        view[dim] = dims[dim]
        axes.append(np.arange(dims[dim], dtype=np.int64).reshape(view))
    coords = _forward_coords(plan, axes)
    # linear = Σ coord·stride; most coords depend on one logical axis, so sum
    # those per axis on small arrays and broadcast only once at the end.
    strides = [1] * len(plan.expanded)
    for k in range(len(plan.expanded) - 2, -1, -1):
        strides[k] = strides[k + 1] * plan.expanded[k + 1]
    partial: dict[tuple[int, ...], np.ndarray] = {}
    for c, stride in zip(coords, strides):
        term = np.asarray(c, dtype=np.int64) * stride
        key = tuple(i for i, n in enumerate(term.shape) if n != 1)
        partial[key] = partial[key] + term if key in partial else term
    return partial


def dense_strides(shape: ArrayShape) -> tuple[int, ...] | None:
    """Element strides of each logical dim for an untiled layout, else None.

    ``f32[8,100,100,3]{3,0,2,1}`` -> ``(3, 2400, 24, 1)``.
    """
    layout = shape.effective_layout()
    if layout.tiles:
        return None
    dims = _bounded_dims(shape)
    strides = [0] * len(dims)
    stride = 1
    for dim in layout.minor_to_major:
        strides[dim] = stride
        stride *= dims[dim]
    return tuple(strides)


def _step_is_reshape(step: TileStep) -> bool:
    """True when a tile step moves no element: no padding, and the transpose only
    moves size-1 parts past each other."""
    outer = [-(-d // t) for d, t in zip(step.merged, step.tile)]
    if any(d % t for d, t in zip(step.merged, step.tile)):
        return False
    m = len(step.tile)
    # inner part j moves past outer parts k > j: harmless only if one of them is 1.
    return all(step.tile[j] == 1 or outer[k] == 1 for j in range(m) for k in range(j + 1, m))


def is_untiled_layout(shape: ArrayShape) -> bool:
    """True when the tiles change nothing: every element sits where the untiled
    layout would put it and there is no padding (XLA ``IsUntiledLayout``).

    ``f32[24,128]{1,0:T(8,128)}`` -> True; ``f32[2,3,4]{2,1,0:T(8,128)}`` -> False.
    """
    plan = tiling_plan(shape)
    if plan.element_count != shape.element_count:
        return False
    if shape.element_count == 0 or all(_step_is_reshape(s) for s in plan.steps):
        return True
    # A step that moves elements may be undone by a later one (T(3,*,1)(3,*,1) on
    # f32[1,3,3]{0,1,2}): follow every element's digits through all the steps.
    in_order = _digits_in_order(plan)
    if in_order is not None:
        return in_order
    if shape.element_count > MAX_OFFSET_ELEMENTS:
        return False  # undecided without listing offsets: treated as tiled (a copy, never a wrong bitcast)
    return bool(np.array_equal(physical_offsets(shape), physical_offsets(untiled(shape))))


#: One digit of a physical dim: (physical dim, stride within it, size).
_Digit = tuple[int, int, int]


def _digits_in_order(plan: TilingPlan) -> bool | None:
    """Whether the tiled order is the untiled one, found by splitting each physical dim
    into the digits the tiles cut it into; None when a tile cuts a digit unevenly."""
    dims: list[list[_Digit]] = [[(i, 1, d)] for i, d in enumerate(plan.physical_dims)]
    for step in plan.steps:
        dims = [[] for _ in range(step.prepended)] + dims
        outer: list[list[_Digit]] = []
        inner: list[list[_Digit]] = []
        for group, t in zip(step.groups, step.tile):
            cut = _split_digits([digit for g in group for digit in dims[g]], t)
            if cut is None:
                return None
            outer.append(cut[0])
            inner.append(cut[1])
        dims = dims[: step.head] + outer + inner
    flat = [digit for dim in dims for digit in dim if digit[2] != 1]
    return flat == sorted(flat, key=lambda digit: (digit[0], -digit[1]))


def _split_digits(digits: list[_Digit], t: int) -> tuple[list[_Digit], list[_Digit]] | None:
    """``digits`` (major to minor) split into the outer part and the ``t`` minor elements."""
    rest, low = list(digits), []
    while t > 1:
        if not rest:
            return None
        dim, stride, size = rest.pop()
        if t % size == 0:
            low.insert(0, (dim, stride, size))
            t //= size
        elif size % t == 0:
            rest.append((dim, stride * t, size // t))
            low.insert(0, (dim, stride, t))
            t = 1
        else:
            return None
    return rest, low


def untiled(shape: ArrayShape) -> ArrayShape:
    """The same array with the tiles (and only the tiles) removed."""
    layout = shape.effective_layout()
    return shape.with_layout(Layout(layout.minor_to_major, tail_padding_alignment=1,
                                    element_size_bits=layout.element_size_bits,
                                    memory_space=layout.memory_space))
