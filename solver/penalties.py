"""Memory as penalties on toulbar2's weighted CSP: per-node weights, or prices times a
scale, found by bisection.

Without its memory rule the problem is a weighted CSP that toulbar2 solves well
(:mod:`solver.wcsp`). The rule comes back as a penalty per node and label,
``w[n] * extra[n][a]``: ``extra`` is the usage of label ``a`` on the node's
*hot* uses (those live at a time some answer put over the limit, once hot
always hot) above the node's smallest such usage. Each round solves the
penalised model and moves every weight by bisection between a weight known too
low and one known high enough for that node:

* a node with a use live where the answer broke the limit raises its lower end
  to its weight, and its weight grows ``GROWTH``-fold while no upper end is known (a known
  upper end not above the weight is forgotten: it was learned with other
  weights around it), else goes to the geometric mean of its two ends;
* a node that kept clear of the broken times lowers its upper end to its weight,
  and its weight goes to the geometric mean of its ends (half-way down while it
  has no lower end).

The mean is geometric because the ends lie orders of magnitude apart: the growth
phase leaves ``hi = GROWTH * lo``, and on contest U the weight that keeps the
limit cheaply lies near ``lo`` (the arithmetic mean spent the rounds far above it).

With a ``hint`` (a known answer that keeps the limit), every round's toulbar2 search
has its value ordering set to the cheapest answer known so far (the hint until a
round finds a cheaper one): with the small backtrack budgets used here a round's
answer is mostly toulbar2's first dive, and the hint moves where that dive goes.

:func:`price_search` puts the rule there as prices instead: the memory multipliers of
the dual bound (:class:`~solver.dual_bound.DualBound`'s ``prices``: per use, the cost
per byte, the sum of the multipliers of the times it is live at) times one scale for
all. The multipliers say where memory is tight in the LP relaxation, not how much an
integral answer must pay for it: toulbar2's answers keep the limit only at 4 to 32
times them on the contest cores. So the scale is bisected, geometrically, between one
whose answer broke the limit and one whose answer kept it. Which scale's answer is
cheap varies: on contest cores R and T three rounds from scale 8 end at 1.129 and 1.055
of the best published, three from 11.3 at 1.069 and 0.964, where the per-node rounds
stall at 1.10 (``bench/penalty_rounds.py --priced``; BENCHMARKS.md, Solver core).

Every answer becomes a candidate: answers over the limit are first repaired
(smaller usages, cheapest cost per byte saved, :meth:`~solver.flat.Flat.repair`),
then polished by memory-safe descent; the cheapest is improved once more by
group descent with price rounds (:func:`solver.quick.improve`) and checked exactly.
This is the scheme the winning team of the 2025 IOPDDL contest described
(toulbar2 with bisected per-node memory penalties, answers polished by
single-node moves that keep the limit).

Example: on contest instance C the memory-free optimum needs three times the
limit; round 1 (weights ``w0``) already keeps it, and after 12 rounds and the
search that follows the answer costs 1.000 times the best published (D: 0.987,
below it; BENCHMARKS.md, Solver core).

Deterministic: each round is a toulbar2 search cut by its backtrack count, and
the rounds end after ``rounds`` of them or when their planned ``work`` is spent
(:mod:`solver.plan`; a round's estimate, :func:`round_seconds`, follows from the
model's size and toulbar2's count of backtracks, never from the clock).
``deadline`` only stops the rounds early as a safety net for a much slower
machine (no round starts that would end past it if it took as long as the one
before: toulbar2's own limit counts CPU time, which on a loaded machine runs
slower than the wall clock).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from solver.errors import ProblemError
from solver.flat import BAD, Flat
from solver.plan import Plan
from solver.problem import Problem, evaluate, memory_feasible
from solver.quick import improve
from solver.wcsp import solve_wcsp

#: Bisection rounds (toulbar2 solves) and the backtracks of each.
ROUNDS = 12
BACKTRACKS = 2_000
#: Largest penalty of one label: keeps toulbar2's sums of costs far below its
#: infinite cost (about 5e17) on problems of up to ~10**4 nodes.
MAX_PENALTY = 10**13
#: How fast a weight grows while no upper end is known.
GROWTH = 8.0
#: :func:`price_search`'s first scale and how fast it moves while only one end is known.
#: Its first PRICE_LEAST_ROUNDS rounds run whatever the planned work says (the deadline
#: still cuts them): the scale needs three to reach the limit and two more to close in
#: on it (contest core R: scales 8 and 16 break it, their answers repaired cost 1.49 and
#: 1.25 of the best published; 32 keeps it, 1.13; the whole solve at 60 s gave 1.068
#: with three such rounds, 1.035 with five), and on the largest cores the plan has room
#: for two.
PRICE_SCALE = 8.0
PRICE_GROWTH = 2.0
PRICE_LEAST_ROUNDS = 5
#: A round's estimated seconds, per table entry: ENTRY_SECONDS (toulbar2 building and
#: preprocessing the model, the repair and polish of its answer) plus
#: ENTRY_BACKTRACK_SECONDS per backtrack of its search. Fitted on contest cores K, M, N
#: (1.6M-3.0M entries, 100-193 backtracks: 4.1, 4.4 and 5.1 s a round on 2026-11-27,
#: solve and all), rounded up; U and R (3.8M and 5.1M entries) took 7.1 and 9.4 s against
#: 7.1 and 9.4 estimated; small cores (C, D, P, Q: about 0.4 s) are estimated at up to 2 s.
ENTRY_SECONDS = 0.75e-6
ENTRY_BACKTRACK_SECONDS = 1.1e-8


def table_entries(problem: Problem) -> int:
    """How many entries ``problem``'s edge tables hold together."""
    return sum(edge.costs.size for edge in problem.edges)


