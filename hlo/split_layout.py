"""General split-permute layouts: formats that XLA tiles cannot always express.

A :class:`SplitLayout` **splits each logical dim into factors** (major to
minor; the product may exceed the dim, which pads the top factor) and then
**permutes all factors** into one physical order (major to minor). Element
``e`` of dim ``d`` is written in the mixed radix of that dim's factors; the
physical position is the mixed radix of all digits in physical order.

Ascend formats, for ``f16`` (C0 = 32 bytes / 2 = 16):

* ``NC1HWC0`` of ``[N,C,H,W]``: ``C -> (C1, C0)``, order ``N, C1, H, W, C0``.
  This one *is* an XLA tile: ``{3,2,1,0:T(C0,1,1)}``.
* ``FRACTAL_Z`` of weights ``[N,C,H,W]``: ``C -> (C1,C0)``, ``N -> (N1,N0)``,
  order ``C1, H, W, N1, N0, C0`` (``[C1·H·W, N1, N0, C0]``, N0 = 16).
* ``FRACTAL_NZ`` of ``[.., M, N]``: order ``.., N1, M1, M0, N0`` with M0 = 16.

:func:`from_shape` reads any XLA tiled layout whose tiles only pad the top
factor of a dim (no ``*``); :func:`to_xla_layout` finds the XLA layout with
the same offset map, or None.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import count

import numpy as np

from hlo.errors import LayoutError
from hlo.shape import COMBINED, ArrayShape, Layout, Tile, element_bits
from hlo.tiling import physical_offsets, tiling_plan

#: A factor reference: (logical dim, factor index within that dim, major first).
#: Dim -1 is a size-1 phantom dim prepended by a tile longer than the shape.
Factor = tuple[int, int]


@dataclass(frozen=True, slots=True)
class SplitLayout:
    """``dims``: logical sizes; ``factors[d]``: sizes of dim ``d``'s digits (major
    first); ``order``: physical order of ``(dim, index)`` (major first);
    ``phantom``: sizes of digits that always hold 0 (padding only)."""

    dims: tuple[int, ...]
    factors: tuple[tuple[int, ...], ...]
    order: tuple[Factor, ...]
    phantom: tuple[int, ...] = ()
    tail_alignment: int = 1
    name: str = ""

    def __post_init__(self) -> None:
        if len(self.factors) != len(self.dims):
            raise LayoutError("one factor list per dim is needed")
        for d, (size, fs) in enumerate(zip(self.dims, self.factors)):
            if not fs or any(f < 0 or (f == 0 and size) for f in fs):
                raise LayoutError(f"dim {d} needs positive factors, got {fs}")
            if int(np.prod(fs, dtype=object)) < size:
                raise LayoutError(f"factors {fs} of dim {d} cover less than its size {size}")
        expected = {(d, i) for d, fs in enumerate(self.factors) for i in range(len(fs))}
        expected |= {(-1, i) for i in range(len(self.phantom))}
        if sorted(self.order) != sorted(expected) or len(self.order) != len(expected):
            raise LayoutError(f"order {self.order} must list every factor exactly once")

    def size_of(self, factor: Factor) -> int:
        d, i = factor
        return self.phantom[i] if d < 0 else self.factors[d][i]

    @property
    def physical_dims(self) -> tuple[int, ...]:
        return tuple(self.size_of(f) for f in self.order)

    @property
    def element_count(self) -> int:
        n = int(np.prod(self.physical_dims, dtype=np.int64))
        return -(-n // self.tail_alignment) * self.tail_alignment

    def offsets(self) -> np.ndarray:
        """Every element's physical position (int64, with the logical dims)."""
        rank = len(self.dims)
        digits: dict[Factor, np.ndarray | int] = {(-1, i): 0 for i in range(len(self.phantom))}
        for d, fs in enumerate(self.factors):
            view = [1] * rank
            view[d] = self.dims[d]
            e = np.arange(self.dims[d], dtype=np.int64).reshape(view)
            for i in range(len(fs) - 1, -1, -1):
                digits[(d, i)] = e % fs[i] if i else e
                e = e // fs[i]
        linear: np.ndarray | int = 0
        for f in self.order:
            linear = linear * self.size_of(f) + digits[f]
        return np.array(np.broadcast_to(np.asarray(linear, dtype=np.int64), self.dims), dtype=np.int64)

    def linear_index(self, index: tuple[int, ...]) -> int:
        digits = {(-1, i): 0 for i in range(len(self.phantom))}
        for d, (e, fs) in enumerate(zip(index, self.factors)):
            if not 0 <= e < self.dims[d]:
                raise LayoutError(f"index {list(index)} is outside {list(self.dims)}")
            for i in range(len(fs) - 1, 0, -1):
                e, digits[(d, i)] = divmod(e, fs[i])
            digits[(d, 0)] = e
        linear = 0
        for f in self.order:
            linear = linear * self.size_of(f) + digits[f]
        return linear


# ---------------------------------------------------------------------------
# Named formats
# ---------------------------------------------------------------------------


