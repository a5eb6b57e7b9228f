"""The true (shared-copy) cost of a labeling, and local search on it.

The labeling model charges a copy per use; the rewrite inserts one copy per
value and target layout (:mod:`hlo.passes.apply_layouts`), and the scorer prices
the rewritten module. :func:`true_cost` computes that price from the compiled
tables without rewriting: every relation's ``base`` cell, plus each distinct
copy target of a group (one value in one computation) once
(:class:`~.compile.RelationTables`). ``assign`` still scores the rewritten module
of the answer it returns; this is the fast form for search.

:func:`improve` is a deterministic local search on that cost: from a labeling,
move one node to another of its candidates when that lowers the true cost,
starting from the nodes of values with several copying uses (where the true
cost differs from the model's) and following each accepted move to its
neighbours. Work is bounded by a count of cell evaluations, never by the clock,
so the same input gives the same answer.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

from solver.layout_assignment.compile import Compiled
from solver.problem import FORBIDDEN

__all__ = ["true_cost", "improve"]


def _as_lists(compiled: Compiled) -> tuple[list[list[int]], list[tuple]]:
    """The unary costs, and per relation ``(u, v, base, dst, shared)``, as nested lists
    (read cell by cell, far faster than numpy scalars), each table object converted once:
    the repeated layers of a model share their tables."""
    lists: dict[int, list] = {}

    def as_list(array):
        if array is None:
            return None
        found = lists.get(id(array))
        if found is None:
            found = lists[id(array)] = array.tolist()
        return found

    unary = [as_list(u) for u in compiled.unary]
    return unary, [(t.u, t.v, as_list(t.base), as_list(t.dst), as_list(t.shared))
                   for t in compiled.tables]


def true_cost(compiled: Compiled, labels: Sequence[int]) -> int:
    """The shared-copy cost of ``labels`` (``FORBIDDEN`` or more if a hard rule breaks)."""
    total = sum(int(compiled.unary[n][labels[n]]) for n in range(len(labels)))
    copies: dict[tuple[int, int], int] = {}
    for t in compiled.tables:
        a, b = labels[t.u], labels[t.v]
        total += int(t.base[a, b])
        if t.dst is not None and t.dst[a, b] >= 0:
            copies[(t.group, int(t.dst[a, b]))] = int(t.shared[a, b])  # type: ignore[index]
    for tie in compiled.problem.ties:
        want = labels[tie.u] if tie.mapping is None else tie.mapping[labels[tie.u]]
        if want != labels[tie.v]:
            total += FORBIDDEN
    return total + sum(copies.values())


class _Search:
    def __init__(self, compiled: Compiled, labels: Sequence[int]) -> None:
        self.c = compiled
        self.labels = list(labels)
        n = len(labels)
        self.incident: list[list[int]] = [[] for _ in range(n)]
        self.members: dict[int, list[int]] = {}
        for i, t in enumerate(compiled.tables):
            self.incident[t.u].append(i)
            if t.v != t.u:
                self.incident[t.v].append(i)
            if t.group >= 0:
                self.members.setdefault(t.group, []).append(i)
        self.tied = {x for tie in compiled.problem.ties for x in (tie.u, tie.v)}
        self.work = 0
        self.unary, self.cells = _as_lists(compiled)

    def group_cost(self, group: int) -> int:
        copies: dict[int, int] = {}
        labels, cells = self.labels, self.cells
        for i in self.members[group]:
            u, v, _, dst, shared = cells[i]
            a, b = labels[u], labels[v]
            d = dst[a][b]
            if d >= 0:
                copies[d] = shared[a][b]
        self.work += len(self.members[group])
        return sum(copies.values())

    def local_cost(self, node: int, groups: list[int]) -> int:
        labels, cells = self.labels, self.cells
        total = self.unary[node][labels[node]]
        for i in self.incident[node]:
            u, v, base, _, _ = cells[i]
            total += base[labels[u]][labels[v]]
        self.work += len(self.incident[node]) + 1
        return total + sum(self.group_cost(g) for g in groups)

    def best_move(self, node: int) -> tuple[int, int]:
        """``(label, delta)`` of the best label of ``node`` (its own: delta 0)."""
        groups = sorted({self.c.tables[i].group for i in self.incident[node]
                         if self.c.tables[i].group >= 0})
        current = self.labels[node]
        here = self.local_cost(node, groups)
        best, best_delta = current, 0
        for label in range(len(self.unary[node])):
            if label == current or self.unary[node][label] >= FORBIDDEN:
                continue
            self.labels[node] = label
            delta = self.local_cost(node, groups) - here
            if delta < best_delta:
                best, best_delta = label, delta
        self.labels[node] = current
        return best, best_delta


def improve(compiled: Compiled, labels: Sequence[int], *, budget: int = 2_000_000
            ) -> tuple[tuple[int, ...], int]:
    """Single-node moves that lower the true cost, until none does or ``budget`` cell
    evaluations are spent. Returns the labels and how many moves were taken."""
    search = _Search(compiled, labels)
    tables = compiled.tables
    start: list[int] = []
    for group in sorted(search.members):
        if len(search.members[group]) > 1:
            for i in search.members[group]:
                start.extend((tables[i].u, tables[i].v))
    queue: deque[int] = deque()
    queued: set[int] = set()
    for node in start:
        if node not in queued:
            queued.add(node)
            queue.append(node)
    moves = 0
    while queue and search.work < budget:
        node = queue.popleft()
        queued.discard(node)
        if node in search.tied or len(compiled.unary[node]) < 2:
            continue
        label, delta = search.best_move(node)
        if delta >= 0:
            continue
        search.labels[node] = label
        moves += 1
        for i in search.incident[node]:
            for other in (tables[i].u, tables[i].v):
                if other != node and other not in queued:
                    queued.add(other)
                    queue.append(other)
    return tuple(search.labels), moves
