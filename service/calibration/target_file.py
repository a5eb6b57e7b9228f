"""The target file a calibration writes: the ``cpu`` target with the fitted coefficients, the
machine and date it was measured on, and every measurement as a comment."""

from __future__ import annotations

from collections import defaultdict

from service.calibration.fit import CACHE_BYTES, NARROW_STRIDE, WIDE_STRIDE
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

_TEMPLATE = '''# {platform}: calibrated by `hlo-layout calibrate --platform {platform}` through XLA's own
# execution path (the module run as written, one pinned CPU, {reps} interleaved rounds).
# Machine: {machine}. Date: {date}. Load average then: {load}.
name = "{platform}"
description = "Host CPU through XLA:CPU: untiled default layouts, Eigen dot/convolution"
memory_bandwidth_gb_per_s = {c.bandwidth_gb_per_s}
cache_bytes = {cache_bytes}
cache_bandwidth_gb_per_s = {c.cache_bandwidth_gb_per_s}
layout_family = "row_major"
tileable_minor_dims = 0
calibration = "Fitted by hlo-layout calibrate on {machine}, {date} (load average {load1}): copy bandwidth {c.bandwidth_gb_per_s} GB/s (read+write; {c.cache_bandwidth_gb_per_s} GB/s up to {cache_bytes} bytes) and {c.fixed_ns} ns per copy; a copy moving the minor dim {c.minor_moving}x a plain copy, one permuting major dims only {c.major_only}x; a standalone transpose {c.standalone}x the copy doing the same movement when its innermost loop reads {full_stride} bytes apart or more, in proportion to the stride from {min_stride} (closer reads: the copy's cost, a 2-D transpose of {near_min_bytes} bytes or more {c.standalone_near}x it), a reshape that is not a bitcast {c.reshape_standalone}x (with the same stride rule, closer reads the copy's cost); a relayout {c.copy_row_ns} ns more per run of its result's minor dim (every element a run where that dim has size 1{standalone_rows_note}); an elementwise op reading an operand in another layout itself {c.inline_relayout}x the copy that would fix it; a reduction whose minor dim is {c.reduce_slow} {c.reduce_read_factor} extra passes over its operand (the other form is faster){extent_note}{order_note}. {n} samples."

[transpose]
minor_moving = {c.minor_moving}
major_only = {c.major_only}
uncoalesced = {c.minor_moving}
standalone = {c.standalone}
reshape_standalone = {c.reshape_standalone}
standalone_min_stride = {min_stride}
standalone_near = {c.standalone_near}
standalone_near_min_bytes = {near_min_bytes}
standalone_full_stride = {full_stride}{standalone_rows}
note = "Slopes of XLA:CPU copy and transpose times against bytes, relative to a plain copy."

[copies]
factor = 1.0
fixed_ns = {c.fixed_ns}
inline_relayout = {c.inline_relayout}
row_ns = {c.copy_row_ns}
padding_counts = true

[[op_rules]]
op = "dot"
kind = "dot_batch_most_major"
hard = true
note = "XLA:CPU's dot emitter requires the batch dims of operands and result to be the most major, in order (it refuses other dims there, and computes wrong numbers for another order)."

[[op_rules]]
op = "dot"
kind = "default_layout"
hard = false
note = "Eigen expects default (row-major) operands; other layouts are transposed internally."

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
'''


def target_toml(calibration: Calibration) -> str:
    """The TOML text (it loads as a target: the CLI checks that before writing it)."""
    c = calibration.coefficients
    load = ", ".join(f"{x:g}" for x in calibration.load_average)
    text = _TEMPLATE.format(platform=calibration.platform, reps=calibration.reps,
                            machine=calibration.machine, date=calibration.date, load=load,
                            load1=calibration.load_average[0], c=c, n=c.samples,
                            min_stride=STANDALONE_MIN_STRIDE,
                            near_min_bytes=NEAR_MIN_BYTES,
                            full_stride=STANDALONE_FULL_STRIDE,
                            standalone_rows_note=(
                                "" if c.standalone_row_ns is None else
                                f"; a standalone transpose of three or more dims reading closer than "
                                f"{STANDALONE_MIN_STRIDE} bytes {c.standalone_row_ns} ns"),
                            standalone_rows=("" if c.standalone_row_ns is None else
                                             f"\nstandalone_row_ns = {c.standalone_row_ns}"),
                            cache_bytes=CACHE_BYTES,
                            extent_note=(f" when each result element reads at least "
                                         f"{c.reduce_min_extent} elements"
                                         if c.reduce_min_extent else "")
                            + (f" at most {NARROW_STRIDE} bytes apart, {c.reduce_wide_factor} "
                               f"from {WIDE_STRIDE} bytes apart on (in between by log2 of "
                               "the stride)" if c.reduce_wide_factor else ""),
                            wide_param=(f", wide_factor = {c.reduce_wide_factor}, narrow_stride = "
                                        f"{NARROW_STRIDE}, wide_stride = {WIDE_STRIDE}"
                                        if c.reduce_wide_factor else ""),
                            extent_param=(f", min_extent = {c.reduce_min_extent}"
                                          if c.reduce_min_extent else ""),
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


def _measurements(calibration: Calibration) -> str:
    """Every measurement, ns per byte of operand by kind and dtype, one comment line each."""
    rows: dict[tuple[str, str], list[str]] = defaultdict(list)
    for m in calibration.measured:
        rows[(m.kind, m.dtype)].append(f"{m.bytes}B {m.median_ms:.4f}ms")
    lines = ["# Measured medians (module time; the fit subtracts the fastest base module):"]
    lines += [f"#   {kind:<16} {dtype:<5} " + ", ".join(v) for (kind, dtype), v in sorted(rows.items())]
    return "\n".join(lines) + "\n"