def c0_for(element_type: str, block_bytes: int = 32) -> int:
    """C0 = 32 bytes / sizeof(T): 16 for f16, 8 for f32, 32 for int8."""
    return max(1, block_bytes * 8 // element_bits(element_type))


def nc1hwc0(dims: tuple[int, int, int, int], element_type: str) -> SplitLayout:
    """Ascend activations ``[N,C,H,W]`` -> ``[N, C1, H, W, C0]``."""
    n, c, h, w = dims
    c0 = c0_for(element_type)
    return SplitLayout(dims, ((n,), (-(-c // c0), c0), (h,), (w,)),
                       ((0, 0), (1, 0), (2, 0), (3, 0), (1, 1)), name="NC1HWC0")


def fractal_z(dims: tuple[int, int, int, int], element_type: str, n0: int = 16) -> SplitLayout:
    """Ascend conv weights ``[N,C,H,W]`` -> ``[C1·H·W, N1, N0, C0]``."""
    n, c, h, w = dims
    c0 = c0_for(element_type)
    return SplitLayout(dims, ((-(-n // n0), n0), (-(-c // c0), c0), (h,), (w,)),
                       ((1, 0), (2, 0), (3, 0), (0, 0), (0, 1), (1, 1)), name="FRACTAL_Z")


def fractal_nz(dims: tuple[int, ...], element_type: str, m0: int = 16) -> SplitLayout:
    """Ascend matrices ``[.., M, N]`` -> ``[.., N1, M1, M0, N0]`` (N0 = C0)."""
    if len(dims) < 2:
        raise LayoutError("FRACTAL_NZ needs at least two dims")
    *batch, m, n = dims
    n0 = c0_for(element_type)
    b = len(batch)
    factors = tuple((d,) for d in batch) + ((-(-m // m0), m0), (-(-n // n0), n0))
    order = tuple((d, 0) for d in range(b)) + ((b + 1, 0), (b, 0), (b, 1), (b + 1, 1))
    return SplitLayout(tuple(dims), factors, order, name="FRACTAL_NZ")


# ---------------------------------------------------------------------------
# From and to XLA layouts
# ---------------------------------------------------------------------------


def from_shape(shape: ArrayShape) -> SplitLayout | None:
    """The split-permute form of an XLA layout, or None when a tile merges dims
    (``*``) or pads a digit that is not the top one of its dim."""
    layout = shape.effective_layout()
    if any(COMBINED in t.dims for t in layout.tiles):
        return None
    plan = tiling_plan(shape)
    ids = count()
    size: dict[int, int] = {}
    owner: dict[int, int] = {}          # factor id -> logical dim (-1 phantom)
    dim_factors: dict[int, list[int]] = {d: [] for d in range(shape.rank)}
    phantoms: list[int] = []
    physical: list[int] = []
    for d in plan.major_to_minor:
        f = next(ids)
        size[f], owner[f] = shape.dims[d], d
        dim_factors[d].append(f)
        physical.append(f)
    for step in plan.steps:
        for _ in range(step.prepended):
            f = next(ids)
            size[f], owner[f] = 1, -1
            phantoms.append(f)
            physical.insert(0, f)
        head = physical[: step.head]
        outer, inner = [], []
        for f, t in zip(physical[step.head :], step.tile):
            d = owner[f]
            group = phantoms if d < 0 else dim_factors[d]
            top = d < 0 or group.index(f) == 0
            if size[f] % t and not top:
                return None
            o, i = next(ids), next(ids)
            size[o], size[i], owner[o], owner[i] = -(-size[f] // t), t, d, d
            at = group.index(f)
            group[at : at + 1] = [o, i]
            outer.append(o)
            inner.append(i)
        physical = head + outer + inner
    def ref(f: int) -> Factor:
        d = owner[f]
        return (-1, phantoms.index(f)) if d < 0 else (d, dim_factors[d].index(f))
    return SplitLayout(
        shape.dims,
        tuple(tuple(size[f] for f in dim_factors[d]) for d in range(shape.rank)),
        tuple(ref(f) for f in physical),
        tuple(size[f] for f in phantoms),
        layout.tail_padding_alignment,
    )


def to_xla_layout(split: SplitLayout, element_type: str = "f32") -> Layout | None:
    """An XLA layout with exactly the same offsets (one tile level), or None.

    ``minor_to_major`` follows the physical order of each dim's top factor;
    the tile takes each covered dim's remaining factors. The candidate is
    accepted only if its offset map equals the split layout's.
    """
    if split.phantom:
        return None
    rank = len(split.dims)
    tops = [f for f in split.order if f[1] == 0]
    mtm = tuple(d for d, _ in reversed(tops))
    inner = [int(np.prod(fs[1:], dtype=np.int64)) for fs in split.factors]
    physical = [d for d, _ in tops]  # major to minor
    tiled_from = next((p for p, d in enumerate(physical) if inner[d] > 1), rank)
    tiles = () if tiled_from == rank else (Tile(tuple(inner[d] for d in physical[tiled_from:])),)
    layout = Layout(mtm, tiles=tiles, tail_padding_alignment=split.tail_alignment)
    candidate = ArrayShape(element_type, split.dims, layout)
    if (tiling_plan(candidate).element_count != split.element_count
            or not np.array_equal(physical_offsets(candidate), split.offsets())):
        return None
    return layout
