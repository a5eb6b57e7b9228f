"""``dot`` and ``convolution`` with full dimension numbers.

Float accumulation: the products and sums of f16/bf16/f32 (and f64) operands
are computed in f64 and rounded to the result type once. HLO leaves the
summation order unspecified; accumulating this precisely makes the result
independent of the order in practice, so a module and its relayouted rewrite
(which may transpose operands and so change BLAS's order) agree bit for bit.
Integer dots accumulate in 64 bits and wrap to the result width (the same
value modulo 2**n as XLA's n-bit accumulation).
"""

from __future__ import annotations

import numpy as np

from hlo.interpreter.machine import Machine, error_at, ints, register
from hlo.interpreter.shape_ops import pad_array
from hlo.interpreter.values import Value, dtype_of
from hlo.ir import ConvDimLabels, Instruction, PaddingConfig, PaddingDim, Window, WindowDim


def accumulation_dtype(out: np.dtype) -> np.dtype:
    if out.kind == "c":
        return np.dtype(np.complex128)
    if out.kind == "u":
        return np.dtype(np.uint64)
    if out.kind in "ib":
        return np.dtype(np.int64)
    return np.dtype(np.float64)


def _widen(x: np.ndarray, acc: np.dtype) -> np.ndarray:
    if acc.kind in "iu" and x.dtype.kind == "f":
        return x.astype(np.float64).astype(acc)
    if acc.kind in "iu" and x.dtype.itemsize == 1 and x.dtype not in (np.int8, np.uint8, np.bool_):
        return x.astype(np.int64).astype(acc)  # sub-byte ints
    return x.astype(acc)


