"""The target file a calibration writes: the ``cpu`` target (or, from an accelerator, the
``gpu`` target) with the fitted coefficients, the machine and date it was measured on, and
every measurement as a comment."""

from __future__ import annotations

import json
import textwrap
from collections import defaultdict

import numpy as np

from hlo.shape import element_bits

from hlo.target import TILE_BYTES, HostCpu
from service.calibration.fit import (CACHE_BYTES, LARGE_BYTES, MODULE_COPY_CACHE_BYTES, NARROW_STRIDE,
                                    SMALL_BYTES, WIDE_STRIDE, Coefficients,
                                    DeviceCoefficients)
from service.calibration.microbenchmarks import NEAR_MIN_BYTES, NEAR_STRIDE
from service.calibration.run import Calibration

#: The longest innermost reduction loop LLVM unrolls whole in XLA:CPU (measured: loops of 16,
#: 32 and 64 iterations behave unrolled, 128 and 256 not); not fitted.
UNROLL_EXTENT = 64
#: A standalone transpose whose innermost loop reads its operand fewer bytes apart than this
#: costs what XLA's form of it costs, a 2-D one ``standalone_near`` times that (fitted from
#: the close-read groups, :func:`~service.calibration.microbenchmarks.near_transpose_group`;
#: measured 128-256 bytes apart: 2-D 1.1-1.5x from 32 KiB on, 0.6-0.9x at 16 KiB; with a
#: batch dim 0.1-0.9x); 512 and more 1.7-7.7x; not fitted.
STANDALONE_MIN_STRIDE = NEAR_STRIDE
#: From this read stride on a standalone transpose (or data-moving reshape) pays the full
#: factor; below it the factor scales with the stride (measured: 512 bytes apart 1.7x the
#: copy, 1 KiB 2.5-4.5x, 2 KiB 7.7x); not fitted.
STANDALONE_FULL_STRIDE = 2048
#: From this operand size on a standalone transpose's whole loop nest must stay cached
#: (measured, not fitted: ``hlo.target.TransposeCost``).
NEST_MIN_BYTES = 131072

