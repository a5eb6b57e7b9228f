"""Lagrangian multipliers for the memory rule, for :mod:`solver.dual_bound`.

The memory rule is one row per check time ``t`` (each start of a use: the live
total only grows there): ``load_t(x) <= cap_t``, where ``load_t`` sums the
chosen labels' usages of the uses live at ``t`` and ``cap_t`` is the limit
minus the fixed amounts live at ``t``. For multipliers ``μ_t >= 0`` every
assignment ``x`` that keeps the rule has

    cost(x) >= cost(x) + Σ_t μ_t (load_t(x) - cap_t),

and the right side is a labeling problem again: each use adds ``usage[label] *
(Σ of μ over the checks it is live at)`` to its node's unary cost, and the
constant ``-Σ_t μ_t cap_t`` comes on top. So a bound of that problem plus the
constant bounds the original problem *with* its memory rule.

Multipliers are held in the units of the scaled costs (``q_t = μ_t * D``). The
certified bound rounds them down to multiples of ``2**-SHIFT`` and computes the
penalties and the constant exactly in Python ints, each rounded down (a smaller
unary cost or constant only relaxes).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog
from scipy.sparse import coo_matrix

from solver.flat import ranges
from solver.problem import Problem

#: Certified multipliers are multiples of ``2**-SHIFT`` (in scaled cost units).
SHIFT = 20
#: The exact multiplier step (:func:`exact_multipliers`) is taken when the memory rows
#: have at most this many (use, check) entries: contest core V has 7.9k, U 10M, K 71M.
EXACT_ENTRIES = 100_000


@dataclass(frozen=True, slots=True, eq=False)
class MemoryRows:
    """The memory rows over the labels kept in a bound's layout."""

    first: np.ndarray       # per use: its first check
    last: np.ndarray        # per use: one past its last check
    pair_use: np.ndarray    # per (use, kept label): the use
    pair_slot: np.ndarray   # per (use, kept label): the label's unary index in the layout
    pair_usage: np.ndarray  # per (use, kept label): bytes
    cap: np.ndarray         # per check: limit minus the fixed amounts live (int64)

    @staticmethod
    def build(problem: Problem, live: list[np.ndarray], unary_start: np.ndarray
              ) -> MemoryRows | None:
        """``None`` when there is no memory rule to relax. ``unary_start[node]`` is
        the node's first unary index in the layout (its kept labels follow)."""
        spans = _use_checks(problem)
        if spans is None:
            return None
        first, last, checks = spans
        fixed = np.zeros(len(checks) + 1, np.int64)
        for use in problem.fixed_memory:
            fixed[np.searchsorted(checks, use.start)] += use.amount
            fixed[np.searchsorted(checks, use.end)] -= use.amount
        cap = problem.memory_limit - np.cumsum(fixed[:-1])
        # Per label of the problem (nodes end to end): kept, and its rank among its
        # node's kept labels; per (use, label): the use, the label's place, the usage.
        kept = np.concatenate(live)
        sizes = np.array([len(keep) for keep in live], np.int64)
        node_first = np.cumsum(sizes) - sizes
        before = np.cumsum(kept) - kept
        rank = before - np.repeat(before[node_first], sizes)
        nodes = np.array([use.node for use in problem.memory], np.int64)
        counts = sizes[nodes]
        use = np.repeat(np.arange(len(nodes)), counts)
        place = ranges(node_first[nodes], counts)
        usage = np.concatenate([m.usage for m in problem.memory]).astype(np.int64)
        pair = np.flatnonzero(kept[place] & (usage > 0))
        return MemoryRows(
            first=first, last=last,
            pair_use=use[pair], pair_slot=unary_start[nodes][use[pair]] + rank[place[pair]],
            pair_usage=usage[pair], cap=cap)

    @property
    def checks(self) -> int:
        return len(self.cap)

    @property
    def entries(self) -> int:
        """The (use, check) pairs where the use is live at the check."""
        return int((self.last - self.first).sum())

    @property
    def exact(self) -> bool:
        """Whether the rows are small enough for the exact multiplier steps."""
        return self.entries <= EXACT_ENTRIES

    def penalties(self, q: np.ndarray, size: int) -> np.ndarray:
        """Per unary index, the added cost (float; for the search only)."""
        prefix = np.concatenate([[0.0], np.cumsum(q)])
        weight = prefix[self.last] - prefix[self.first]
        return np.bincount(self.pair_slot, weights=self.pair_usage * weight[self.pair_use],
                           minlength=size)

    def constant(self, q: np.ndarray) -> float:
        # An elementwise product and a sum: a BLAS dot of 26k entries took 27 ms on
        # a loaded machine (contest core K), most of a multiplier round.
        return -float((q * self.cap).sum())

    def exact_penalties(self, q: np.ndarray, size: int) -> list[int]:
        """Per unary index, the added cost for multipliers ``q / 2**SHIFT``
        (``q`` integers), rounded down exactly."""
        prefix = np.concatenate([[0], np.cumsum(q.astype(object))])
        weight = prefix[self.last] - prefix[self.first]
        out = np.zeros(size, dtype=object)
        np.add.at(out, self.pair_slot, self.pair_usage.astype(object) * weight[self.pair_use])
        return [int(x) >> SHIFT for x in out.tolist()]

    def exact_constant(self, q: np.ndarray) -> int:
        """``-Σ_t q_t cap_t / 2**SHIFT`` rounded down, exactly."""
        return -sum(int(a) * int(b) for a, b in zip(q.tolist(), self.cap.tolist()) if a) >> SHIFT

    def load(self, chosen: np.ndarray) -> np.ndarray:
        """Per check, the live total of the uses under the chosen labels (a bool
        per unary index), fixed amounts excluded (they sit in ``cap``)."""
        taken = chosen[self.pair_slot]
        per_use = np.bincount(self.pair_use[taken], weights=self.pair_usage[taken],
                              minlength=len(self.first))
        change = np.zeros(self.checks + 1)
        np.add.at(change, self.first, per_use)
        np.subtract.at(change, self.last, per_use)
        return np.cumsum(change[:-1])


