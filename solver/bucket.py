"""Exact solving by bucket elimination: dynamic programming over small separators.

A node is *eliminated* by joining the cost tables that mention it into one table
over it and its neighbours, and keeping, for every labeling of the neighbours, the
cheapest of its labels: a table over the neighbours alone, which replaces the
tables it came from. Eliminating every node in turn leaves the optimum; going back
in reverse order, each node takes the label its table chose given its neighbours'.
This is exact (min-sum variable elimination); its work is the size of the tables it
makes, each the product of the label counts of a node and its neighbours at the moment
it is eliminated.

The order eliminates first the node whose table would be smallest (ties by node
number, so the answer does not depend on the machine). On a deep model's exact
shared-copy problem, the layers hang on a few dozen two-label copy nodes of the
shared rotary tables (*hubs*, nodes of at least :data:`HUB_DEGREE` neighbours): each
*piece* left when the hubs are taken out (a layer's share of the problem) is eliminated
on its own, leaving tables over the hubs it touches, and the hubs last. Pieces that are
the same problem (identical layers: the same tables, joined to the hubs the same way)
are eliminated once, and their tables reused: the work grows with the number of
distinct layers, not with the depth.

:func:`eliminate` gives up (``None``) before any arithmetic when some table would
exceed ``max_entries`` entries: the caller then uses CP-SAT.

Example: a chain ``a - b - c`` of two-label nodes is eliminated ``a``, then ``b``
(a table over ``b, c`` of 4 entries), then ``c``.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from solver.conditioning import connected_pieces
from solver.problem import FORBIDDEN, Problem

__all__ = ["eliminate", "elimination_order", "hub_nodes", "hub_pieces", "Piece", "MAX_ENTRIES", "MAX_WORK",
           "HUB_DEGREE"]

#: The largest table (entries) elimination may make: 8 MB of costs.
MAX_ENTRIES = 1 << 20
#: The most entries of all the tables made together (numpy does about 2e7 a second on a
#: loaded core): the pieces of a 48-layer step's components take 1.5-5e6; eliminating a
#: component whole can take 2e8 (8-10 s) where CP-SAT needs a second.
MAX_WORK = 20_000_000
#: A node with at least this many neighbours is a hub: eliminated after the pieces.
HUB_DEGREE = 32
#: Tables hold costs in ``[0, FORBIDDEN]``: this many add up without overflowing int64,
#: so the sum is clamped to ``FORBIDDEN`` once per this many tables.
_SAFE_SUMS = 8

#: A cost table: its scope (nodes, ascending) and its costs, one axis per scope node.
Factor = tuple[tuple[int, ...], np.ndarray]


@dataclass(frozen=True, slots=True, eq=False)
class _Run:
    """What eliminating some nodes left: tables over the other nodes, the cost of the
    tables that lost every node, and each eliminated node's choice given its neighbours."""

    rest: list[Factor]
    constant: int
    choices: list[tuple[int, tuple[int, ...], np.ndarray]]


def _order(sizes: Sequence[int], scopes: Sequence[tuple[int, ...]], eliminable: Sequence[int],
           max_entries: int, max_work: int) -> tuple[list[int], int] | None:
    """The order in which to eliminate ``eliminable`` (smallest table first, ties by node)
    and the entries of its tables, or ``None`` past ``max_entries`` or ``max_work``."""
    neighbours: list[set[int]] = [set() for _ in sizes]
    for scope in scopes:
        for a in scope:
            neighbours[a].update(b for b in scope if b != a)
    free = [False] * len(sizes)
    for x in eliminable:
        free[x] = True

    def table(node: int) -> int:
        entries = sizes[node]
        for w in neighbours[node]:
            entries *= sizes[w]
            if entries > max_entries:
                return max_entries + 1
        return entries

    key = {x: table(x) for x in eliminable}
    heap = [(k, x) for x, k in key.items()]
    heapq.heapify(heap)
    order: list[int] = []
    work = 0
    while heap:
        entries, x = heapq.heappop(heap)
        if not free[x] or entries != key[x]:
            continue
        work += entries
        if entries > max_entries or work > max_work:
            return None
        free[x] = False
        order.append(x)
        around = neighbours[x]
        for w in around:
            neighbours[w].discard(x)
            neighbours[w] |= around - {w}
        for w in around:
            if free[w]:
                key[w] = table(w)
                heapq.heappush(heap, (key[w], w))
        neighbours[x] = set()
    return order, work