_TEMPLATE = '''# {platform}: calibrated by `hlo-layout calibrate --platform {platform}` through XLA's own
# execution path (the module run as written, one pinned CPU, {reps} interleaved rounds).
# Machine: {machine}. Date: {date}. Load average then: {load}.{note}
name = "{name}"
description = "Host CPU through XLA:CPU: untiled default layouts, Eigen dot/convolution"
memory_bandwidth_gb_per_s = {c.bandwidth_gb_per_s}
cache_bytes = {cache_bytes}
cache_bandwidth_gb_per_s = {c.cache_bandwidth_gb_per_s}
layout_family = "row_major"
tileable_minor_dims = 0{host}
calibration = "Fitted by hlo-layout calibrate on {machine}, {date} (load average {load1}): copy bandwidth {c.bandwidth_gb_per_s} GB/s (read+write; {c.cache_bandwidth_gb_per_s} GB/s up to {cache_bytes} bytes timed alone, a copy inside a module up to {copy_cache_bytes}) and {c.fixed_ns} ns per copy; a copy moving the minor dim {c.minor_moving}x a plain copy{cached_minor_note}, one permuting major dims only {c.major_only}x; a standalone transpose {c.standalone}x the copy doing the same movement{cached_standalone_note} when its innermost loop reads {full_stride} bytes apart or more, in proportion to the stride from {min_stride} (closer reads: the copy's cost, a 2-D transpose of {near_min_bytes} bytes or more {c.standalone_near}x it; one moving only major dims {c.standalone_major}x XLA's form of it at any stride), a reshape that is not a bitcast {c.reshape_standalone}x (with the same stride rule, closer reads the copy's cost); a copy that keeps its minor dim {c.copy_row_ns} ns more per run of it{standalone_rows_note}; one that moves it (a blocked transpose) {c.copy_tile_ns} ns per tile ({c.copy_tile_input_factor}x where the source's minor dim is the shorter; every element a tile where the result's minor dim has size 1); an elementwise op reading an operand in another layout itself {c.inline_relayout}x the copy that would fix it; a reduction whose minor dim is {c.reduce_slow} {c.reduce_read_factor} extra passes over its operand (the other form is faster){extent_note}{order_note}{in_place_note}; a reduce-window with a windowed dim physically minor {c.window_minor_ns} ns per element its windows read. {n} samples."

[transpose]
minor_moving = {c.minor_moving}
major_only = {c.major_only}
uncoalesced = {c.minor_moving}
standalone = {c.standalone}{cached_factors}
reshape_standalone = {c.reshape_standalone}
standalone_min_stride = {min_stride}
standalone_near = {c.standalone_near}
standalone_near_min_bytes = {near_min_bytes}
standalone_full_stride = {full_stride}
nest_min_bytes = {nest_min_bytes}{standalone_rows}
standalone_major = {c.standalone_major}
note = "Slopes of XLA:CPU copy and transpose times against bytes, relative to a plain copy."
{cache}
[copies]
factor = 1.0
fixed_ns = {c.fixed_ns}
cache_bytes = {copy_cache_bytes}
inline_relayout = {c.inline_relayout}
row_ns = {c.copy_row_ns}
tile_ns = {c.copy_tile_ns}
tile_input_factor = {c.copy_tile_input_factor}
tile_bytes = {tile_bytes}
padding_counts = true
{in_place}
[[op_rules]]
op = "dot"
kind = "dot_batch_most_major"
hard = true
note = "XLA:CPU's dot emitter requires the batch dims of operands and result to be the most major, in order (it refuses other dims there, and computes wrong numbers for another order)."

[[op_rules]]
op = "dot"
kind = "dot_nn"
hard = false
params = {{ ns_per_flop = {c.dot_operand_ns_per_flop}, result_ns_per_flop = {c.dot_result_ns_per_flop} }}
note = "XLA:CPU runs a dot fastest in the physical nn form (lhs contracting dims minor, rhs free dims minor, result row-major) or in its mirror image (the product transposed: lhs free dims minor, rhs contracting dims minor, the result's rhs-free dims major to its lhs-free ones); an operand off the form its result's layout picks costs {c.dot_operand_ns_per_flop} ns per flop more, a result in neither form {c.dot_result_ns_per_flop} (measured)."

[[op_rules]]
op = "convolution"
kind = "default_layout"
hard = false
params = {{ naive_ns_per_flop = {c.conv_naive_ns_per_flop} }}
note = "XLA:CPU hands Eigen only row-major convolutions; with any array in another layout the convolution runs as a naive loop ({c.conv_naive_ns_per_flop} ns per flop more, measured)."

[[op_rules]]
op = "fft"
kind = "default_layout"
hard = true
note = "XLA:CPU's FFT requires dim-0-major (default) layouts (IsMonotonicWithDim0Major, checked when it compiles)."

[[op_rules]]
op = "reduce"
kind = "reduction_minor"
hard = false
params = {{ slow = "{c.reduce_slow}", read_factor = {c.reduce_read_factor}{wide_param}{extent_param}{order_param}{scalar_param} }}
note = "XLA:CPU's unfused reduce runs one of the two forms (minor dim kept or reduced) slower{order_note}."

[[op_rules]]
op = "reduce-window"
kind = "window_minor"
hard = false
params = {{ ns_per_element = {c.window_minor_ns} }}
note = "XLA:CPU's reduce-window runs slower when its result's physically minor dim has a window wider than 1: {c.window_minor_ns} ns more per element its windows read (measured)."
'''


def _stride_note(c: Coefficients) -> str:
    """How the calibration prices a slow column reduction by its read stride."""
    if c.reduce_stride_passes:
        return (", as many as measured by how far apart its reads are (" + ", ".join(
            f"{y} at {x}" for x, y in c.reduce_stride_passes)
            + " bytes apart; in between by log2 of the stride)")
    if c.reduce_wide_factor:
        return (f" at most {NARROW_STRIDE} bytes apart, {c.reduce_wide_factor} from "
                f"{WIDE_STRIDE} bytes apart on (in between by log2 of the stride)")
    return ""


def _cache(geometry: tuple[int, int, int] | None) -> str:
    """The ``[transpose.cache]`` section (the host's level-1 data cache), or nothing."""
    if geometry is None:
        return ""
    sets, ways, line = geometry
    return (f"\n# The level-1 data cache of the calibration machine, as its system reports it.\n"
            f"[transpose.cache]\nsets = {sets}\nways = {ways}\nline_bytes = {line}\n")