def _use_checks(problem: Problem) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Per memory use, its first check and one past its last, and the check times (each
    start of a use that is live for a while); ``None`` without a memory rule to relax."""
    if problem.memory_limit is None or not problem.memory:
        return None
    starts = np.array([m.start for m in problem.memory], np.int64)
    ends = np.array([m.end for m in problem.memory], np.int64)
    checks = np.unique(starts[ends > starts])
    if not len(checks):
        return None
    return np.searchsorted(checks, starts), np.searchsorted(checks, ends), checks


def exact_rows(problem: Problem) -> bool:
    """Whether ``problem``'s memory rows (every label kept) take the exact multiplier
    steps (:attr:`MemoryRows.exact`), read from its uses alone."""
    spans = _use_checks(problem)
    return spans is not None and int((spans[1] - spans[0]).sum()) <= EXACT_ENTRIES


def node_part(rows: MemoryRows, node: np.ndarray, node_start: np.ndarray, q: np.ndarray
              ) -> tuple[float, np.ndarray]:
    """The node terms of the bound for multipliers ``q``, the messages fixed (``node``:
    per unary index, the reparametrized cost without penalties): ``Σ_u min_a`` of the
    penalized cost, plus the constant. Float, for the search only; and the costs."""
    costs = node + rows.penalties(q, len(node))
    return float(np.minimum.reduceat(costs, node_start[:-1]).sum()) + rows.constant(q), costs


def first_cheapest(costs: np.ndarray, node_start: np.ndarray) -> np.ndarray:
    """Per unary index, whether it is its node's first cheapest label."""
    sizes = np.diff(node_start)
    cheapest = np.repeat(np.minimum.reduceat(costs, node_start[:-1]), sizes)
    tied = np.flatnonzero(costs <= cheapest)
    owner = np.repeat(np.arange(len(sizes)), sizes)[tied]
    keep = np.ones(len(tied), bool)
    keep[1:] = owner[1:] != owner[:-1]
    chosen = np.zeros(len(costs), bool)
    chosen[tied[keep]] = True
    return chosen