def round_seconds(entries: int, backtracks: int) -> float:
    """The estimated seconds of one round on a problem of ``entries`` table entries whose
    toulbar2 search did ``backtracks`` backtracks (a function of the two counts alone)."""
    return entries * (ENTRY_SECONDS + ENTRY_BACKTRACK_SECONDS * backtracks)


class _Weights:
    """Weights with their bisection ends (``lo`` too low, ``hi`` enough), each multiplied
    by ``growth`` (at least ``w0``) while only ``lo`` is known, halved while only ``hi``
    is, then bisected geometrically."""

    def __init__(self, n: int, growth: float = GROWTH) -> None:
        self.w = np.zeros(n)
        self.lo = np.zeros(n)
        self.hi = np.full(n, np.inf)
        self.growth = growth

    def update(self, broke: np.ndarray, w0: float) -> None:
        w = self.w
        self.lo = np.where(broke, w, self.lo)
        self.hi = np.where(broke, np.where(self.hi <= w, np.inf, self.hi), w)
        known = ~np.isinf(self.hi)
        between = np.where(self.lo > 0, np.sqrt(self.lo * np.where(known, self.hi, 0.0)),
                           self.hi / 2)
        self.w = np.where(known, between, np.maximum(self.growth * w, w0))


def _hot_extra(flat: Flat, hot: np.ndarray) -> np.ndarray:
    """Per flat label: its usage on the node's hot uses above the node's smallest."""
    total = flat.penalty_per_use(hot.astype(np.float64))
    return total - np.repeat(np.minimum.reduceat(total, flat.off[:-1]), flat.k)


def _broken_uses(flat: Flat, labels: np.ndarray) -> np.ndarray:
    """Per memory use: whether it is live at a time over the limit."""
    over = flat.load(labels) > flat.limit
    count = np.concatenate([[0], np.cumsum(over)])
    return count[flat.u_hi] > count[flat.u_lo]


def _candidate(flat: Flat, labels: np.ndarray) -> np.ndarray | None:
    """``labels`` repaired to the limit if needed, then polished; ``None`` if no repair fits."""
    if flat.limited:
        labels, fits = flat.repair(labels)
        if not fits:
            return None
    return flat.icm(labels, hard_memory=flat.limited)


def penalty_search(problem: Problem, rounds: int = ROUNDS, backtracks: int = BACKTRACKS,
                   deadline: float | None = None, hint: Sequence[int] | None = None,
                   work: Plan | None = None) -> tuple[tuple[int, ...], int] | None:
    """The cheapest answer (labels and cost) that keeps every rule and the memory
    limit found over ``rounds`` toulbar2 solves with bisected per-node penalties
    (fewer when ``work`` runs out: no round starts that would overrun what is left of
    it if it cost as much as the one before; each round spends its estimate there), or
    ``None`` when none was found. ``problem`` must have no ties (the
    reduced problems of :mod:`solver.reductions` have none). ``hint``: see the module
    docstring (the hint is not itself an answer of the search)."""
    _check_untied(problem)
    if problem.num_nodes == 0:
        return None
    flat = Flat(problem)
    return _rounds(problem, flat, _NodePenalties(flat), rounds, backtracks, deadline, hint,
                   work)


def price_search(problem: Problem, prices: Sequence[float], rounds: int = ROUNDS,
                 backtracks: int = BACKTRACKS, deadline: float | None = None,
                 work: Plan | None = None, scale: float = PRICE_SCALE
                 ) -> tuple[tuple[int, ...], int] | None:
    """:func:`penalty_search` with one price per memory use instead of per-node
    weights: ``prices[i]`` is the cost per byte of ``problem.memory[i]`` (the memory
    multipliers of a dual bound, :class:`~solver.dual_bound.DualBound`'s ``prices``),
    and every round's penalty is ``scale`` times the priced usage of each label. The
    scale is bisected geometrically between one whose toulbar2 answer broke the limit
    and one whose answer kept it, from ``scale`` (times PRICE_GROWTH while only a
    breaking one is known, halved while only a keeping one is); at least PRICE_LEAST_ROUNDS rounds run (of
    ``rounds``) whatever ``work`` has left."""
    _check_untied(problem)
    if problem.num_nodes == 0:
        return None
    if len(prices) != len(problem.memory):
        raise ProblemError(f"prices: {len(prices)} for {len(problem.memory)} memory uses")
    flat = Flat(problem)
    priced = np.asarray(prices, np.float64)[flat.u_source]
    return _rounds(problem, flat, _ScaledPrices(flat, priced, scale), rounds, backtracks,
                   deadline, None, work, PRICE_LEAST_ROUNDS)


