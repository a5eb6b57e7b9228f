"""Cost-model coefficients from measured times: least squares on ns against bytes.

Each sample is one microbenchmark's median time, with the time of the ``base`` module of its
group (running a module that does almost nothing) subtracted, so what is left is the op's own
cost ``y`` in ns. With ``x`` the bytes one pass over the operand moves:

- ``copy``: ``y = fixed + 2x / bandwidth`` (read + write): an ordinary least-squares line gives
  the bandwidth (GB/s = bytes/ns) and the per-copy fixed cost; the copies that move at most
  :data:`CACHE_BYTES` give the cache's bandwidth (a slope after the fixed cost);
- ``fixed_ns`` where ``copies_chain`` / ``copies_none`` were measured: their difference over
  :data:`~service.calibration.microbenchmarks.OVERHEAD_COPIES` (a copy's own cost, which the
  line through base-subtracted times cannot show), instead of the line's intercept;
- every other kind: a slope through the origin after the fixed cost, ``s = Σ x·y / Σ x²``, and
  the coefficient is a ratio of slopes: ``minor_moving = s(copy_minor) / s(copy)``,
  ``major_only = s(copy_major) / s(copy3d)``, ``standalone = s(transpose) / s(copy_minor)``,
  ``read_factor = |s(reduce_major) - s(reduce_minor)| · bandwidth``: the extra passes the
  slower form pays; ``reduce_slow`` says which (``kept``: the kept dim minor, a column
  reduction; ``reduced``: a row reduction).
- ``minor_moving_cached`` and ``standalone_cached``: ``minor_moving`` and ``standalone`` of
  the samples that move at most :data:`CACHE_BYTES` alone, against the cache's slope (the
  slopes through every size follow the largest, beyond the cache).
- ``reshape_standalone``: the median over sizes of ``t(reshape_moving) / t(copy_minor)`` (a
  reshape that is not a bitcast against the copy moving the same bytes);
- ``inline_relayout``: the median over sizes of ``(t(add_mixed) - t(add_same))`` over the
  copy of one operand as the model prices it (read + write at the cache's or the memory's
  bandwidth, times ``minor_moving``): what an elementwise op pays for reading one operand
  in another layout itself, in copies that would have fixed it;
- the column reductions ``column_R`` against ``row_R`` (``R`` elements reduced per result
  element): ``e_R = (t(column_R) - t(row_R))`` over one pass of the operand as the model
  prices it (at the cache's bandwidth when it fits) extra passes;
  ``reduce_min_extent`` is the smallest ``R`` from which on every column form takes more
  than :data:`COLUMN_SLOWER` times its row form (below it a column reduction runs about as
  fast as a row one: its strided reads stay in cache), and
  ``reduce_read_factor`` the median ``e_R`` from there over the ``R`` whose column form reads
  at most :data:`NARROW_STRIDE` bytes apart (without the group: the 2-D fit above), and
  ``reduce_wide_factor`` the median over those reading :data:`WIDE_STRIDE` bytes apart or
  more (either median is the one over every slow ``R`` when no ``R`` reads that close or
  that far), and ``reduce_stride_passes`` the extra passes of every slow ``R`` at its
  stride: the model reads that curve, in log2 of the stride between two measured ones;
- ``reduce_order_factor``: the median over groups of ``(t(row_misordered) - t(row_ordered))``
  (the samples pair up in order, one of each per group) over one pass of the operand as
  the model prices it: the extra passes a row reduction pays when its physically minor dim
  is not the one whose loop XLA:CPU vectorizes (0 without the groups);
- ``reduce_scalar_factor``: the median over the slow ``R`` of ``(t(rowmax_R) - t(row_R))`` over one
  pass of the operand as the model prices it: what a row reduction whose combiner LLVM does
  not vectorize (``maximum``) pays beyond the vectorized ``add`` one; the column form costs
  the same for both, so a ``maximum`` column reduction's extra passes are
  ``reduce_read_factor`` less this (0 without the samples);
- ``copy_row_ns``: the median over ``C`` of ``(t(copy_runs_C) - t(copy_wide_C))`` over the
  ``8 * 64 * 64`` runs of ``C`` elements the first moves (one ``memcpy`` each; the second
  moves the same bytes as a blocked transpose in 8x8 tiles): what a copy whose minor dim
  stays pays per run (0 without the groups);
- ``copy_tile_ns``: the median over ``C`` of ``(t(copy_rows_C) - t(copy_wide_C))`` over the
  difference of their tile counts (:func:`solver.layout_assignment.costs.copy_tiles`): what
  a copy that moves the minor dim pays per tile of its blocked transpose (0 without the
  groups);
- ``copy_tile_input_factor``: the median over ``C`` of ``(t(copy_rev_C) - t(copy_wide_C))``
  over ``copy_tile_ns`` times the difference of their tile counts: what a tile costs where
  the source's minor dim is the short one, relative to the result's (1 without them);
- ``standalone_near``: the median over shapes of ``t(near_S) / t(form_S)``: a standalone
  2-D transpose whose innermost loop reads its operand close (fewer than ``standalone_min_stride``
  bytes apart) against XLA's form of it, a bitcast transpose and a copy (1 without the
  groups);
- ``reduce_variadic_min_extent``: the smallest ``R`` from which the argmax column form
  (``argcol_R``) runs slower than its row form (``argrow_R``) at every larger ``R`` measured
  (0 without the pairs: a variadic column reduction is slow at any extent);
- ``reduce_variadic_min_span``: the smallest span ``S`` from which the argmax column form
  (``argspancol_S``) runs more than :data:`SLOWER` times its row form (``argspanrow_S``) at every
  larger span measured (0 without the pairs: a variadic column reduction is slow at any span);
- ``standalone_major``: the median over shapes of ``t(major_S) / t(mform_S)``: a standalone
  transpose that moves only major dims (its innermost loop reads rows contiguously) against
  XLA's form of it (1 without the groups);
- ``standalone_row_ns``: the median over ``C`` of ``(t(transpose_rows_C) -
  t(transpose_wide_C))`` over the runs of ``C`` elements the first writes (``bytes / (4
  C)``): a standalone ``transpose`` whose innermost loop reads its operand close (256 bytes
  apart, writing runs of ``C``) against one writing the same bytes in runs of 64, per run,
  at least 0 (``None`` without them);
- ``dot_operand_ns_per_flop`` / ``dot_result_ns_per_flop``: the medians of
  ``(t(dot_operand) - t(dot_nn)) / flops`` and ``(t(dot_result) - t(dot_nn)) / flops`` over the
  dot shapes: a dot off its physical nn form runs a slower kernel (the values of
  ``bench/dot_forms.py`` on 2026-11-27, 0.0034 and 0.011, without the groups);
- ``reduce_small_scale``: the median over the ``scolumn_R``/``srow_R`` pairs (256 KiB) of
  their extra passes over those the ``column_R`` fit gives at the same stride: what a column
  reduction over an operand that fits in the cache nearest the core pays of them (1 without
  the pairs);
- ``window_minor_ns``: the median over the reduce-window groups of ``(t(window_minor) -
  t(window_plain)) / reads``: a reduce-window whose result has a windowed dim physically minor,
  per element its windows read (0 without the groups);
- ``conv_naive_ns_per_flop``: the median of ``(t(conv_naive) - t(conv_default)) / flops``: a
  convolution with any array in another layout runs as a naive loop (XLA:CPU gives Eigen
  row-major convolutions only).

Example: samples made from bandwidth 10 GB/s, fixed 500 ns, minor 3 give back exactly those.
"""