def ascend_multipliers(rows: MemoryRows, node: np.ndarray, node_start: np.ndarray,
                       q: np.ndarray, step: float, rounds: int) -> tuple[np.ndarray, float]:
    """Multipliers that raise the node terms (:func:`node_part`), the messages fixed:
    up to ``rounds`` projected subgradient steps, each kept only if the node terms
    rise (the step grows by half after a kept one and shrinks fourfold after a
    refused try, at most 6 tries). The edge terms do not depend on the multipliers,
    so each kept step raises the whole bound. Returns (multipliers, next step)."""
    value, costs = node_part(rows, node, node_start, q)
    for _ in range(rounds):
        slack = rows.load(first_cheapest(costs, node_start)) - rows.cap
        slack = np.where((q > 0) | (slack > 0), slack, 0.0)
        if not slack.any():
            break
        for _ in range(6):
            trial = np.maximum(0.0, q + step * slack)
            trial_value, trial_costs = node_part(rows, node, node_start, trial)
            if trial_value > value:
                q, value, costs, step = trial, trial_value, trial_costs, step * 1.5
                break
            step /= 4
        else:
            break
    return q, step


def exact_multipliers(rows: MemoryRows, node: np.ndarray, node_start: np.ndarray,
                      time_limit: float) -> np.ndarray | None:
    """The multipliers that maximize the node terms (:func:`node_part`) with the
    messages fixed, or ``None`` (too many entries, see :data:`EXACT_ENTRIES`; no
    label with a usage; the LP unsolved within ``time_limit`` seconds, or infeasible).

    The node terms are the Lagrangian dual of the LP that picks a distribution ``x``
    over each memory node's labels, costs ``node``, under the memory rows; by LP
    duality the rows' duals (HiGHS) maximize them. Each use's bytes are one variable
    ``z = Σ usage · x`` (so a row sums the uses live at its check). Costs and usages
    are normalized for the LP. Float: the bound is certified later, whatever the
    LP's accuracy."""
    if not rows.exact or time_limit <= 0 or not len(rows.pair_slot):
        return None
    sizes = np.diff(node_start)
    owner = np.repeat(np.arange(len(sizes)), sizes)
    nodes = np.unique(owner[rows.pair_slot])
    slots = ranges(node_start[nodes], sizes[nodes])
    column = np.full(len(node), -1, np.int64)
    column[slots] = np.arange(len(slots))
    uses, labels = len(rows.first), len(slots)
    span = rows.last - rows.first
    check = ranges(rows.first, span)
    live = coo_matrix((np.ones(len(check)), (check, labels + np.repeat(np.arange(uses), span))),
                      shape=(rows.checks, labels + uses)).tocsr()
    usage_scale = max(1.0, float(rows.pair_usage.max(initial=1)))
    equal = coo_matrix(
        (np.concatenate([np.ones(labels), -rows.pair_usage / usage_scale, np.ones(uses)]),
         (np.concatenate([np.searchsorted(nodes, owner[slots]), len(nodes) + rows.pair_use,
                          len(nodes) + np.arange(uses)]),
          np.concatenate([np.arange(labels), column[rows.pair_slot],
                          labels + np.arange(uses)]))),
        shape=(len(nodes) + uses, labels + uses)).tocsr()
    costs = node[slots] - np.repeat(np.minimum.reduceat(node, node_start[:-1])[nodes],
                                    sizes[nodes])
    cost_scale = max(1.0, float(costs.max(initial=1.0)))
    result = linprog(np.concatenate([costs / cost_scale, np.zeros(uses)]), A_ub=live,
                     b_ub=rows.cap / usage_scale, A_eq=equal,
                     b_eq=np.concatenate([np.ones(len(nodes)), np.zeros(uses)]),
                     bounds=(0, None), method="highs-ds", options={"time_limit": time_limit})
    if result.status != 0:
        return None
    return np.maximum(0.0, -result.ineqlin.marginals) * (cost_scale / usage_scale)
