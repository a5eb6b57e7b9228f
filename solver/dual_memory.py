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
from solver.trws import lower_hulls
from solver.problem import Problem

#: Certified multipliers are multiples of ``2**-SHIFT`` (in scaled cost units).
SHIFT = 20
#: Memory rows of at most this many (use, check) entries are small: the priced search's
#: bound takes exact multiplier steps there from the start, and the solver keeps the
#: bound a larger slice of the time (contest core V has 7.9k, U 10M, K 71M).
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
        """Whether the rows are small (:data:`EXACT_ENTRIES`)."""
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
    """Whether ``problem``'s memory rows (every label kept) are small
    (:attr:`MemoryRows.exact`), read from its uses alone."""
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
    messages fixed, or ``None`` (no label with a usage; the LP unsolved within
    ``time_limit`` seconds, or infeasible).

    The node terms are the Lagrangian dual of the LP that picks a distribution over
    each memory node's labels, costs ``node``, under the memory rows; by LP duality
    the rows' duals (HiGHS) maximize them. The LP is written small:

    - each row minus the one before (a slack per row), so a use's bytes enter two
      rows, where it starts being live and one past its last check, however long it
      lives: the live intervals' matrix becomes a network matrix;
    - a node whose uses' usages are all multiples of one profile (a single use, or
      uses folded from equal nodes) needs only the lower convex hull of its (profile,
      cost) points: from its cheapest label down, a column per hull segment (the
      profile given up, at the segment's cost per unit), entering each use's rows in
      proportion. Any other node keeps a column per label, a row for its distribution,
      and a column and a row per use for the use's bytes.

    The rows' duals come back as ``y_t = π_t - π_{t+1}`` (``π``: the differenced rows'
    duals). Costs and usages are normalized for the LP. Float: the bound is certified
    later, whatever the LP's accuracy."""
    if time_limit <= 0 or not len(rows.pair_slot):
        return None
    sizes = np.diff(node_start)
    owner = np.repeat(np.arange(len(sizes)), sizes)
    shape = _Shape.of(rows, owner, len(sizes))
    usage_scale = float(rows.pair_usage.max())
    cheapest = np.minimum.reduceat(node, node_start[:-1])
    relative = node - np.repeat(cheapest, sizes)
    cost_scale = max(1.0, float(relative.max(initial=1.0)))
    relative /= cost_scale
    columns = _Columns(rows)
    profile = np.zeros(len(node))
    taken = shape.reference_pair
    profile[rows.pair_slot[taken]] = rows.pair_usage[taken] / usage_scale
    seg_node, seg_length, seg_slope, top = lower_hulls(
        relative, profile, node_start.astype(np.int64), shape.profile_nodes)
    top_of = np.zeros(len(sizes))
    top_of[shape.profile_nodes] = top
    counts = shape.use_count[seg_node]
    seg_uses = shape.profile_uses[ranges(shape.use_start[seg_node], counts)]
    columns.add_spans(np.repeat(np.arange(len(seg_node)), counts), seg_uses,
                      -shape.alpha[seg_uses], seg_slope, seg_length)
    # The bytes of the profile uses at their nodes' tops, moved to the right-hand side.
    uses = shape.profile_uses
    at_top = shape.alpha[uses] * top_of[shape.node[uses]]
    np.subtract.at(columns.rhs, rows.first[uses], at_top)
    np.add.at(columns.rhs, rows.last[uses], at_top)
    if len(shape.general_nodes):
        columns.add_general(shape, owner, ranges(node_start[shape.general_nodes],
                                                 sizes[shape.general_nodes]),
                            relative, usage_scale)
    result = columns.solve(rows.cap / usage_scale, time_limit)
    if result is None:
        return None
    return np.maximum(0.0, result[1:] - result[:-1]) * (cost_scale / usage_scale)