def _check_untied(problem: Problem) -> None:
    if problem.ties:
        raise ProblemError("penalty search needs a problem without ties (merge them first)")


class _NodePenalties:
    """Per-node weights on the usage of hot uses, bisected per node (the module docstring)."""

    def __init__(self, flat: Flat) -> None:
        self.flat = flat
        self.weights = _Weights(flat.n)
        self.hot = np.zeros(len(flat.u_node), bool)
        self.extra = np.zeros(flat.size)
        self.w0: float | None = None

    def first(self) -> np.ndarray:
        return np.zeros(self.flat.size)

    def after(self, labels: np.ndarray) -> np.ndarray:
        """The next round's penalty per flat label, given this round's answer."""
        flat = self.flat
        broken = _broken_uses(flat, labels)
        if (broken & ~self.hot).any():
            self.hot |= broken
            self.extra = _hot_extra(flat, self.hot)
        if self.w0 is None:
            # The first weight makes the answer's penalty as large as its cost.
            self.w0 = (flat.cost(labels)
                       / max(1.0, float(self.extra[flat.off[:-1] + labels].sum())))
        broke = np.zeros(flat.n, bool)
        broke[flat.u_node[broken]] = True
        self.weights.update(broke, self.w0)
        return np.repeat(self.weights.w, flat.k) * self.extra


class _ScaledPrices:
    """Priced usage times one weight (the scale) bisected between breaking and keeping
    the limit."""

    def __init__(self, flat: Flat, prices: np.ndarray, scale: float) -> None:
        self.flat = flat
        self.priced = flat.penalty_per_use(prices)
        self.scale = _Weights(1, PRICE_GROWTH)
        self.scale.w[0] = scale

    def first(self) -> np.ndarray:
        return self.scale.w[0] * self.priced

    def after(self, labels: np.ndarray) -> np.ndarray:
        self.scale.update(np.array([not self.flat.fits(labels)]), 0.0)
        return self.scale.w[0] * self.priced


def _rounds(problem: Problem, flat: Flat, penalties: _NodePenalties | _ScaledPrices,
            rounds: int, backtracks: int, deadline: float | None,
            hint: Sequence[int] | None, work: Plan | None, least: int = 1
            ) -> tuple[tuple[int, ...], int] | None:
    """The rounds both searches share: toulbar2 under each round's penalty, every
    answer a candidate, the next penalty from ``penalties``; the first ``least`` of
    them whatever ``work`` has left."""
    best, best_cost = None, np.inf
    guide, guide_cost = (None, np.inf) if hint is None else (list(hint), flat.cost(np.array(hint)))
    entries = table_entries(problem)
    began, last, estimate = time.perf_counter(), 0.0, 0.0
    penalty = penalties.first()
    for done in range(rounds):
        if work is not None and done >= least and estimate > work.left():
            break  # the round would overrun the plan if it cost as much as the last
        if deadline is not None and began + last > deadline:
            break  # the round would end past the deadline if it took as long as the last
        rows = np.split(np.rint(np.minimum(penalty, MAX_PENALTY)).astype(np.int64),
                        flat.off[1:-1])
        # The deadline also bounds toulbar2's own search (CPU seconds), as a safety net.
        seconds = 0 if deadline is None else max(1, int(deadline - time.perf_counter()))
        found = solve_wcsp(problem, rows, backtracks=backtracks, seconds=seconds, hint=guide)
        estimate = round_seconds(entries, found.backtracks)
        if work is not None:
            work.spend(estimate)
        if found.labels is None:
            break  # no answer keeps the hard rules (or toulbar2 found none in budget)
        labels = np.array(found.labels, np.int64)
        candidate = _candidate(flat, labels)
        if candidate is not None and flat.cost(candidate) < best_cost:
            best, best_cost = candidate, flat.cost(candidate)
            if guide is not None and best_cost < guide_cost:
                guide, guide_cost = best.tolist(), best_cost
        if not flat.limited:
            break  # nothing to penalise: the first answer is toulbar2's best
        penalty = penalties.after(labels)
        last, began = time.perf_counter() - began, time.perf_counter()
    return None if best is None else _checked(problem, flat, best, deadline)


def _checked(problem: Problem, flat: Flat, labels: np.ndarray, deadline: float | None
             ) -> tuple[tuple[int, ...], int] | None:
    """``labels`` improved by group descent with price rounds, checked exactly."""
    if flat.cost(labels) >= BAD:
        return None
    labels = improve(flat, labels, deadline=deadline)
    answer = tuple(int(x) for x in labels)
    cost = evaluate(problem, answer)
    if cost is None or not memory_feasible(problem, answer):
        return None
    return answer, cost
