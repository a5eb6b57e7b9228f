"""Fast answers: a memory-aware start plus coordinate descent (ICM).

Used as complete hints for CP-SAT and as the answer when time runs out.

* **start**: each node takes the label with the smallest total usage (then the
  smallest unary cost); when the limit binds, this is the assignment most
  likely to fit. Without a limit it takes the cheapest unary label.
* **descent**: visit nodes in order; move a node to the label minimizing its
  unary cost plus the table entries toward its neighbours' current labels,
  among labels whose usage still fits everywhere the node is live. Repeat
  until a sweep improves nothing or time runs out.

Forbidden labels and pairs cost :data:`~solver.problem.FORBIDDEN` and are never
moved to; ties must have been merged away (see :mod:`solver.reductions`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from solver.flat import BAD, Flat
from solver.problem import FORBIDDEN, Problem


@dataclass(frozen=True, slots=True)
class HeuristicResult:
    labels: tuple[int, ...]
    sweeps: int
    seconds: float
    #: Seconds from the start to the first complete memory-feasible answer (None: none).
    first_seconds: float | None = None


#: Rounds of price updates in the memory-penalized search of :func:`heuristic`.
PRICE_ROUNDS = 12


class _Memory:
    """The live total per time segment under the current labels."""

    def __init__(self, problem: Problem, labels: np.ndarray) -> None:
        self.limit = problem.memory_limit
        uses = problem.memory
        fixed = problem.fixed_memory
        times = np.unique(np.array([u.start for u in uses] + [u.end for u in uses]
                                   + [f.start for f in fixed] + [f.end for f in fixed] + [0],
                                   np.int64))
        self.lo = np.searchsorted(times, [u.start for u in uses]).astype(np.int64)
        self.hi = np.searchsorted(times, [u.end for u in uses]).astype(np.int64)
        self.usage = [u.usage for u in uses]
        self.node_uses: dict[int, list[int]] = {}
        for i, use in enumerate(uses):
            if use.start < use.end:
                self.node_uses.setdefault(use.node, []).append(i)
        delta = np.zeros(len(times) + 1, np.int64)
        for f in fixed:
            delta[np.searchsorted(times, f.start)] += f.amount
            delta[np.searchsorted(times, f.end)] -= f.amount
        for i, use in enumerate(uses):
            amount = int(use.usage[labels[use.node]])
            delta[self.lo[i]] += amount
            delta[self.hi[i]] -= amount
        self.load = np.cumsum(delta[:-1])

    def allowed(self, node: int, current: int) -> np.ndarray | None:
        """Labels of ``node`` that fit everywhere it is live (None: all of them)."""
        if self.limit is None or node not in self.node_uses:
            return None
        ok = None
        for i in self.node_uses[node]:
            usage = self.usage[i]
            room = self.limit - int(self.load[self.lo[i]:self.hi[i]].max()) + int(usage[current])
            fits = usage <= room
            ok = fits if ok is None else ok & fits
        return ok

    def move(self, node: int, old: int, new: int) -> None:
        for i in self.node_uses.get(node, ()):
            self.load[self.lo[i]:self.hi[i]] += int(self.usage[i][new]) - int(self.usage[i][old])


class _Graph:
    """Adjacency with oriented tables: ``neighbours[n] = [(other, table (k_n, k_other))]``."""

    def __init__(self, problem: Problem) -> None:
        self.neighbours: list[list[tuple[int, np.ndarray]]] = [[] for _ in problem.unary]
        for edge in problem.edges:
            self.neighbours[edge.u].append((edge.v, edge.costs))
            self.neighbours[edge.v].append((edge.u, edge.costs.T))

    def local(self, problem: Problem, node: int, labels: np.ndarray) -> np.ndarray:
        """Cost of each label of ``node`` given its neighbours' labels."""
        total = problem.unary[node]
        for other, table in self.neighbours[node]:
            total = np.minimum(total + table[:, labels[other]], FORBIDDEN)
        return total


