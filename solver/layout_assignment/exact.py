"""The true (shared-copy) cost as a labeling problem of its own.

The per-use model charges a copy for every use that reads a value in another
layout; the rewrite makes one copy per value and target. Sharing is a
pairwise structure once a *copy node* stands for each (value, target) that two or
more uses can need: its labels are ``(a, none)`` and ``(a, copy)`` for every
label ``a`` of the value's node, tied to that node (``a`` is the value's label);
``(a, copy)`` costs the copy once (``shared`` of :class:`~.compile.RelationTables`),
and ``(a, none)`` forbids every use's label that needs a copy to that target.
The uses then pay only their own part (``base``). A target only one use can
need keeps its copy in that use's table (``base + shared``).

The optimum of this problem is the true optimum over the candidate layouts,
and any bound CP-SAT proves on it bounds the true cost; its first
``len(compiled.unary)`` labels are an assignment of the layout graph.
"""

from __future__ import annotations

import numpy as np

from solver.layout_assignment.compile import Compiled
from solver.problem import FORBIDDEN, Problem, Tie, make_problem

__all__ = ["exact_problem"]


def exact_problem(compiled: Compiled) -> Problem:
    """The labeling problem whose cost is :func:`.shared_copies.true_cost`."""
    unary: list[np.ndarray] = list(compiled.unary)
    edges: list[tuple[int, int, np.ndarray]] = []
    ties: list[Tie] = list(compiled.problem.ties)
    names = list(compiled.problem.names or [str(i) for i in range(len(unary))])
    # Uses per (group, target): which relations can need that copy.
    wanting: dict[tuple[int, int], list[int]] = {}
    for i, t in enumerate(compiled.tables):
        if t.dst is not None:
            for d in np.unique(t.dst[t.dst >= 0]).tolist():
                wanting.setdefault((t.group, d), []).append(i)
    shared_targets = {key for key, uses in wanting.items() if len(uses) > 1}
    for i, t in enumerate(compiled.tables):
        table = t.base
        if t.dst is not None:
            alone = np.zeros(t.dst.shape, bool)
            for d in np.unique(t.dst[t.dst >= 0]).tolist():
                if (t.group, d) not in shared_targets:
                    alone |= t.dst == d
            if alone.any():
                table = np.where(alone, t.base + t.shared, t.base)  # type: ignore[operator]
        if t.u == t.v:
            unary[t.u] = np.minimum(unary[t.u] + np.diag(table), FORBIDDEN)
        elif table.any():
            edges.append((t.u, t.v, table))
    for (group, d) in sorted(shared_targets):
        uses = wanting[(group, d)]
        first = compiled.tables[uses[0]]
        k = len(compiled.unary[first.u])
        # The copy's price from source label a (the same in every use's table).
        price = np.zeros(k, np.int64)
        for i in uses:
            t = compiled.tables[i]
            rows, cols = np.nonzero(t.dst == d)  # type: ignore[operator]
            price[rows] = t.shared[rows, cols]  # type: ignore[index]
        node = len(unary)
        row = np.zeros(2 * k, np.int64)
        row[1::2] = price
        unary.append(row)
        names.append(f"copy of {names[first.u]} to target {d}")
        ties.append(Tie(node, first.u, tuple(j // 2 for j in range(2 * k))))
        for i in uses:
            t = compiled.tables[i]
            needs = t.dst == d  # type: ignore[operator]
            table = np.zeros((2 * k, needs.shape[1]), np.int64)
            table[0::2] = np.where(needs, FORBIDDEN, 0)
            if t.v == first.u:
                # A self-relation: the use's label is the value's own; fold into the tie.
                row = unary[node].copy()
                row[0::2] = np.where(np.diag(needs), FORBIDDEN, row[0::2])
                unary[node] = row
            else:
                edges.append((node, t.v, table))
    return make_problem(unary, edges, ties=ties, names=names)
