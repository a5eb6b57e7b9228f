"""Elementwise opcodes with XLA's integer and float semantics.

Integer rules (XLA's elemental emitter): arithmetic wraps around; ``x / 0`` is
-1 (all bits set, so the maximum for unsigned types), ``INT_MIN / -1`` is
``INT_MIN``; ``x % 0`` is ``x``, ``INT_MIN % -1`` is 0; division truncates toward
zero and the remainder takes the dividend's sign. Shift amounts are read as
unsigned: an amount >= the bit width gives 0 for ``shift-left`` and
``shift-right-logical`` and the sign fill for ``shift-right-arithmetic``.
Float ``remainder`` is C ``fmod``. ``maximum``/``minimum`` propagate NaN.
``convert`` from float to integer saturates and maps NaN to 0; to ``pred`` it
is ``x != 0``; float narrowing rounds to nearest even.
"""

from __future__ import annotations

import math

import numpy as np

from hlo.interpreter.machine import Machine, error_at, register
from hlo.interpreter.values import (
    Value,
    bit_width,
    bits_dtype,
    dtype_of,
    element_type_of,
    from_bits,
    is_float,
    to_bits,
)
from hlo.ir import Instruction


def _out_dtype(instr: Instruction) -> np.dtype:
    return dtype_of(instr.shape.element_type)


def _cast(x: np.ndarray | np.generic, instr: Instruction) -> np.ndarray:
    return np.asarray(x).astype(_out_dtype(instr), copy=False)


def _compute_dtype(dtype: np.dtype) -> np.dtype:
    """Sub-32-bit floats are computed in f32 and rounded back (ml_dtypes lacks most ufuncs)."""
    if is_float(dtype) and dtype.itemsize < 4 and dtype != np.float16:
        return np.dtype(np.float32)
    return dtype