from __future__ import annotations

import dataclasses
import statistics
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from hlo.parser import parse_shape
from hlo.shape import element_bytes
from hlo.target import TILE_BYTES
from service.calibration.microbenchmarks import OVERHEAD_COPIES, copy_shapes
from solver.layout_assignment.costs import copy_tiles
from solver.layout_assignment.rules import curve_passes, stride_passes


class FitError(ValueError):
    """Too few samples of a kind to fit a coefficient."""


@dataclass(frozen=True, slots=True)
class Sample:
    kind: str
    bytes: int
    ns: float  # the op's own time: module median minus its group's base module
    dtype: str = "f32"


#: Movements up to this many bytes (read + written) are fitted as cache-resident.
CACHE_BYTES = 4 << 20

#: A copy inside a module streams at the cache's bandwidth only up to this many bytes (read +
#: written; the target's ``copies.cache_bytes``). Not fitted here: timed alone, a copy keeps
#: its buffers cached up to 6 MiB moved (``bench/cache_forms.py --edge``); inside modules one
#: moving 4 MiB runs at the memory's speed (BENCHMARKS.md, fidelity at the commit that set it).
MODULE_COPY_CACHE_BYTES = 2 << 20


#: A dot's extra ns per flop off its nn form where no dot group was measured: an operand,
#: the result (medians of ``bench/dot_forms.py``'s f32 cells, 2026-11-27).
DOT_OPERAND_NS_PER_FLOP = 0.0034
DOT_RESULT_NS_PER_FLOP = 0.011