def _run(factors: list[Factor], sizes: Sequence[int], order: list[int]) -> _Run:
    """Eliminate the nodes of ``order`` from ``factors``, in that order."""
    tables: dict[int, Factor] = {}
    holding: dict[int, set[int]] = {}
    ids = itertools.count()

    def add(scope: tuple[int, ...], costs: np.ndarray) -> None:
        ident = next(ids)
        tables[ident] = (scope, costs)
        for node in scope:
            holding.setdefault(node, set()).add(ident)

    for scope, costs in factors:
        add(scope, costs)
    constant = 0
    choices: list[tuple[int, tuple[int, ...], np.ndarray]] = []
    for x in order:
        held = sorted(holding.pop(x, ()))
        scope = tuple(sorted({w for i in held for w in tables[i][0]} | {x}))
        joined = np.zeros([sizes[w] for w in scope], np.int64)
        for count, i in enumerate(held, 1):
            part_scope, costs = tables.pop(i)
            for w in part_scope:
                if w != x:
                    holding[w].discard(i)
            shape = [sizes[w] if w in part_scope else 1 for w in scope]
            np.add(joined, costs.reshape(shape), out=joined)
            if count % _SAFE_SUMS == 0 or count == len(held):
                np.minimum(joined, FORBIDDEN, out=joined)
        axis = scope.index(x)
        rest = scope[:axis] + scope[axis + 1:]
        kind = np.uint8 if sizes[x] <= 256 else np.int32
        choices.append((x, rest, np.argmin(joined, axis=axis).astype(kind)))
        best = np.min(joined, axis=axis)
        if rest:
            add(rest, best)
        else:
            constant = min(constant + int(best), FORBIDDEN)
    return _Run(list(tables.values()), constant, choices)


def _choose(choices: list[tuple[int, tuple[int, ...], np.ndarray]], labels: list[int]) -> None:
    """Each eliminated node's label given its neighbours', in reverse order."""
    for x, rest, choice in reversed(choices):
        labels[x] = int(choice[tuple(labels[w] for w in rest)])


def _factors(problem: Problem) -> list[Factor]:
    factors: list[Factor] = [((n,), np.asarray(c, np.int64)) for n, c in enumerate(problem.unary)]
    for e in problem.edges:
        costs = np.asarray(e.costs, np.int64)
        factors.append(((e.u, e.v), costs) if e.u < e.v else ((e.v, e.u), costs.T))
    return factors


def elimination_order(problem: Problem, max_entries: int = MAX_ENTRIES,
                      max_work: int = MAX_WORK) -> list[int] | None:
    """The order in which to eliminate every node of ``problem`` at once (smallest table
    first), or ``None`` when at some step every node left would need a table of more than
    ``max_entries``, or the tables together would have more than ``max_work`` entries."""
    sizes = [len(u) for u in problem.unary]
    found = _order(sizes, [(e.u, e.v) for e in problem.edges], range(len(sizes)),
                   max_entries, max_work)
    return None if found is None else found[0]


def eliminate(problem: Problem, max_entries: int = MAX_ENTRIES, max_work: int = MAX_WORK
              ) -> tuple[tuple[int, ...], int] | None:
    """The optimum of ``problem`` (labels and cost; a cost of :data:`FORBIDDEN` when no
    assignment meets the hard rules), or ``None`` when elimination would make a table of
    more than ``max_entries`` entries or more than ``max_work`` in all: piece by piece
    around the hubs where there are hubs, else every node at once
    (:func:`elimination_order`). Problems with ties or memory rows are not handled
    (``None``)."""
    if problem.ties or problem.memory or problem.fixed_memory:
        return None
    hubs = hub_nodes(problem, HUB_DEGREE)
    if hubs:
        found = _by_pieces(problem, hubs, max_entries, max_work)
        if found is not None:
            return found
    order = elimination_order(problem, max_entries, max_work)
    if order is None:
        return None
    run = _run(_factors(problem), [len(u) for u in problem.unary], order)
    labels = [0] * problem.num_nodes
    _choose(run.choices, labels)
    return tuple(labels), run.constant


