"""Element types as numpy dtypes, and the scalar conversions XLA defines.

Every HLO element type maps to one numpy dtype (``ml_dtypes`` supplies bf16, the
fp8 family, sub-byte ints). Values inside the interpreter are logical numpy
arrays of exactly that dtype (``pred`` is ``bool``); a tuple value is a Python
tuple; a token is :data:`TOKEN`.

Float arithmetic on 16-bit and 8-bit floats: numpy/ml_dtypes compute each op
in a wider type and round the result to the element type once per HLO
instruction. That is what the HLO semantics say (every instruction produces a
value of its element type); XLA:CPU may keep excess precision inside fusions
(``xla_allow_excess_precision``), so comparisons against XLA use a tolerance
for bf16/f16.
"""

from __future__ import annotations

from typing import Any, Final

import ml_dtypes
import numpy as np

from hlo.errors import HloError
from hlo.shape import ArrayShape, Shape, TokenShape, TupleShape


class InterpretError(HloError):
    """The interpreter cannot execute an instruction (unsupported or invalid)."""


class Token:
    """The value of a ``token[]``: carries no data."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "TOKEN"


TOKEN: Final[Token] = Token()

Value = Any  # np.ndarray | tuple[Value, ...] | Token

DTYPES: Final[dict[str, np.dtype]] = {
    "pred": np.dtype(np.bool_),
    "s8": np.dtype(np.int8), "s16": np.dtype(np.int16),
    "s32": np.dtype(np.int32), "s64": np.dtype(np.int64),
    "u8": np.dtype(np.uint8), "u16": np.dtype(np.uint16),
    "u32": np.dtype(np.uint32), "u64": np.dtype(np.uint64),
    "s1": np.dtype(ml_dtypes.int1), "u1": np.dtype(ml_dtypes.uint1),
    "s2": np.dtype(ml_dtypes.int2), "u2": np.dtype(ml_dtypes.uint2),
    "s4": np.dtype(ml_dtypes.int4), "u4": np.dtype(ml_dtypes.uint4),
    "f16": np.dtype(np.float16), "f32": np.dtype(np.float32), "f64": np.dtype(np.float64),
    "bf16": np.dtype(ml_dtypes.bfloat16),
    "c64": np.dtype(np.complex64), "c128": np.dtype(np.complex128),
    "f4e2m1fn": np.dtype(ml_dtypes.float4_e2m1fn),
    "f8e3m4": np.dtype(ml_dtypes.float8_e3m4),
    "f8e4m3": np.dtype(ml_dtypes.float8_e4m3),
    "f8e4m3fn": np.dtype(ml_dtypes.float8_e4m3fn),
    "f8e4m3b11fnuz": np.dtype(ml_dtypes.float8_e4m3b11fnuz),
    "f8e4m3fnuz": np.dtype(ml_dtypes.float8_e4m3fnuz),
    "f8e5m2": np.dtype(ml_dtypes.float8_e5m2),
    "f8e5m2fnuz": np.dtype(ml_dtypes.float8_e5m2fnuz),
    "f8e8m0fnu": np.dtype(ml_dtypes.float8_e8m0fnu),
}

FLOAT_TYPES: Final[frozenset[str]] = frozenset(
    t for t in DTYPES if t.startswith(("f", "bf"))
)
COMPLEX_TYPES: Final[frozenset[str]] = frozenset({"c64", "c128"})
SIGNED_TYPES: Final[frozenset[str]] = frozenset(t for t in DTYPES if t[0] == "s")
UNSIGNED_TYPES: Final[frozenset[str]] = frozenset(t for t in DTYPES if t[0] == "u")

#: Unsigned integer dtype of the same width, for bit-level views.
_BITS_DTYPE: Final[dict[int, np.dtype]] = {
    8: np.dtype(np.uint8), 16: np.dtype(np.uint16),
    32: np.dtype(np.uint32), 64: np.dtype(np.uint64),
}


def dtype_of(element_type: str) -> np.dtype:
    try:
        return DTYPES[element_type]
    except KeyError:
        raise InterpretError(f"element type '{element_type}' is not supported") from None


_NAMES: Final[dict[np.dtype, str]] = {dt: name for name, dt in DTYPES.items()}


def element_type_of(dtype: np.dtype) -> str:
    try:
        return _NAMES[np.dtype(dtype)]
    except KeyError:
        raise InterpretError(f"no HLO element type for numpy dtype {dtype}") from None


def is_float(dtype: np.dtype) -> bool:
    return element_type_of(dtype) in FLOAT_TYPES


def is_complex(dtype: np.dtype) -> bool:
    return dtype.kind == "c"


def bit_width(dtype: np.dtype) -> int:
    from hlo.shape import element_bits

    return element_bits(element_type_of(dtype))


def bits_dtype(width: int) -> np.dtype:
    """The unsigned integer dtype holding ``width`` bits (8, 16, 32, 64)."""
    try:
        return _BITS_DTYPE[width]
    except KeyError:
        raise InterpretError(f"no {width}-bit unsigned view") from None


def _contiguous(x: np.ndarray) -> np.ndarray:
    # np.ascontiguousarray would turn a 0-d array into a 1-d one.
    return x if x.flags.c_contiguous else x.copy(order="C")


def to_bits(x: np.ndarray) -> np.ndarray:
    """The raw bits of every element as unsigned ints (sub-byte types widen to u8)."""
    width = bit_width(x.dtype)
    if width < 8:
        codes = x.view(np.uint8) if x.dtype.itemsize == 1 else x.astype(np.uint8)
        return (codes & np.uint8((1 << width) - 1)).astype(np.uint8)
    if x.dtype == np.bool_:
        return x.view(np.uint8)
    return _contiguous(x).view(bits_dtype(width))


def from_bits(bits: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Inverse of :func:`to_bits` (``bits`` holds unsigned codes of ``dtype``'s width)."""
    width = bit_width(dtype)
    if width < 8:
        codes = bits.astype(np.uint8) & np.uint8((1 << width) - 1)
        if element_type_of(dtype)[0] == "s" and width > 1:
            # Sign-extend the code into the byte ml_dtypes stores.
            sign = np.uint8(1 << (width - 1))
            codes = np.where(codes & sign, codes | np.uint8(0xFF ^ ((1 << width) - 1)), codes)
        return _contiguous(codes.astype(np.uint8)).view(dtype)
    if dtype == np.bool_:
        return bits.astype(np.uint8) != 0
    return _contiguous(bits.astype(bits_dtype(width))).view(dtype)