@dataclass(frozen=True, slots=True)
class Coefficients:
    bandwidth_gb_per_s: float
    cache_bandwidth_gb_per_s: float
    fixed_ns: float
    minor_moving: float
    major_only: float
    standalone: float
    reduce_read_factor: float
    reduce_slow: str  # "kept" or "reduced": which minor dim makes a reduction slow
    samples: int
    reshape_standalone: float = 1.0
    inline_relayout: float = 1.0
    reduce_min_extent: int = 0
    conv_naive_ns_per_flop: float = 0.0
    reduce_order_factor: float = 0.0
    copy_row_ns: float = 0.0
    reduce_scalar_factor: float = 0.0
    reduce_wide_factor: float = 0.0
    standalone_near: float = 1.0
    standalone_row_ns: float | None = None
    standalone_major: float = 1.0
    reduce_variadic_min_extent: int = 0
    #: (opcode, ns per element) an elementwise op pays for writing over its operand's buffer.
    in_place: tuple[tuple[str, float], ...] = ()
    reduce_variadic_min_span: int = 0
    dot_operand_ns_per_flop: float = DOT_OPERAND_NS_PER_FLOP
    dot_result_ns_per_flop: float = DOT_RESULT_NS_PER_FLOP
    copy_tile_ns: float = 0.0
    copy_tile_input_factor: float = 1.0
    window_minor_ns: float = 0.0
    reduce_small_scale: float = 1.0
    #: ``minor_moving`` and ``standalone`` of copies and transposes whose bytes stay in the
    #: cache (None: no cached samples, the one factor for every size).
    minor_moving_cached: float | None = None
    standalone_cached: float | None = None
    #: (element type, opcode, ns per element) of other element types' in-place prices.
    in_place_typed: tuple[tuple[str, str, float], ...] = ()
    #: (read stride in bytes, extra passes) of each slow column reduction pair over
    #: ``LARGE_BYTES``, strides ascending (the model reads between them by log2 of the stride).
    reduce_stride_passes: tuple[tuple[int, float], ...] = ()

    def rounded(self) -> Coefficients:
        return Coefficients(round(self.bandwidth_gb_per_s, 2),
                            round(self.cache_bandwidth_gb_per_s, 2), round(self.fixed_ns, 1),
                            round(self.minor_moving, 2), round(self.major_only, 2),
                            round(self.standalone, 2), round(self.reduce_read_factor, 2),
                            self.reduce_slow, self.samples, round(self.reshape_standalone, 2),
                            round(self.inline_relayout, 2), self.reduce_min_extent,
                            round(self.conv_naive_ns_per_flop, 4),
                            round(self.reduce_order_factor, 2), round(self.copy_row_ns, 2),
                            round(self.reduce_scalar_factor, 2),
                            round(self.reduce_wide_factor, 2), round(self.standalone_near, 2),
                            None if self.standalone_row_ns is None
                            else round(self.standalone_row_ns, 2),
                            round(self.standalone_major, 2), self.reduce_variadic_min_extent,
                            tuple((op, round(ns, 2)) for op, ns in self.in_place),
                            self.reduce_variadic_min_span,
                            round(self.dot_operand_ns_per_flop, 4),
                            round(self.dot_result_ns_per_flop, 4), round(self.copy_tile_ns, 2),
                            round(self.copy_tile_input_factor, 2),
                            round(self.window_minor_ns, 3),
                            round(self.reduce_small_scale, 2),
                            _round(self.minor_moving_cached), _round(self.standalone_cached),
                            tuple((t, op, round(ns, 2)) for t, op, ns in self.in_place_typed),
                            tuple((x, round(y, 2)) for x, y in self.reduce_stride_passes))


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def _of(samples: Sequence[Sample], kind: str) -> tuple[np.ndarray, np.ndarray]:
    chosen = [s for s in samples if s.kind == kind]
    if not chosen:
        raise FitError(f"no '{kind}' samples")
    return (np.array([s.bytes for s in chosen], float), np.array([s.ns for s in chosen], float))


def _slope(samples: Sequence[Sample], kind: str, fixed: float, scale: float = 1.0) -> float:
    x, y = _of(samples, kind)
    x = x * scale
    return float(np.dot(x, y - fixed) / np.dot(x, x))


def fit(samples: Sequence[Sample]) -> Coefficients:
    """The coefficients (see the module docstring); :class:`FitError` if a kind is missing."""
    x, y = _of(samples, "copy")
    if len(set(x)) < 2:
        raise FitError("'copy' needs at least two sizes")
    slope, intercept = np.polyfit(2 * x, y, 1)
    fixed = max(0.0, float(intercept))
    copy = float(slope)
    if not copy > 0:
        raise FitError("larger copies did not take longer: no bandwidth to fit")
    cached = [s for s in samples if s.kind == "copy" and 2 * s.bytes <= CACHE_BYTES]
    cache_slope = (_slope(cached, "copy", fixed, 2.0) if len({s.bytes for s in cached}) >= 1
                   else copy)
    minor = _slope(samples, "copy_minor", fixed, 2.0)
    copy3d = _slope(samples, "copy3d", fixed, 2.0)
    major = _slope(samples, "copy_major", fixed, 2.0)
    transpose = _slope(samples, "transpose", fixed, 2.0)
    row = _slope(samples, "reduce_minor", 0.0)
    column = _slope(samples, "reduce_major", 0.0)
    bandwidth = 1.0 / copy
    cache_bandwidth = (max(bandwidth, 1.0 / cache_slope) if cache_slope > 0 else bandwidth)
    read_factor, min_extent, wide_factor, curve = _column_reductions(samples, bandwidth,
                                                                     cache_bandwidth)
    tile_ns = _copy_tiles(samples, "copy_rows")
    minor_cached, standalone_cached = _cached_movement(samples, fixed, cache_slope)
    overhead = _copy_overhead(samples)
    return Coefficients(
        bandwidth_gb_per_s=bandwidth,
        cache_bandwidth_gb_per_s=cache_bandwidth,
        fixed_ns=fixed if overhead is None else overhead,
        minor_moving=max(1.0, minor / copy),
        major_only=max(1.0, major / copy3d),
        standalone=max(1.0, transpose / minor),
        reduce_read_factor=(abs(column - row) * bandwidth if read_factor is None
                            else read_factor),
        reduce_slow="kept" if column >= row else "reduced",
        samples=len(samples),
        reshape_standalone=max(1.0, _paired_ratio(samples, "reshape_moving", "copy_minor", fixed)),
        inline_relayout=max(1.0, _inline(samples, bandwidth, cache_bandwidth, minor / copy)),
        reduce_min_extent=min_extent,
        reduce_wide_factor=wide_factor,
        standalone_row_ns=_standalone_rows(samples),
        conv_naive_ns_per_flop=_naive_convolution(samples),
        reduce_order_factor=_reduction_order(samples, bandwidth, cache_bandwidth),
        copy_row_ns=_copy_runs(samples),
        reduce_scalar_factor=_scalar_rows(samples, bandwidth, cache_bandwidth, min_extent),
        standalone_near=_over_form(samples, "near_", "form_"),
        standalone_major=_over_form(samples, "major_", "mform_"),
        reduce_variadic_min_extent=_variadic_extent(samples),
        in_place=_in_place(samples),
        in_place_typed=_in_place_typed(samples),
        reduce_variadic_min_span=_variadic_span(samples),
        dot_operand_ns_per_flop=_dot_form(samples, "dot_operand", DOT_OPERAND_NS_PER_FLOP),
        dot_result_ns_per_flop=_dot_form(samples, "dot_result", DOT_RESULT_NS_PER_FLOP),
        copy_tile_ns=tile_ns,
        copy_tile_input_factor=_copy_tiles(samples, "copy_rev", tile_ns),
        window_minor_ns=_window_minor(samples),
        reduce_small_scale=_small_scale(samples, bandwidth, cache_bandwidth, read_factor or 0.0,
                                        wide_factor, min_extent, curve),
        reduce_stride_passes=curve,
        minor_moving_cached=minor_cached,
        standalone_cached=standalone_cached,
    )