def _cached_movement(c: Coefficients) -> dict[str, str]:
    """The ``[transpose]`` lines and the notes of the factors fitted over the cached sizes
    alone (nothing where none were)."""
    minor, standalone = c.minor_moving_cached, c.standalone_cached
    return {
        "cached_factors": "".join(f"\n{key} = {value}" for key, value in (
            ("minor_moving_cached", minor), ("standalone_cached", standalone))
            if value is not None),
        "cached_minor_note": ("" if minor is None
                              else f" ({minor}x where its bytes stay in the cache)"),
        "cached_standalone_note": "" if standalone is None else f" ({standalone}x in the cache)",
    }


def _host(host: HostCpu | None) -> str:
    """The ``host`` line (the built-in ``cpu`` picks the calibration of its host's CPU)."""
    if host is None:
        return ""
    return f"\nhost = {{ vendor = {json.dumps(host.vendor)}, model = {json.dumps(host.model)} }}"


def target_toml(calibration: Calibration, name: str | None = None) -> str:
    """The TOML text (it loads as a target: the CLI checks that before writing it), named
    ``name`` (default: the platform's name)."""
    if isinstance(calibration.coefficients, DeviceCoefficients):
        return device_target_toml(calibration)
    c = calibration.coefficients
    load = ", ".join(f"{x:g}" for x in calibration.load_average)
    text = _TEMPLATE.format(platform=calibration.platform, reps=calibration.reps,
                            name=name or calibration.platform, host=_host(calibration.host),
                            **_cached_movement(c),
                            note="".join(f"\n# {line}" for line in textwrap.wrap(calibration.note, 94)),
                            machine=calibration.machine, date=calibration.date, load=load,
                            load1=calibration.load_average[0], c=c, n=c.samples,
                            min_stride=STANDALONE_MIN_STRIDE,
                            near_min_bytes=NEAR_MIN_BYTES,
                            full_stride=STANDALONE_FULL_STRIDE,
                            nest_min_bytes=NEST_MIN_BYTES,
                            standalone_rows_note=(
                                "" if c.standalone_row_ns is None else
                                f"; a standalone transpose {c.standalone_row_ns} ns per run of its "
                                "result's minor dim (its own loop)"),
                            standalone_rows=("" if c.standalone_row_ns is None else
                                             f"\nstandalone_row_ns = {c.standalone_row_ns}"),
                            cache_bytes=CACHE_BYTES, tile_bytes=TILE_BYTES,
                            copy_cache_bytes=MODULE_COPY_CACHE_BYTES,
                            cache=_cache(calibration.cache),
                            in_place=_in_place(c.in_place, c.in_place_typed),
                            in_place_note=_in_place_note(c.in_place, c.in_place_typed),
                            extent_note=(f" when each result element reads at least "
                                         f"{c.reduce_min_extent} elements"
                                         if c.reduce_min_extent else "")
                            + (f" (an argmax at least {c.reduce_variadic_min_extent}"
                               + (f", its rows spanning at least {c.reduce_variadic_min_span} "
                                  "bytes" if c.reduce_variadic_min_span else "") + ")"
                               if c.reduce_variadic_min_extent else "")
                            + _stride_note(c)
                            + (f", over {LARGE_BYTES} bytes ({c.reduce_small_scale}x that over "
                               f"{SMALL_BYTES} bytes or less, in between by log2 of the size)"
                               if c.reduce_small_scale != 1.0 else ""),
                            wide_param=(f", wide_factor = {c.reduce_wide_factor}, narrow_stride = "
                                        f"{NARROW_STRIDE}, wide_stride = {WIDE_STRIDE}"
                                        if c.reduce_wide_factor else "")
                            + (", stride_passes = ["
                               + ", ".join(f"[{x}, {y}]" for x, y in c.reduce_stride_passes)
                               + "]" if c.reduce_stride_passes else "")
                            + (f", small_bytes = {SMALL_BYTES}, large_bytes = {LARGE_BYTES}, "
                               f"small_scale = {c.reduce_small_scale}"
                               if c.reduce_small_scale != 1.0 else ""),
                            extent_param=(f", min_extent = {c.reduce_min_extent}"
                                          if c.reduce_min_extent else "")
                            + (f", variadic_min_extent = {c.reduce_variadic_min_extent}"
                               if c.reduce_variadic_min_extent else "")
                            + (f", variadic_min_span = {c.reduce_variadic_min_span}"
                               if c.reduce_variadic_min_span else ""),
                            scalar_param=(f", scalar = [\"maximum\"], scalar_factor = "
                                          f"{c.reduce_scalar_factor}"
                                          if c.reduce_scalar_factor else ""),
                            order_param=(f", order_factor = {c.reduce_order_factor}, "
                                         f"unroll_extent = {UNROLL_EXTENT}, vectorized = [\"add\"]"
                                         if c.reduce_order_factor else ""),
                            order_note=(f"; an add row reduction whose physically minor dim is not "
                                        f"the one whose loop is vectorized (the last listed, "
                                        f"or the one before it when the last has at most "
                                        f"{UNROLL_EXTENT} elements and is unrolled) "
                                        f"{c.reduce_order_factor} extra passes"
                                        if c.reduce_order_factor else "")
                            + (f"; a maximum column reduction {c.reduce_scalar_factor} passes "
                               "less (its row form runs scalar)"
                               if c.reduce_scalar_factor else ""))
    return text + "\n" + _measurements(calibration)