def zeros_for(shape: Shape) -> Value:
    if isinstance(shape, ArrayShape):
        return np.zeros(shape.dims, dtype_of(shape.element_type))
    if isinstance(shape, TupleShape):
        return tuple(zeros_for(s) for s in shape.elements)
    if isinstance(shape, TokenShape):
        return TOKEN
    raise InterpretError(f"no value for shape {shape}")


def check_value(value: Value, shape: Shape, what: str) -> Value:
    """Check ``value`` against ``shape`` (dims and element type) and return it."""
    if isinstance(shape, ArrayShape):
        if isinstance(value, np.generic):
            value = np.asarray(value)
        if not isinstance(value, np.ndarray):
            raise InterpretError(f"{what}: expected an array of shape {shape}, got {type(value).__name__}")
        want = dtype_of(shape.element_type)
        if value.shape != tuple(shape.dims) or value.dtype != want:
            raise InterpretError(
                f"{what}: expected {shape.dims_text()}, got {value.dtype}{list(value.shape)}"
            )
        return value
    if isinstance(shape, TupleShape):
        if not isinstance(value, tuple) or len(value) != len(shape.elements):
            raise InterpretError(f"{what}: expected a {len(shape.elements)}-tuple {shape}")
        return tuple(check_value(v, s, f"{what}{{{i}}}") for i, (v, s) in enumerate(zip(value, shape.elements)))
    if isinstance(shape, TokenShape):
        return TOKEN
    return value