def _copy_overhead(samples: Sequence[Sample]) -> float | None:
    """What one copy costs beyond its bytes: ``copies_chain`` over ``copies_none``
    (:func:`~service.calibration.microbenchmarks.copy_overhead_group`), per copy, at least 0;
    ``None`` without the pair (then the copy line's intercept stands)."""
    kinds = {s.kind: s.ns for s in samples if s.kind.startswith("copies_")}
    if not {"copies_none", "copies_chain"} <= set(kinds):
        return None
    return max(0.0, (kinds["copies_chain"] - kinds["copies_none"]) / OVERHEAD_COPIES)


def _cached_movement(samples: Sequence[Sample], fixed: float,
                     cache_slope: float) -> tuple[float | None, float | None]:
    """``(minor_moving, standalone)`` of the copies and transposes that stay in the cache
    (read + written at most :data:`CACHE_BYTES`): the slope of the cached minor-moving
    copies over the plain cached copies' slope, and of the cached transposes over the cached
    minor-moving copies' (the module docstring's factors, over the cached sizes alone: the
    slopes through every size follow the largest). ``None`` without cached samples of both.

    Measured on an Intel Xeon (three runs): a cached copy moving the minor dim 1.52-1.62x
    a plain one, 2.77-3.19x beyond the cache; a cached transpose 2.68-3.04x that copy,
    3.87-4.5x beyond."""
    cached = [s for s in samples if 2 * s.bytes <= CACHE_BYTES]
    kinds = {s.kind for s in cached}
    if not {"copy_minor", "transpose"} <= kinds or not cache_slope > 0:
        return None, None
    minor = _slope(cached, "copy_minor", fixed, 2.0)
    transpose = _slope(cached, "transpose", fixed, 2.0)
    if not minor > 0:
        return None, None
    return max(1.0, minor / cache_slope), max(1.0, transpose / minor)


def _over_form(samples: Sequence[Sample], alone: str, form: str) -> float:
    """The median over shapes of a standalone transpose (kinds ``alone + S``) over XLA's
    form of it (``form + S``), 1 without them (module docstring)."""
    times = {s.kind: s.ns for s in samples if s.kind.startswith((alone, form))}
    ratios = [ns / times[form + k[len(alone):]] for k, ns in times.items()
              if k.startswith(alone) and times.get(form + k[len(alone):], 0) > 0]
    return float(np.median(ratios)) if ratios else 1.0


#: In-place prices below this many ns per element are measurement noise (cheap ops).
IN_PLACE_MIN_NS = 0.1


def _in_place(samples: Sequence[Sample],
              dtype: str = "f32") -> tuple[tuple[str, float], ...]:
    """Per opcode, ns per ``dtype`` element of an op written over its operand's buffer more
    than the same op into a fresh one (``inplace_OP`` against ``fresh_OP``); prices under
    :data:`IN_PLACE_MIN_NS` left out."""
    fresh = {s.kind[len("fresh_"):]: s for s in samples
             if s.kind.startswith("fresh_") and s.dtype == dtype}
    out = []
    for sample in sorted((s for s in samples if s.kind.startswith("inplace_")
                          and s.dtype == dtype), key=lambda s: s.kind):
        op = sample.kind[len("inplace_"):]
        if op not in fresh:
            continue
        per = (sample.ns - fresh[op].ns) / (sample.bytes / element_bytes(sample.dtype))
        if per >= IN_PLACE_MIN_NS:
            out.append((op, per))
    return tuple(out)