def _in_place_note(prices: tuple[tuple[str, float], ...],
                   typed: tuple[tuple[str, str, float], ...] = ()) -> str:
    if not prices and not typed:
        return ""
    listed = ", ".join(f"{op} {ns}" for op, ns in prices)
    for dtype, ops in _by_type(typed).items():
        listed += f"{'; ' if listed else ''}{dtype}: " + ", ".join(f"{op} {ns}" for op, ns in ops)
    return f"; an elementwise op writing over its operand's buffer (scalar loop) {listed} ns per element"


def _in_place(prices: tuple[tuple[str, float], ...],
              typed: tuple[tuple[str, str, float], ...] = ()) -> str:
    """The ``[in_place.ns_per_element]`` table and one ``[in_place.by_type.T]`` table per
    other element type measured (empty: none measured above noise)."""
    text = "\n[in_place.ns_per_element]\n" + "".join(f"{op} = {ns}\n" for op, ns in prices) \
        if prices else ""
    for dtype, ops in _by_type(typed).items():
        text += f"\n[in_place.by_type.{dtype}]\n" + "".join(f"{op} = {ns}\n" for op, ns in ops)
    return text


def _by_type(typed: tuple[tuple[str, str, float], ...]) -> dict[str, list[tuple[str, float]]]:
    """``(dtype, opcode, ns)`` prices grouped by element type, in their order."""
    out: dict[str, list[tuple[str, float]]] = {}
    for dtype, op, ns in typed:
        out.setdefault(dtype, []).append((op, ns))
    return out


def _measurements(calibration: Calibration) -> str:
    """Every measurement, ns per byte of operand by kind and dtype, one comment line each."""
    rows: dict[tuple[str, str], list[str]] = defaultdict(list)
    for m in calibration.measured:
        rows[(m.kind, m.dtype)].append(f"{m.bytes}B {m.median_ms:.4f}ms")
    lines = ["# Measured medians (module time; the fit subtracts the fastest base module):"]
    lines += [f"#   {kind:<16} {dtype:<5} " + ", ".join(v) for (kind, dtype), v in sorted(rows.items())]
    return "\n".join(lines) + "\n"


