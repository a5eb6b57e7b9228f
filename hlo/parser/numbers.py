"""Element values of literals: rounding to an element type and printing them back.

XLA prints a floating-point element with the fewest of two precisions that
round-trips: ``%.{digits10}g`` when that reads back to the same value of the
element type, else ``%.{max_digits10}g`` (f32: 6 then 9 digits, so
``f32(0.01)`` prints ``0.01`` and ``f32(sqrt(32))`` prints ``5.65685415``).
Values are stored as Python floats already rounded to their element type, so
print -> parse -> print is stable.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any, Final

import ml_dtypes
import numpy as np

#: numpy dtype, digits10, max_digits10, mantissa bits (for NaN payloads).
FLOAT_TYPES: Final[dict[str, tuple[Any, int, int, int]]] = {
    "f16": (np.float16, 3, 5, 10),
    "bf16": (ml_dtypes.bfloat16, 2, 4, 7),
    "f32": (np.float32, 6, 9, 23),
    "f64": (np.float64, 15, 17, 52),
    "f8e5m2": (ml_dtypes.float8_e5m2, 1, 3, 2),
    "f8e4m3": (ml_dtypes.float8_e4m3, 1, 3, 3),
    "f8e4m3fn": (ml_dtypes.float8_e4m3fn, 1, 3, 3),
    "f8e4m3b11fnuz": (ml_dtypes.float8_e4m3b11fnuz, 1, 3, 3),
    "f8e4m3fnuz": (ml_dtypes.float8_e4m3fnuz, 1, 3, 3),
    "f8e5m2fnuz": (ml_dtypes.float8_e5m2fnuz, 1, 3, 2),
    "f8e3m4": (ml_dtypes.float8_e3m4, 1, 3, 4),
    "f8e8m0fnu": (ml_dtypes.float8_e8m0fnu, 1, 3, 0),
    "f4e2m1fn": (ml_dtypes.float4_e2m1fn, 1, 3, 1),
}
COMPLEX_PARTS: Final[dict[str, str]] = {"c64": "f32", "c128": "f64"}

#: One shared NaN object per sign, so tuples of values compare equal after a round trip
#: (tuple equality tries identity before ``==``).
NAN: Final[float] = float("nan")
NEG_NAN: Final[float] = -NAN


def canonical(value: float) -> float:
    if value != value:
        return NEG_NAN if math.copysign(1.0, value) < 0 else NAN
    return value


@lru_cache(maxsize=256)
def canonical_complex(re: float, im: float) -> complex:
    """Complex values with NaN parts are shared objects (see :data:`NAN`)."""
    return complex(re, im)


def make_complex(re: float, im: float) -> complex:
    if re != re or im != im:
        return canonical_complex(canonical(re), canonical(im))
    return complex(re, im)


def int_range(element_type: str) -> tuple[int, int]:
    bits = int(element_type[1:])
    if element_type[0] == "u":
        return 0, (1 << bits) - 1
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def round_floats(values: list[float], element_type: str) -> tuple[list[float], int | None]:
    """``values`` rounded to ``element_type``; also the index of the first one that overflowed."""
    dtype = FLOAT_TYPES[element_type][0]
    if dtype is np.float64:
        return [canonical(v) for v in values], None
    src = np.asarray(values, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        rounded = src.astype(dtype).astype(np.float64)
    bad = np.isfinite(src) & ~np.isfinite(rounded)
    first_bad = int(np.argmax(bad)) if bad.any() else None
    out = rounded.tolist()
    if np.isnan(rounded).any():
        out = [canonical(v) for v in out]
    return out, first_bad


def _roundtrips(text: str, value: float, dtype: Any) -> bool:
    return float(np.asarray(float(text), dtype=np.float64).astype(dtype)) == value


def format_float(value: float, element_type: str) -> str:
    if value != value:
        return "-nan" if math.copysign(1.0, value) < 0 else "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    dtype, short, full, _ = FLOAT_TYPES.get(element_type, FLOAT_TYPES["f64"])
    text = "%.*g" % (short, value)
    if not _roundtrips(text, value, dtype):
        text = "%.*g" % (full, value)
    return text


def format_element(value: Any, element_type: str) -> str:
    """One literal element as XLA prints it (``true``, ``-3``, ``0.5``, ``(1, nan)``)."""
    if element_type == "pred":
        return "true" if value else "false"
    if element_type in COMPLEX_PARTS:
        part = COMPLEX_PARTS[element_type]
        return f"({format_float(value.real, part)}, {format_float(value.imag, part)})"
    if element_type in FLOAT_TYPES:
        return format_float(value, element_type)
    return str(value)