def _in_place_typed(samples: Sequence[Sample]) -> tuple[tuple[str, str, float], ...]:
    """``(dtype, opcode, ns)`` for the element types other than f32 measured in place, each
    with a ``default`` for that type's other opcodes: the median of its measured ops (an
    op under :data:`IN_PLACE_MIN_NS` counts as 0). Measured on an Intel Xeon, f16: add and
    multiply 6.3 ns, negate (a sign flip, no conversion) 0.1: most f16 ops convert."""
    out: list[tuple[str, str, float]] = []
    for dtype in sorted({s.dtype for s in samples if s.kind.startswith("inplace_")} - {"f32"}):
        prices = dict(_in_place(samples, dtype))
        ops = sorted({s.kind[len("inplace_"):] for s in samples
                      if s.kind.startswith("inplace_") and s.dtype == dtype})
        out += [(dtype, op, ns) for op, ns in prices.items()]
        out.append((dtype, "default", statistics.median(prices.get(op, 0.0) for op in ops)))
    return tuple(out)


def _variadic_extent(samples: Sequence[Sample]) -> int:
    """Where an argmax column reduction turns slow, by extent (module docstring)."""
    return _slow_from(samples, "argcol_", "argrow_", 1.0)


#: A variadic column form this much slower than its row form counts as slow: measured in three
#: runs, 0.99-1.16 of the row form up to 64 KiB and 1.69-2.37 from 128 KiB on, a step that
#: this places clear of the noise (5 % put it at 16, 32 and 64 KiB in the three runs).
SLOWER = 1.25


#: A column reduction this much slower than its row form counts as slow: measured in three runs
#: on a quiet machine (f32, 1 MiB), 0.66-1.22 of the row form up to 64 elements per result and
#: 12.6-20.1 from 128 on, a step this places clear of both.
COLUMN_SLOWER = 2.0


def _variadic_span(samples: Sequence[Sample]) -> int:
    """Where an argmax column reduction turns slow, by span (module docstring)."""
    return _slow_from(samples, "argspancol_", "argspanrow_", SLOWER)


def _slow_from(samples: Sequence[Sample], column: str, row: str, factor: float) -> int:
    """The smallest size ``X`` (the kinds ``column + X`` / ``row + X``) from which the column
    form takes more than ``factor`` times the row form at every size measured from it on;
    twice the largest where none does, 0 without pairs."""
    times = {s.kind: s.ns for s in samples if s.kind.startswith((column, row))}
    sizes = sorted(int(k[len(column):]) for k in times
                   if k.startswith(column) and row + k[len(column):] in times)
    slow = [x for x in sizes
            if all(times[f"{column}{q}"] > factor * times[f"{row}{q}"] for q in sizes if q >= x)]
    return slow[0] if slow else (sizes[-1] * 2 if sizes else 0)


def _scalar_rows(samples: Sequence[Sample], bandwidth: float, cache_bandwidth: float,
                 min_extent: int = 0) -> float:
    """Extra passes of a ``maximum`` row reduction over an ``add`` one (module docstring),
    over the ``R`` from ``min_extent`` on: the column reductions it is taken from are slow
    only there, and a short row runs about as fast in either combiner (measured on the EPYC,
    1 MiB: 0-4 µs apart up to 64 elements, 75-133 µs from 128 on)."""
    times = {s.kind: s for s in samples if s.kind.startswith(("rowmax_", "row_"))}
    extra = [(times[k].ns - times["row_" + k.split("_")[1]].ns)
             / _pass_ns(times[k].bytes, bandwidth, cache_bandwidth)
             for k in times if k.startswith("rowmax_") and "row_" + k.split("_")[1] in times
             and int(k.split("_")[1]) >= min_extent]
    return max(0.0, float(np.median(extra))) if extra else 0.0


def _per_unit(samples: Sequence[Sample], kind: str, reference: str,
              units: Callable[[int], float]) -> list[float]:
    """For each ``C`` with both samples: ``(t(kind_C) - t(reference_C)) / units(C)``, the
    extra ns per unit (run, tile) of ``kind`` over ``reference`` (``C`` where ``units`` is
    positive)."""
    times = {s.kind: s.ns for s in samples if s.kind.startswith((f"{kind}_", f"{reference}_"))}
    extents = sorted(int(k.rsplit("_", 1)[1]) for k in times if k.startswith(f"{kind}_"))
    return [(times[f"{kind}_{c}"] - times[f"{reference}_{c}"]) / units(c) for c in extents
            if f"{reference}_{c}" in times and units(c) > 0]


def _median_at_least_0(values: list[float], missing: float) -> float:
    return max(0.0, float(np.median(values))) if values else missing


#: Runs of ``C`` elements in each copy-rows and copy-runs group's ``f32[8,64,64,C]``.
_RUNS = 8 * 64 * 64


def _tile_count(kind: str, extent: int) -> float:
    src, dst = (parse_shape(text) for text in copy_shapes(kind, extent))
    tiles = copy_tiles(src, dst, TILE_BYTES)  # type: ignore[arg-type]
    return 0.0 if tiles is None else tiles.count