_DEVICE_TEMPLATE = '''# gpu: calibrated by `hlo-layout calibrate --platform {platform}`: each microbenchmark ran through
# XLA's whole GPU pipeline with its entry layouts pinned (a one-op module's entry layouts are
# its op's layouts), {reps} interleaved rounds, the medians fitted.
# Machine: {machine}. Date: {date}.{note}
# Measured: the bandwidth, the cost of one more kernel, every [transpose] and [copies] factor,
# the row_reduction rule's and the 2-D convolution rules' cost_factor, the soft dot rules'
# ns_per_flop. Not measured (from XLA's GPU layout assignment and emitters, not timed): the
# hard dot, fft and sort rules, the f64 and 3-D convolution preferences and the shared-memory
# staging's tile and bandwidth.
name = "gpu"
description = "GPU through XLA:GPU: untiled layouts, cuBLAS/cuDNN operand rules, shared-memory tiled transposes"
memory_bandwidth_gb_per_s = {c.bandwidth_gb_per_s}
layout_family = "row_major"
tileable_minor_dims = 0
calibration = "Fitted by hlo-layout calibrate on {machine}, {date}: copy bandwidth {c.bandwidth_gb_per_s} GB/s (read+write); one more kernel in a module {fixed_ns} ns; a copy moving the minor dim {c.minor_moving}x a plain copy ({per_dtype}), one permuting major dims only {c.major_only}x; a standalone transpose {c.standalone}x the copy doing the same movement, a reshape that is not a bitcast {c.reshape_standalone}x; an elementwise op reading an operand in another layout itself {c.inline_relayout}x the copy that would fix it; a reduction with its kept dim minor {row_factor}x the transpose that would make it a row reduction beyond the row form; {conv_note}; a square dot with its lhs or rhs column-major against the row-major one: {dot_note}. {n} samples."

[transpose]
minor_moving = {c.minor_moving}
major_only = {c.major_only}
uncoalesced = {c.minor_moving}
standalone = {c.standalone}
reshape_standalone = {c.reshape_standalone}{by_bytes}
note = "Slopes of XLA:GPU copy and transpose times against bytes, relative to a plain copy (by element width where it differs); XLA's transpose emitter stages 32x32 tiles through shared memory."

[transpose.shared_staging]
rows = 32
cols = 32
padding = 1
bandwidth_gb_per_s = 29600.0
note = "XLA's transpose emitter (tensor<32x1x33xf32>): with the +1 padding, 4-byte and wider elements are conflict-free; 1- and 2-byte ones are 2-way on some columns. Not measured: the tile is the emitter's, the bandwidth 132 SMs x 32 banks x 4 bytes per clock x 1.755 GHz."

[copies]
factor = 1.0
fixed_ns = {fixed_ns}
inline_relayout = {c.inline_relayout}
padding_counts = true

[[op_rules]]
op = "dot"
kind = "dot_batch_not_most_minor"
hard = true
note = "cuBLAS cannot take a batch dim as the most-minor dim of an operand or result."

[[op_rules]]
op = "dot"
kind = "dot_groups_contiguous"
hard = true
note = "Batch, row and column dim groups must each be physically contiguous (batch most major); otherwise operands are forced to batch, contracting/non-contracting order."

[[op_rules]]
op = "dot"
kind = "dot_contracting_most_minor"
element_types = ["s8", "u8", "f8e4m3fn", "f8e5m2", "f8e4m3fnuz", "f8e5m2fnuz", "f8e4m3", "f8e3m4"]
hard = true
note = "int8 and fp8 GEMMs need the contracting dim most minor on both operands."
{dot_rules}{conv_rules}
[[op_rules]]
op = "convolution"
kind = "conv_layout"
element_types = ["f64"]
hard = false
params = {{ layout = "NCHW" }}
note = "f64 convolutions stay NCHW (not measured)."

[[op_rules]]
op = "convolution"
kind = "conv_layout"
spatial_dims = [3]
hard = false
params = {{ layout = "NCHW" }}
note = "3-D convolutions stay NCHW (not measured)."

[[op_rules]]
op = "fft"
kind = "default_layout"
hard = true
note = "cuFFT requires default (descending) layouts on operand and result."

[[op_rules]]
op = "sort"
kind = "default_layout"
hard = true
note = "All sort operands and results share the default layout."

[[op_rules]]
op = "reduce"
kind = "row_reduction"
hard = false
params = {{ min_reduced_size = 32, cost_factor = {row_factor} }}
note = "Reduced dims most minor (row reduction) when the reduced size is at least 32; kept dims keep their order. A column reduction measured {row_factor}x the transpose that would make it a row one beyond the row form."
'''

#: The element types each measured convolution dtype speaks for (cuDNN runs f16 as bf16).
_CONV_TYPES = {"f32": ("f32",), "bf16": ("f16", "bf16")}
#: A measured difference smaller than this share of the faster form is not made a rule.
_NOISE = 0.05
#: NCHW is preferred only where it measured faster by more than this many input transposes
#: (a smaller lead is noise: NHWC kept, a miss priced at nothing).
_FLIP = 0.1