@register("dot")
def _dot(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    lhs, rhs = ops[0], ops[1]
    lb = ints(instr, "lhs_batch_dims", ())
    rb = ints(instr, "rhs_batch_dims", ())
    lc = ints(instr, "lhs_contracting_dims", ())
    rc = ints(instr, "rhs_contracting_dims", ())
    out_dtype = dtype_of(instr.array_shape.element_type)
    acc = accumulation_dtype(out_dtype)
    lf = [d for d in range(lhs.ndim) if d not in lb and d not in lc]
    rf = [d for d in range(rhs.ndim) if d not in rb and d not in rc]
    batch = [lhs.shape[d] for d in lb]
    lfree = [lhs.shape[d] for d in lf]
    rfree = [rhs.shape[d] for d in rf]
    k = int(np.prod([lhs.shape[d] for d in lc], dtype=np.int64))
    a = np.transpose(_widen(lhs, acc), (*lb, *lf, *lc)).reshape(
        int(np.prod(batch, dtype=np.int64)), int(np.prod(lfree, dtype=np.int64)), k
    )
    b = np.transpose(_widen(rhs, acc), (*rb, *rc, *rf)).reshape(
        int(np.prod(batch, dtype=np.int64)), k, int(np.prod(rfree, dtype=np.int64))
    )
    # A tuple, not unpacked arguments: a vector-vector dot has an empty result shape.
    out = np.matmul(a, b).reshape((*batch, *lfree, *rfree))
    return _round(out, out_dtype)


def _round(x: np.ndarray, out_dtype: np.dtype) -> np.ndarray:
    if out_dtype.kind == "b":
        return x != 0
    if x.dtype.kind in "iu" and out_dtype.kind in "iu" and out_dtype.itemsize == 1 and out_dtype not in (np.int8, np.uint8):
        return x.astype(np.int8 if out_dtype.kind == "i" else np.uint8).astype(out_dtype)
    return x.astype(out_dtype)


def _window(instr: Instruction, spatial: int) -> tuple[WindowDim, ...]:
    window = instr.attr("window")
    if window is None:
        return tuple(WindowDim(size=1) for _ in range(spatial))
    if not isinstance(window, Window):
        raise error_at(instr, "malformed attribute 'window'")
    return window.dims


@register("convolution")
def _convolution(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    labels = instr.attr("dim_labels")
    if not isinstance(labels, ConvDimLabels):
        raise error_at(instr, "missing attribute 'dim_labels'")
    lhs, rhs = ops[0], ops[1]
    out_dtype = dtype_of(instr.array_shape.element_type)
    acc = accumulation_dtype(out_dtype)
    groups = int(instr.attr("feature_group_count", 1) or 1)
    batch_groups = int(instr.attr("batch_group_count", 1) or 1)
    spatial = len(labels.input_spatial)
    window = _window(instr, spatial)
    if len(window) != spatial:
        raise error_at(instr, f"window has {len(window)} dims for {spatial} spatial dims")

    # Canonical order: lhs (N, C, S...), kernel (O, I, K...).
    x = np.transpose(_widen(lhs, acc), (labels.input_batch, labels.input_feature, *labels.input_spatial))
    w = np.transpose(
        _widen(rhs, acc),
        (labels.kernel_output_feature, labels.kernel_input_feature, *labels.kernel_spatial),
    )
    reversed_dims = [2 + i for i, wd in enumerate(window) if wd.window_reversal]
    if reversed_dims:
        w = np.flip(w, axis=reversed_dims)
    config = PaddingConfig(
        (PaddingDim(0, 0), PaddingDim(0, 0))
        + tuple(PaddingDim(wd.padding_low, wd.padding_high, wd.base_dilation - 1) for wd in window)
    )
    x = pad_array(x, np.zeros((), acc), config)

    out_sizes = []
    for i, wd in enumerate(window):
        span = (w.shape[2 + i] - 1) * wd.window_dilation + 1
        out_sizes.append(max((x.shape[2 + i] - span) // wd.stride + 1, 0))

    n, c = x.shape[0], x.shape[1]
    o, i_feat = w.shape[0], w.shape[1]
    if groups > 1 and batch_groups > 1:
        raise error_at(instr, "feature_group_count and batch_group_count both > 1")
    out_batch = n // batch_groups
    result = np.zeros((out_batch, o, *out_sizes), acc)
    letters = "xyzuvwrst"[:spatial]
    for kpos in np.ndindex(*w.shape[2:]):
        index = [slice(None), slice(None)]
        for d, (kk, wd) in enumerate(zip(kpos, window)):
            start = kk * wd.window_dilation
            index.append(slice(start, start + (out_sizes[d] - 1) * wd.stride + 1, wd.stride))
        patch = x[tuple(index)]  # (N, C, Out...)
        kernel = w[(slice(None), slice(None), *kpos)]  # (O, I)
        if batch_groups > 1:
            p = patch.reshape(batch_groups, out_batch, c, *out_sizes)
            k = kernel.reshape(batch_groups, o // batch_groups, i_feat)
            contrib = np.einsum(f"bnc{letters},boc->nbo{letters}", p, k, optimize=True)
        else:
            p = patch.reshape(n, groups, c // groups, *out_sizes)
            k = kernel.reshape(groups, o // groups, i_feat)
            contrib = np.einsum(f"ngc{letters},goc->ngo{letters}", p, k, optimize=True)
        result += contrib.reshape(result.shape)

    axes = [0] * (2 + spatial)
    axes[labels.output_batch] = 0
    axes[labels.output_feature] = 1
    for s, d in enumerate(labels.output_spatial):
        axes[d] = 2 + s
    return _round(np.array(np.transpose(result, axes), order="C"), out_dtype)


@register("fft")
def _fft(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    x = ops[0]
    kind = str(instr.attr("fft_type"))
    lengths = ints(instr, "fft_length")
    axes = tuple(range(x.ndim - len(lengths), x.ndim))
    out_dtype = dtype_of(instr.array_shape.element_type)
    wide = x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)
    if kind == "FFT":
        r = np.fft.fftn(wide, axes=axes)
    elif kind == "IFFT":
        r = np.fft.ifftn(wide, axes=axes)
    elif kind == "RFFT":
        r = np.fft.rfftn(wide, s=lengths, axes=axes)
    elif kind == "IRFFT":
        r = np.fft.irfftn(wide, s=lengths, axes=axes)
    else:
        raise error_at(instr, f"unknown fft_type '{kind}'")
    return r.astype(out_dtype)
