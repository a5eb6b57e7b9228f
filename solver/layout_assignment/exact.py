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

When "needs the copy" separates into "the value is not in the target layout" and
"the use wants the target" (plain layouts), the copy node has just two labels,
``none`` and ``copy``, and prices the copy against the value's label (free where
the value already has the target layout) instead of a tie.

The optimum of this problem is the true optimum over the candidate layouts,
and any bound CP-SAT proves on it bounds the true cost; its first
``len(compiled.unary)`` labels are an assignment of the layout graph.
"""

from __future__ import annotations

import numpy as np

from solver.layout_assignment.compile import Compiled
from solver.problem import FORBIDDEN, Problem, Tie, make_problem

__all__ = ["exact_problem", "exact_labels"]


def exact_problem(compiled: Compiled, *, two_label: bool = True) -> Problem:
    """The labeling problem whose cost is :func:`.shared_copies.true_cost`
    (``two_label=False``: every copy node tied, as in the general case)."""
    unary: list[np.ndarray] = list(compiled.unary)
    edges: list[tuple[int, int, np.ndarray]] = []
    ties: list[Tie] = list(compiled.problem.ties)
    names = list(compiled.problem.names or [str(i) for i in range(len(unary))])
    # The repeated layers of a model share their tables (one object per distinct
    # table, see compile_problem): what is derived from a table alone is derived once.
    facts = _TableFacts()
    # Uses per (group, target): which relations can need that copy.
    wanting: dict[tuple[int, int], list[int]] = {}
    for i, t in enumerate(compiled.tables):
        if t.dst is not None:
            for d in facts.targets(t.dst):
                wanting.setdefault((t.group, d), []).append(i)
    shared_targets = {key for key, uses in wanting.items() if len(uses) > 1}
    for t in compiled.tables:
        table = t.base
        if t.dst is not None:
            alone = tuple(d for d in facts.targets(t.dst) if (t.group, d) not in shared_targets)
            if alone:
                table = facts.alone(t, alone)
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
        needs = [facts.need(compiled.tables[i].dst, d) for i in uses]
        for i, need in zip(uses, needs):
            rows, cols = np.nonzero(need)
            price[rows] = compiled.tables[i].shared[rows, cols]  # type: ignore[index]
        node = len(unary)
        names.append(f"copy of {names[first.u]} to target {d}")
        if two_label and all(facts.separable(compiled.tables[i].dst, d) for i in uses):
            _two_label_copy(node, first.u, price, uses, needs, compiled, unary, edges, facts)
        else:
            _tied_copy(node, first.u, price, uses, needs, compiled, unary, edges, ties)
    return make_problem(unary, edges, ties=ties, names=names)


class _TableFacts:
    """What :func:`exact_problem` derives from one table object, derived once per object
    (memoized by ``id``: the tables live in ``compiled`` for the whole statement)."""

    __slots__ = ("_targets", "_needs", "_separable", "_alone", "_forbid")

    def __init__(self) -> None:
        self._targets: dict[int, list[int]] = {}
        self._needs: dict[tuple[int, int], np.ndarray] = {}
        self._separable: dict[tuple[int, int], bool] = {}
        self._alone: dict[tuple, np.ndarray] = {}
        self._forbid: dict[tuple[int, int], np.ndarray] = {}

    def targets(self, dst: np.ndarray) -> list[int]:
        """The copy targets a table's cells can need, ascending."""
        found = self._targets.get(id(dst))
        if found is None:
            found = self._targets[id(dst)] = sorted(set(dst[dst >= 0].tolist()))
        return found

    def need(self, dst: np.ndarray, d: int) -> np.ndarray:
        """The cells that need a copy to target ``d``."""
        key = (id(dst), d)
        found = self._needs.get(key)
        if found is None:
            found = self._needs[key] = dst == d
        return found

    def separable(self, dst: np.ndarray, d: int) -> bool:
        key = (id(dst), d)
        found = self._separable.get(key)
        if found is None:
            found = self._separable[key] = _separable(self.need(dst, d))
        return found

    def alone(self, t, alone: tuple[int, ...]) -> np.ndarray:
        """``t``'s table with the copies to the targets in ``alone`` (which no other use
        shares) charged whole."""
        key = (id(t.base), id(t.dst), id(t.shared), alone)
        found = self._alone.get(key)
        if found is None:
            cells = np.isin(t.dst, alone)
            found = self._alone[key] = np.where(cells, t.base + t.shared, t.base)
        return found

    def forbid(self, need: np.ndarray) -> np.ndarray:
        """The two-label copy node's table to a use: ``none`` forbids the labels that
        want the copy."""
        key = (id(need), 0)
        found = self._forbid.get(key)
        if found is None:
            found = np.zeros((2, need.shape[1]), np.int64)
            found[0] = np.where(need.any(axis=0), FORBIDDEN, 0)
            self._forbid[key] = found
        return found