def tree_labels(problem: Problem, penalty: list[np.ndarray] | None = None) -> np.ndarray:
    """Exact min-sum over a spanning forest of the costliest edges (others ignored).

    Edges are taken by decreasing spread (largest minus smallest entry, forbidden
    entries counting as the largest), so the forest keeps the edges that matter.
    ``penalty`` is added to the unary costs (used to steer away from memory peaks).
    """
    n = problem.num_nodes
    unary = [np.minimum(u + (0 if penalty is None else penalty[i]), FORBIDDEN)
             for i, u in enumerate(problem.unary)]
    spread = [int(e.costs.max()) - int(e.costs.min()) for e in problem.edges]
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    tree: list[list[tuple[int, np.ndarray]]] = [[] for _ in range(n)]
    for k in sorted(range(len(spread)), key=lambda k: (-spread[k], k)):
        edge = problem.edges[k]
        ru, rv = find(edge.u), find(edge.v)
        if ru != rv:
            parent[ru] = rv
            tree[edge.u].append((edge.v, edge.costs))
            tree[edge.v].append((edge.u, edge.costs.T))
    # Root each tree, order nodes so children come after parents.
    order: list[int] = []
    up: list[tuple[int, np.ndarray] | None] = [None] * n
    seen = [False] * n
    for root in range(n):
        if seen[root]:
            continue
        seen[root] = True
        stack = [root]
        while stack:
            node = stack.pop()
            order.append(node)
            for other, table in tree[node]:
                if not seen[other]:
                    seen[other] = True
                    up[other] = (node, table.T)  # oriented (k_other, k_node)
                    stack.append(other)
    total = [u.copy() for u in unary]
    choice: list[np.ndarray | None] = [None] * n
    for node in reversed(order):
        if up[node] is None:
            continue
        par, table = up[node]
        # table is (k_node, k_par); for each parent label the best child label.
        joint = np.minimum(table + total[node][:, None], FORBIDDEN)
        best = np.argmin(joint, axis=0)
        choice[node] = best
        total[par] = np.minimum(total[par] + joint[best, np.arange(joint.shape[1])], FORBIDDEN)
    labels = np.zeros(n, np.int64)
    for node in order:
        if up[node] is None:
            labels[node] = int(np.argmin(total[node]))
        else:
            labels[node] = int(choice[node][labels[up[node][0]]])
    return labels


def repair(problem: Problem, graph: _Graph, labels: np.ndarray, deadline: float) -> bool:
    """Move labels to smaller usages, cheapest cost per byte first, until memory fits.

    Returns whether the labels fit when it stops.
    """
    if problem.memory_limit is None:
        return True
    mem = _Memory(problem, labels)
    live_uses = [i for i, u in enumerate(problem.memory) if u.start < u.end]
    lo, hi = mem.lo[live_uses], mem.hi[live_uses]
    limit = problem.memory_limit
    while time.perf_counter() < deadline:
        t = int(np.argmax(mem.load))
        excess = int(mem.load[t]) - limit
        if excess <= 0:
            return True
        candidates = []
        for j in np.flatnonzero((lo <= t) & (hi > t)):
            i = live_uses[j]
            node = problem.memory[i].node
            usage = problem.memory[i].usage
            current = int(labels[node])
            smaller = usage < usage[current]
            if not smaller.any():
                continue
            local = graph.local(problem, node, labels)
            delta_cost = np.where(smaller, local - local[current], FORBIDDEN).astype(np.float64)
            saved = np.where(smaller, usage[current] - usage, 1).astype(np.float64)
            ratio = np.maximum(delta_cost, 0.0) / saved
            a = int(np.argmin(ratio))
            if local[a] < FORBIDDEN:
                candidates.append((float(ratio[a]), node, a, int(saved[a])))
        if not candidates:
            return False
        candidates.sort()
        moved: set[int] = set()
        for _, node, a, saved in candidates:
            if node in moved:
                continue
            moved.add(node)
            mem.move(node, int(labels[node]), a)
            labels[node] = a
            excess -= saved
            if excess <= 0:
                break
    return False