def _copy_tiles(samples: Sequence[Sample], kind: str, per_tile: float | None = None) -> float:
    """``copy_tile_ns`` from ``kind`` = ``copy_rows`` (``per_tile`` None), or
    ``copy_tile_input_factor`` from ``kind`` = ``copy_rev`` (see the module docstring)."""
    found = _per_unit(samples, kind, "copy_wide",
                      lambda c: _tile_count(kind, c) - _tile_count("copy_wide", c))
    if per_tile is None:
        return _median_at_least_0(found, 0.0)
    return _median_at_least_0(found, 1.0) / per_tile if found and per_tile else 1.0


def _copy_runs(samples: Sequence[Sample]) -> float:
    """``copy_row_ns``: ns a copy whose minor dim stays pays per run (see the module
    docstring)."""
    return _median_at_least_0(_per_unit(samples, "copy_runs", "copy_wide", lambda c: _RUNS), 0.0)


def _standalone_rows(samples: Sequence[Sample]) -> float | None:
    """ns a standalone transpose reading its operand close (``transpose_rows_C`` against
    ``transpose_wide_C``) pays per run of its result's minor dim; ``None`` without them."""
    if not any(s.kind.startswith("transpose_rows_") for s in samples):
        return None
    return _median_at_least_0(
        _per_unit(samples, "transpose_rows", "transpose_wide", lambda c: _RUNS), 0.0)


def _reduction_order(samples: Sequence[Sample], bandwidth: float,
                     cache_bandwidth: float) -> float:
    """Extra passes of a row reduction whose minor dim is not the first it lists: the median
    over shapes of ``(t(row_misordered) - t(row_ordered))`` over one pass of the operand as
    the model prices it (0 without the group)."""
    ordered = [s for s in samples if s.kind == "row_ordered"]
    misordered = [s for s in samples if s.kind == "row_misordered"]
    if len(ordered) != len(misordered):
        raise FitError("'row_ordered' and 'row_misordered' samples do not pair up")
    # Paired in order: each group gives one of each.
    extra = [(m.ns - o.ns) / _pass_ns(m.bytes, bandwidth, cache_bandwidth)
             for o, m in zip(ordered, misordered)]
    return max(0.0, float(np.median(extra))) if extra else 0.0


def _naive_convolution(samples: Sequence[Sample]) -> float:
    """ns per flop a convolution pays beyond the row-major one when another layout makes
    the backend run it as a naive loop: the median of ``(t(conv_naive) - t(conv_default))
    / flops`` (0 without the group)."""
    default = [s.ns for s in samples if s.kind == "conv_default"]
    naive = [s for s in samples if s.kind == "conv_naive"]
    if not default or not naive:
        return 0.0
    return max(0.0, float(np.median([(s.ns - min(default)) / s.bytes for s in naive])))


def _dot_form(samples: Sequence[Sample], kind: str, unmeasured: float) -> float:
    """ns per flop a dot pays off its nn form (``kind``: an operand or the result in the
    other layout), ``unmeasured`` without the samples (:func:`_over_reference`)."""
    return _over_reference(samples, kind, "dot_nn", unmeasured)


def _window_minor(samples: Sequence[Sample]) -> float:
    """ns per window element a reduce-window pays with a windowed dim physically minor, 0
    without the groups (:func:`_over_reference`)."""
    return _over_reference(samples, "window_minor", "window_plain", 0.0)


def _over_reference(samples: Sequence[Sample], kind: str, reference: str,
                    missing: float) -> float:
    """The median over the samples of ``(t(kind) - t(reference)) / units``, paired by their
    units of work (a sample's bytes: flops, elements read), at least 0; ``missing`` without
    pairs."""
    times = {s.bytes: s.ns for s in samples if s.kind == reference}
    extra = [(s.ns - times[s.bytes]) / s.bytes for s in samples
             if s.kind == kind and s.bytes in times and s.bytes > 0]
    return _median_at_least_0(extra, missing)


def _paired_ratio(samples: Sequence[Sample], kind: str, reference: str, fixed: float) -> float:
    """The median over sizes of ``kind``'s time over ``reference``'s (same bytes, each after
    the fixed cost of a copy): a factor
    that holds in cache and in DRAM alike, which one slope (dominated by the largest size)
    would not give."""
    refs: dict[int, list[float]] = {}
    for s in samples:
        if s.kind == reference and s.ns > fixed:
            refs.setdefault(s.bytes, []).append(s.ns - fixed)
    ratios = [(s.ns - fixed) / r for s in samples if s.kind == kind
              for r in refs.get(s.bytes, ())]
    if not ratios:
        raise FitError(f"no '{kind}' samples paired with '{reference}'")
    return float(np.median(ratios))


def _inline(samples: Sequence[Sample], bandwidth: float, cache_bandwidth: float,
            minor: float) -> float:
    """What reading one operand in another layout adds to an ``add`` (mixed minus same), in
    copies of that operand as the model prices them (read + write, at the cache's bandwidth
    when it fits, times the minor-moving factor); the median over sizes."""
    same = {s.bytes: s.ns for s in samples if s.kind == "add_same"}
    ratios = []
    for s in samples:
        if s.kind == "add_mixed" and s.bytes in same:
            copy_ns = _pass_ns(2 * s.bytes, bandwidth, cache_bandwidth) * minor
            ratios.append((s.ns - same[s.bytes]) / copy_ns)
    if not ratios:
        raise FitError("no 'add_mixed' samples paired with 'add_same'")
    return float(np.median(ratios))


