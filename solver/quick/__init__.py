"""A quick feasible answer on the unreduced problem, moving functional chains as one.

:func:`quick_answer`: every node belongs to a group of nodes joined by
functional edges (:mod:`solver.quick.groups`; a group's rows are its
consistent joint labels). Per group the row with the smallest usage (cheapest
on ties), then memory-safe descent over group moves
(:mod:`solver.quick.descent`), then price rounds: the time segments loaded
near the limit get a price, a short descent on cost plus priced usage frees
memory where that is cheap, a descent on cost alone spends it where it pays
most; the cheapest answer seen is checked exactly. :func:`improve` runs the
same descent and rounds from a given answer (the heuristic's). All steps are
vectorized over flat arrays (:class:`~solver.flat.Flat`); deterministic.
"""

from __future__ import annotations

import time

import numpy as np

from solver.flat import BAD, Flat
from solver.problem import Problem, evaluate, memory_feasible
from solver.quick.descent import Descent
from solver.quick.groups import Groups, with_tie_edges

__all__ = ["Descent", "Groups", "improve", "quick_answer", "with_tie_edges"]


#: Price rounds after the first descent (see :func:`quick_answer`); one only when
#: a sweep touches more than ``LARGE_SWEEP`` array entries, where a round is costly
#: and the second one gains little.
PRICE_ROUNDS = 2
LARGE_SWEEP = 1_500_000
#: Segments loaded to at least this share of the limit are priced.
TIGHT = 0.97
#: Price scale: the priced usage of the current answer is worth this many times its cost.
PRICE_WEIGHT = 3.0
#: Sweeps of each price round: on cost plus priced usage, then on cost alone.
SOFT_SWEEPS, HARD_SWEEPS = 2, 4
#: A descent stops when a sweep gains less than this share of the objective.
TOLERANCE = 1e-2


def quick_answer(problem: Problem, sweeps: int = 8,
                 rounds: int = PRICE_ROUNDS) -> tuple[tuple[int, ...], int] | None:
    """A feasible answer in a few vectorized passes, or ``None``.

    Per group (see :class:`Groups`) the row with the smallest usage (cheapest on
    ties), then up to ``sweeps`` of memory-safe descent moving whole groups
    (:class:`Descent`). Then ``rounds`` price rounds: the time segments loaded
    near the limit get a price, a short descent on cost plus priced usage frees
    memory where that is cheap, and a descent on cost alone spends it where it
    pays most (measured on the contest instances: up to 54 % cheaper, Q). Every
    step keeps memory within the limit; the cheapest answer seen is checked
    exactly with :func:`~solver.problem.evaluate` and the memory check.
    """
    if problem.num_nodes == 0:
        return None
    flat = Flat(with_tie_edges(problem))
    groups = Groups(flat)
    if (groups.rows == 0).any():
        return None  # a group without a consistent row: no answer exists
    everyone = np.arange(groups.count)
    cost = groups.row_sum(flat.unary) + groups.inner
    if flat.limited:
        usage = groups.row_sum(flat.usage_total)
        key = np.where(cost >= BAD, np.inf, usage)
        row, value = groups.best_rows(key, everyone)
        tied = key == np.repeat(value, groups.rows)
        row, _ = groups.best_rows(np.where(tied, cost, np.inf), everyone)
    else:
        row, _ = groups.best_rows(cost, everyone)
    if flat.limited and not flat.fits(groups.labels(row)):
        return None
    descent = Descent(groups, row)
    descent.run(sweeps, tolerance=TOLERANCE)
    best = _price_rounds(descent, 1 if descent.work > LARGE_SWEEP else rounds)
    answer = tuple(int(x) for x in best)
    total = evaluate(problem, answer)
    if total is None or not memory_feasible(problem, answer):
        return None
    return answer, total


def _price_rounds(descent: Descent, rounds: int, tight: float = TIGHT,
                  weight: float = PRICE_WEIGHT) -> np.ndarray:
    """Price rounds from the descent's current labels; the cheapest labels seen.

    Each round prices the time segments loaded to ``tight`` of the limit or more
    (the priced usage of the current labels is worth ``weight`` times their cost),
    runs a short descent on cost plus priced usage (freeing memory where that is
    cheap), then a descent on cost alone (spending it where it pays most).
    """
    flat = descent.flat
    best = descent.labels.copy()
    best_cost = flat.cost(best)
    for _ in range(rounds if flat.limited else 0):
        near = (descent.load >= tight * flat.limit).astype(np.float64)
        price = flat.penalty(near)
        priced = float(price[flat.off[:-1] + descent.labels].sum())
        if priced <= 0 or best_cost >= BAD:
            break
        descent.run(SOFT_SWEEPS, extra=price * (weight * best_cost / priced),
                    tolerance=TOLERANCE)
        cost = flat.cost(descent.run(HARD_SWEEPS, tolerance=TOLERANCE))
        if cost < best_cost:
            best, best_cost = descent.labels.copy(), cost
    return best


#: Price settings ``(tight, weight)`` tried one after the other by :func:`improve`
#: (each from the best so far; on the contest cores the later ones gained 0-1 %).
IMPROVE_SETTINGS = ((TIGHT, PRICE_WEIGHT), (0.9, 1.0), (0.995, 1.0), (0.9, 3.0))


def improve(flat: Flat, labels: np.ndarray, rounds: int = PRICE_ROUNDS,
            deadline: float | None = None) -> np.ndarray:
    """``labels`` (allowed, memory within the limit) improved by group descent and
    price rounds under each of ``IMPROVE_SETTINGS`` (the next one only before
    ``deadline``, a ``time.perf_counter()`` value); the same labels when nothing
    cheaper is found. Ties must have been merged (or turned into edges)."""
    groups = Groups(flat)
    best, best_cost = labels, flat.cost(labels)
    for k, (tight, weight) in enumerate(IMPROVE_SETTINGS):
        if k and deadline is not None and time.perf_counter() > deadline:
            break
        row = groups.rows_of(best)
        if (row < 0).any():
            break  # a group's labels match no row: not a consistent start
        descent = Descent(groups, row)
        descent.run(2 * HARD_SWEEPS, tolerance=TOLERANCE)
        found = _price_rounds(descent, rounds, tight, weight)
        cost = flat.cost(found)
        if cost < best_cost:
            best, best_cost = found, cost
    return best
