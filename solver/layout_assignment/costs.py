"""The cost model (DESIGN §5): estimated nanoseconds on the target, as integers.

One unit everywhere: bytes / (GB/s) = ns. A *candidate* is a dim order
(``minor_to_major``) plus an optional named format that XLA tiles cannot
express (Ascend ``FRACTAL_Z``); its tiles come from the target's tile rules.

Terms, each computed by one function below and used both to build the model
and to score a laid-out module (so the two cannot drift apart):

* :meth:`CostModel.conversion` — a physical relayout (inserted ``copy``, non-bitcast
  transpose/reshape): physical bytes read + written / bandwidth × the copy
  factor × a movement factor (``minor_moving`` when the most-minor or tiled
  dims change, ``major_only`` when only major dims move, 1 for a relayout that
  moves nothing physically; Ascend: the TTRANS scalar fallback when the source
  row is not 32-byte aligned) + the per-copy fixed cost; on a target with ``tile_ns``
  (XLA:CPU) a copy that moves the minor dim adds its blocked transpose's tiles
  (:func:`copy_tiles`), one that keeps it ``row_ns`` per run.
* :func:`padding` — tile padding bytes, charged per write and per read.
* backend preferences live in :mod:`.rules` and are priced with
  :meth:`CostModel.conversion` (the transpose the backend would do internally).

Example (cpu, 3.2 GB/s): ``f32[1024,1024]{1,0} -> {0,1}`` moves 8 MiB through a
minor-moving transpose (factor 8): 8388608 / 3.2 × 8 = 20971520 ns.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from hlo.bank_conflicts import staging_factor
from hlo.shape import ArrayShape, Layout, Tile, element_bits, element_bytes
from hlo.split_layout import fractal_z
from hlo.target import SharedStaging, Target
from hlo.tiling import logical_size_bytes, physical_size_bytes

__all__ = ["Candidate", "CostModel", "Term", "Tiles", "copy_tiles", "padding", "physical_bytes",
           "FRACTAL_Z", "NC1HWC0"]

FRACTAL_Z = "FRACTAL_Z"
NC1HWC0 = "NC1HWC0"


@dataclass(frozen=True, slots=True, order=True)
class Candidate:
    """A dim order plus an optional non-XLA format name (``""`` for plain layouts)."""

    minor_to_major: tuple[int, ...]
    format: str = ""

    def __str__(self) -> str:
        text = "{" + ",".join(map(str, self.minor_to_major)) + "}"
        return f"{text}:{self.format}" if self.format else text


@dataclass(frozen=True, slots=True)
class Term:
    """One explainable cost: what, where, how many bytes, how many ns, why."""

    kind: str
    computation: str
    instruction: str
    bytes: int
    ns: int
    reason: str

    def to_json(self) -> dict:
        return {"kind": self.kind, "computation": self.computation,
                "instruction": self.instruction, "bytes": self.bytes, "ns": self.ns,
                "reason": self.reason}


class CostModel:
    """The cost functions of one target, memoized (pure: a cache, not state).

    Targets are pydantic values holding dicts, so they cannot key an
    ``lru_cache``; each model keeps its own tables instead.
    """

    def __init__(self, target: Target) -> None:
        self.target = target
        self._shapes: dict[tuple, ArrayShape] = {}
        self._conversions: dict[tuple, tuple[int, str]] = {}

    def laid_out(self, shape: ArrayShape, cand: Candidate) -> ArrayShape:
        """``shape`` with ``cand``'s order and the target's tiles (``E(n)`` kept)."""
        esize = shape.layout.element_size_bits if shape.layout is not None else 0
        key = (shape.element_type, shape.dims, esize, cand)
        hit = self._shapes.get(key)
        if hit is None:
            hit = self._shapes[key] = self._make(shape.element_type, shape.dims, esize, cand)
        return hit

    def _make(self, etype: str, dims: tuple[int, ...], esize: int, cand: Candidate) -> ArrayShape:
        plain = ArrayShape(etype, dims, Layout(cand.minor_to_major, element_size_bits=esize))
        if cand.format == NC1HWC0:
            tiles: tuple[Tile, ...] = (Tile((max(1, 256 // element_bits(etype)), 1, 1)),)
        elif cand.format == FRACTAL_Z:
            tiles = ()
        else:
            tiles = self.target.tiles_for(plain, cand.minor_to_major) if dims else ()
        if not tiles:
            return plain
        return plain.with_layout(Layout(cand.minor_to_major, tiles=tiles, element_size_bits=esize))

    def padding_ns(self, shape: ArrayShape, fmt: str, accesses: int) -> int:
        """Tile padding charged ``accesses`` times (writes + reads)."""
        if not self.target.copies.padding_counts or accesses <= 0:
            return 0
        waste = padding(shape, fmt)
        # Rounded per access, so a sum of accesses is the same however it is split.
        return math.ceil(self.target.pass_ns(waste)) * accesses if waste else 0

    def conversion(self, src: ArrayShape, src_fmt: str, dst: ArrayShape,
                   dst_fmt: str, row_ns: float | None = None) -> tuple[int, str]:
        """``(ns, reason)`` of materializing ``src`` (laid out) as ``dst`` (same dims); with
        ``row_ns``, that many ns per run of the result's minor dim instead of the copy's."""
        key = (src, src_fmt, dst, dst_fmt, row_ns)
        hit = self._conversions.get(key)
        if hit is None:
            hit = self._conversions[key] = _conversion(self.target, src, src_fmt, dst, dst_fmt,
                                                       row_ns)
        return hit


#: Bounded: the service's workers live long and see many modules' shapes.
@lru_cache(maxsize=65536)
def physical_bytes(shape: ArrayShape, fmt: str = "") -> int:
    """Bytes in memory, tile padding included (FRACTAL_Z through its split layout)."""
    if fmt == FRACTAL_Z and shape.rank == 4:
        split = fractal_z(shape.dims, shape.element_type)  # type: ignore[arg-type]
        return -(-split.element_count * element_bits(shape.element_type) // 8)
    return physical_size_bytes(shape)


def padding(shape: ArrayShape, fmt: str = "") -> int:
    """Bytes beyond the logical ones (what a tiled layout wastes per write/read)."""
    return physical_bytes(shape, fmt) - logical_size_bytes(shape)


def _nontrivial(shape: ArrayShape) -> tuple[int, ...]:
    layout = shape.effective_layout()
    return tuple(d for d in layout.minor_to_major if shape.dims[d] != 1)


def _staged(target: Target, staging: SharedStaging, src: ArrayShape, nbytes: int,
            factor: float, why: str) -> tuple[float, str]:
    """A transpose through shared memory: bank conflicts that make the staging slower than
    the pass through global memory (or the cache, where the bytes fit) multiply the factor
    (:func:`hlo.bank_conflicts.staging_factor`)."""
    ebytes = element_bytes(src.element_type)
    bandwidth = nbytes / target.pass_ns(nbytes) if nbytes else target.memory_bandwidth_gb_per_s
    slower, conflicts = staging_factor(staging, ebytes, bandwidth)
    if slower <= 1.0:
        return factor, why
    ways = max(conflicts.read_ways, conflicts.write_ways)
    tile = f"{staging.rows}x{staging.cols + staging.padding}"
    return factor * slower, (f"{why}; its {tile} shared-memory tile has {ways}-way bank "
                             f"conflicts ({conflicts.slowdown:g} passes per pass needed), "
                             f"x{slower:.3g}")


def _conversion(target: Target, src: ArrayShape, src_fmt: str, dst: ArrayShape,
                dst_fmt: str, row_ns: float | None = None) -> tuple[int, str]:
    nbytes = physical_bytes(src, src_fmt) + physical_bytes(dst, dst_fmt)
    a, b = _nontrivial(src), _nontrivial(dst)
    tiles_a, tiles_b = src.effective_layout().tiles, dst.effective_layout().tiles
    moves = not (a == b and tiles_a == tiles_b and src_fmt == dst_fmt)
    if not moves:
        factor, why = 1.0, "moves no element (layouts differ only in size-1 dims)"
    else:
        covered = max(1, len(tiles_a[0].dims) if tiles_a else 1,
                      len(tiles_b[0].dims) if tiles_b else 1)
        minor_same = set(a[:covered]) == set(b[:covered]) and a[:1] == b[:1]
        if minor_same and tiles_a == tiles_b and src_fmt == dst_fmt:
            factor, why = target.transpose.major_only, "permutes major dims only"
        else:
            factor = target.transpose.minor_factor(src.element_type, target.copy_cached(nbytes))
            why = "moves the minor/tiled dims"
            staging = target.transpose.shared_staging
            if staging is not None:
                factor, why = _staged(target, staging, src, nbytes, factor, why)
        unit = target.transpose_unit
        if unit is not None and a:
            ebytes = element_bytes(src.element_type)
            if not unit.is_aligned(src.dims[a[0]], ebytes):
                factor = unit.scalar_fallback_factor
                why = (f"{unit.name} needs {unit.alignment_bytes}-byte aligned rows; "
                       "falls back to a scalar copy")
    ns = target.copy_pass_ns(nbytes) * target.copies.factor * factor + target.copies.fixed_ns
    relayout = src.effective_layout() != dst.effective_layout()
    # ``row_ns`` given: a standalone loop's own per-run price, never a copy's tiles.
    tiled = (_tiled(target, src, dst) if row_ns is None and target.copies.tile_ns and relayout
             else None)
    if tiled is not None:
        extra, note = tiled
        return math.ceil(ns + extra), f"{nbytes} bytes, x{factor:g}: {why}{note}"
    per_run = target.copies.row_ns if row_ns is None else row_ns
    unit = _unit_minor(dst) and relayout
    rows = _rows(dst) if (moves or unit) and per_run else 0
    if rows:
        ns += rows * per_run
        run = 1 if unit else dst.dims[b[0]]
        why += (f"; {rows} runs of its result's minor dim ({run} element{'s' * (run != 1)}"
                + (", a size-1 dim: XLA:CPU's loop runs once per element" if unit else "")
                + f"), {per_run:g} ns each")
    return math.ceil(ns), f"{nbytes} bytes, x{factor:g}: {why}"


@dataclass(frozen=True, slots=True)
class Tiles:
    """How XLA:CPU's copy runs a relayout as a blocked transpose (:class:`hlo.target.CopyCost`
    ``tile_ns``): ``count`` square tiles of ``edge`` x ``edge`` elements (the elements past
    the last whole tile, ``rest``, one per tile), between a source minor dim of ``source``
    elements and a result minor dim of ``result``."""

    count: float
    edge: int
    source: int
    result: int
    rest: int


def copy_tiles(src: ArrayShape, dst: ArrayShape, tile_bytes: int) -> Tiles | None:
    """The tiles of the copy from ``src`` to ``dst`` (both laid out), or ``None`` where their
    physically minor dims are the same dim (the copy moves runs; a size-1 dim counts as the
    result's minor dim, the source's where it is minor in both) or the elements are narrower
    than a byte (packed: not a blocked transpose). The edge is the largest power of two at
    most both minor extents and ``tile_bytes`` of elements (at most 16; 1 for elements of 16
    bytes).

    >>> from hlo.parser import parse_shape
    >>> copy_tiles(parse_shape("f32[8,64,64,3]{2,3,1,0}"), parse_shape("f32[8,64,64,3]{3,2,1,0}"), 32)
    Tiles(count=49152.0, edge=2, source=64, result=3, rest=32768)
    """
    order_a = src.effective_layout().minor_to_major
    order_b = dst.effective_layout().minor_to_major
    if not order_b or not dst.element_count or element_bits(src.element_type) % 8:
        return None
    nontrivial = [d for d in order_a if src.dims[d] != 1]
    minor_a = order_a[0] if order_a[0] == order_b[0] or not nontrivial else nontrivial[0]
    if minor_a == order_b[0]:
        return None
    source, result = src.dims[minor_a], dst.dims[order_b[0]]
    ebytes = max(1, element_bytes(src.element_type))
    limit = 1 if ebytes >= 16 else max(1, min(16, tile_bytes // ebytes))
    edge = 1 << (min(source, result, limit).bit_length() - 1)
    whole = (source // edge * edge) * (result // edge * edge)
    count = dst.element_count
    rest = count - count * whole // (source * result)
    return Tiles((count - rest) / (edge * edge) + rest, edge, source, result, rest)


def _tiled(target: Target, src: ArrayShape, dst: ArrayShape) -> tuple[float, str] | None:
    """``(ns, note)`` of a copy that runs as a blocked transpose, or ``None`` where it moves
    runs (:func:`copy_tiles`)."""
    copies = target.copies
    tiles = copy_tiles(src, dst, copies.tile_bytes)
    if tiles is None:
        return None
    each = copies.tile_ns * (copies.tile_input_factor if tiles.source < tiles.result else 1.0)
    rest = f", {tiles.rest} elements past whole tiles" if tiles.rest else ""
    return tiles.count * each, (
        f"; a blocked transpose between {tiles.source}- and {tiles.result}-element minor dims "
        f"in {tiles.edge}x{tiles.edge} tiles{rest}: {tiles.count:.0f} tiles, {each:g} ns each")


def _rows(dst: ArrayShape) -> int:
    """How many runs of its physically minor dim a relayout writes: the iterations of the
    loop around its innermost one. A minor dim of size 1 makes every element a run (measured:
    a copy to ``f32[512,512,1]{2,1,0}`` from ``{1,2,0}``, the same bytes in the same order,
    ran 12x a plain copy, 1.47 ns per element; one from ``{2,1,0}`` to ``{1,2,0}`` as fast as
    a plain copy)."""
    if _unit_minor(dst):
        return dst.element_count
    minor = _nontrivial(dst)
    return dst.element_count // dst.dims[minor[0]] if minor and dst.element_count else 0


def _unit_minor(shape: ArrayShape) -> bool:
    """Whether the physically minor dim of ``shape``'s layout has size 1 (rank >= 2)."""
    order = shape.effective_layout().minor_to_major
    return len(order) >= 2 and shape.dims[order[0]] == 1 and shape.element_count > 1
