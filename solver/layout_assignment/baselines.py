"""Baselines under the same cost model: all-default layouts and XLA-style greedy propagation.

*All-default*: every free node takes the descending order (a node whose default
breaks a hard rule takes its first allowed candidate).

*Greedy* (what XLA's layout assignment does, in spirit): constraints start at
the fixed nodes (entry layouts, custom-call constraints) and at the nodes the
backend has an opinion on (dot/convolution/reduce operands: their cheapest
candidate); they spread operand <-> result through the relations, breadth first
in a deterministic order, each newly reached node taking the candidate that is
cheapest against its already-decided neighbours; nodes never reached keep
the default. Where two constraints clash the relation's conversion (a copy)
is paid, as XLA inserts one.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from solver.problem import FORBIDDEN, Problem

__all__ = ["default_labels", "greedy_labels"]


def _first_allowed(costs: np.ndarray, preferred: int) -> int:
    if costs[preferred] < FORBIDDEN:
        return preferred
    allowed = np.nonzero(costs < FORBIDDEN)[0]
    return int(allowed[0]) if len(allowed) else preferred


def default_labels(problem: Problem) -> tuple[int, ...]:
    """Label 0 (the default order, or the pin) everywhere, hard rules respected."""
    return tuple(_first_allowed(problem.unary[n], 0) for n in range(problem.num_nodes))


def greedy_labels(problem: Problem, seeds: list[int]) -> tuple[int, ...]:
    """Breadth-first propagation from ``seeds`` (plus every single-label node)."""
    n = problem.num_nodes
    adjacency: list[list[tuple[int, np.ndarray]]] = [[] for _ in range(n)]
    for e in problem.edges:
        adjacency[e.u].append((e.v, e.costs))
        adjacency[e.v].append((e.u, e.costs.T))
    for t in problem.ties:
        k_u, k_v = problem.label_count(t.u), problem.label_count(t.v)
        table = np.full((k_u, k_v), FORBIDDEN, np.int64)
        for a in range(k_u):
            b = a if t.mapping is None else t.mapping[a]
            if b is not None and b < k_v:
                table[a, b] = 0
        adjacency[t.u].append((t.v, table))
        adjacency[t.v].append((t.u, table.T))
    labels: list[int | None] = [None] * n
    queue: deque[int] = deque()
    for node in range(n):
        if problem.label_count(node) == 1:
            labels[node] = 0
            queue.append(node)
    for node in seeds:
        if labels[node] is None:
            labels[node] = int(np.argmin(problem.unary[node]))
            queue.append(node)

    def settle(node: int) -> int:
        total = problem.unary[node].astype(np.int64).copy()
        for other, table in adjacency[node]:
            if labels[other] is not None:
                total = np.minimum(total + table[:, labels[other]], FORBIDDEN)
        return int(np.argmin(total))

    while True:
        while queue:
            node = queue.popleft()
            for other, _ in adjacency[node]:
                if labels[other] is None:
                    labels[other] = settle(other)
                    queue.append(other)
        rest = [i for i in range(n) if labels[i] is None]
        if not rest:
            break
        labels[rest[0]] = _first_allowed(problem.unary[rest[0]], 0)
        queue.append(rest[0])
    return tuple(int(x) for x in labels)  # type: ignore[arg-type]
