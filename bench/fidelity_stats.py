"""Rank statistics of the fidelity benchmark, with measured times that noise cannot order as ties.

Two numbers per ranking, both Kendall's tau-b between predicted cost and measured time:

* **plain**: every pair of measured times is ordered by its values, however close;
* **noise-aware**: a pair of measured times is a *tie* when their ratio lies inside the
  noise band of the run that measured them (:func:`noise_band`), and ties count as tau-b
  counts them (neither concordant nor discordant, and out of that ranking's side of the
  denominator). A pair tied on both sides is left out, as tau-b leaves it out.

The noise band of a run is the interquartile range of XLA's layouts timed against
themselves in the same rounds (A/A), made symmetric: ``max(p75, 1/p25)``. Two variants whose
measured times differ by less than that factor differ by less than the same module differs
from itself in half the rounds, so the run does not say which one is faster.

Where a run kept every variant's per-round times (``times_ms``), the noise-aware ranking of a
module uses a sign test instead of the band: the rounds pair the variants (each round runs
every variant once, interleaved), and a pair is ordered only when one variant was the faster
in so many rounds that an even coin would do that with probability at most
:data:`SIGN_TEST_ALPHA` (two-sided, exact binomial): 8 or 9 of 9 rounds, 14 of 15; 5 rounds
can order nothing at that level. The band is the reference's spread only, applied to medians
of all rounds; the sign test uses each pair's own rounds, so a variant noisier than the
reference cannot look resolved.

Tau-b with ties cannot reach 1 when the measurement leaves pairs unordered (three variants,
one pair ordered and predicted right: ``1/sqrt(3)``), so a third number says how the model
does where the measurement does say something: :func:`resolved_agreement`, over the pairs the
run ordered only, ``(agreeing - disagreeing) / ordered pairs``, a pair the model prices
equal counting as neither (so it lowers the number): 1 when the model orders every measured
pair as measured.

Example (by hand, from the definition): predicted ``[1, 2, 3]``, measured ``[10, 10.5, 20]``
with band 1.1: the pair (10, 10.5) is a tie, the other two pairs are concordant, so tau-b is
``2 / sqrt(3 * 2) = 0.816``; the plain tau is 1.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

__all__ = ["kendall_tau", "kendall_tau_noise", "noise_band", "resolved_agreement",
           "sign_test_resolved"]

#: Two-sided level of the sign test that decides whether a run ordered two variants.
SIGN_TEST_ALPHA = 0.05


def kendall_tau(a: Sequence[float], b: Sequence[float],
                tied: Callable[[int, int], bool] | None = None) -> float | None:
    """Kendall's tau-b of two equally long sequences (None with no untied pair).

    ``tied(i, j)``: whether ``b[i]`` and ``b[j]`` count as equal although their values differ
    (the noise-aware ranking); without it only equal values tie."""
    n = len(a)
    concordant = discordant = ties_a = ties_b = 0
    for i in range(n):
        for j in range(i + 1, n):
            da, db = a[i] - a[j], b[i] - b[j]
            if db != 0 and tied is not None and tied(i, j):
                db = 0
            if da == 0 and db == 0:
                continue
            if da == 0:
                ties_a += 1
            elif db == 0:
                ties_b += 1
            elif (da > 0) == (db > 0):
                concordant += 1
            else:
                discordant += 1
    total = concordant + discordant
    denominator = math.sqrt((total + ties_a) * (total + ties_b))
    return None if denominator == 0 else (concordant - discordant) / denominator


def noise_band(noise: dict | None) -> float | None:
    """The factor within which two times of one run are indistinguishable: the A/A
    interquartile range made symmetric, ``max(p75, 1/p25)`` (None without an A/A)."""
    if not noise or not noise.get("p25") or not noise.get("p75"):
        return None
    return max(float(noise["p75"]), 1.0 / float(noise["p25"]), 1.0)


def within(x: float, y: float, band: float) -> bool:
    """Whether positive ``x`` and ``y`` differ by no more than the factor ``band``."""
    return max(x, y) <= band * min(x, y)


def kendall_tau_noise(predicted: Sequence[float], measured: Sequence[float],
                      bands: Sequence[float | None]) -> float | None:
    """Tau-b with measured pairs inside the noise band as ties; ``bands[i]``: the band of the
    run that measured ``measured[i]`` (a pair from two runs uses the wider band). None when a
    band is missing."""
    if any(b is None for b in bands):
        return None

    def tied(i: int, j: int) -> bool:
        return within(measured[i], measured[j], max(bands[i], bands[j]))  # type: ignore[type-var]

    return kendall_tau(predicted, measured, tied)


def sign_test_resolved(a: Sequence[float], b: Sequence[float],
                       alpha: float = SIGN_TEST_ALPHA) -> bool:
    """Whether paired rounds ``a[r]``, ``b[r]`` order the two: the count of rounds where ``a``
    was faster is so far from half (equal rounds left out) that an even coin gives one that
    far or farther with probability at most ``alpha``, two-sided (exact binomial)."""
    wins = sum(x < y for x, y in zip(a, b))
    n = wins + sum(x > y for x, y in zip(a, b))
    if n == 0:
        return False
    k = max(wins, n - wins)
    tail = sum(math.comb(n, i) for i in range(k, n + 1)) / 2 ** n
    return min(1.0, 2 * tail) <= alpha


def resolved_agreement(predicted: Sequence[float], measured: Sequence[float],
                       tied: Callable[[int, int], bool]) -> float | None:
    """Over the pairs the measurement orders (``not tied(i, j)``): (pairs the prediction
    orders the same way - pairs it orders the other way) / those pairs; a pair priced equal
    counts in the denominator only. None when the measurement orders no pair."""
    agree = disagree = ordered = 0
    for i in range(len(predicted)):
        for j in range(i + 1, len(predicted)):
            if measured[i] == measured[j] or tied(i, j):
                continue
            ordered += 1
            dp = predicted[i] - predicted[j]
            if dp:
                agree += (dp > 0) == (measured[i] > measured[j])
                disagree += (dp > 0) != (measured[i] > measured[j])
    return None if ordered == 0 else (agree - disagree) / ordered
