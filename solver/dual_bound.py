"""A certified lower bound from the LP dual of the labeling problem.

The relaxation: the local-polytope LP, with the memory rule either dropped
(fewer rules, never a higher optimum) or moved into the costs by Lagrangian
multipliers (:mod:`solver.dual_memory`). Ties are kept, as edges whose table is
0 on the tied pairs and :data:`FORBIDDEN` elsewhere; parallel edges are summed.
The LP dual is a *reparametrization*: messages ``m[e, u](a)`` move cost between
each edge and its endpoints,

    θ'_u(a)    = θ_u(a) + Σ_{e ∋ u} m[e, u](a)
    θ'_e(a, b) = θ_e(a, b) - m[e, u](a) - m[e, v](b),

which leaves the cost of every assignment unchanged. So for *any* messages

    Σ_u min_a θ'_u(a) + Σ_e min_ab θ'_e(a, b)  <=  the optimum,

and the messages only decide how good the bound is. Its validity rests on the
final evaluation alone, which is exact: messages rounded to multiples of
``1/S`` (``S`` a power of two), all sums in int64 with headroom checked, the
quotient rounded up (the optimum is an integer).

The messages come from sequential block-coordinate ascent over node stars in a
fixed order, forward then backward (TRW-S / SRMP, Kolmogorov 2006, 2015): at node
``u`` each incident edge's min-marginal ``h_e(a) = min_b θ_e(a, b) - m[e, v](b)``
is collected into ``M(a) = θ_u(a) + Σ_e h_e(a)``, and ``M`` is handed back in
shares: ``ω M`` to each edge towards a later node, the rest kept at ``u``, with
``ω = 1 / max(#earlier, #later neighbours)``. Each such step maximizes the bound
over ``u``'s messages, so the bound never decreases (in exact arithmetic); on
trees and chains it reaches the optimum. The order is the node index order,
run level by level (:func:`_levels`): nodes of one level share no edge, so a
whole level updates at once, in compiled loops over the flattened tables
(:mod:`solver.trws`). A pass
computes at each level only the ``h_e`` of edges towards nodes it has already
updated; the others are as the level left them in the pass before (their far
ends come later in this pass), so each pass reads every table once.

Example: two nodes with unary ``[0, 5]`` and ``[3, 0]`` and table ``[[0, 9],
[9, 0]]``: the trivial bound (smallest unary plus smallest entry) is 0, the dual
bound 3, the optimum (labels ``(0, 0)``).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections import deque
from dataclasses import dataclass

import numpy as np

from solver.dual_memory import SHIFT, MemoryRows, ascend_multipliers, exact_multipliers, node_part
from solver.problem import FORBIDDEN, Problem, trivial_bound
from solver.trws import fill_marginals, sweep_pass

#: Finite costs up to this are exact in float64 with room for the messages;
#: above it only the trivial bound is given.
_FLOAT_EXACT = 2**50
#: Scaled costs and messages stay below this in the exact evaluation, and a
#: forbidden entry there counts as _ABSENT: no int64 sum can wrap.
_SCALED_LIMIT = 2**60
_ABSENT = 2**62
#: The float bound is checked every this many sweeps.
_CHECK_EVERY = 4
#: With memory multipliers, costs are scaled by a power of two up to about
#: _LAGRANGE_COSTS (room for penalties below _FLOAT_EXACT); each multiplier step
#: follows _INNER sweeps; after _PATIENCE steps without a better bound the search
#: returns to the best point with half the step, and ends below _SMALLEST_STEP.
#: (On contest cores B and G: 1 sweep per step reached 186k/146k, 10 sweeps
#: 464k/201k, 20 sweeps with the return 473k/210k; the LP with memory rows has
#: 518k/217k.)
_LAGRANGE_COSTS = 2**42
_PATIENCE = 3
_INNER = 20
_SMALLEST_STEP = 1e-3
#: Share of the time (or sweeps) for the subgradient stage; the rest alternates
#: _MULTIPLIER_ROUNDS multiplier steps with _ALTERNATE_SWEEPS sweeps (contest cores
#: K, U, S, T: 5 sweeps beat 10, 20 rounds beat 50), until _ALTERNATE_PATIENCE rounds
#: gain nothing; with exact steps, _EXACT_ROUNDS rounds, then the searches of _scaled_up
#: (contest core V, 1000 sweeps from zeros aimed at our cost: 1221480, against 1185787
#: where the exact rounds went on until three gained nothing; BENCHMARKS.md).
_SUBGRADIENT_SHARE = 0.5
_ALTERNATE_SWEEPS = 5
_MULTIPLIER_ROUNDS = 20
_ALTERNATE_PATIENCE = 20
_EXACT_ROUNDS = 3
#: The default bound (not ``pricing``): the subgradient stage takes _LARGE_SHARE of the
#: time (or sweeps) and finds the multipliers' scale; then exact steps alternate with
#: _LARGE_SWEEPS sweeps each, until _LARGE_PATIENCE rounds in a row gain nothing (contest cores R, S, T, U in 7 s from zeros, aimed at our cost:
#: 20.6, 12.0, 18.6, 24.9 % below it, where the subgradient steps with the steps of
#: ascend_multipliers stayed 27.6, 34.4, 38.6, 35.6 % below; BENCHMARKS.md).
#: The exact steps are taken only where _LEAST_ROUNDS rounds fit in what is left after
#: the first stage (in sweeps, or in seconds at its pace, an LP counted as _LP_SWEEPS
#: sweeps: contest cores R, T, A take 5-15 sweeps' time for one); else the steps of
#: ascend_multipliers follow, as with ``pricing`` (contest core A in 1.5 s: 76.5 % below
#: our cost where an LP cut the only round short, 2.6 % with those steps).
_LARGE_SHARE = 0.15
_LARGE_SWEEPS = 20
_LARGE_PATIENCE = 5
_LEAST_ROUNDS = 2
_LP_SWEEPS = 15
#: Where exact multiplier steps stopped, their multipliers times a scale
#: (:func:`_scaled_up`): _SCALE_SWEEPS sweeps per scale tried (0: no search), the relative
#: gain a doubling must make to go on (contest core V: 638691 -> about 1.07M in 9 s,
#: BENCHMARKS.md); then a pattern search over that scale (first factor _SCALE_REFINE) and
#: each check's multiplier, _CHECK_SWEEPS sweeps per trial (0: none): first factor
#: _CHECK_STEP, the most any factor grows to; a kept trial that gains _CHECK_GAIN of the
#: bound is followed by another that way; the search ends when all factors are down to
#: _CHECK_LEAST. From an earlier search's multipliers (``start``) the exact steps and the
#: doubling are left out: _WARM_SWEEPS sweeps at them, then the pattern search (contest
#: core V, from the multipliers of 240 sweeps before, aimed at our cost: 1223655 in 1000
#: sweeps, where the exact steps started over and factors of two reached 1192584;
#: BENCHMARKS.md).
_SCALE_SWEEPS = 20
_SCALE_REFINE = 2**0.5
_SCALE_GAIN = 1e-4
_CHECK_SWEEPS = 20
_CHECK_STEP = 2.0
_CHECK_LEAST = 1.02
_CHECK_GAIN = 1e-3
_WARM_SWEEPS = 40
#: Building the tables costs seconds on large problems whatever the time limit (contest
#: core T, 5.3M table entries: 0.9-1.5 s with none left, on 2026-11-29); with less than
#: BUILD_SECONDS per table entry given, the bound is the trivial one, nothing built.
BUILD_SECONDS = 3e-7


@dataclass(frozen=True, slots=True)
class DualBound:
    """A bound with how it was reached: ``sweeps`` forward-backward sweeps done,
    ``stopped`` = why it ended (``"sweeps"``, ``"time"``, ``"converged"``,
    ``"target"``, ``"infeasible"``, ``"trivial"``: nothing to iterate on).
    ``prices``: with memory multipliers, per memory use of the problem (in the
    order of ``problem.memory``), the cost per byte the multipliers of the bound
    put on it (the sum of the multipliers of the checks it is live at, in the
    problem's cost units; float); else ``None``. ``multipliers``: those multipliers,
    one per check time (float, the problem's units), for a later bound on the same
    problem to start from (``start``); else ``None``."""

    value: int
    sweeps: int
    stopped: str
    prices: tuple[float, ...] | None = None
    multipliers: tuple[float, ...] | None = None


class _Messages:
    """The state of the sweeps: the messages ``m`` (per slot) and each slot's
    min-marginal ``h`` (``min_b θ(a, b) - m[reverse](b)``) as last computed.
    ``fresh``: ``h`` is current on the slots of every edge from a lower to a higher
    node (as a whole sweep leaves it): the next forward pass reads them there, and
    the bound is read from them without a pass over the tables."""

    __slots__ = ("m", "h", "fresh")

    def __init__(self, m: np.ndarray, h: np.ndarray, fresh: bool) -> None:
        self.m, self.h, self.fresh = m, h, fresh

    @staticmethod
    def zeros(slots: int) -> _Messages:
        return _Messages(np.zeros(slots), np.zeros(slots), False)

    def copy(self) -> _Messages:
        return _Messages(self.m.copy(), self.h.copy(), self.fresh)


def dual_bound(problem: Problem, time_limit: float, *, sweeps: int | None = None,
               target: int | None = None, memory: bool = True,
               start: tuple[float, ...] | None = None, pricing: bool = False) -> int:
    """A lower bound on the cost of every assignment that keeps the hard rules.

    Ties count. The memory rule counts through Lagrangian multipliers
    (:mod:`solver.dual_memory`) when ``memory`` is true; with ``memory=False`` it
    is dropped and the bound is one of the problem without it. Never below the
    trivial bound (smallest allowed unary per node plus smallest allowed entry
    per edge). Returns :data:`FORBIDDEN` when no assignment keeps the forbidden
    labels, pairs and ties (arc consistency empties a node).

    Stops after ``sweeps`` sweeps, when ``time_limit`` seconds (wall clock, from
    the call; the final exact evaluation, about half a sweep, comes on top) are
    spent (with none, or less than BUILD_SECONDS per table entry, before anything
    is built: the trivial bound), when the bound stops rising, or once it reaches ``target`` (e.g. a
    known cost: nothing above it is possible; with memory multipliers it also
    aims their steps). ``start``: memory multipliers to start from instead of
    zeros, the ``multipliers`` of an earlier bound on the same problem (contest core
    K, aimed at our cost: 1.700e9 from zeros in 20 s, 1.803e9 from those of 240
    sweeps before; BENCHMARKS.md). ``pricing``: the multipliers the priced search takes
    as prices (:mod:`solver.penalties`), found as it was built on them; the bound is
    lower (see :func:`_ascend_with_memory`). With a time limit that does not bind, the
    result depends only on the arguments.
    """
    return dual_bound_detail(problem, time_limit, sweeps=sweeps, target=target,
                             memory=memory, start=start, pricing=pricing).value


def dual_bound_detail(problem: Problem, time_limit: float, *, sweeps: int | None = None,
                      target: int | None = None, memory: bool = True,
                      start: tuple[float, ...] | None = None,
                      pricing: bool = False) -> DualBound:
    """:func:`dual_bound` with the number of sweeps and the reason it stopped."""
    deadline = time.perf_counter() + time_limit
    trivial = trivial_bound(problem)
    if trivial >= FORBIDDEN:
        return DualBound(FORBIDDEN, 0, "infeasible")
    if time_limit <= 0 or time_limit < BUILD_SECONDS * sum(e.costs.size for e in problem.edges):
        return DualBound(trivial, 0, "time")
    tables = _pair_tables(problem)
    live = _live_labels(problem, tables)
    if live is None:
        return DualBound(FORBIDDEN, 0, "infeasible")
    whole = [bool(keep.all()) for keep in live]
    unary = [c if all_live else c[keep] for c, keep, all_live in zip(problem.unary, live, whole)]
    pairs = [(u, v, t if whole[u] and whole[v] else t[np.ix_(live[u], live[v])])
             for (u, v), t in tables.items()]
    if not unary:
        return DualBound(trivial, 0, "trivial")
    layout = _Layout.build(unary, pairs)
    if layout.max_cost > _FLOAT_EXACT:
        return DualBound(trivial, 0, "trivial")
    rows = MemoryRows.build(problem, live, layout.unary_start()) if memory else None
    if rows is None:
        value, done, stopped = _ascend(layout, sweeps, deadline, target)
        return DualBound(max(trivial, min(value, FORBIDDEN)), done, stopped)
    if start is not None and len(start) != rows.checks:
        raise ValueError(f"start: {len(start)} multipliers for {rows.checks} checks")
    q0 = None if start is None else np.maximum(np.asarray(start, np.float64), 0.0)
    value, done, stopped, q = _ascend_with_memory(layout, rows, sweeps, deadline, target, q0,
                                                  pricing)
    prefix = np.concatenate([[0.0], np.cumsum(q)])
    prices = prefix[rows.last] - prefix[rows.first]
    return DualBound(max(trivial, min(value, FORBIDDEN)), done, stopped, tuple(prices.tolist()),
                     tuple(q.tolist()))


def _ascend(layout: _Layout, sweeps: int | None, deadline: float, target: int | None
            ) -> tuple[int, int, str]:
    """TRW-S sweeps on the problem as it is: (certified bound, sweeps, why stopped)."""
    messages = _Messages.zeros(layout.slots)
    done, last, stopped = 0, -math.inf, "sweeps"
    while sweeps is None or done < sweeps:
        if time.perf_counter() >= deadline or not layout.sweep(messages, deadline):
            stopped = "time"
            break
        done += 1
        if done % _CHECK_EVERY == 0:
            value = layout.float_bound(messages)
            if target is not None and value >= target:
                stopped = "target"
                break
            if value <= last + 1e-12 * max(1.0, abs(last)):
                stopped = "converged"
                break
            last = value
    return layout.certified_bound(messages), done, stopped


def _ascend_with_memory(layout: _Layout, rows: MemoryRows, sweeps: int | None, deadline: float,
                        target: int | None, q0: np.ndarray | None = None,
                        pricing: bool = False) -> tuple[int, int, str, np.ndarray]:
    """Stages on the memory multipliers from ``q0`` (per check, the problem's units;
    zeros without), the best point certified: (bound, sweeps, why stopped, that point's
    multipliers per check in the problem's units).

    First (_LARGE_SHARE of the sweeps, or of the time) TRW-S sweeps interleaved with
    projected subgradient steps (:func:`_subgradient`); then, from its best point,
    sweeps alternating with the multipliers that maximize the bound with the messages
    fixed (an LP, :func:`solver.dual_memory.exact_multipliers`; :func:`_alternate`);
    where those rounds stop gaining, a scale of the multipliers and then each of them
    is searched (:func:`_scaled_up`). The first stage finds the multipliers' scale
    early and then stalls (its Polyak steps overshoot); the second climbs steadily
    from there, but from zeros it climbs slowly where the scale is large (contest core
    U: 29.4 % below our cost after 20 s from zeros, 23.5 % after a subgradient stage of
    10 s), and it settles on multipliers too small, which the third stage scales up
    (contest core V in 5 s: 51.5 % below our cost without it, 20.4 % with it, the LP's
    optimum 20.1 %; BENCHMARKS.md).

    With ``pricing``, the multipliers the priced search (:mod:`solver.penalties`) was
    built on: where the memory rows are small (:data:`solver.dual_memory.EXACT_ENTRIES`,
    :func:`_small_rows`) exact steps from the start and then the searches of
    :func:`_scaled_up`; else the first stage takes half and the second steps by
    :func:`solver.dual_memory.ascend_multipliers`. The bound stays far lower there
    (contest cores R, S, T, U in 7 s: 27.6, 34.4, 38.6, 35.6 % below our cost against
    20.6, 12.0, 18.6, 24.9 %), but the priced search does better on those prices
    (contest cores T and U: 1.126 and 1.147 times the best published cost on the LP's
    multipliers, 0.958 and 1.036 on these; BENCHMARKS.md)."""
    factor = 2 ** max(0, min(30, int(math.log2(_LAGRANGE_COSTS / max(1, layout.max_cost)))))
    scaled = layout.scaled(factor)
    base = scaled.unary.copy()
    goal = None if target is None else float(target) * factor
    start = np.zeros(rows.checks) if q0 is None else q0 * factor
    if pricing and rows.exact:
        q, messages, done, stopped = _small_rows(scaled, base, rows, start, sweeps, deadline,
                                                 goal)
        return _certified(scaled, base, rows, q, messages, factor), done, stopped, q / factor
    share = _SUBGRADIENT_SHARE if pricing else _LARGE_SHARE
    first = None if sweeps is None else math.ceil(share * sweeps)
    began = time.perf_counter()
    middle = began + share * max(0.0, deadline - began)
    q, messages, done, stopped = _subgradient(scaled, base, rows, first, middle, goal, factor,
                                              start)
    pace = (time.perf_counter() - began) / max(1, done)
    best = _certified(scaled, base, rows, q, messages, factor)
    rest = None if sweeps is None else sweeps - done
    if stopped == "target" or rest == 0 or time.perf_counter() >= deadline:
        return best, done, stopped if time.perf_counter() < deadline else "time", q / factor
    first_q = q
    exact = not pricing and done > 0 and (
        rest >= _LEAST_ROUNDS * _LARGE_SWEEPS if rest is not None
        else deadline - time.perf_counter() >= _LEAST_ROUNDS * (_LARGE_SWEEPS + _LP_SWEEPS) * pace)
    q, messages, more, stopped = _alternate(
        scaled, base, rows, q, messages.copy(), rest, deadline, goal, exact=exact,
        rounds=None, every=_LARGE_SWEEPS if exact else _ALTERNATE_SWEEPS,
        patience=_LARGE_PATIENCE if exact else _ALTERNATE_PATIENCE)
    if exact and stopped == "converged" and _SCALE_SWEEPS > 0:
        q, messages, extra, stopped = _scaled_up(scaled, base, rows, q, messages,
                                                 None if rest is None else rest - more,
                                                 deadline, goal)
        more += extra
    second = _certified(scaled, base, rows, q, messages, factor)
    return max(best, second), done + more, stopped, (q if second >= best else first_q) / factor


def _small_rows(scaled: _Layout, base: np.ndarray, rows: MemoryRows, start: np.ndarray,
                sweeps: int | None, deadline: float, goal: float | None
                ) -> tuple[np.ndarray, _Messages, int, str]:
    """The priced search's multipliers on small memory rows: exact steps from ``start``
    (_EXACT_ROUNDS rounds) and, where they stop, the searches of :func:`_scaled_up`; from
    nonzero ``start`` that search at once (contest core V, 100 sweeps from the start,
    741k against 657k for 40 sweeps of subgradient steps and 60 of ascending ones;
    BENCHMARKS.md)."""
    if start.any() and _SCALE_SWEEPS > 0:
        # Multipliers an earlier search ended with: the searches that follow the exact
        # steps, from there (the exact steps would start over from multipliers far too
        # small, see _scaled_up).
        return _scaled_up(scaled, base, rows, start, _Messages.zeros(scaled.slots), sweeps,
                          deadline, goal, warm=True)
    q, messages, done, stopped = _alternate(scaled, base, rows, start,
                                            _Messages.zeros(scaled.slots), sweeps, deadline,
                                            goal, exact=True)
    if stopped == "converged" and _SCALE_SWEEPS > 0:
        q, messages, more, stopped = _scaled_up(scaled, base, rows, q, messages,
                                                None if sweeps is None else sweeps - done,
                                                deadline, goal)
        done += more
    return q, messages, done, stopped


def _penalized(scaled: _Layout, base: np.ndarray, rows: MemoryRows, q: np.ndarray) -> _Layout:
    return dataclasses.replace(scaled, unary=base + rows.penalties(q, len(base)))


def _subgradient(scaled: _Layout, base: np.ndarray, rows: MemoryRows, sweeps: int | None,
                 deadline: float, goal: float | None, unit: int, q: np.ndarray
                 ) -> tuple[np.ndarray, _Messages, int, str]:
    """TRW-S sweeps interleaved with projected subgradient steps on the memory
    multipliers from ``q`` (Polyak steps towards ``goal``, or 10 % above the best
    bound so far, at least ``unit`` above; the subgradient is the memory rows' slack
    under each node's cheapest reparametrized label). Returns the best (multipliers,
    messages) seen, the sweeps done and why it stopped."""
    current = _penalized(scaled, base, rows, q)
    messages = _Messages.zeros(scaled.slots)
    best_value, best_q, best_messages = -math.inf, q, messages.copy()
    done, stopped, step, stale = 0, "sweeps", 1.0, 0
    while True:
        block = _INNER if sweeps is None else min(_INNER, sweeps - done)
        if block <= 0:
            break
        for _ in range(block):
            if time.perf_counter() >= deadline or not current.sweep(messages, deadline):
                stopped = "time"
                break
            done += 1
        value = current.float_bound(messages) + rows.constant(q)
        if stopped == "time":
            # The interrupted block may still beat the best (or be the only) point.
            if best_value == -math.inf or value > best_value:
                best_q, best_messages = q, messages
            break
        if best_value == -math.inf or value > best_value + 1e-9 * abs(best_value):
            best_value, best_q, best_messages, stale = value, q, messages.copy(), 0
        else:
            stale += 1
            if stale >= _PATIENCE:
                # Back to the best point with a shorter step.
                step, stale, q = step / 2, 0, best_q
                messages = best_messages.copy()
                value = best_value
                current = _penalized(scaled, base, rows, q)
        if goal is not None and best_value >= goal:
            stopped = "target"
            break
        if step < _SMALLEST_STEP:
            stopped = "converged"
            break
        slack = rows.load(current.choice(messages)) - rows.cap
        slack = np.where((q > 0) | (slack > 0), slack, 0.0)
        norm = float((slack * slack).sum())
        if norm == 0:
            continue
        aim = goal if goal is not None else best_value + 0.1 * abs(best_value) + unit
        q = np.maximum(0.0, q + step * max(aim - value, 0.0) / norm * slack)
        current = _penalized(scaled, base, rows, q)
    return best_q, best_messages, done, stopped


def _alternate(scaled: _Layout, base: np.ndarray, rows: MemoryRows, q: np.ndarray,
               messages: _Messages, sweeps: int | None, deadline: float, goal: float | None,
               *, exact: bool = False, rounds: int | None = _EXACT_ROUNDS,
               every: int = _ALTERNATE_SWEEPS, patience: int = _ALTERNATE_PATIENCE
               ) -> tuple[np.ndarray, _Messages, int, str]:
    """Block-coordinate ascent on (multipliers, messages) from ``q`` and ``messages``:
    multiplier steps that raise the bound with the messages fixed
    (:func:`solver.dual_memory.ascend_multipliers`, or with ``exact`` the best such
    multipliers, :func:`solver.dual_memory.exact_multipliers`, taken when they raise
    the node terms), then ``every`` sweeps with the multipliers fixed; repeated, with
    exact steps at most ``rounds`` times (``None``: no limit), until ``patience`` rounds
    in a row gain nothing. Neither step lowers the bound (in exact arithmetic). Returns
    the last point, the sweeps done and why it stopped."""
    current = _penalized(scaled, base, rows, q)
    slack = np.maximum(rows.load(current.choice(messages)) - rows.cap, 0.0)
    scale = max(abs(current.float_bound(messages)), float(scaled.max_cost))
    step = 1e-3 * scale / max(1.0, float((slack * slack).sum()))
    done, stopped, best, stale, taken = 0, "sweeps", -math.inf, 0, 0
    while sweeps is None or done < sweeps:
        if exact and rounds is not None and taken >= rounds:
            return q, messages, done, "converged"
        taken += 1
        node = base + np.bincount(scaled.slot_label_abs, weights=messages.m,
                                  minlength=len(base))
        if exact:
            # An LP cut by the clock (half the time left: the sweeps keep the rest)
            # hands the multipliers back to the subgradient steps from here on.
            q, exact = _exact_step(rows, node, scaled.node_start, q, deadline)
        if not exact:
            q, step = ascend_multipliers(rows, node, scaled.node_start, q, step,
                                         _MULTIPLIER_ROUNDS)
        current = _penalized(scaled, base, rows, q)
        block = every if sweeps is None else min(every, sweeps - done)
        for _ in range(block):
            if time.perf_counter() >= deadline or not current.sweep(messages, deadline):
                return q, messages, done, "time"
            done += 1
        value = current.float_bound(messages) + rows.constant(q)
        if goal is not None and value >= goal:
            return q, messages, done, "target"
        # Converged: _ALTERNATE_PATIENCE rounds in a row without a relative gain of 1e-9
        # (the bound climbs unevenly here, so a long patience; on a small problem this still
        # comes long before the deadline, which it would otherwise use up). The first round
        # sets ``best`` (from -inf the relative test is a NaN).
        if best == -math.inf or value > best + 1e-9 * abs(best):
            best, stale = value, 0
        else:
            stale += 1
            if stale >= patience:
                return q, messages, done, "converged"
    return q, messages, done, stopped


def _scaled_up(scaled: _Layout, base: np.ndarray, rows: MemoryRows, q: np.ndarray,
               messages: _Messages, sweeps: int | None, deadline: float, goal: float | None,
               *, warm: bool = False) -> tuple[np.ndarray, _Messages, int, str]:
    """The multipliers ``q`` times a scale, searched where the exact steps stopped, then
    that scale and each nonzero multiplier on its own. Each exact step is the best for the
    messages it is given, and those were spread for the multipliers before it, so the
    steps settle on multipliers far too small (contest core V: the LP with memory rows has
    multipliers 30-100 times theirs). The scale doubles while _SCALE_SWEEPS sweeps from
    the best point's messages raise the bound by _SCALE_GAIN of it; with ``warm`` (``q``
    from an earlier search, ``messages`` not yet swept for it) _WARM_SWEEPS sweeps at ``q``
    instead. Then a pattern search: in rounds, the common scale and each check with a
    multiplier times its own factor, or divided by it, kept where the sweeps from the best
    point's messages raise the bound; a kept direction is tried first next time, its
    factor squared (up to _CHECK_STEP), and at once again where it gained _CHECK_GAIN of
    the bound; a factor where neither way is kept shrinks to its square root, and the
    search ends when all are down to _CHECK_LEAST. The LP's multipliers differ from the
    ones factors of two settle on by far less than twofold (contest core V: 0.35 against
    0.31 and 0.28 against 0.36 on the checks that matter most), and the bound is steep
    there: from zeros, aimed at our cost, 1231675 in 2000 sweeps where rounds of factors
    of two reached 1196156 (BENCHMARKS.md). Returns the best point's multipliers and
    messages, the sweeps done (at most ``sweeps``) and why it stopped."""
    if not q.any():
        return q, messages, 0, "converged"  # no multiplier to scale
    trials = _Trials(scaled, base, rows, sweeps, deadline, goal, q, messages)
    if warm:
        if isinstance(got := trials.run(q, _WARM_SWEEPS), str):
            return trials.finish(got)
    else:
        scale = 2.0
        while True:
            before = trials.best[0]
            if isinstance(got := trials.run(q * scale, _SCALE_SWEEPS), str):
                return trials.finish(got)
            if trials.best[0] <= before + _SCALE_GAIN * abs(before):
                break
            scale *= 2
    return trials.finish(_patterned(trials))


class _Trials:
    """Trial multipliers, each given sweeps from the best point's messages so far: the best
    point (float bound, multipliers, messages) and the sweeps done (at most ``sweeps``)."""

    def __init__(self, scaled: _Layout, base: np.ndarray, rows: MemoryRows, sweeps: int | None,
                 deadline: float, goal: float | None, q: np.ndarray,
                 messages: _Messages) -> None:
        self.scaled, self.base, self.rows = scaled, base, rows
        self.sweeps, self.deadline, self.goal = sweeps, deadline, goal
        self.done = 0
        self.best = (_penalized(scaled, base, rows, q).float_bound(messages)
                     + rows.constant(q), q, messages)

    def run(self, trial_q: np.ndarray, count: int) -> str | bool:
        """``count`` sweeps at ``trial_q`` from the best point's messages, kept where they
        raise the bound (also when the clock or the sweep budget cuts them: any messages
        give a bound): why they stopped early, else whether they raised it."""
        trial = self.best[2].copy()
        current = _penalized(self.scaled, self.base, self.rows, trial_q)
        stopped = None
        for _ in range(count):
            if self.sweeps is not None and self.done >= self.sweeps:
                stopped = "sweeps"
                break
            if time.perf_counter() >= self.deadline or not current.sweep(trial, self.deadline):
                stopped = "time"
                break
            self.done += 1
        value = current.float_bound(trial) + self.rows.constant(trial_q)
        raised = value > self.best[0]
        if raised:
            self.best = (value, trial_q, trial)
        if stopped is not None:
            return stopped
        if self.goal is not None and self.best[0] >= self.goal:
            return "target"
        return raised

    def finish(self, stopped: str) -> tuple[np.ndarray, _Messages, int, str]:
        return self.best[1], self.best[2], self.done, stopped


def _patterned(trials: _Trials) -> str:
    """The pattern search of :func:`_scaled_up` over the common scale (-1) and each check
    with a multiplier at the best point: why it stopped."""
    moves = [-1] + np.flatnonzero(trials.best[1] > 0).tolist()
    factors = {move: _SCALE_REFINE if move < 0 else _CHECK_STEP for move in moves}
    upward = dict.fromkeys(moves, True)
    while _CHECK_SWEEPS > 0 and max(factors.values()) > _CHECK_LEAST:
        for move in moves:
            if factors[move] <= _CHECK_LEAST:
                continue
            if isinstance(got := _tried(trials, move, factors, upward), str):
                return got
            if not got:
                factors[move] **= 0.5
    return "converged"


def _tried(trials: _Trials, move: int, factors: dict[int, float], upward: dict[int, bool]
           ) -> str | bool:
    """Trials at ``move``: the way last kept there first, the other where it is not kept;
    a kept trial squares the factor (up to _CHECK_STEP) and is followed by another that way
    where it gained _CHECK_GAIN of the bound. Why the trials stopped early, else whether
    one was kept."""
    for up in (upward[move], not upward[move]):
        kept = False
        while True:
            before = trials.best[0]
            trial_q = _moved(trials.best[1], move, factors[move] if up else 1 / factors[move])
            if isinstance(got := trials.run(trial_q, _CHECK_SWEEPS), str):
                return got
            if not got:
                break
            upward[move], kept = up, True
            factors[move] = min(factors[move] ** 2, _CHECK_STEP)
            if trials.best[0] <= before + _CHECK_GAIN * abs(before):
                break
        if kept:
            return True
    return False


def _moved(q: np.ndarray, move: int, factor: float) -> np.ndarray:
    """``q`` with every multiplier (``move`` -1) or check ``move``'s times ``factor``."""
    if move < 0:
        return q * factor
    moved = q.copy()
    moved[move] *= factor
    return moved


def _exact_step(rows: MemoryRows, node: np.ndarray, node_start: np.ndarray, q: np.ndarray,
                deadline: float) -> tuple[np.ndarray, bool]:
    """The exact multipliers for ``node`` where found and better than ``q``, else ``q``;
    and whether the LP was solved (within half the time left)."""
    found = exact_multipliers(rows, node, node_start, 0.5 * (deadline - time.perf_counter()))
    if found is None:
        return q, False
    better = node_part(rows, node, node_start, found)[0] > node_part(rows, node, node_start, q)[0]
    return (found if better else q), True


def _certified(scaled: _Layout, base: np.ndarray, rows: MemoryRows, q: np.ndarray,
               messages: _Messages, factor: int) -> int:
    """The bound of (multipliers, messages) on the scaled problem, exactly, in the
    original units (rounded up: the optimum is an integer). ``q`` rounded down to
    the grid of SHIFT bits is a valid multiplier too; its penalties exactly, each
    unary cost capped (a smaller cost only relaxes)."""
    whole = np.floor(np.minimum(q * 2.0**SHIFT, 2.0**62)).astype(np.int64)
    penalties = rows.exact_penalties(whole, len(base))
    unary = np.array([min(int(b) + p, _FLOAT_EXACT) for b, p in
                      zip(scaled.unary_int.tolist(), penalties)], np.int64)
    total = scaled.with_unary(unary).certified_bound(messages) + rows.exact_constant(whole)
    return -(-total // factor)


def _pair_tables(problem: Problem) -> dict[tuple[int, int], np.ndarray]:
    """One int64 table per node pair ``u < v``: edges summed, ties as 0/FORBIDDEN."""
    tables: dict[tuple[int, int], np.ndarray] = {}

    def add(u: int, v: int, costs: np.ndarray) -> None:
        if u > v:
            u, v, costs = v, u, costs.T
        old = tables.get((u, v))
        # Two entries below FORBIDDEN each sum within int64; clamp keeps the sentinel.
        tables[(u, v)] = costs if old is None else np.minimum(old + costs, FORBIDDEN)

    for edge in problem.edges:
        add(edge.u, edge.v, edge.costs)
    for tie in problem.ties:
        table = np.full((len(problem.unary[tie.u]), len(problem.unary[tie.v])), FORBIDDEN,
                        np.int64)
        mapping = range(table.shape[0]) if tie.mapping is None else tie.mapping
        for a, b in enumerate(mapping):
            if b is not None:
                table[a, b] = 0
        add(tie.u, tie.v, table)
    return tables


def _live_labels(problem: Problem, tables: dict[tuple[int, int], np.ndarray]
                 ) -> list[np.ndarray] | None:
    """Arc consistency: per node, the labels with an allowed partner on every
    edge (repeated to a fixed point); ``None`` when a node has none left.

    Dropping the others changes no feasible assignment, and it keeps every
    message finite: each remaining row and column has an allowed entry.
    """
    live = [np.asarray(c) < FORBIDDEN for c in problem.unary]
    if not all(keep.any() for keep in live):
        return None
    hard = [(u, v, t < FORBIDDEN) for (u, v), t in tables.items() if (t >= FORBIDDEN).any()]
    touching: dict[int, list[int]] = {}
    for j, (u, v, _) in enumerate(hard):
        touching.setdefault(u, []).append(j)
        touching.setdefault(v, []).append(j)
    queue, queued = deque(range(len(hard))), [True] * len(hard)
    while queue:
        j = queue.popleft()
        queued[j] = False
        u, v, allowed = hard[j]
        for node, other, axis in ((u, v, 1), (v, u, 0)):
            # A label of ``node`` is supported when some live label of ``other`` allows it.
            other_live = live[other][None, :] if axis == 1 else live[other][:, None]
            keep = live[node] & (allowed & other_live).any(axis=axis)
            if keep.sum() == live[node].sum():
                continue
            if not keep.any():
                return None
            live[node] = keep
            for k in touching[node]:
                if not queued[k]:
                    queued[k] = True
                    queue.append(k)
    return live


def _levels(n: int, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Per node, the longest path to it when edges point from the lower index up.

    Processing nodes level by level is processing them in index order (a node
    comes after its lower neighbours and before its higher ones), and each level
    has no edge inside. The index order of the reduced problems follows the
    program, so the monotone chains TRW-S propagates along are long; a greedy
    colouring's 5-6 classes converged 1.2-1.5x slower per sweep on contest cores.
    """
    lower = np.minimum(u, v)
    higher = np.maximum(u, v)
    by_higher = np.argsort(higher, kind="stable")
    lower, higher = lower[by_higher].tolist(), higher[by_higher].tolist()
    level = [0] * n
    for a, b in zip(lower, higher):
        if level[a] >= level[b]:
            level[b] = level[a] + 1
    return np.array(level, np.int64)


def _block_starts(counts: np.ndarray) -> np.ndarray:
    """Start offsets of consecutive blocks of ``counts`` (plus the total)."""
    return np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)


@dataclass(frozen=True, slots=True, eq=False)
class _Layout:
    """The reduced tables flattened for vectorized message passing.

    Nodes are renumbered by level. Every edge appears twice, once per direction
    ("directed edge" ``d`` from ``src`` to ``dst``, table rows = ``src``'s labels),
    sorted by ``src``, so each level ("class") owns contiguous ranges of directed
    edges, of *slots* (one message ``m[d](a)`` per label ``a`` of ``src``) and
    of table *entries*. All offsets are int64 numpy arrays.
    """

    unary: np.ndarray          # float costs of the live labels, nodes in level order
    unary_int: np.ndarray      # the same, int64
    position: np.ndarray       # per node of the problem: its index in level order
    node_start: np.ndarray     # first unary index of each node (+ total)
    table: np.ndarray          # directed tables, row-major, inf = forbidden
    column_slot: np.ndarray    # per entry: the slot of the reverse message for its column
    row_start: np.ndarray      # per slot: its row's first entry; last, the entries' total
    slot_label: np.ndarray     # per slot: its unary index, relative to its class
    slot_label_abs: np.ndarray  # per slot: its unary index
    edge_slot: np.ndarray      # first slot of each directed edge (+ total)
    lower: np.ndarray          # per directed edge: src < dst (counts each edge once)
    weight_forward: np.ndarray   # per slot: its share of M in the forward pass
    weight_backward: np.ndarray
    classes: np.ndarray        # per level a row of 11 offsets, see _level_classes (int64)
    max_cost: int
    max_degree: int

    @property
    def slots(self) -> int:
        return len(self.slot_label)

    @staticmethod
    def build(unary: list[np.ndarray], pairs: list[tuple[int, int, np.ndarray]]) -> _Layout:
        n, m = len(unary), len(pairs)
        first = np.array([u for u, _, _ in pairs], np.int64)
        second = np.array([v for _, v, _ in pairs], np.int64)
        level = _levels(n, first, second)
        order = np.lexsort((np.arange(n), level))          # new index -> node
        new = np.empty(n, np.int64)
        new[order] = np.arange(n)
        k = np.array([len(unary[i]) for i in order], np.int64)
        node_start = _block_starts(k)
        unary_int = np.concatenate([unary[i] for i in order]).astype(np.int64)

        # The pair tables end to end (rows = the first node's labels); each
        # directed table is gathered from them, transposed for the second node.
        flat = (np.concatenate([t.ravel() for _, _, t in pairs]) if m
                else np.zeros(0, np.int64))
        flat_start = _block_starts(np.array([t.size for _, _, t in pairs], np.int64))
        # Directed edges by the level of their source, those towards an earlier node
        # first: each level's two halves are contiguous (see sweep).
        node_level = level[order]
        src = np.concatenate([new[first], new[second]])
        dst = np.concatenate([new[second], new[first]])
        directed = np.lexsort((dst, src, dst > src, node_level[src]))
        src, dst = src[directed], dst[directed]
        flipped = directed >= m
        pair = np.where(flipped, directed - m, directed)
        key = src * n + dst
        by_key = np.argsort(key)
        reverse = by_key[np.searchsorted(key[by_key], dst * n + src)]
        ks, kt = k[src], k[dst]
        table_start = _block_starts(ks * kt)
        edge_slot = _block_starts(ks)
        slot_edge = np.repeat(np.arange(len(src)), ks)
        label = np.arange(len(slot_edge)) - edge_slot[slot_edge]
        width = kt[slot_edge]
        row_start = table_start[slot_edge] + label * width
        slot_label = node_start[src[slot_edge]] + label

        # Per entry (row = slot, column b): its place in ``flat`` is the slot's
        # base plus b times a stride (1, or the row count of a flipped table),
        # and the message it meets is the reverse edge's slot for b.
        total = int(table_start[-1])
        index = np.int32 if total < 2**31 else np.int64
        slot_flipped = flipped[slot_edge]
        base = flat_start[pair][slot_edge] + np.where(slot_flipped, label, label * width)
        stride = np.where(slot_flipped, ks[slot_edge], 1)
        column = np.arange(total, dtype=index) - np.repeat(row_start.astype(index), width)
        values = flat[np.repeat(base, width) + column * np.repeat(stride.astype(index), width)]
        table = values.astype(np.float64)
        table[values >= FORBIDDEN] = np.inf
        del values
        column_slot = np.repeat(edge_slot[reverse][slot_edge].astype(index), width) + column
        del column

        forward = dst > src
        later = np.bincount(src[forward], minlength=n)
        earlier = np.bincount(src[~forward], minlength=n)
        omega = 1.0 / np.maximum(np.maximum(later, earlier), 1)
        share = omega[src[slot_edge]]
        weight_forward = np.where(forward[slot_edge], share, 0.0)
        weight_backward = np.where(forward[slot_edge], 0.0, share)

        classes, slot_class = _level_classes(node_level, src, dst, edge_slot, table_start,
                                             node_start, len(slot_edge))
        degree = np.bincount(src, minlength=n)
        return _Layout(
            unary=unary_int.astype(np.float64), unary_int=unary_int, position=new,
            node_start=node_start,
            table=table, column_slot=column_slot,
            row_start=np.append(row_start, total).astype(np.int64),
            slot_label=(slot_label - classes[slot_class, 9]).astype(index),
            slot_label_abs=slot_label, edge_slot=edge_slot, lower=src < dst,
            weight_forward=weight_forward, weight_backward=weight_backward,
            classes=classes,
            max_cost=int(max(unary_int.max(initial=0), flat[flat < FORBIDDEN].max(initial=0))),
            max_degree=int(degree.max(initial=0)))

    def unary_start(self) -> np.ndarray:
        """Per node of the problem, the unary index of its first kept label."""
        return self.node_start[self.position]

    def scaled(self, factor: int) -> _Layout:
        """All costs times ``factor`` (a power of two: exact in float64)."""
        return dataclasses.replace(self, unary=self.unary * factor,
                                   unary_int=self.unary_int * factor,
                                   table=self.table * factor, max_cost=self.max_cost * factor)

    def with_unary(self, unary: np.ndarray) -> _Layout:
        """The same tables with other (integer-valued, exact) unary costs."""
        return dataclasses.replace(self, unary=unary.astype(np.float64),
                                   unary_int=unary.astype(np.int64),
                                   max_cost=max(self.max_cost, int(unary.max(initial=0))))

    def choice(self, messages: _Messages) -> np.ndarray:
        """Per unary index, whether it is its node's first cheapest reparametrized label."""
        node = self.unary + np.bincount(self.slot_label_abs, weights=messages.m,
                                        minlength=len(self.unary))
        best = np.repeat(np.minimum.reduceat(node, self.node_start[:-1]),
                         np.diff(self.node_start))
        tied = node <= best
        owner = np.repeat(np.arange(len(self.node_start) - 1), np.diff(self.node_start))
        first = np.flatnonzero(tied)
        keep = np.ones(len(first), bool)
        keep[1:] = owner[first[1:]] != owner[first[:-1]]
        chosen = np.zeros(len(node), bool)
        chosen[first[keep]] = True
        return chosen

    def sweep(self, messages: _Messages, deadline: float) -> bool:
        """One forward and one backward pass (:func:`solver.trws.sweep_pass`); False if
        the deadline came first (checked after each pass).

        At each level a pass computes the min-marginals of the edges towards the nodes
        it has done; the others' are the ones this level computed in the pass before,
        from the same messages (the nodes at their other ends come later in this pass),
        so each pass reads every table once, not twice. Without ``messages.fresh`` the
        first pass computes them all."""
        whole, messages.fresh = not messages.fresh, False
        for forward, weights in ((True, self.weight_forward), (False, self.weight_backward)):
            sweep_pass(self.classes, self.table, self.column_slot, self.row_start,
                       self.slot_label, self.unary, weights, messages.m, messages.h, forward,
                       whole)
            whole = False
            if time.perf_counter() >= deadline:
                return False
        messages.fresh = True
        return True

    def float_bound(self, messages: _Messages) -> float:
        """The dual bound of ``messages`` in floating point (for stopping only)."""
        m = messages.m
        node = self.unary + np.bincount(self.slot_label_abs, weights=m,
                                        minlength=len(self.unary))
        total = float(np.minimum.reduceat(node, self.node_start[:-1]).sum()) if len(node) else 0.0
        if not len(m):
            return total
        if messages.fresh:
            rest = messages.h - m
        else:
            rest = np.zeros_like(m)
            for sm, s1 in self.classes[:, 4:6].tolist():
                if sm < s1:
                    fill_marginals(self.table, self.column_slot, self.row_start, m, rest, sm, s1)
                    rest[sm:s1] -= m[sm:s1]
        edge_min = np.minimum.reduceat(rest, self.edge_slot[:-1])
        return total + float(edge_min[self.lower].sum())

    def certified_bound(self, messages: _Messages) -> int:
        """The dual bound of ``messages`` rounded to multiples of 1/S, exactly."""
        if not len(self.unary):
            return 0
        m = messages.m
        largest = float(np.abs(m).max(initial=0.0))
        room = _SCALED_LIMIT / (self.max_cost + (self.max_degree + 2) * (largest + 1))
        if room < 1:
            m, room = np.zeros_like(m), 1.0
        scale = 2 ** min(30, int(math.floor(math.log2(room))))
        scaled = np.rint(m * scale).astype(np.int64)
        node = self.unary_int * scale
        np.add.at(node, self.slot_label_abs, scaled)
        total = sum(np.minimum.reduceat(node, self.node_start[:-1]).tolist())
        # Each edge once: from its lower node (the second half of that node's level).
        for _, dm, d1, _, sm, s1, _, em, e1, _, _ in self.classes.tolist():
            if sm == s1:
                continue
            entries = self.table[em:e1]
            finite = np.isfinite(entries)
            exact = np.where(finite, entries, 0).astype(np.int64) * scale
            values = np.where(finite, exact - scaled[self.column_slot[em:e1]], _ABSENT)
            rest = np.minimum.reduceat(values, self.row_start[sm:s1] - em) - scaled[sm:s1]
            total += sum(np.minimum.reduceat(rest, self.edge_slot[dm:d1] - sm).tolist())
        return -(-total // scale)


def _level_classes(levels: np.ndarray, src: np.ndarray, dst: np.ndarray,
                   edge_slot: np.ndarray, table_start: np.ndarray, node_start: np.ndarray,
                   slots: int) -> tuple[np.ndarray, np.ndarray]:
    """Per level (nodes in index order), a row of the ranges of its directed edges, slots
    and table entries, each split where the edges towards later nodes begin, and of its
    labels: ``d0 dm d1 s0 sm s1 e0 em e1 l0 l1`` (int64); and the level of every slot."""
    count = int(levels.max(initial=-1)) + 1
    node_bounds = np.searchsorted(levels, np.arange(count + 1))
    edge_level = levels[src]
    edge_bounds = np.searchsorted(edge_level, np.arange(count + 1))
    edge_later = np.searchsorted(2 * edge_level + (dst > src), 2 * np.arange(count) + 1)
    classes = []
    slot_class = np.zeros(slots, np.int64)
    for c in range(count):
        d0, dm, d1 = int(edge_bounds[c]), int(edge_later[c]), int(edge_bounds[c + 1])
        s0, sm, s1 = int(edge_slot[d0]), int(edge_slot[dm]), int(edge_slot[d1])
        slot_class[s0:s1] = c
        classes.append((d0, dm, d1, s0, sm, s1, int(table_start[d0]), int(table_start[dm]),
                        int(table_start[d1]), int(node_start[node_bounds[c]]),
                        int(node_start[node_bounds[c + 1]])))
    return np.array(classes, np.int64).reshape(count, 11), slot_class