def descend(problem: Problem, labels: np.ndarray, deadline: float,
            graph: _Graph | None = None) -> tuple[np.ndarray, int]:
    """Coordinate descent from ``labels``; memory-feasible labels stay feasible."""
    labels = labels.copy()
    graph = graph or _Graph(problem)
    mem = _Memory(problem, labels)
    sweeps = 0
    changed = True
    while changed and time.perf_counter() < deadline:
        changed = False
        sweeps += 1
        for node in range(problem.num_nodes):
            if len(problem.unary[node]) < 2:
                continue
            total = graph.local(problem, node, labels)
            current = int(labels[node])
            ok = mem.allowed(node, current)
            if ok is not None:
                total = np.where(ok, total, FORBIDDEN)
            best = int(np.argmin(total))
            if total[best] < total[current]:
                mem.move(node, current, best)
                labels[node] = best
                changed = True
            if (node & 255) == 0 and time.perf_counter() > deadline:
                break
    return labels, sweeps


def _cost(problem: Problem, labels: np.ndarray) -> int:
    total = sum(int(u[labels[i]]) for i, u in enumerate(problem.unary))
    for edge in problem.edges:
        total += int(edge.costs[labels[edge.u], labels[edge.v]])
    return total


def heuristic(problem: Problem, time_limit: float = 1.0, rounds: int = 16) -> HeuristicResult:
    """A complete assignment within about ``time_limit`` seconds.

    Vectorized (:class:`~solver.flat.Flat`): first the smallest-usage start
    improved by memory-safe descent (fits whenever the constant parts do);
    then, when the cheapest answer breaks the limit, ``rounds`` of Lagrangian
    prices on the over-full time segments: tree DP and descent on cost plus
    priced usage, repair (cheapest cost per byte saved at the over-full
    times), memory-safe descent. Deterministic: the round count, not the
    clock, ends the search unless ``time_limit`` cuts it short.
    """
    began = time.perf_counter()
    deadline = began + time_limit
    flat = Flat(problem)
    best: np.ndarray | None = None
    best_cost = np.inf
    sweeps = 0
    first: float | None = None

    def consider(labels: np.ndarray) -> None:
        nonlocal best, best_cost, sweeps, first
        if flat.limited:
            labels, fits = flat.repair(labels)
            if not fits:
                return
        labels = flat.icm(labels, hard_memory=flat.limited)
        sweeps += 1
        cost = flat.cost(labels)
        if cost < BAD and cost < best_cost:
            best, best_cost = labels, cost
            if first is None:
                first = time.perf_counter() - began

    if flat.limited:
        consider(flat.smallest_usage())
    cheapest, _ = flat.segment_argmin(flat.unary, np.arange(flat.n))
    plain = flat.icm(tree_labels(problem))
    if not flat.limited or flat.fits(plain):
        consider(plain)
    else:
        load = flat.load(plain)
        scale = max(1.0, flat.cost(plain) if flat.cost(plain) < BAD else 1.0) / max(
            1.0, float(flat.u_usage.sum()))
        price = np.zeros(flat.segments)
        labels = plain
        for _ in range(rounds):
            if time.perf_counter() > deadline:
                break
            over = load > flat.limit
            price = np.where(over, np.maximum(price * 2.0, scale), price * 0.5)
            extra = flat.penalty(price)
            split = np.split(np.minimum(extra, 1e15).astype(np.int64), flat.off[1:-1])
            labels = flat.icm(tree_labels(problem, split), extra=extra)
            load = flat.load(labels)
            consider(labels)
    if best is None:
        best = cheapest
    return HeuristicResult(tuple(int(x) for x in best), sweeps, time.perf_counter() - began,
                           first)


def _usage_sums(problem: Problem) -> list[np.ndarray]:
    usage = [np.zeros(problem.label_count(n), np.int64) for n in range(problem.num_nodes)]
    for use in problem.memory:
        if use.start < use.end:
            usage[use.node] = usage[use.node] + use.usage
    return usage

