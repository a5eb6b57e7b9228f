"""Exact decomposition over a small separator: condition on a few hub nodes.

A deep model's reduced problem is often one component only because a few values
are read by every layer (rotary tables, masks, a shared broadcast): nodes of high
degree and few labels. Once their labels are fixed, the component falls apart into
small pieces, one or two per layer, and pieces of identical layers are identical
problems. So for a component with such a *separator* ``S``:

    optimum = min over labels of S of [ cost inside S
                                        + sum over pieces P of opt(P | labels of S) ]

and ``opt(P | ...)`` depends only on the labels of the separator nodes ``P``
touches (its *boundary*). Each piece is solved once per state of its boundary, a
piece identical to one solved before (same tables, same boundary costs) is looked
up, and the separator's states are enumerated with numpy. When every piece is
proven optimal, so is the answer: this is exact dynamic programming over the
separator's states, not a heuristic.

Example: a hub ``h`` with labels ``{0, 1}`` joined to 24 identical chains: each
chain is solved twice (``h = 0``, ``h = 1``) the first time and looked up 23 times.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from solver.problem import FORBIDDEN, Problem, make_problem

__all__ = ["Split", "find_split", "solve_split", "components"]

#: Largest product of the separator's label counts (its states, enumerated).
MAX_STATES = 16384
#: A separator node has at least this many neighbours.
MIN_DEGREE = 6
#: At most this many separator nodes are tried.
MAX_SEPARATOR = 12
#: The pieces may have at most this many nodes each.
MAX_PIECE = 64
#: At most this many piece solves (pieces times boundary states) before lookups.
MAX_PIECE_STATES = 50_000

#: Solves one small problem exactly: ``(labels, cost)``, or ``None`` when it could
#: not prove an optimum (the decomposition is then given up).
PieceSolver = Callable[[Problem], "tuple[tuple[int, ...], int] | None"]


@dataclass(frozen=True, slots=True)
class Split:
    """Separator nodes, and the pieces left when they are removed (node lists of the
    problem, each sorted), with each piece's boundary (separator positions)."""

    separator: tuple[int, ...]
    pieces: tuple[tuple[int, ...], ...]
    boundaries: tuple[tuple[int, ...], ...]


def _adjacency(problem: Problem) -> list[list[int]]:
    adjacent: list[list[int]] = [[] for _ in range(problem.num_nodes)]
    for e in problem.edges:
        adjacent[e.u].append(e.v)
        adjacent[e.v].append(e.u)
    return adjacent


def connected_pieces(nodes: Sequence[int], pairs: Iterable[tuple[int, int]]
                     ) -> list[tuple[int, ...]]:
    """The connected pieces of the graph on ``nodes`` whose edges are ``pairs`` (a pair
    with an end outside ``nodes`` is left out), by scipy's ``connected_components``:
    each piece's members in the order of ``nodes``, the pieces in the order of their
    first member there."""
    index = {n: i for i, n in enumerate(nodes)}
    kept = [(index[u], index[v]) for u, v in pairs if u in index and v in index]
    rows = np.fromiter((a for a, _ in kept), np.int64, len(kept))
    cols = np.fromiter((b for _, b in kept), np.int64, len(kept))
    size = len(index)
    graph = coo_matrix((np.ones(len(kept), np.int8), (rows, cols)), shape=(size, size))
    _, labels = connected_components(graph, directed=False)
    pieces: dict[int, list[int]] = {}
    for node, label in zip(nodes, labels.tolist()):
        pieces.setdefault(label, []).append(node)
    return [tuple(piece) for piece in pieces.values()]


def components(problem: Problem) -> list[tuple[int, ...]]:
    """Connected components (edges only; ties and memory rows are not followed),
    each sorted, in order of their smallest node."""
    return connected_pieces(range(problem.num_nodes), ((e.u, e.v) for e in problem.edges))


def _pieces(adjacent: list[list[int]], nodes: Sequence[int], removed: set[int]
            ) -> list[tuple[int, ...]]:
    """The pieces ``nodes`` fall into once ``removed`` is taken out (``nodes`` sorted)."""
    left = [n for n in nodes if n not in removed]
    return connected_pieces(left, ((n, w) for n in left for w in adjacent[n]))


def find_split(problem: Problem, nodes: tuple[int, ...],
               adjacent: list[list[int]] | None = None) -> Split | None:
    """A separator of the component ``nodes``: its nodes of highest degree (at least
    :data:`MIN_DEGREE`), taken one by one while their states stay within
    :data:`MAX_STATES`, until every piece left has at most :data:`MAX_PIECE` nodes.
    ``None`` when there is no such separator."""
    adjacent = _adjacency(problem) if adjacent is None else adjacent
    ranked = sorted((n for n in nodes if len(adjacent[n]) >= MIN_DEGREE),
                    key=lambda n: (-len(set(adjacent[n])), n))
    separator: list[int] = []
    states = 1
    for node in ranked[:MAX_SEPARATOR]:
        states *= len(problem.unary[node])
        if states > MAX_STATES:
            return None
        separator.append(node)
        pieces = _pieces(adjacent, nodes, set(separator))
        if len(pieces) < 2 or max(map(len, pieces)) > MAX_PIECE:
            continue
        position = {s: i for i, s in enumerate(separator)}
        boundaries = tuple(tuple(sorted({position[w] for n in piece for w in adjacent[n]
                                         if w in position})) for piece in pieces)
        work = sum(math.prod(len(problem.unary[separator[i]]) for i in b) for b in boundaries)
        if work > MAX_PIECE_STATES:
            return None
        return Split(tuple(separator), tuple(pieces), boundaries)
    return None