def _float_unary(fn):
    def handler(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
        x = ops[0]
        wide = x.astype(_compute_dtype(x.dtype), copy=False)
        return _cast(fn(wide), instr)

    return handler


def _round_afz(x: np.ndarray) -> np.ndarray:
    whole = np.trunc(x)
    frac = x - whole  # exact for floats
    return whole + np.where(np.abs(frac) >= 0.5, np.sign(x), 0).astype(x.dtype)


def _sign(x: np.ndarray) -> np.ndarray:
    if np.issubdtype(x.dtype, np.complexfloating):
        mag = np.abs(x)
        return np.where(mag == 0, 0, x / np.where(mag == 0, 1, mag)).astype(x.dtype)
    return np.where(x == 0, x, np.sign(x)).astype(x.dtype)


def _logistic(x: np.ndarray) -> np.ndarray:
    return (1 / (1 + np.exp(-x))).astype(x.dtype)


def _erf(x: np.ndarray) -> np.ndarray:
    try:
        from scipy.special import erf
    except ImportError:  # pragma: no cover - scipy ships with the test extras
        return np.vectorize(math.erf, otypes=[x.dtype])(x)
    return erf(x).astype(x.dtype)


_FLOAT_UNARY = {
    "exponential": np.exp,
    "exponential-minus-one": np.expm1,
    "log": np.log,
    "log-plus-one": np.log1p,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: (1 / np.sqrt(x)).astype(x.dtype),
    "cbrt": np.cbrt,
    "tanh": np.tanh,
    "tan": np.tan,
    "sine": np.sin,
    "cosine": np.cos,
    "logistic": _logistic,
    "erf": _erf,
    "floor": np.floor,
    "ceil": np.ceil,
    "round-nearest-even": np.rint,
    "round-nearest-afz": _round_afz,
}

for _name, _fn in _FLOAT_UNARY.items():
    register(_name)(_float_unary(_fn))


@register("negate")
def _negate(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    x = ops[0]
    return _cast(np.negative(x.astype(_compute_dtype(x.dtype), copy=False)), instr)


@register("abs")
def _abs(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    x = ops[0]
    return _cast(np.abs(x.astype(_compute_dtype(x.dtype), copy=False)), instr)


@register("sign")
def _sign_op(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    x = ops[0]
    return _cast(_sign(x.astype(_compute_dtype(x.dtype), copy=False)), instr)


@register("not")
def _not(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    x = ops[0]
    return _cast(np.logical_not(x) if x.dtype == np.bool_ else np.invert(x), instr)


@register("is-finite")
def _is_finite(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    return np.isfinite(ops[0].astype(np.float64))


@register("count-leading-zeros", "clz")
def _clz(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    x = ops[0]
    width = bit_width(x.dtype)
    bits = to_bits(x).astype(np.uint64)
    highest = np.zeros(bits.shape, np.int64)
    remaining = bits.copy()
    for shift in (32, 16, 8, 4, 2, 1):
        big = remaining >> np.uint64(shift) != 0
        highest = np.where(big, highest + shift, highest)
        remaining = np.where(big, remaining >> np.uint64(shift), remaining)
    count = np.where(bits == 0, width, width - 1 - highest)
    return _cast(count, instr)


@register("popcnt")
def _popcnt(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    bits = to_bits(ops[0]).astype(np.uint64)
    count = np.zeros(bits.shape, np.int64)
    for k in range(bit_width(ops[0].dtype)):
        count += ((bits >> np.uint64(k)) & np.uint64(1)).astype(np.int64)
    return _cast(count, instr)


@register("real")
def _real(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    return _cast(np.real(ops[0]), instr)


@register("imag")
def _imag(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    x = ops[0]
    return _cast(np.imag(x) if np.iscomplexobj(x) else np.zeros_like(x), instr)


@register("complex")
def _complex(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    return _cast(ops[0] + 1j * ops[1].astype(np.result_type(ops[1].dtype, np.complex64)), instr)


# ---------------------------------------------------------------------------
# Binary arithmetic
# ---------------------------------------------------------------------------


def _int_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    zero = b == 0
    if np.issubdtype(a.dtype, np.signedinteger):
        info = np.iinfo(a.dtype)
        overflow = (a == info.min) & (b == -1)
        safe = np.where(zero | overflow, 1, b).astype(a.dtype)
        rem = np.fmod(a, safe)
        q = ((a - rem) // safe).astype(a.dtype)
        return np.where(zero, a.dtype.type(-1), np.where(overflow, info.min, q)).astype(a.dtype)
    safe = np.where(zero, 1, b).astype(a.dtype)
    return np.where(zero, np.iinfo(a.dtype).max, a // safe).astype(a.dtype)


def _int_remainder(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    zero = b == 0
    if np.issubdtype(a.dtype, np.signedinteger):
        overflow = (a == np.iinfo(a.dtype).min) & (b == -1)
        safe = np.where(zero | overflow, 1, b).astype(a.dtype)
        return np.where(zero, a, np.where(overflow, 0, np.fmod(a, safe))).astype(a.dtype)
    safe = np.where(zero, 1, b).astype(a.dtype)
    return np.where(zero, a, a % safe).astype(a.dtype)


def _int_power(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # Square-and-multiply with wrap-around; a negative exponent gives 0 except
    # for bases 1 (-> 1) and -1 (-> +-1), as XLA's integer pow does.
    a, b = np.broadcast_arrays(a, b)
    result = np.ones(a.shape, a.dtype)
    base = a.copy()
    exp = np.where(b < 0, 0, b).astype(np.int64) if np.issubdtype(b.dtype, np.signedinteger) else b.astype(np.uint64)
    while np.any(exp > 0):
        odd = (exp & 1) == 1
        result = np.where(odd, result * base, result).astype(a.dtype)
        base = (base * base).astype(a.dtype)
        exp = exp >> 1
    if np.issubdtype(b.dtype, np.signedinteger):
        neg = b < 0
        odd = (b & 1) == 1
        special = np.where(a == 1, 1, np.where(a == -1, np.where(odd, -1, 1), 0)).astype(a.dtype)
        result = np.where(neg, special, result)
    return result.astype(a.dtype)


def _binary_float(fn):
    def run(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        wide = _compute_dtype(a.dtype)
        return fn(a.astype(wide, copy=False), b.astype(wide, copy=False))

    return run


_BINARY = {
    "add": (np.add, _binary_float(np.add)),
    "subtract": (np.subtract, _binary_float(np.subtract)),
    "multiply": (np.multiply, _binary_float(np.multiply)),
    "divide": (_int_divide, _binary_float(np.divide)),
    "remainder": (_int_remainder, _binary_float(np.fmod)),
    "maximum": (np.maximum, _binary_float(np.maximum)),
    "minimum": (np.minimum, _binary_float(np.minimum)),
    "power": (_int_power, _binary_float(np.power)),
    "atan2": (None, _binary_float(np.arctan2)),
    "and": (np.bitwise_and, None),
    "or": (np.bitwise_or, None),
    "xor": (np.bitwise_xor, None),
}


def _binary_handler(opcode: str):
    int_fn, float_fn = _BINARY[opcode]

    def handler(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
        a, b = ops
        if a.dtype == np.bool_:
            if opcode in ("and", "minimum", "multiply"):
                return np.logical_and(a, b)
            if opcode in ("or", "maximum", "add"):
                return np.logical_or(a, b)
            if opcode in ("xor", "subtract"):
                return np.logical_xor(a, b)
        if is_float(a.dtype) or np.iscomplexobj(a):
            if float_fn is None:
                raise error_at(instr, f"'{opcode}' is not defined on {a.dtype}")
            return _cast(float_fn(a, b), instr)
        if int_fn is None:
            raise error_at(instr, f"'{opcode}' is not defined on {a.dtype}")
        return _cast(int_fn(a, b), instr)

    return handler


for _name in _BINARY:
    register(_name)(_binary_handler(_name))


def _shift(opcode: str):
    def handler(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
        a, b = ops
        width = bit_width(a.dtype)
        if width < 8:
            return _shift_sub_byte(opcode, a, b, width)
        udt = bits_dtype(width)
        ua, amount = to_bits(a), to_bits(b)
        out_of_range = amount >= width
        safe = np.where(out_of_range, 0, amount).astype(udt)
        if opcode == "shift-left":
            r = np.where(out_of_range, udt.type(0), ua << safe)
            return from_bits(r.astype(udt), a.dtype)
        if opcode == "shift-right-logical":
            r = np.where(out_of_range, udt.type(0), ua >> safe)
            return from_bits(r.astype(udt), a.dtype)
        sdt = np.dtype(f"i{width // 8}")
        sa = ua.view(sdt)
        r = np.where(out_of_range, np.where(sa < 0, sdt.type(-1), sdt.type(0)), sa >> safe.view(sdt))
        return from_bits(r.astype(sdt).view(udt), a.dtype)

    return handler


def _shift_sub_byte(opcode: str, a: np.ndarray, b: np.ndarray, width: int) -> np.ndarray:
    mask = (1 << width) - 1
    bits = to_bits(a).astype(np.int64)
    amount = to_bits(b).astype(np.int64)
    out_of_range = amount >= width
    safe = np.where(out_of_range, 0, amount)
    if opcode == "shift-left":
        r = np.where(out_of_range, 0, (bits << safe) & mask)
    elif opcode == "shift-right-logical":
        r = np.where(out_of_range, 0, bits >> safe)
    else:
        signed = np.where(bits >= (1 << (width - 1)), bits - (1 << width), bits)
        r = np.where(out_of_range, np.where(signed < 0, -1, 0), signed >> safe) & mask
    return from_bits(r.astype(np.uint8), a.dtype)


for _name in ("shift-left", "shift-right-logical", "shift-right-arithmetic"):
    register(_name)(_shift(_name))


# ---------------------------------------------------------------------------
# compare, select, clamp
# ---------------------------------------------------------------------------


def _total_order_key(x: np.ndarray) -> np.ndarray:
    """Map floats to signed ints whose order is XLA's TOTALORDER (-NaN < -inf < -0 < +0 < NaN)."""
    width = bit_width(x.dtype)
    signed = to_bits(x).astype(np.int64)
    if width < 64:
        signed = np.where(signed >= (1 << (width - 1)), signed - (1 << width), signed)
    else:
        signed = to_bits(x).view(np.int64)
    flip = np.int64((1 << (width - 1)) - 1)
    return np.where(signed < 0, signed ^ flip, signed)


_DIRECTIONS = {
    "EQ": np.equal, "NE": np.not_equal, "LT": np.less,
    "LE": np.less_equal, "GT": np.greater, "GE": np.greater_equal,
}


@register("compare")
def _compare(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    a, b = ops
    direction = str(instr.attr("direction"))
    fn = _DIRECTIONS.get(direction)
    if fn is None:
        raise error_at(instr, f"unknown comparison direction '{direction}'")
    kind = str(instr.attr("type", "") or "")
    if kind == "TOTALORDER" and is_float(a.dtype):
        return fn(_total_order_key(a), _total_order_key(b))
    if kind == "UNSIGNED" and a.dtype.kind == "i":
        return fn(to_bits(a), to_bits(b))
    if kind == "SIGNED" and a.dtype.kind == "u":
        return fn(a.view(np.dtype(f"i{a.dtype.itemsize}")), b.view(np.dtype(f"i{b.dtype.itemsize}")))
    if is_float(a.dtype) and a.dtype.itemsize < 4:
        a, b = a.astype(np.float32), b.astype(np.float32)
    return fn(a, b)


@register("select")
def _select(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    pred, on_true, on_false = ops
    return np.where(pred, on_true, on_false).astype(on_true.dtype)


@register("clamp")
def _clamp(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    lo, x, hi = ops
    wide = _compute_dtype(x.dtype)
    r = np.minimum(np.maximum(lo.astype(wide), x.astype(wide)), hi.astype(wide))
    if not m.batched:
        r = np.broadcast_to(r, x.shape)
    return _cast(r, instr)


# ---------------------------------------------------------------------------
# convert, bitcast-convert (same width), reduce-precision
# ---------------------------------------------------------------------------


def convert_array(x: np.ndarray, to: np.dtype) -> np.ndarray:
    """XLA ``convert``: saturating float->int with NaN->0, ``!= 0`` to pred, RNE rounding."""
    if to == np.bool_:
        return x != 0
    if x.dtype == np.bool_:
        return x.astype(to)
    target = element_type_of(to)
    if np.iscomplexobj(x) and not np.issubdtype(to, np.complexfloating):
        x = np.real(x)
    if is_float(x.dtype) and target[0] in "su":
        wide = x.astype(np.float64)
        wide = np.where(np.isnan(wide), 0.0, np.trunc(wide))
        if bit_width(to) < 8:
            lo, hi = (-(1 << (bit_width(to) - 1)), (1 << (bit_width(to) - 1)) - 1) if target[0] == "s" else (0, (1 << bit_width(to)) - 1)
        else:
            lo, hi = int(np.iinfo(to).min), int(np.iinfo(to).max)
        hi_f = float(hi)
        big = wide >= hi_f
        small = wide <= float(lo)
        inner = np.where(big | small, 0.0, wide)
        inter = np.int64 if target[0] == "s" or bit_width(to) < 64 else np.uint64
        r = inner.astype(inter)
        r = np.where(big, inter(hi), np.where(small, inter(lo), r))
        return r.astype(to) if bit_width(to) >= 8 else r.astype(np.int64).astype(to)
    if x.dtype.itemsize < 1 or bit_width(x.dtype) < 8 or bit_width(to) < 8:
        if is_float(to) or is_float(x.dtype):
            return x.astype(np.float32).astype(to)
        return x.astype(np.int64).astype(to)
    if is_float(to) and not is_float(x.dtype) and to.itemsize < 4 and to != np.float16:
        # int -> bf16/fp8: ml_dtypes casts through f32, which double-rounds wide
        # ints; go through f64 (exact for |x| < 2**53), then one rounding.
        return x.astype(np.float64).astype(to)
    return x.astype(to)


@register("convert")
def _convert(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    return convert_array(ops[0], _out_dtype(instr))


@register("reduce-precision")
def _reduce_precision(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    x = ops[0]
    exponent_bits = int(instr.attr("exponent_bits"))
    mantissa_bits = int(instr.attr("mantissa_bits"))
    src = x.astype(np.float64) if x.dtype == np.float64 else x.astype(np.float32)
    return _cast(reduce_precision(src, exponent_bits, mantissa_bits), instr)


def reduce_precision(x: np.ndarray, exponent_bits: int, mantissa_bits: int) -> np.ndarray:
    """Round ``x`` (f32 or f64) to a float with the given exponent/mantissa bits, RNE.

    Overflow goes to infinity, values below the smallest normal flush to zero
    (as XLA's reduce-precision does), NaN stays NaN.
    """
    if x.dtype == np.float64:
        width, src_mant, src_exp, udt = 64, 52, 11, np.uint64
    else:
        width, src_mant, src_exp, udt = 32, 23, 8, np.uint32
    bits = x.view(udt).copy()
    one = udt(1)
    if mantissa_bits < src_mant:
        drop = src_mant - mantissa_bits
        last = (bits >> udt(drop)) & one
        bias = (one << udt(drop - 1)) - one + last
        bits = (bits + bias) & ~((one << udt(drop)) - one)
    if exponent_bits < src_exp:
        sign = bits & (one << udt(width - 1))
        mag = bits ^ sign
        src_bias = (1 << (src_exp - 1)) - 1
        dst_bias = (1 << (exponent_bits - 1)) - 1
        max_exp = src_bias + dst_bias
        min_exp = src_bias - dst_bias
        exp = (mag >> udt(src_mant)).astype(np.int64)
        inf_bits = udt(((1 << src_exp) - 1) << src_mant)
        mag = np.where(exp > max_exp, inf_bits, mag)
        mag = np.where(exp <= min_exp, udt(0), mag)
        bits = (sign | mag).astype(udt)
    out = bits.astype(udt).view(x.dtype)
    return np.where(np.isnan(x), x, out)


@register("bitcast-convert")
def _bitcast_convert(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    x = ops[0]
    to = _out_dtype(instr)
    if bit_width(x.dtype) == bit_width(to):
        return from_bits(to_bits(x), to)
    if m.batched:
        raise error_at(instr, "a width-changing bitcast-convert inside a scalar computation")
    from hlo.interpreter.physical import reinterpret_physical

    return reinterpret_physical(m, instr, x)