@dataclass(frozen=True, slots=True, eq=False)
class Piece:
    """A piece's nodes, the hubs it touches (ascending), and its tables in local numbering:
    the piece's nodes ``0..len(nodes)-1`` in order, then its hubs."""

    nodes: tuple[int, ...]
    hubs: tuple[int, ...]
    factors: list[Factor]
    sizes: list[int]

    def key(self) -> bytes:
        """Equal for pieces that are the same problem joined to their hubs the same way."""
        parts = [np.array([len(self.nodes), *self.sizes], np.int64).tobytes()]
        for scope, costs in self.factors:
            parts.append(np.array([len(scope), *scope], np.int64).tobytes())
            parts.append(np.ascontiguousarray(costs).tobytes())
        return b"".join(parts)


def hub_nodes(problem: Problem, hub_degree: int) -> list[int]:
    """The nodes with at least ``hub_degree`` edges, in node order."""
    degree = [0] * problem.num_nodes
    for e in problem.edges:
        degree[e.u] += 1
        degree[e.v] += 1
    return [n for n in range(problem.num_nodes) if degree[n] >= hub_degree]


def hub_pieces(problem: Problem, hubs: list[int]) -> list[Piece]:
    """The pieces left when ``hubs`` are taken out, each with its tables."""
    is_hub = np.zeros(problem.num_nodes, bool)
    is_hub[hubs] = True
    incident: list[list[tuple[int, np.ndarray]]] = [[] for _ in range(problem.num_nodes)]
    for e in problem.edges:
        costs = np.asarray(e.costs, np.int64)
        incident[e.u].append((e.v, costs))
        incident[e.v].append((e.u, costs.T))
    inner = [n for n in range(problem.num_nodes) if not is_hub[n]]
    pairs = ((e.u, e.v) for e in problem.edges if not (is_hub[e.u] or is_hub[e.v]))
    pieces = []
    for nodes in connected_pieces(inner, pairs):
        local = {n: i for i, n in enumerate(nodes)}
        touched = tuple(sorted({w for n in nodes for w, _ in incident[n] if is_hub[w]}))
        local.update((w, len(nodes) + j) for j, w in enumerate(touched))
        factors: list[Factor] = [((i,), np.asarray(problem.unary[n], np.int64))
                                 for i, n in enumerate(nodes)]
        for i, n in enumerate(nodes):
            for w, costs in incident[n]:
                if local.get(w, -1) > i:
                    factors.append(((i, local[w]), costs))
        sizes = [len(problem.unary[n]) for n in nodes + touched]
        pieces.append(Piece(nodes, touched, factors, sizes))
    return pieces


def _by_pieces(problem: Problem, hubs: list[int], max_entries: int, max_work: int
               ) -> tuple[tuple[int, ...], int] | None:
    """Each piece eliminated on its own (identical ones once), leaving tables over its
    hubs; then the hubs. ``None`` past the limits."""
    hub_set = set(hubs)
    master: list[Factor] = [((h,), np.asarray(problem.unary[h], np.int64)) for h in hubs]
    master += [f for f in _factors(problem)[problem.num_nodes:] if set(f[0]) <= hub_set]
    solved: dict[bytes, _Run] = {}
    placed: list[tuple[Piece, _Run]] = []
    work = constant = 0
    for piece in hub_pieces(problem, hubs):
        key = piece.key()
        if key not in solved:
            found = _order(piece.sizes, [s for s, _ in piece.factors], range(len(piece.nodes)),
                           max_entries, max_work - work)
            if found is None:
                return None
            work += found[1]
            solved[key] = _run(piece.factors, piece.sizes, found[0])
        run = solved[key]
        shift = len(piece.nodes)
        master += [(tuple(piece.hubs[j - shift] for j in scope), costs) for scope, costs in run.rest]
        constant = min(constant + run.constant, FORBIDDEN)
        placed.append((piece, run))
    sizes = [len(u) for u in problem.unary]
    found = _order(sizes, [s for s, _ in master], hubs, max_entries, max_work - work)
    if found is None:
        return None
    run = _run(master, sizes, found[0])
    labels = [0] * problem.num_nodes
    _choose(run.choices, labels)
    for piece, piece_run in placed:
        local = [0] * len(piece.nodes) + [labels[h] for h in piece.hubs]
        _choose(piece_run.choices, local)
        for i, n in enumerate(piece.nodes):
            labels[n] = local[i]
    return tuple(labels), min(constant + run.constant, FORBIDDEN)