def _dot_rules(ratios: dict[str, dict[str, float]], per_flop: dict[str, float]) -> str:
    """A soft ``dot_contracting_most_minor`` rule on the lhs for each dtype whose dot with a
    column-major lhs measured slower, priced per flop (a slower GEMM, not a transpose)."""
    out = []
    for dtype, found in ratios.items():
        slower = found.get("dot_tn", 1.0)
        if slower < 1 + _NOISE or not per_flop.get(dtype):
            continue
        out.append(f'''
[[op_rules]]
op = "dot"
kind = "dot_contracting_most_minor"
element_types = ["{dtype}"]
operands = [0]
hard = false
params = {{ ns_per_flop = {per_flop[dtype]} }}
note = "{dtype} dots with the lhs's contracting dim not most minor: a square dot with a column-major lhs measured {slower}x the row-major one ({per_flop[dtype]} ns per flop more); a column-major rhs {found.get('dot_nt', 1.0)}x."
''')
    return "".join(out)


def _conv_rules(factors: dict[str, float]) -> str:
    """One 2-D ``conv_layout`` rule per measured dtype: the faster form preferred, a miss
    priced at the measured extra time over the model's transpose of the input."""
    out = []
    for dtype, factor in factors.items():
        nchw = factor < -_FLIP
        layout, other = ("NCHW", "NHWC") if nchw else ("NHWC", "NCHW")
        factor = -factor if nchw else max(0.0, factor)
        types = ", ".join(f'"{t}"' for t in _CONV_TYPES.get(dtype, (dtype,)))
        out.append(f'''
[[op_rules]]
op = "convolution"
kind = "conv_layout"
element_types = [{types}]
spatial_dims = [2]
hard = false
params = {{ layout = "{layout}", cost_factor = {factor} }}
note = "2-D {dtype} convolutions: {other} measured {factor}x the transpose of the input beyond {layout}."
''')
    return "".join(out)


def _minor_by_bytes(minor: float, by_dtype: dict[str, float]) -> str:
    """The ``minor_moving_by_bytes`` line: per element width, the median of its dtypes'
    measured factors, where it differs from ``minor`` by more than the noise."""
    widths: dict[int, list[float]] = defaultdict(list)
    for dtype, factor in by_dtype.items():
        widths[max(1, element_bits(dtype) // 8)].append(factor)
    found = {w: round(float(np.median(f)), 2) for w, f in sorted(widths.items())}
    kept = {w: f for w, f in found.items() if abs(f - minor) > _NOISE * minor}
    if not kept:
        return ""
    return "\nminor_moving_by_bytes = { " + ", ".join(f"{w} = {f}" for w, f in kept.items()) + " }"


def device_target_toml(calibration: Calibration) -> str:
    """The ``gpu`` target file of an accelerator calibration."""
    d = calibration.coefficients
    assert isinstance(d, DeviceCoefficients)
    c = d.base
    fixed = c.fixed_ns if d.kernel_ns is None else d.kernel_ns
    conv = "; ".join(f"an NCHW {t} convolution {f}x the transpose of its input beyond NHWC"
                     for t, f in d.conv_factor.items()) or "no convolution measured"
    dots = "; ".join(f"{t} lhs {r.get('dot_tn', 1.0)}x, rhs {r.get('dot_nt', 1.0)}x"
                     for t, r in d.dot_ratio.items()) or "not measured"
    text = _DEVICE_TEMPLATE.format(
        platform=calibration.platform, reps=calibration.reps, machine=calibration.machine,
        date=calibration.date, c=c, fixed_ns=fixed, n=c.samples,
        by_bytes=_minor_by_bytes(c.minor_moving, d.minor_by_dtype),
        note="".join(f"\n# {line}" for line in textwrap.wrap(calibration.note, 94)),
        per_dtype=", ".join(f"{t} {f}x" for t, f in d.minor_by_dtype.items()),
        row_factor=d.row_reduction_factor, conv_note=conv, dot_note=dots,
        conv_rules=_conv_rules(d.conv_factor),
        dot_rules=_dot_rules(d.dot_ratio, d.dot_lhs_ns_per_flop))
    return text + "\n" + _measurements(calibration)