@dataclass(frozen=True, slots=True)
class _Shape:
    """Per use its node (-1: no label with a usage) and its share ``alpha`` of its
    node's profile; the nodes whose live uses share a profile (``profile_nodes``, their
    live uses ``profile_uses`` by node from ``use_start[node]``, ``use_count[node]`` of
    them), the others (``general_nodes``, their live uses ``general_uses``); per pair
    entry, whether it is its node's profile (``reference_pair``)."""

    node: np.ndarray
    alpha: np.ndarray
    profile_nodes: np.ndarray
    profile_uses: np.ndarray
    use_start: np.ndarray
    use_count: np.ndarray
    general_nodes: np.ndarray
    general_uses: np.ndarray
    reference_pair: np.ndarray

    @staticmethod
    def of(rows: MemoryRows, owner: np.ndarray, nodes: int) -> _Shape:
        uses = len(rows.first)
        node = np.full(uses, -1, np.int64)
        node[rows.pair_use] = owner[rows.pair_slot]
        peak = np.zeros(uses)
        np.maximum.at(peak, rows.pair_use, rows.pair_usage)
        pairs = np.bincount(rows.pair_use, minlength=uses)
        counted = np.flatnonzero((rows.last > rows.first) & (node >= 0))
        # Each node's reference use: its largest peak (the first such use).
        by_node = counted[np.lexsort((-peak[counted], node[counted]))]
        head = np.ones(len(by_node), bool)
        head[1:] = node[by_node][1:] != node[by_node][:-1]
        reference = np.full(nodes, -1, np.int64)
        reference[node[by_node[head]]] = by_node[head]
        # A use shares its node's profile when every usage is the reference's times the
        # ratio of the peaks, on the same labels.
        ref_use = reference[np.maximum(node, 0)]
        profile_at = np.zeros(len(owner))
        is_ref = ref_use[rows.pair_use] == rows.pair_use
        profile_at[rows.pair_slot[is_ref]] = rows.pair_usage[is_ref]
        lhs = rows.pair_usage * peak[ref_use[rows.pair_use]]
        rhs = profile_at[rows.pair_slot] * peak[rows.pair_use]
        on_profile = np.abs(lhs - rhs) <= 1e-9 * lhs
        off = np.bincount(rows.pair_use[~on_profile], minlength=uses) > 0
        off |= pairs != pairs[ref_use]
        general = np.zeros(nodes, bool)
        general[node[counted[off[counted]]]] = True
        kept = ~general[node[by_node]]
        profile_uses = by_node[kept]
        profile_nodes = node[profile_uses][head[kept]]
        use_count = np.bincount(node[profile_uses], minlength=nodes)
        use_start = np.zeros(nodes, np.int64)
        use_start[profile_nodes] = np.flatnonzero(head[kept])
        alpha = peak / np.maximum(peak[ref_use], 1.0)
        return _Shape(node=node, alpha=alpha, profile_nodes=profile_nodes,
                      profile_uses=profile_uses, use_start=use_start, use_count=use_count,
                      general_nodes=np.flatnonzero(general),
                      general_uses=by_node[~kept],
                      reference_pair=is_ref & ~general[node[rows.pair_use]])


class _Columns:
    """The differenced LP of :func:`exact_multipliers`, column by column: the memory
    rows first (``checks + 1`` of them), then the general nodes' rows."""

    def __init__(self, rows: MemoryRows) -> None:
        self.rows = rows
        self.rhs = np.zeros(rows.checks + 1)
        self.entries: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.cost: list[np.ndarray] = []
        self.upper: list[np.ndarray] = []
        self.count, self.row_count = 0, rows.checks + 1
        # A slack per row: +1 in its row, -1 in the next.
        checks = np.arange(rows.checks)
        self.add_spans(checks, None, np.ones(rows.checks), np.zeros(rows.checks),
                       np.full(rows.checks, np.inf), first=checks, last=checks + 1)

    def add_spans(self, column: np.ndarray, uses: np.ndarray | None, value: np.ndarray,
                  cost: np.ndarray, upper: np.ndarray, *, first: np.ndarray | None = None,
                  last: np.ndarray | None = None) -> None:
        """New columns (costs ``cost``, bounds ``0..upper``), with ``value`` where the
        use of each (column, use) pair starts being live and ``-value`` one past it."""
        first = self.rows.first[uses] if first is None else first
        last = self.rows.last[uses] if last is None else last
        column = column + self.count
        self.entries += [(first, column, value), (last, column, -value)]
        self.cost.append(cost)
        self.upper.append(upper)
        self.count += len(cost)

    def add_general(self, shape: _Shape, owner: np.ndarray, slots: np.ndarray,
                    relative: np.ndarray, usage_scale: float) -> None:
        """A column per label of the general nodes (a row each for their distributions),
        and a column and a row per use for its bytes."""
        rows, nodes, uses = self.rows, shape.general_nodes, shape.general_uses
        column = np.full(len(owner), -1, np.int64)
        column[slots] = self.count + np.arange(len(slots))
        self.entries.append((self.row_count + np.searchsorted(nodes, owner[slots]),
                             column[slots], np.ones(len(slots))))
        self.cost.append(relative[slots])
        self.upper.append(np.full(len(slots), np.inf))
        self.count += len(slots)
        self.row_count += len(nodes)
        self.rhs = np.concatenate([self.rhs, np.ones(len(nodes)), np.zeros(len(uses))])
        use_row = np.full(len(rows.first), -1, np.int64)
        use_row[uses] = self.row_count + np.arange(len(uses))
        pair = np.flatnonzero(use_row[rows.pair_use] >= 0)
        self.entries += [(use_row[rows.pair_use[pair]], column[rows.pair_slot[pair]],
                          -rows.pair_usage[pair] / usage_scale),
                         (use_row[uses], self.count + np.arange(len(uses)), np.ones(len(uses)))]
        self.row_count += len(uses)
        self.add_spans(np.arange(len(uses)), uses, np.ones(len(uses)), np.zeros(len(uses)),
                       np.full(len(uses), np.inf))

    def solve(self, cap: np.ndarray, time_limit: float) -> np.ndarray | None:
        """The differenced memory rows' duals (``checks + 1``), or ``None``."""
        rhs = self.rhs.copy()
        rhs[:len(cap)] += cap
        rhs[1:len(cap) + 1] -= cap
        row, column, value = (np.concatenate(part) for part in zip(*self.entries))
        matrix = coo_matrix((value, (row, column)), shape=(self.row_count, self.count)).tocsr()
        upper = np.concatenate(self.upper)
        result = linprog(np.concatenate(self.cost), A_eq=matrix, b_eq=rhs,
                         bounds=np.stack([np.zeros(self.count), upper], axis=1),
                         method="highs-ds", options={"time_limit": time_limit})
        if result.status != 0:
            return None
        return result.eqlin.marginals[:len(cap) + 1]
