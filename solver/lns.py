"""Large neighbourhood search: CP-SAT on windows of nodes, everything else fixed.

For cores too large to model whole within the time limit. A window is a run of
consecutive node indices (instances number nodes in program order, so a run is
a connected stretch of the graph with overlapping live ranges). With the other
nodes fixed, the window is itself a labeling problem: edges to fixed nodes
become unary costs, fixed nodes' memory becomes fixed uses. CP-SAT solves it
from the current labels as a complete hint, so an accepted window never makes
the answer worse, and every accepted answer is feasible for the whole problem.
"""

from __future__ import annotations

import time

import numpy as np

from solver import cpsat
from solver.errors import BuildTimeout
from solver.options import SolveOptions
from solver.problem import FORBIDDEN, Edge, FixedUse, MemoryUse, Problem


#: Nodes with more labels than this stay fixed in windows (their tables would
#: dominate the window's model).
WINDOW_MAX_LABELS = 64


def _window_problem(problem: Problem, nodes: list[int], labels: np.ndarray,
                    incident: list[list[int]], node_uses: list[list[int]]) -> Problem:
    inside = {n: i for i, n in enumerate(nodes)}
    unary = [problem.unary[n].copy() for n in nodes]
    edges: list[Edge] = []
    seen: set[int] = set()
    for n in nodes:
        for k in incident[n]:
            if k in seen:
                continue
            seen.add(k)
            edge = problem.edges[k]
            if edge.u in inside and edge.v in inside:
                edges.append(Edge(inside[edge.u], inside[edge.v], edge.costs))
            elif edge.u in inside:
                i = inside[edge.u]
                unary[i] = np.minimum(unary[i] + edge.costs[:, labels[edge.v]], FORBIDDEN)
            else:
                i = inside[edge.v]
                unary[i] = np.minimum(unary[i] + edge.costs[labels[edge.u], :], FORBIDDEN)
    memory = []
    fixed = list(problem.fixed_memory)
    if problem.memory_limit is not None:
        for use in problem.memory:
            if use.node in inside:
                memory.append(MemoryUse(inside[use.node], use.start, use.end, use.usage))
            elif use.start < use.end:
                amount = int(use.usage[labels[use.node]])
                if amount:
                    fixed.append(FixedUse(use.start, use.end, amount))
    for array in unary:
        array.flags.writeable = False
    return Problem(unary=tuple(unary), edges=tuple(edges), memory=tuple(memory),
                   fixed_memory=tuple(fixed), memory_limit=problem.memory_limit)


def improve(problem: Problem, labels: tuple[int, ...], deadline: float, options: SolveOptions,
            window: int = 1500, window_time: float = 3.0) -> tuple[tuple[int, ...], int]:
    """Sweep windows over the nodes until ``deadline``; returns (labels, windows solved)."""
    current = np.array(labels, np.int64)
    incident: list[list[int]] = [[] for _ in range(problem.num_nodes)]
    for k, edge in enumerate(problem.edges):
        incident[edge.u].append(k)
        incident[edge.v].append(k)
    node_uses: list[list[int]] = [[] for _ in range(problem.num_nodes)]
    for i, use in enumerate(problem.memory):
        node_uses[use.node].append(i)
    solved = 0
    n = problem.num_nodes
    step = max(1, window * 2 // 3)  # windows overlap by a third
    start = 0
    while time.perf_counter() + 0.5 < deadline:
        nodes = [v for v in range(start, min(n, start + window))
                 if problem.label_count(v) <= WINDOW_MAX_LABELS]
        if not nodes:
            start = 0 if start + window >= n else start + step
            continue
        sub = _window_problem(problem, nodes, current, incident, node_uses)
        hint = tuple(int(current[v]) for v in nodes)
        try:
            built = cpsat.build_model(sub, hint, deadline)
        except BuildTimeout:
            break
        limit = min(window_time, deadline - time.perf_counter())
        if limit <= 0.05:
            break
        raw = cpsat.solve_model(built, options, limit)
        solved += 1
        if raw.labels is not None:
            trial = current.copy()
            trial[nodes] = raw.labels
            current = trial
        start = 0 if start + window >= n else start + step
    # Each window was feasible in context, so the whole is; the caller re-checks it.
    return tuple(int(x) for x in current), solved