def _pass_ns(nbytes: int, bandwidth: float, cache_bandwidth: float) -> float:
    """One pass over ``nbytes`` as the model prices it (``Target.pass_ns``)."""
    return nbytes / (cache_bandwidth if nbytes <= CACHE_BYTES else bandwidth)


#: Column reductions reading at most this many bytes apart pay ``reduce_read_factor``, from
#: :data:`WIDE_STRIDE` on ``reduce_wide_factor``, in between by log2 of the stride (measured
#: on a quiet machine, not fitted, f32 sums of 1 MiB, medians of three runs: 14.5 extra passes
#: at 128 bytes apart, 16.1 at 256, 25.1 at 512, 26.6 at 1 KiB, 38.5 at 2 KiB, 47.4-50.6 from
#: 4 KiB on: every doubling of the stride costs more).
NARROW_STRIDE = 128
WIDE_STRIDE = 4096
#: The operand size of the ``scolumn_R``/``srow_R`` pairs and of the ``column_R``/``row_R``
#: ones: a column reduction over ``SMALL_BYTES`` or less pays ``reduce_small_scale`` times
#: the passes measured over ``LARGE_BYTES``, in between by log2 of the size.
SMALL_BYTES = 1 << 18
LARGE_BYTES = 1 << 20


def _small_scale(samples: Sequence[Sample], bandwidth: float, cache_bandwidth: float,
                 read_factor: float, wide_factor: float, min_extent: int,
                 curve: Sequence[tuple[int, float]] = ()) -> float:
    """The median over the ``scolumn_R``/``srow_R`` pairs (``R >= min_extent``) of their
    extra passes over those the 1 MiB fit gives at the same stride (its measured ``curve``
    where there is one; 1 without them)."""
    ratios = []
    for r, (extra, stride) in _extra_passes(samples, "scolumn_", "srow_", bandwidth,
                                            cache_bandwidth).items():
        fitted = (curve_passes(stride, curve) if curve else
                  stride_passes(stride, read_factor, wide_factor or read_factor, NARROW_STRIDE,
                                WIDE_STRIDE))
        if r >= min_extent and fitted > 0:
            ratios.append(extra / fitted)
    return max(0.0, float(np.median(ratios))) if ratios else 1.0


