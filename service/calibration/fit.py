"""Cost-model coefficients from measured times: least squares on ns against bytes.

Each sample is one microbenchmark's median time, with the time of the ``base`` module of its
group (running a module that does almost nothing) subtracted, so what is left is the op's own
cost ``y`` in ns. With ``x`` the bytes one pass over the operand moves:

- ``copy``: ``y = fixed + 2x / bandwidth`` (read + write): an ordinary least-squares line gives
  the bandwidth (GB/s = bytes/ns) and the per-copy fixed cost; the copies that move at most
  :data:`CACHE_BYTES` give the cache's bandwidth (a slope after the fixed cost);
- every other kind: a slope through the origin after the fixed cost, ``s = Σ x·y / Σ x²``, and
  the coefficient is a ratio of slopes: ``minor_moving = s(copy_minor) / s(copy)``,
  ``major_only = s(copy_major) / s(copy3d)``, ``standalone = s(transpose) / s(copy_minor)``,
  ``read_factor = |s(reduce_major) - s(reduce_minor)| · bandwidth``: the extra passes the
  slower form pays; ``reduce_slow`` says which (``kept``: the kept dim minor, a column
  reduction; ``reduced``: a row reduction).

Example: samples made from bandwidth 10 GB/s, fixed 500 ns, minor 3 give back exactly those.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np


class FitError(ValueError):
    """Too few samples of a kind to fit a coefficient."""


@dataclass(frozen=True, slots=True)
class Sample:
    kind: str
    bytes: int
    ns: float  # the op's own time: module median minus its group's base module


#: Movements up to this many bytes (read + written) are fitted as cache-resident.
CACHE_BYTES = 4 << 20


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

    def rounded(self) -> Coefficients:
        return Coefficients(round(self.bandwidth_gb_per_s, 2),
                            round(self.cache_bandwidth_gb_per_s, 2), round(self.fixed_ns, 1),
                            round(self.minor_moving, 2), round(self.major_only, 2),
                            round(self.standalone, 2), round(self.reduce_read_factor, 2),
                            self.reduce_slow, self.samples)


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
    return Coefficients(
        bandwidth_gb_per_s=bandwidth,
        cache_bandwidth_gb_per_s=max(bandwidth, 1.0 / cache_slope) if cache_slope > 0 else bandwidth,
        fixed_ns=fixed,
        minor_moving=max(1.0, minor / copy),
        major_only=max(1.0, major / copy3d),
        standalone=max(1.0, transpose / minor),
        reduce_read_factor=abs(column - row) * bandwidth,
        reduce_slow="kept" if column >= row else "reduced",
        samples=len(samples),
    )
