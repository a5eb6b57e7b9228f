"""Fold identical pieces that hang on the same hubs into one piece with scaled costs.

Take a problem's hubs out (:func:`solver.bucket.hub_pieces`); once the hubs' labels are
fixed, the pieces left are independent. Two pieces that are the same problem and are
joined to *the same* hubs the same way have the same optimum for every labeling of the
hubs, so ``m`` such copies cost ``m`` times one of them:

    min over hubs h of  hub(h) + sum_k min_x c(x, h)  =  min over h, x of  hub(h) + m c(x, h)

The *folded* problem keeps the hubs and one copy of each group, its costs (unary and
tables, those to the hubs included) times the group's size. It has the same optimum
(and every lower bound of it is one of the original's); an answer of it unfolds by
giving every copy its representative's labels, at the same cost. A deep model's exact
shared-copy problem on cpu is 48 identical layers on 29 two-label hubs (3,202 nodes):
folded, 100 nodes.

Example: hubs ``h`` and two identical pieces ``a - h`` and ``b - h`` with table ``t``
fold to ``a' - h`` with table ``2 t``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from solver.bucket import HUB_DEGREE, hub_nodes, hub_pieces
from solver.problem import FORBIDDEN, Problem, make_problem

__all__ = ["Folded", "fold"]


@dataclass(frozen=True, slots=True, eq=False)
class Folded:
    """A folded problem and where its nodes come from: ``copies[i]`` are the original
    nodes that folded node ``i`` stands for (one for a hub), ``groups`` the folded
    pieces' nodes (folded numbering) with each copy's original nodes in the same order."""

    problem: Problem
    copies: tuple[tuple[int, ...], ...]
    groups: tuple[tuple[tuple[int, ...], tuple[tuple[int, ...], ...]], ...]
    original: Problem
    hubs: tuple[int, ...]

    def unfold(self, labels: Sequence[int]) -> tuple[int, ...]:
        """The original problem's labels: every copy takes its representative's label."""
        full = [0] * self.original.num_nodes
        for label, nodes in zip(labels, self.copies):
            for n in nodes:
                full[n] = int(label)
        return tuple(full)

    def folded_labels(self, full: Sequence[int]) -> tuple[int, ...]:
        """A folded answer from an original one, costing no more: the hubs' labels, and
        for each group the labels of its copy that costs least given them."""
        labels = [int(full[nodes[0]]) for nodes in self.copies]
        cost = _node_costs(self.original, set(self.hubs), full)
        for folded_nodes, members in self.groups:
            best = min(members, key=lambda piece: min(FORBIDDEN, sum(cost[n] for n in piece)))
            for i, n in zip(folded_nodes, best):
                labels[i] = int(full[n])
        return tuple(labels)


def _node_costs(problem: Problem, hubs: set[int], full: Sequence[int]) -> list[int]:
    """Each node's unary cost under ``full`` plus that of the tables at it whose other end
    is a hub or a node after it: summed over a piece, the piece's cost with its tables
    to the hubs."""
    cost = [int(problem.unary[n][full[n]]) for n in range(problem.num_nodes)]
    for e in problem.edges:
        at = e.v if e.u in hubs or (e.v not in hubs and e.v < e.u) else e.u
        cost[at] += int(e.costs[full[e.u], full[e.v]])
    return cost


def fold(problem: Problem, hub_degree: int = HUB_DEGREE) -> Folded | None:
    """``problem`` folded (see the module docstring), or ``None`` when no two pieces fold,
    or when the problem has ties or memory rows, or a scaled cost would reach
    :data:`FORBIDDEN`."""
    if problem.ties or problem.memory or problem.fixed_memory:
        return None
    hubs = hub_nodes(problem, hub_degree)
    if not hubs:
        return None
    groups: dict[tuple[bytes, tuple[int, ...]], list] = {}
    for piece in hub_pieces(problem, hubs):
        groups.setdefault((piece.key(), piece.hubs), []).append(piece)
    if all(len(members) == 1 for members in groups.values()):
        return None
    index = {h: i for i, h in enumerate(hubs)}
    unary: list[np.ndarray] = [np.asarray(problem.unary[h], np.int64) for h in hubs]
    copies: list[tuple[int, ...]] = [(h,) for h in hubs]
    edges = [(index[e.u], index[e.v], e.costs) for e in problem.edges
             if e.u in index and e.v in index]
    folded_groups = []
    for members in groups.values():
        first, times = members[0], len(members)
        local = list(range(len(unary), len(unary) + len(first.nodes)))
        local += [index[h] for h in first.hubs]
        for scope, costs in first.factors:
            scaled = _scaled(costs, times)
            if scaled is None:
                return None
            if len(scope) == 1:
                unary.append(scaled)
            else:
                edges.append((local[scope[0]], local[scope[1]], scaled))
        copies += [tuple(p.nodes[i] for p in members) for i in range(len(first.nodes))]
        folded_groups.append((tuple(local[:len(first.nodes)]), tuple(p.nodes for p in members)))
    return Folded(make_problem(unary, edges), tuple(copies), tuple(folded_groups), problem,
                  tuple(hubs))


def _scaled(costs: np.ndarray, times: int) -> np.ndarray | None:
    """``costs`` times ``times``, forbidden entries kept; ``None`` when a finite cost
    would reach :data:`FORBIDDEN`."""
    costs = np.asarray(costs, np.int64)
    allowed = costs < FORBIDDEN
    if allowed.any() and int(costs[allowed].max()) >= FORBIDDEN // times:
        return None
    return np.where(allowed, costs * times, FORBIDDEN)
