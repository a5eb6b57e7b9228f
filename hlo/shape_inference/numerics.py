"""Numerical library ops: FFT, linear algebra, batch norm, random numbers.

``fft(f32[8,16]), fft_type=RFFT, fft_length={16} -> c64[8,9]``.
"""

from __future__ import annotations

from hlo.shape import Shape, TupleShape
from hlo.shape_inference.operands import (
    COMPLEX_COMPONENT,
    Context,
    array,
    fail,
    is_complex,
    is_float,
)


def fft(ctx: Context) -> Shape:
    x = ctx.array(0)
    kind = str(ctx.instr.attr("fft_type", "FFT"))
    length = ctx.ints("fft_length", None)
    n = len(length)
    if not 1 <= n <= 3 or x.rank < n:
        fail(f"fft_length {list(length)} is invalid for {x}")
    if kind in ("FFT", "IFFT"):
        if not is_complex(x.element_type):
            fail(f"{kind} needs a complex operand, got {x}")
        return x
    if kind == "RFFT":
        if x.element_type not in ("f32", "f64"):
            fail(f"RFFT needs an f32 or f64 operand, got {x}")
        if tuple(x.dims[-n:]) != tuple(length):
            fail(f"RFFT operand minor dims {list(x.dims[-n:])} must equal fft_length "
                 f"{list(length)}")
        out_type = "c64" if x.element_type == "f32" else "c128"
        return array(out_type, (*x.dims[:-1], length[-1] // 2 + 1))
    if kind == "IRFFT":
        if not is_complex(x.element_type):
            fail(f"IRFFT needs a complex operand, got {x}")
        if tuple(x.dims[-n:-1]) != tuple(length[:-1]) or x.dims[-1] != length[-1] // 2 + 1:
            fail(f"IRFFT operand {x} does not match fft_length {list(length)}")
        return array(COMPLEX_COMPONENT[x.element_type], (*x.dims[:-1], length[-1]))
    fail(f"unknown fft_type '{kind}'")


def cholesky(ctx: Context) -> Shape:
    x = ctx.array(0)
    if x.rank < 2 or x.dims[-1] != x.dims[-2]:
        fail(f"cholesky needs square minor matrices, got {x}")
    return x


def triangular_solve(ctx: Context) -> Shape:
    a, b = ctx.array(0), ctx.array(1)
    if a.rank < 2 or a.rank != b.rank or a.dims[-1] != a.dims[-2]:
        fail(f"triangular-solve needs a square batched matrix a and b of its rank: {a}, {b}")
    if a.dims[:-2] != b.dims[:-2] or a.element_type != b.element_type:
        fail(f"triangular-solve batch dims and types must agree: {a}, {b}")
    return b


def _features(ctx: Context) -> tuple[int, int]:
    x = ctx.array(0)
    f = ctx.int("feature_index")
    if not 0 <= f < x.rank or not is_float(x.element_type):
        fail(f"feature_index {f} is invalid for {x}")
    for i in range(1, len(ctx.operands)):
        s = ctx.array(i)
        if s.rank == 1 and s.dims[0] != x.dims[f]:
            fail(f"batch-norm operand {i} {s} must have {x.dims[f]} features")
    return f, x.dims[f]


def batch_norm_training(ctx: Context) -> Shape:
    _, n = _features(ctx)
    x = ctx.array(0)
    vec = array(x.element_type, (n,))
    return TupleShape((x, vec, vec))


def batch_norm_inference(ctx: Context) -> Shape:
    _features(ctx)
    return ctx.array(0)


def batch_norm_grad(ctx: Context) -> Shape:
    _, n = _features(ctx)
    x = ctx.array(0)
    vec = array(x.element_type, (n,))
    return TupleShape((x, vec, vec))


def rng(ctx: Context) -> Shape:
    a, b = ctx.scalar(0), ctx.scalar(1)
    out = ctx.result_array()
    if a.element_type != b.element_type or out.element_type != a.element_type:
        fail(f"rng bounds {a}, {b} and result {out.dims_text()} must share one element type")
    return out


def rng_bit_generator(ctx: Context) -> Shape:
    state = ctx.array(0)
    out = ctx.result
    if isinstance(out, TupleShape):
        if len(out.elements) != 2:
            fail(f"rng-bit-generator returns (state, bits), got {out}")
        return TupleShape((state, out.elements[1]))
    return out


def rng_state(ctx: Context) -> Shape:
    return array("u64", (2,))


RULES = {
    "fft": fft,
    "cholesky": cholesky,
    "triangular-solve": triangular_solve,
    "batch-norm-training": batch_norm_training,
    "batch-norm-inference": batch_norm_inference,
    "batch-norm-grad": batch_norm_grad,
    "rng": rng,
    "rng-bit-generator": rng_bit_generator,
    "rng-get-and-update-state": rng_state,
}
