"""Exact solving by bucket elimination: dynamic programming over small separators.

A node is *eliminated* by joining the cost tables that mention it into one table
over it and its neighbours, and keeping, for every labeling of the neighbours, the
cheapest of its labels: a table over the neighbours alone, which replaces the
tables it came from. Eliminating every node in turn leaves the optimum; going back
in reverse order, each node takes the label its table chose given its neighbours'.
This is exact (min-sum variable elimination); its work is the size of the largest
table it makes, the product of the label counts of a node and its neighbours at the
moment it is eliminated.

The order eliminates first the node whose table would be smallest (ties by node
number, so the answer does not depend on the machine). On a deep model's exact
shared-copy problem, the layers hang on a few dozen two-label copy nodes of the
shared rotary tables: each layer's nodes are eliminated inside the layer, leaving a
table over the copy nodes it touches, and the copy nodes last: every layer's
separator is solved in one table, never enumerated state by state.

:func:`eliminate` gives up (``None``) before any arithmetic when some table would
exceed ``max_entries`` entries: the caller then uses CP-SAT.

Example: a chain ``a - b - c`` of two-label nodes is eliminated ``a``, then ``b``
(a table over ``b, c`` of 4 entries), then ``c``.
"""

from __future__ import annotations

import heapq
import itertools

import numpy as np

from solver.problem import FORBIDDEN, Problem

__all__ = ["eliminate", "elimination_order", "MAX_ENTRIES", "MAX_WORK"]

#: The largest table (entries) elimination may make: 8 MB of costs.
MAX_ENTRIES = 1 << 20
#: The most entries of all the tables made together (about a second of numpy per 3e7).
MAX_WORK = 300_000_000


def elimination_order(problem: Problem, max_entries: int = MAX_ENTRIES,
                      max_work: int = MAX_WORK) -> list[int] | None:
    """The order in which to eliminate every node (smallest table first), or ``None`` when
    at some step every node left would need a table of more than ``max_entries``, or the
    tables together would have more than ``max_work`` entries."""
    n = problem.num_nodes
    sizes = [len(u) for u in problem.unary]
    neighbours: list[set[int]] = [set() for _ in range(n)]
    for e in problem.edges:
        neighbours[e.u].add(e.v)
        neighbours[e.v].add(e.u)

    def table(node: int) -> int:
        entries = sizes[node]
        for w in neighbours[node]:
            entries *= sizes[w]
            if entries > max_entries:
                return max_entries + 1
        return entries

    key = [table(x) for x in range(n)]
    heap = [(key[x], x) for x in range(n)]
    heapq.heapify(heap)
    done = [False] * n
    order: list[int] = []
    work = 0
    while heap:
        entries, x = heapq.heappop(heap)
        if done[x] or entries != key[x]:
            continue
        work += entries
        if entries > max_entries or work > max_work:
            return None
        done[x] = True
        order.append(x)
        around = neighbours[x]
        for w in around:
            neighbours[w].discard(x)
            neighbours[w] |= around - {w}
        for w in around:
            key[w] = table(w)
            heapq.heappush(heap, (key[w], w))
        neighbours[x] = set()
    return order


def eliminate(problem: Problem, max_entries: int = MAX_ENTRIES, max_work: int = MAX_WORK
              ) -> tuple[tuple[int, ...], int] | None:
    """The optimum of ``problem`` (labels and cost; a cost of :data:`FORBIDDEN` when no
    assignment meets the hard rules), or ``None`` when the elimination order would make
    a table of more than ``max_entries`` entries or more than ``max_work`` in all
    (:func:`elimination_order`). Problems with ties or memory rows are not handled
    (``None``)."""
    if problem.ties or problem.memory or problem.fixed_memory:
        return None
    order = elimination_order(problem, max_entries, max_work)
    if order is None:
        return None
    return _eliminated(problem, order)


def _eliminated(problem: Problem, order: list[int]) -> tuple[tuple[int, ...], int]:
    """Eliminate the nodes in ``order``, then choose their labels in reverse."""
    sizes = [len(u) for u in problem.unary]
    # Tables by id: (scope, sorted by node; costs with one axis per scope node).
    tables: dict[int, tuple[tuple[int, ...], np.ndarray]] = {}
    holding: list[set[int]] = [set() for _ in range(problem.num_nodes)]
    ids = itertools.count()

    def add(scope: tuple[int, ...], costs: np.ndarray) -> None:
        ident = next(ids)
        tables[ident] = (scope, costs)
        for node in scope:
            holding[node].add(ident)

    for node, costs in enumerate(problem.unary):
        add((node,), np.asarray(costs, np.int64))
    for e in problem.edges:
        if e.u < e.v:
            add((e.u, e.v), np.asarray(e.costs, np.int64))
        else:
            add((e.v, e.u), np.asarray(e.costs, np.int64).T)
    total = 0
    choices: list[tuple[int, tuple[int, ...], np.ndarray]] = []
    for x in order:
        held = sorted(holding[x])
        scope = tuple(sorted({w for i in held for w in tables[i][0]}))
        joined = np.zeros([sizes[w] for w in scope], np.int64)
        for i in held:
            part_scope, costs = tables.pop(i)
            for w in part_scope:
                holding[w].discard(i)
            shape = [sizes[w] if w in part_scope else 1 for w in scope]
            np.add(joined, costs.reshape(shape), out=joined)
            np.minimum(joined, FORBIDDEN, out=joined)
        axis = scope.index(x)
        rest = scope[:axis] + scope[axis + 1:]
        kind = np.uint8 if sizes[x] <= 256 else np.int32
        choices.append((x, rest, np.argmin(joined, axis=axis).astype(kind)))
        best = np.min(joined, axis=axis)
        if rest:
            add(rest, best)
        else:
            total = min(total + int(best), FORBIDDEN)
    labels = [0] * problem.num_nodes
    for x, rest, choice in reversed(choices):
        labels[x] = int(choice[tuple(labels[w] for w in rest)])
    return tuple(labels), total