def _extra_passes(samples: Sequence[Sample], column: str, row: str, bandwidth: float,
                  cache_bandwidth: float) -> dict[int, tuple[float, int]]:
    """``R -> (extra passes, read stride in bytes)`` of each ``column + R`` / ``row + R`` pair,
    ``R`` ascending: the column form's time over the row form's, in passes over the operand
    as the model prices them; ``[R, m]`` f32 reduced over dim 0 with dim 1 minor reads
    ``4 m = bytes / R`` bytes apart."""
    times = {s.kind: s for s in samples if s.kind.startswith((column, row))}
    extents = sorted(int(k[len(column):]) for k in times
                     if k.startswith(column) and f"{row}{k[len(column):]}" in times)
    out = {}
    for r in extents:
        c, w = times[f"{column}{r}"], times[f"{row}{r}"]
        out[r] = ((c.ns - w.ns) / _pass_ns(c.bytes, bandwidth, cache_bandwidth), c.bytes // r)
    return out


def _column_reductions(samples: Sequence[Sample], bandwidth: float, cache_bandwidth: float
                       ) -> tuple[float | None, int, float, tuple[tuple[int, float], ...]]:
    """``(read_factor, min_extent, wide_factor, curve)`` from the ``column_R``/``row_R``
    pairs (``(None, 0, 0, ())`` without them): see the module docstring; ``curve`` is
    ``(stride, extra passes)`` of every slow pair, strides ascending, each at least 0."""
    pairs = _extra_passes(samples, "column_", "row_", bandwidth, cache_bandwidth)
    if not pairs:
        return None, 0, 0.0, ()
    min_extent = _slow_from(samples, "column_", "row_", COLUMN_SLOWER)
    slow = [pair for r, pair in pairs.items() if r >= min_extent]
    if not slow:
        return 0.0, min_extent, 0.0, ()
    narrow = [extra for extra, stride in slow if stride <= NARROW_STRIDE]
    wide = [extra for extra, stride in slow if stride >= WIDE_STRIDE]
    every = float(np.median([extra for extra, _ in slow]))
    curve = tuple(sorted((stride, max(0.0, extra)) for extra, stride in slow))
    return (float(np.median(narrow)) if narrow else every, min_extent,
            float(np.median(wide)) if wide else every, curve)


@dataclass(frozen=True, slots=True)
class DeviceCoefficients:
    """An accelerator's coefficients (:func:`fit_device`): the movement terms of :func:`fit`
    on its f32 samples, and what the accelerator's own rules need.

    - ``kernel_ns``: what one more kernel costs inside a module (``kernel_two`` minus
      ``kernel_one``): the fixed cost of a copy, which the base-subtracted copy line cannot
      show (every module runs at least one kernel); ``None`` without the pair;
    - ``minor_by_dtype``: ``copy_minor`` over ``copy`` per dtype, at the sizes both ran;
    - ``row_reduction_factor``: what a reduction with its kept dim minor (a column
      reduction) pays beyond the row form, over the transpose that would make it a row
      one as the model prices it (the ``row_reduction`` rule's ``cost_factor``); the median
      over the f32 matrices and the ``column_R``/``row_R`` pairs, at least 0;
    - ``conv_factor``: per dtype, an NCHW convolution's time beyond the NHWC one over the
      transpose of its input as the model prices it (negative: NCHW is the faster form);
    - ``dot_ratio``: per dtype, ``dot_tn`` and ``dot_nt`` over ``dot_nn`` (the median over
      sizes);
    - ``dot_lhs_ns_per_flop``: per dtype, what a square dot whose lhs is column-major (its
      non-contracting dim minor) pays beyond the row-major one per flop (``2 n^3``), the
      median over sizes, at least 0 (a slower GEMM, not a transpose first: it grows with
      the flops, measured 1.4e-6 and 1.6e-6 ns per flop for f32 at n = 4096 and 8192 on an
      H200, none for bf16).

    ``base.inline_relayout`` is what ``add_mixed`` pays beyond ``add_same`` as measured, not
    at least one copy as on ``cpu`` (an accelerator's fused kernel may read a transposed
    operand at no extra cost), and at least 0.01.
    """

    base: Coefficients
    kernel_ns: float | None
    minor_by_dtype: dict[str, float]
    row_reduction_factor: float
    conv_factor: dict[str, float]
    dot_ratio: dict[str, dict[str, float]]
    dot_lhs_ns_per_flop: dict[str, float]


def fit_device(samples: Sequence[Sample]) -> DeviceCoefficients:
    """:class:`DeviceCoefficients` from an accelerator's samples (``device_groups``)."""
    f32 = [s for s in samples if s.dtype == "f32"]
    base = fit(f32)
    kernels = {s.kind: s.ns for s in samples if s.kind.startswith("kernel_")}
    kernel_ns = (max(0.0, kernels["kernel_two"] - kernels["kernel_one"])
                 if {"kernel_one", "kernel_two"} <= set(kernels) else None)

    def transpose_ns(nbytes: float) -> float:
        """The model's price of the relayout of ``nbytes`` (read + write, minor moving)."""
        return 2 * nbytes / base.bandwidth_gb_per_s * base.minor_moving + (kernel_ns or 0.0)

    def by_size(kind: str, dtype: str) -> dict[int, float]:
        return {s.bytes: s.ns for s in samples if s.kind == kind and s.dtype == dtype}

    minor_by_dtype = {}
    for dtype in sorted({s.dtype for s in samples if s.kind == "copy_minor"}):
        plain, minor = by_size("copy", dtype), by_size("copy_minor", dtype)
        ratios = [minor[b] / plain[b] for b in minor if plain.get(b, 0) > 0]
        if ratios:
            minor_by_dtype[dtype] = round(float(np.median(ratios)), 2)
    row, column = by_size("reduce_minor", "f32"), by_size("reduce_major", "f32")
    extra = [(column[b] - row[b]) / transpose_ns(b) for b in column if b in row]
    strided = {s.kind: s for s in samples if s.kind.startswith(("column_", "row_"))}
    extra += [(strided[k].ns - strided["row_" + k[len("column_"):]].ns)
              / transpose_ns(strided[k].bytes) for k in strided
              if k.startswith("column_") and "row_" + k[len("column_"):] in strided]
    conv_factor = {}
    for dtype in sorted({s.dtype for s in samples if s.kind == "conv_nhwc"}):
        nhwc, nchw = by_size("conv_nhwc", dtype), by_size("conv_nchw", dtype)
        pairs = [(nchw[b] - nhwc[b]) / transpose_ns(b) for b in nchw if b in nhwc]
        if pairs:
            conv_factor[dtype] = round(float(np.median(pairs)), 2)
    dot_ratio: dict[str, dict[str, float]] = {}
    dot_lhs: dict[str, float] = {}
    for dtype in sorted({s.dtype for s in samples if s.kind == "dot_nn"}):
        nn = by_size("dot_nn", dtype)
        for kind in ("dot_tn", "dot_nt"):
            other = by_size(kind, dtype)
            ratios = [other[b] / nn[b] for b in other if nn.get(b, 0) > 0]
            if ratios:
                dot_ratio.setdefault(dtype, {})[kind] = round(float(np.median(ratios)), 2)
        tn, width = by_size("dot_tn", dtype), element_bytes(dtype)
        per_flop = [(tn[b] - nn[b]) / (2 * round((b / width) ** 0.5) ** 3) for b in tn if b in nn]
        if per_flop:
            dot_lhs[dtype] = float(f"{max(0.0, float(np.median(per_flop))):.3g}")
    same, mixed = by_size("add_same", "f32"), by_size("add_mixed", "f32")
    inline = [(mixed[b] - same[b]) / (transpose_ns(b) - (kernel_ns or 0.0))
              for b in mixed if b in same]
    if inline:
        base = dataclasses.replace(base, inline_relayout=max(0.01, float(np.median(inline))))
    return DeviceCoefficients(
        base, None if kernel_ns is None else round(kernel_ns, 1), minor_by_dtype,
        round(max(0.0, float(np.median(extra))), 2) if extra else 0.0, conv_factor, dot_ratio,
        dot_lhs)