class _Pieces:
    """The pieces' problems under boundary states, solved once per distinct problem."""

    def __init__(self, problem: Problem, solve_piece: PieceSolver) -> None:
        self.problem = problem
        self.solve_piece = solve_piece
        self.solved: dict[bytes, tuple[tuple[int, ...], int] | None] = {}
        self.hits = 0
        inside: dict[int, list] = {}
        for e in problem.edges:
            inside.setdefault(e.u, []).append((e.v, e.costs))
            inside.setdefault(e.v, []).append((e.u, e.costs.T))
        self.incident = inside

    def solve(self, piece: tuple[int, ...], fixed: dict[int, int]
              ) -> tuple[tuple[int, ...], int] | None:
        """Optimal labels of ``piece`` (in its order) and their cost, with the nodes in
        ``fixed`` at those labels; the cost counts the edges to them."""
        index = {n: i for i, n in enumerate(piece)}
        unary = [np.array(self.problem.unary[n], np.int64) for n in piece]
        edges = []
        for i, n in enumerate(piece):
            for w, table in self.incident.get(n, ()):
                if w in fixed:
                    unary[i] = np.minimum(unary[i] + table[:, fixed[w]], FORBIDDEN)
                elif w in index and n < w:
                    edges.append((i, index[w], table))
        key = _key(unary, edges)
        if key in self.solved:
            self.hits += 1
            return self.solved[key]
        found = self.solve_piece(make_problem(unary, edges))
        self.solved[key] = found
        return found


def _key(unary: list[np.ndarray], edges: list[tuple[int, int, np.ndarray]]) -> bytes:
    parts = [np.int64(len(unary)).tobytes()]
    for u in unary:
        parts.append(np.int64(len(u)).tobytes())
        parts.append(u.tobytes())
    for i, j, table in edges:
        parts.append(np.array([i, j, *table.shape], np.int64).tobytes())
        parts.append(np.ascontiguousarray(table, np.int64).tobytes())
    return b"".join(parts)


def solve_split(problem: Problem, split: Split, solve_piece: PieceSolver
                ) -> tuple[dict[int, int], int] | None:
    """The optimum of the component ``split`` covers: labels by node, and its cost (the
    unary costs of its nodes and the costs of the edges among them). ``None`` when a
    piece was not proven optimal or no state is feasible."""
    sep = split.separator
    sizes = [len(problem.unary[s]) for s in sep]
    total_states = math.prod(sizes)
    strides = [math.prod(sizes[i + 1:]) for i in range(len(sizes))]
    state = np.arange(total_states, dtype=np.int64)
    labels_of = [(state // strides[i]) % sizes[i] for i in range(len(sep))]
    total = np.zeros(total_states, np.int64)
    for i, s in enumerate(sep):
        total = np.minimum(total + problem.unary[s][labels_of[i]], FORBIDDEN)
    position = {s: i for i, s in enumerate(sep)}
    for e in problem.edges:
        if e.u in position and e.v in position:
            cost = e.costs[labels_of[position[e.u]], labels_of[position[e.v]]]
            total = np.minimum(total + cost, FORBIDDEN)
    pieces = _Pieces(problem, solve_piece)
    answers = []
    for piece, boundary in zip(split.pieces, split.boundaries):
        table, answer = _piece_table(pieces, piece, boundary, sep, sizes)
        if table is None:
            return None
        local = np.zeros(total_states, np.int64)
        for i in boundary:
            local = local * sizes[i] + labels_of[i]
        total = np.minimum(total + table[local], FORBIDDEN)
        answers.append((local, answer))
    best = int(np.argmin(total))
    if total[best] >= FORBIDDEN:
        return None
    chosen = {s: int(labels_of[i][best]) for i, s in enumerate(sep)}
    for piece, (local, answer) in zip(split.pieces, answers):
        chosen.update(zip(piece, answer[int(local[best])]))
    return chosen, int(total[best])


def _piece_table(pieces: _Pieces, piece: tuple[int, ...], boundary: tuple[int, ...],
                 sep: tuple[int, ...], sizes: list[int]):
    """Per state of the boundary (mixed radix, boundary order): the piece's optimum
    cost and its labels; ``(None, None)`` when some state's solve was not proven."""
    counts = [sizes[i] for i in boundary]
    table = np.full(math.prod(counts), FORBIDDEN, np.int64)
    answer: list[tuple[int, ...]] = []
    for flat in range(len(table)):
        rest, fixed = flat, {}
        for i, k in zip(reversed(boundary), reversed(counts)):
            rest, fixed[sep[i]] = divmod(rest, k)
        found = pieces.solve(piece, fixed)
        if found is None:
            return None, None
        labels, cost = found
        table[flat] = min(cost, FORBIDDEN)
        answer.append(labels)
    return table, answer
