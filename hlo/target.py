"""Targets as data: what a backend can tile, what it prefers, what moving bytes costs.

A target is a TOML/JSON document validated by the pydantic schema below. The
built-ins live in ``hlo/targets/*.toml``; a user may pass a path or an inline
dict. Every mistake is a :class:`TargetError` naming the field in pydantic's
dotted location (``tile_rules.0.tile: ...``).

Units: bandwidth in GB/s (= bytes per ns), costs as dimensionless factors on
"one pass" (read + write of the physical bytes at the memory bandwidth).
"""

from __future__ import annotations

import functools
import json
import math
import os
import tomllib
from collections import Counter
from importlib import resources
from pathlib import Path
from typing import Any, Literal, Sequence

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from hlo.errors import HloError
from hlo.shape import COMBINED, ArrayShape, Tile, element_bytes
from hlo.tiling import element_storage_bits


class TargetError(HloError):
    """A target description is missing, unreadable or invalid."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


# ---------------------------------------------------------------------------
# Schema
# ---------------------------------------------------------------------------


class TileRule(_Frozen):
    """Which tiles an array gets, by element type/width, rank and second-minor size.

    The first matching rule wins. ``tile = [[8,128],[2,1]]`` is ``T(8,128)(2,1)``;
    ``"*"`` marks a combined dim. The second-minor size is the size of the dim at
    ``minor_to_major[1]`` (1 for rank-1 arrays).
    """

    element_bits: tuple[int, ...] = ()
    element_types: tuple[str, ...] = ()
    min_rank: int = Field(1, ge=0)
    max_rank: int | None = Field(None, ge=0)
    second_minor_min: int = Field(1, ge=0)
    second_minor_max: int | None = Field(None, ge=0)
    tile: tuple[tuple[int | Literal["*"], ...], ...]
    note: str = ""

    @field_validator("tile")
    @classmethod
    def _tile_dims(cls, value: tuple[tuple[int | str, ...], ...]) -> tuple[tuple[int | str, ...], ...]:
        if not value:
            raise ValueError("at least one tile is needed (leave the rule out for untiled arrays)")
        for t in value:
            if not t:
                raise ValueError("a tile needs at least one dimension")
            for d in t:
                if d != "*" and d < 1:
                    raise ValueError(f"tile dimension {d} must be positive or '*'")
            if t[-1] == "*":
                raise ValueError("a tile cannot end in '*'")
        return value

    def tiles(self) -> tuple[Tile, ...]:
        return tuple(Tile(tuple(COMBINED if d == "*" else int(d) for d in t)) for t in self.tile)

    def matches(self, element_type: str, bits: int, rank: int, second_minor: int) -> bool:
        if self.element_types and element_type not in self.element_types:
            return False
        if self.element_bits and bits not in self.element_bits:
            return False
        if rank < self.min_rank or (self.max_rank is not None and rank > self.max_rank):
            return False
        if second_minor < self.second_minor_min:
            return False
        return self.second_minor_max is None or second_minor <= self.second_minor_max


class SharedStaging(_Frozen):
    """How a GPU transpose emitter stages a tile through shared memory.

    A ``rows × cols`` tile is written by rows (coalesced global reads) and read by columns
    (coalesced global writes), one warp of ``warp`` lanes per access; the tile's rows carry
    ``padding`` extra elements (XLA: +1, ``tensor<32x1x33xf32>``), or its columns are
    XOR-swizzled over ``swizzle_phases`` phases. Shared memory has ``banks`` banks of
    ``bank_bytes`` and ``bandwidth_gb_per_s`` in all. :mod:`hlo.bank_conflicts` counts the
    passes the staging takes; where bank conflicts make shared memory slower than global
    memory, a transpose costs that much more.
    """

    rows: int = Field(32, gt=0)
    cols: int = Field(32, gt=0)
    padding: int = Field(0, ge=0)
    swizzle_phases: int = Field(0, ge=0)
    warp: int = Field(32, gt=0)
    banks: int = Field(32, gt=0)
    bank_bytes: int = Field(4, gt=0)
    bandwidth_gb_per_s: float = Field(gt=0)
    note: str = ""

    @model_validator(mode="after")
    def _one_way(self) -> SharedStaging:
        if self.padding and self.swizzle_phases:
            raise ValueError("a staging is padded or swizzled, not both")
        if self.swizzle_phases and any(n & (n - 1) for n in (self.rows, self.cols)):
            raise ValueError("a swizzled staging needs power-of-two rows and cols")
        return self


#: The most reads :meth:`CacheGeometry.overflow` counts line by line.
NEST_READS = 1 << 16


class CacheGeometry(_Frozen):
    """A set-associative data cache: ``sets`` sets of ``ways`` lines of ``line_bytes``."""

    sets: int = Field(gt=0)
    ways: int = Field(gt=0)
    line_bytes: int = Field(gt=0)

    def holds_nest(self, loops: Sequence[tuple[int, int]]) -> bool:
        """Whether the reads of a loop nest, ``(stride in bytes, count)`` per loop, touch at
        most ``ways`` lines of any one set (every combination of the loops' indices is one
        read).

        >>> cache = CacheGeometry(sets=64, ways=8, line_bytes=64)
        >>> cache.holds_nest(((65536, 8),)), cache.holds_nest(((65536, 16),))  # one set
        (True, False)
        >>> cache.holds_nest(((43688, 24),))
        True
        >>> cache.holds_nest(((64, 32), (2048, 16)))  # 512 lines, 8 in each set
        True
        >>> cache.holds_nest(((1024, 16), (16384, 16)))  # 256 lines in 4 sets
        False
        """
        return self.overflow(loops) == 0.0

    def overflow(self, loops: Sequence[tuple[int, int]]) -> float:
        """The share of the lines a loop nest's reads touch (:meth:`holds_nest`) beyond the
        ``ways`` of their set: the ones evicted before they are read again. A nest of more
        than :data:`NEST_READS` reads is taken as spread evenly over the sets.

        >>> cache = CacheGeometry(sets=64, ways=8, line_bytes=64)
        >>> cache.overflow(((1024, 16), (16384, 16)))  # 4 sets of 64 lines: 56 over in each
        0.875
        """
        total = math.prod(count for _, count in loops)
        if total > NEST_READS:
            return max(0.0, 1.0 - self.sets * self.ways / total)
        addresses = [0]
        for stride, count in loops:
            addresses = [a + k * stride for a in addresses for k in range(count)]
        lines = {a // self.line_bytes for a in addresses}
        over = sum(max(0, n - self.ways) for n in Counter(line % self.sets for line in lines).values())
        return over / len(lines) if lines else 0.0


class TransposeCost(_Frozen):
    """Cost factors (× one pass) of a physical relayout, by what it moves.

    ``minor_moving``: the permutation changes the most-minor (or tiled) dims —
    a real transpose. ``major_only``: only major dims (whole tiles/rows) move —
    a strided block copy. ``uncoalesced``: what a naive emitter would pay.
    ``standalone``: a ``transpose`` instruction that moves data costs this many times a
    ``copy`` doing the same movement (XLA:CPU emits a copy as a fast relayout loop and a
    standalone transpose as a slow elementwise one; 1 where the two are the same).
    ``reshape_standalone``: the same for a ``reshape`` that is not a bitcast (XLA:CPU runs it
    as its own elementwise loop), against the copy moving the same bytes.
    ``standalone_min_stride``: ``standalone`` (``reshape_standalone``) applies only when the
    transpose's (reshape's) innermost loop (over its result's physically minor dim) reads its
    operand this many bytes apart or more; closer reads cost the copy (a 2-D transpose:
    ``standalone_near`` times it) (0: always ``standalone``). ``standalone_full_stride``: from
    this stride on the full factor applies;
    below it the factor scales with the stride (``factor x stride / full``, at least 1), as
    measured: 512 bytes apart 1.7x the copy, 1 KiB 2.5-4.5x, 2 KiB 7.7x (0: the full factor
    from ``standalone_min_stride`` on; never less than ``standalone_near``).
    ``standalone_near``: a standalone 2-D transpose (two dims with more than one element)
    reading closer than ``standalone_min_stride`` costs this many times the copy (XLA:CPU:
    1.1-1.5x XLA's bitcast transpose + copy from 32 KiB on; with a third dim 0.1-0.9x, so
    those cost the copy; 1 where the two are the same), from ``standalone_near_min_bytes`` of
    operand on (measured: 16 KiB 0.6-0.9x, so smaller ones cost the copy).
    ``standalone_row_ns``: a standalone transpose pays this many ns per run of its result's
    minor dim instead of the copy's ``row_ns`` (unset: the copy's), and never the copy's
    blocked-transpose tiles: XLA:CPU's elementwise loop does not pay per run the way its
    copy loop does (measured: a transpose writing runs of 3 elements ran 0.09x the copy
    doing the same movement; ``[3, 65536] -> [65536, 3]`` 0.03x).
    ``standalone_major``: a standalone transpose that moves only major dims (its result's
    physically minor dim is its operand's, so its innermost loop reads rows contiguously)
    costs this many times XLA's form of it (a bitcast transpose and a copy permuting major
    dims only), whatever its read stride (measured on XLA:CPU: 0.12-0.77x; 1 where the two
    are the same).
    ``cache``: the data cache a standalone loop reads through (sets, ways, line bytes; unset:
    no such rule). A standalone transpose (reshape) reading ``standalone_min_stride`` bytes
    apart or more costs ``standalone`` (``reshape_standalone``) only where its innermost
    loop's reads (one per element of its result's minor dim, that stride apart) fall on more
    lines of one cache set than the set has ways: they evict each other before the next
    pass of the loop reads the rest of each line. Where they fit, the loop streams and costs
    the copy's passes (measured on XLA:CPU, ``bench/transpose_forms.py``: ``[n, m] -> [m, n]``
    with ``n`` up to 24 where the reads fit the level-1 cache's sets, 0.1-0.5x XLA's bitcast
    transpose + copy; ``n`` = 64 with rows 16 KiB apart, all in one set, 1.5x; ``n`` = 48
    with rows 21844 bytes apart, 16 in one set, 0.5x: the rule errs there).
    ``nest_min_bytes``: from this operand size on, a standalone transpose's reads that stay
    cached are those of its whole loop nest inside the loop that reads its operand less than
    a line apart (a line is read again only when that loop moves on), and where some of them
    are evicted first a nest of two loops or more pays ``1 + (factor - 1) x`` the share of
    their lines beyond their set's ways (0: the innermost loop's reads alone). Measured on XLA:CPU against XLA's form,
    ``[k, 16, 256] -> [256, k, 16]`` (the inner loops read 1 KiB and 16 KiB apart, all in 4
    sets): 1.64x at 128 KiB, 1.94x at 256 KiB, 2.14x at 512 KiB; nests that overflow the
    cache as much over 50-64 KiB operands ran 0.84-0.99x (the level-2 cache serves them).
    """

    minor_moving: float = Field(gt=0)
    major_only: float = Field(gt=0)
    uncoalesced: float = Field(gt=0)
    #: ``minor_moving`` and ``standalone`` where the copy's bytes stream at the cache's
    #: bandwidth (:meth:`Target.copy_cached`), where they differ (measured on an Intel Xeon:
    #: a copy moving the minor dim 1.5-1.6x a plain one in the cache, 2.8-3.2x beyond it).
    minor_moving_cached: float | None = Field(None, gt=0)
    standalone_cached: float | None = Field(None, gt=0)
    #: ``minor_moving`` for elements of this many bytes where it differs (measured on an
    #: H200: 1-byte elements 1.46x a copy, 4-byte ones 1.12x).
    minor_moving_by_bytes: dict[int, float] = Field(default_factory=dict)
    standalone: float = Field(1.0, gt=0)
    reshape_standalone: float = Field(1.0, gt=0)
    standalone_min_stride: int = Field(0, ge=0)
    standalone_full_stride: int = Field(0, ge=0)
    standalone_near: float = Field(1.0, gt=0)
    standalone_near_min_bytes: int = Field(0, ge=0)
    standalone_row_ns: float | None = Field(None, ge=0)
    standalone_major: float = Field(1.0, gt=0)
    nest_min_bytes: int = Field(0, ge=0)
    #: The shared-memory staging of a ``minor_moving`` transpose (GPU), if any.
    shared_staging: SharedStaging | None = None
    cache: CacheGeometry | None = None
    note: str = ""

    @field_validator("minor_moving_by_bytes")
    @classmethod
    def _positive(cls, value: dict[int, float]) -> dict[int, float]:
        if any(width <= 0 or factor <= 0 for width, factor in value.items()):
            raise ValueError("element widths and factors must be positive")
        return value

    def minor_factor(self, element_type: str, cached: bool = False) -> float:
        """``minor_moving`` for elements of ``element_type`` (by its width in bytes); of a
        copy whose bytes stay in the cache, ``minor_moving_cached`` where set."""
        if cached and self.minor_moving_cached is not None:
            return self.minor_moving_cached
        return self.minor_moving_by_bytes.get(element_bytes(element_type),
                                              self.minor_moving)

    def standalone_factor(self, cached: bool = False) -> float:
        """``standalone``; of a transpose whose bytes stay in the cache,
        ``standalone_cached`` where set."""
        if cached and self.standalone_cached is not None:
            return self.standalone_cached
        return self.standalone


#: The widest tile edge, in bytes, of a blocked-transpose copy (XLA:CPU's: one AVX register).
TILE_BYTES = 32


class CopyCost(_Frozen):
    """A plain copy costs ``factor`` passes plus ``fixed_ns`` (launch) each.

    ``inline_relayout``: an elementwise op that reads an operand in a layout other than its
    result's, with no copy in between (a module as written; the rewrite always inserts the
    copy), pays this many times the copy that would have given the operand its layout.
    ``row_ns``: a relayout that moves data (a copy, a data-moving transpose or reshape) pays
    this many ns more per run of its result's physically minor dim (XLA:CPU's copy that keeps
    its minor dim moves each run with one ``memcpy``: 3-5 ns each, measured). A physically
    minor dim of size 1 makes every element a run, also where the copy moves no element (its
    layouts differ only in where size-1 dims sit). With ``tile_ns`` set, a copy whose minor
    dim moves pays per tile instead.
    ``tile_ns``: a copy that moves the minor dim transposes in square tiles (XLA:CPU's copy
    runs a blocked transpose): the tile's edge is the largest power of two elements that is
    at most both minor extents (the source's and the result's physically minor dims) and
    ``tile_bytes`` (at most 16 elements); elements past the last whole tile go one per tile.
    Each tile costs ``tile_ns`` (``tile_input_factor`` times that where the source's minor
    extent is the smaller), instead of ``row_ns`` per run: a copy to a 3-element minor dim
    runs a scalar tile per third element, one to a 4-element minor dim is as fast as a wide
    one. 0: the target's copies have no such cost.
    ``cache_bytes``: a copy inside a module (and a reshape that moves data, priced from the
    copy moving the same bytes) streams at the cache's bandwidth only while it moves at most
    this many bytes (read + written), where less than the target's own
    ``cache_bytes`` (timed alone, a copy is run again and again on the same buffers, which
    stay cached; inside a module its source was written earlier and its result is a fresh
    buffer). None: the target's.
    """

    factor: float = Field(gt=0)
    fixed_ns: float = Field(0.0, ge=0)
    cache_bytes: int | None = Field(None, ge=0)
    inline_relayout: float = Field(1.0, gt=0)
    row_ns: float = Field(0.0, ge=0)
    tile_ns: float = Field(0.0, ge=0)
    tile_input_factor: float = Field(1.0, ge=0)
    tile_bytes: int = Field(TILE_BYTES, ge=1)
    padding_counts: bool = True
    note: str = ""


class InPlaceCost(_Frozen):
    """An elementwise op that writes over its operand's buffer pays ``ns_per_element`` more.

    XLA:CPU's buffer assignment lets an elementwise op overwrite an operand that dies there
    (:mod:`solver.layout_assignment.in_place` predicts which); the loop it emits then reads and
    writes one buffer, and LLVM's runtime overlap check sends it to the scalar loop. The
    price is per element of the result, by opcode (``default`` for opcodes not listed):
    measured as the op written over its operand against the same op into a fresh buffer
    (``hlo-layout calibrate``). Empty: the target has no such cost. Only an untiled target
    (``row_major``) may set prices: a read in the operand's own layout pays no padding there,
    so an ``in_place`` term is the relation's whole cost.
    """

    ns_per_element: dict[str, float] = Field(default_factory=dict)
    #: Prices of an element type measured apart (f16: XLA:CPU's scalar loop converts every
    #: element to f32 and back, far slower than the f32 one), by opcode (``default``: that
    #: type's other opcodes); a type not listed pays ``ns_per_element``.
    by_type: dict[str, dict[str, float]] = Field(default_factory=dict)

    def price(self, opcode: str, element_type: str = "f32") -> float:
        for table in (self.by_type.get(element_type, {}), self.ns_per_element):
            if opcode in table or "default" in table:
                return table.get(opcode, table.get("default", 0.0))
        return 0.0


OpRuleKind = Literal[
    "dot_batch_not_most_minor",
    "dot_groups_contiguous",
    "dot_contracting_most_minor",
    "dot_batch_most_major",
    "dot_nn",
    "conv_layout",
    "default_layout",
    "row_reduction",
    "reduction_minor",
    "window_minor",
    "format",
]


class OpRule(_Frozen):
    """A backend preference (or, with ``hard``, a requirement) on an op's layouts.

    ``kind`` names the rule; ``params`` carries its numbers, e.g.
    ``{layout = "NHWC"}`` for ``conv_layout`` or ``{min_reduced_size = 32}`` for
    ``row_reduction``; ``element_types``/``spatial_dims`` restrict where it applies.
    ``dot_batch_most_major``: the batch dims of a dot's operands and result are its most
    major dims, in their order (XLA:CPU's dot emitter rejects other dims there, and computes
    wrong numbers when the batch dims are most major in another order).
    ``dot_nn`` (``{ns_per_flop = 0.0034, result_ns_per_flop = 0.011}``): the backend runs a
    dot fastest in its physical "nn" form (the lhs with its contracting dims most minor, the
    rhs with its free dims most minor, the result row-major) or in its mirror image (the
    product transposed, ``C^T = B^T A^T``: the lhs with its free dims minor, the rhs with its
    contracting dims minor, the result's rhs-free dims major to its lhs-free ones); the
    result's layout picks the form, an operand off it costs ``ns_per_flop`` per flop of the
    dot, a result in neither form ``result_ns_per_flop`` (a slower kernel, not a transpose
    first).
    ``reduction_minor`` (``{slow = "kept", read_factor = 0.45}``): a ``reduce`` whose operand's
    physically most-minor dim is ``kept`` (a column reduction) or ``reduced`` (a row
    reduction), whichever the backend runs slower, costs ``read_factor`` passes over the
    operand more than the other form; with ``min_extent`` (``kept`` only), a column reduction
    whose result elements each read fewer elements than that is not slow (its strided reads
    stay in cache), and ``variadic_min_extent`` is that extent for a variadic reduce (an
    argmax; without it a variadic column reduction is slow at any extent), and
    ``variadic_min_span`` the bytes the reads of one result element of a variadic column
    reduction must span (its extent times the stride it reads at) for it to be slow; with
    ``wide_factor`` (``kept`` only), a column reduction reading its
    elements at most ``narrow_stride`` bytes apart pays ``read_factor`` passes, one reading
    them ``wide_stride`` bytes apart or more ``wide_factor``, in between by log2 of the
    stride; with ``stride_passes`` (``[[stride, passes], ...]``, ``kept`` only) instead, the
    passes measured at each of those strides, in between two of them by log2 of the stride
    and beyond them the nearest end's; those passes measured over an operand of
    ``large_bytes`` (1 MiB); with
    ``small_bytes`` and ``small_scale``, an operand of ``small_bytes`` or less pays
    ``small_scale`` times them, one in between in proportion to log2 of its size; with
    ``order_factor`` (``kept`` only), a row reduction whose physically minor dim is not the
    one whose loop the backend vectorizes costs that many passes more:
    XLA:CPU nests the loops of the reduced dims in their listed order, the last innermost, and
    an innermost loop of at most ``unroll_extent`` iterations is unrolled whole, leaving the
    loop around it to be vectorized.
    ``window_minor`` (``{ns_per_element = 0.3}``): a ``reduce-window`` whose result's
    physically most-minor dim (of size > 1) has a window of size > 1 costs ``ns_per_element``
    per element its windows read (result elements times window elements, padding included,
    once per reduced array; measured on XLA:CPU: 3-6x the time of the same windows with an
    un-windowed dim minor).
    """

    op: str = Field(min_length=1)
    kind: OpRuleKind
    element_types: tuple[str, ...] = ()
    spatial_dims: tuple[int, ...] = ()
    operands: tuple[int, ...] = ()
    hard: bool = False
    params: dict[str, Any] = Field(default_factory=dict)
    note: str = ""


class FormatSpec(_Frozen):
    """A named physical format that is not an XLA tile (Ascend ``FRACTAL_Z`` ...).

    ``c0_bytes``: bytes of the innermost channel block (C0 = c0_bytes / element
    bytes); ``n0``/``m0``: other fixed block sizes of the format.
    """

    name: str = Field(min_length=1)
    applies_to: str = ""
    c0_bytes: int | None = Field(None, gt=0)
    n0: int | None = Field(None, gt=0)
    m0: int | None = Field(None, gt=0)
    note: str = ""


class TransposeUnit(_Frozen):
    """A hardware transpose instruction and its limits (Ascend ``TTRANS``).

    A relayout that breaks ``alignment_bytes`` on the major axis falls back
    to a scalar copy costing ``scalar_fallback_factor`` passes.
    """

    name: str
    element_bytes: tuple[int, ...]
    source_row_major: bool = True
    alignment_bytes: int = Field(gt=0)
    row_stride_8bit: int = Field(gt=0)
    row_stride_other: int = Field(gt=0)
    scalar_fallback_factor: float = Field(gt=0)
    note: str = ""

    def row_stride(self, element_bytes: int) -> int:
        return self.row_stride_8bit if element_bytes == 1 else self.row_stride_other

    def is_aligned(self, cols: int, element_bytes: int) -> bool:
        """``Cols·sizeof(T) % alignment == 0`` for a row-major source."""
        return element_bytes in self.element_bytes and (cols * element_bytes) % self.alignment_bytes == 0


class HostCpu(_Frozen):
    """The CPU a calibration was measured on, as ``/proc/cpuinfo`` names it."""

    vendor: str = ""
    model: str = ""


class Target(_Frozen):
    """One backend, as data. ``tiles_for`` answers "which tiles would this array get"."""

    name: str = Field(min_length=1)
    description: str = ""
    memory_bandwidth_gb_per_s: float = Field(gt=0)
    # Movements of at most ``cache_bytes`` (read + written) stream at the cache's bandwidth.
    cache_bytes: int = Field(0, ge=0)
    cache_bandwidth_gb_per_s: float | None = Field(None, gt=0)
    layout_family: Literal["tiled", "row_major", "formats"]
    tileable_minor_dims: int = Field(0, ge=0)
    tile_rules: tuple[TileRule, ...] = ()
    transpose: TransposeCost
    copies: CopyCost
    op_rules: tuple[OpRule, ...] = ()
    formats: tuple[FormatSpec, ...] = ()
    transpose_unit: TransposeUnit | None = None
    in_place: InPlaceCost = InPlaceCost()
    calibration: str = ""
    # The CPU the numbers were measured on; the built-in ``cpu`` picks by it.
    host: HostCpu | None = None

    @model_validator(mode="after")
    def _consistent(self) -> Target:
        if self.layout_family == "tiled" and not self.tile_rules:
            raise ValueError("a 'tiled' target needs tile_rules")
        if (self.in_place.ns_per_element or self.in_place.by_type) \
                and self.layout_family != "row_major":
            raise ValueError("in_place prices need a 'row_major' target (XLA:CPU's buffers)")
        for i, rule in enumerate(self.tile_rules):
            covered = len(rule.tile[0])
            if self.tileable_minor_dims and covered > self.tileable_minor_dims:
                raise ValueError(
                    f"tile_rules.{i}.tile: the first tile covers {covered} dims but "
                    f"tileable_minor_dims is {self.tileable_minor_dims}")
        return self

    def tiles_for(self, shape: ArrayShape, minor_to_major: tuple[int, ...] | None = None) -> tuple[Tile, ...]:
        """The target's tiles for ``shape`` laid out in ``minor_to_major`` order.

        TPU: ``f32[256,512]`` in ``{1,0}`` -> ``T(8,128)``; ``f32[2,512]`` ->
        ``T(2,128)``; ``bf16[..]`` -> ``T(8,128)(2,1)``. Untiled targets -> ``()``.
        """
        mtm = tuple(minor_to_major) if minor_to_major is not None else shape.effective_layout().minor_to_major
        if len(mtm) != shape.rank:
            raise TargetError(f"minor_to_major {list(mtm)} does not fit {shape.dims_text()}")
        second_minor = shape.dims[mtm[1]] if shape.rank >= 2 else 1
        bits = element_storage_bits(shape)
        for rule in self.tile_rules:
            if rule.matches(shape.element_type, bits, shape.rank, second_minor):
                return rule.tiles()
        return ()

    def pass_ns(self, nbytes: int) -> float:
        """Nanoseconds to stream ``nbytes`` once: at the cache's bandwidth when they fit in
        ``cache_bytes``, else at the memory bandwidth."""
        if self.cache_bandwidth_gb_per_s is not None and nbytes <= self.cache_bytes:
            return nbytes / self.cache_bandwidth_gb_per_s
        return nbytes / self.memory_bandwidth_gb_per_s

    def cache_pass_ns(self, nbytes: int) -> float:
        """Nanoseconds of one pass over ``nbytes`` at the cache's bandwidth whatever their
        size (the unit of a cost measured in such passes that does not grow with the memory's
        bandwidth beyond the cache: a column reduction's misses); ``pass_ns`` without one."""
        if self.cache_bandwidth_gb_per_s is None:
            return self.pass_ns(nbytes)
        return nbytes / self.cache_bandwidth_gb_per_s

    def copy_pass_ns(self, nbytes: int) -> float:
        """:meth:`pass_ns` of a copy moving ``nbytes`` (read + written) inside a module: at
        the cache's bandwidth only up to ``copies.cache_bytes`` where that is set."""
        cache = self.cache_bandwidth_gb_per_s
        if cache is not None and self.copy_cached(nbytes):
            return nbytes / cache
        return nbytes / self.memory_bandwidth_gb_per_s

    def copy_cached(self, nbytes: int) -> bool:
        """Whether a copy moving ``nbytes`` (read + written) inside a module streams at the
        cache's bandwidth: it fits ``cache_bytes`` and, where set, ``copies.cache_bytes``."""
        limit = self.copies.cache_bytes
        return (self.cache_bandwidth_gb_per_s is not None and nbytes <= self.cache_bytes
                and (limit is None or nbytes <= limit))

    def copy_ns(self, read_bytes: int, write_bytes: int) -> float:
        """A plain copy: read + write at bandwidth, times the copy factor, plus launch."""
        return (self.copy_pass_ns(read_bytes + write_bytes) * self.copies.factor
                + self.copies.fixed_ns)

    def rules_for(self, op: str) -> tuple[OpRule, ...]:
        return tuple(r for r in self.op_rules if r.op == op)

    def format(self, name: str) -> FormatSpec | None:
        return next((f for f in self.formats if f.name == name), None)


# ---------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------


#: The name that means "this host's CPU": the shipped ``cpu-*`` calibration whose ``[host]``
#: matches the CPU this process runs on (its model name, else its vendor), else
#: :data:`DEFAULT_CPU`. ``HLO_LAYOUT_CPU_TARGET`` names one of them instead.
HOST_CPU = "cpu"
DEFAULT_CPU = "cpu-epyc"
CPU_TARGET_VARIABLE = "HLO_LAYOUT_CPU_TARGET"


def host_cpu(cpuinfo: str = "/proc/cpuinfo") -> HostCpu:
    """This machine's CPU as the kernel reports it (empty fields where it does not)."""
    found = {"vendor_id": "", "model name": ""}
    try:
        with open(cpuinfo) as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() in found and not found[key.strip()]:
                    found[key.strip()] = value.strip()
    except OSError:
        pass
    return HostCpu(vendor=found["vendor_id"], model=found["model name"])


@functools.cache
def _this_host() -> HostCpu:
    return host_cpu()


def _shipped() -> tuple[str, ...]:
    folder = resources.files("hlo") / "targets"
    return tuple(sorted(p.name[: -len(".toml")] for p in folder.iterdir() if p.name.endswith(".toml")))


def _shipped_data(name: str) -> dict[str, Any]:
    return tomllib.loads((resources.files("hlo") / "targets" / f"{name}.toml").read_text())


@functools.cache
def _cpu_hosts() -> tuple[tuple[str, HostCpu], ...]:
    found = ((name, _shipped_data(name).get("host")) for name in _shipped()
             if name.startswith(HOST_CPU + "-"))
    return tuple((name, HostCpu.model_validate(host)) for name, host in found if host is not None)


def host_cpu_target(host: HostCpu | None = None, pinned: str | None = None) -> str:
    """The built-in target that ``cpu`` means here: ``pinned`` (default: the
    ``HLO_LAYOUT_CPU_TARGET`` variable) when set, else the ``cpu-*`` calibration of this
    host's CPU model, else of its vendor, else :data:`DEFAULT_CPU`.

    Example: on an ``Intel(R) Xeon(R) Processor @ 2.80GHz`` -> ``"cpu-xeon"``."""
    pinned = os.environ.get(CPU_TARGET_VARIABLE) if pinned is None else pinned
    shipped = _cpu_hosts()
    if pinned:
        if pinned not in {name for name, _ in shipped}:
            raise TargetError(f"{CPU_TARGET_VARIABLE}={pinned} is not a CPU target: use one of "
                              f"{', '.join(name for name, _ in shipped)}")
        return pinned
    host = _this_host() if host is None else host
    for field in ("model", "vendor"):
        wanted = getattr(host, field)
        matched = [name for name, h in shipped if wanted and getattr(h, field) == wanted]
        if matched:
            return matched[0]
    return DEFAULT_CPU


def resolved_name(spec: str) -> str:
    """``spec`` with :data:`HOST_CPU` replaced by the CPU target it means on this host."""
    return host_cpu_target() if spec == HOST_CPU else spec


def builtin_target_names() -> tuple[str, ...]:
    """Names of the built-in targets (sorted): the ones shipped in ``hlo/targets`` and
    :data:`HOST_CPU`, this host's CPU."""
    return tuple(sorted((*_shipped(), HOST_CPU)))


def _describe(error: ValidationError) -> str:
    parts = []
    for e in error.errors():
        where = ".".join(str(x) for x in e["loc"]) or "(target)"
        parts.append(f"{where}: {e['msg']}")
    return "; ".join(parts)


def _validate(data: dict[str, Any], origin: str) -> Target:
    try:
        return Target.model_validate(data)
    except ValidationError as e:
        raise TargetError(f"invalid target {origin}: {_describe(e)}") from None


def read_target_file(path: Path) -> dict[str, Any]:
    """The raw data of a ``.toml``/``.json`` target file (validated by :func:`load_target`)."""
    try:
        text = path.read_bytes()
    except OSError as e:
        raise TargetError(f"cannot read target file {path}: {e.strerror}") from None
    try:
        if path.suffix == ".json":
            data = json.loads(text)
        else:
            data = tomllib.loads(text.decode())
    except (ValueError, UnicodeDecodeError) as e:
        raise TargetError(f"target file {path} is not valid {path.suffix[1:] or 'toml'}: {e}") from None
    if not isinstance(data, dict):
        raise TargetError(f"target file {path} must hold a table/object at the top level")
    return data


def load_target(spec: str | Path | dict[str, Any]) -> Target:
    """A target from a built-in name (``"tpu"``), a ``.toml``/``.json`` path, or a dict."""
    if isinstance(spec, dict):
        return _validate(spec, "(inline)")
    if isinstance(spec, str) and spec in builtin_target_names():
        name = resolved_name(spec)
        return _validate(_shipped_data(name), f"'{name}'")
    path = Path(spec)
    if path.suffix in (".toml", ".json") or path.exists():
        return _validate(read_target_file(path), str(path))
    raise TargetError(
        f"unknown target '{spec}': use one of {', '.join(builtin_target_names())} or a .toml/.json file"
    )