def _separable(need: np.ndarray) -> bool:
    """Whether "this cell needs the copy" is "the source is not the target already" and
    "the consumer wants the target" (true of plain layouts: the target is the consumer's)."""
    rows, cols = need.any(axis=1), need.any(axis=0)
    return bool((need == np.outer(rows, cols)).all())


def _two_label_copy(node: int, value: int, price: np.ndarray, uses: list[int],
                    needs: list[np.ndarray], compiled: Compiled, unary: list,
                    edges: list, facts: _TableFacts) -> None:
    """Labels ``none``/``copy``; the copy is priced against the value's label (free where
    the value already has the target layout), ``none`` forbids the uses' wanting labels."""
    unary.append(np.zeros(2, np.int64))
    to_value = np.zeros((2, len(price)), np.int64)
    to_value[1] = price
    for i, need in zip(uses, needs):
        t = compiled.tables[i]
        if t.v == value:
            to_value[0] = np.where(np.diag(need), FORBIDDEN, to_value[0])
            continue
        edges.append((node, t.v, facts.forbid(need)))
    edges.append((node, value, to_value))


def _tied_copy(node: int, value: int, price: np.ndarray, uses: list[int],
               needs: list[np.ndarray], compiled: Compiled, unary: list, edges: list,
               ties: list) -> None:
    """Labels ``(a, none)``/``(a, copy)`` for every label ``a`` of the value, tied to it."""
    k = len(price)
    row = np.zeros(2 * k, np.int64)
    row[1::2] = price
    ties.append(Tie(node, value, tuple(j // 2 for j in range(2 * k))))
    for i, need in zip(uses, needs):
        t = compiled.tables[i]
        if t.v == value:
            row[0::2] = np.where(np.diag(need), FORBIDDEN, row[0::2])
            continue
        table = np.zeros((2 * k, need.shape[1]), np.int64)
        table[0::2] = np.where(need, FORBIDDEN, 0)
        edges.append((node, t.v, table))
    unary.append(row)


def exact_labels(exact: Problem, labels: tuple[int, ...] | list[int]) -> tuple[int, ...]:
    """``labels`` (an assignment of the layout graph's nodes) extended to
    ``exact``: each copy node takes its cheapest label given the rest (a copy
    exactly where some use needs it). Copy nodes touch only graph nodes, so each
    is chosen on its own."""
    n = len(labels)
    cost = [np.array(u, np.int64) for u in exact.unary[n:]]
    for e in exact.edges:
        if e.u >= n:
            cost[e.u - n] = np.minimum(cost[e.u - n] + e.costs[:, labels[e.v]], FORBIDDEN)
        elif e.v >= n:
            cost[e.v - n] = np.minimum(cost[e.v - n] + e.costs[labels[e.u], :], FORBIDDEN)
    for tie in exact.ties:
        if tie.u >= n:
            mapping = tie.mapping or range(len(cost[tie.u - n]))
            off = np.array([m != labels[tie.v] for m in mapping])
            cost[tie.u - n] = np.where(off, FORBIDDEN, cost[tie.u - n])
    return tuple(labels) + tuple(int(np.argmin(c)) for c in cost)
