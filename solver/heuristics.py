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

from solver.problem import FORBIDDEN, Problem, peak_memory


@dataclass(frozen=True, slots=True)
class HeuristicResult:
    labels: tuple[int, ...]
    sweeps: int
    seconds: float


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


def heuristic(problem: Problem, time_limit: float = 1.0) -> HeuristicResult:
    """A complete assignment within about ``time_limit`` seconds.

    Tree DP, then repair and descent. When memory binds, the DP is re-run with
    prices on the bytes live at over-full times (:func:`_penalized_search`),
    which trades cost for memory where it is cheapest. Deterministic unless
    ``time_limit`` cuts it short.
    """
    began = time.perf_counter()
    deadline = began + time_limit
    graph = _Graph(problem)
    best: np.ndarray | None = None
    best_cost = None
    sweeps = 0

    def consider(labels: np.ndarray) -> None:
        nonlocal best, best_cost, sweeps
        fits = repair(problem, graph, labels, deadline)
        labels, s = descend(problem, labels, deadline, graph)
        sweeps += s
        cost = _cost(problem, labels)
        if fits and cost < FORBIDDEN and (best_cost is None or cost < best_cost):
            best, best_cost = labels, cost

    usage = _usage_sums(problem)
    limited = problem.memory_limit is not None and bool(problem.memory)
    if limited:
        # A reliable start first: smallest usages (fits whenever anything does at
        # the constant parts), descent then removes forbidden pairs within memory.
        start = np.array([int(np.argmin(np.where(u < FORBIDDEN, s, np.iinfo(np.int64).max)))
                          for u, s in zip(problem.unary, usage)])
        labels, s = descend(problem, start, max(deadline, time.perf_counter() + 1.0), graph)
        sweeps += s
        cost = _cost(problem, labels)
        if cost < FORBIDDEN and peak_memory(problem, labels) <= problem.memory_limit:
            best, best_cost = labels, cost
    plain = tree_labels(problem)
    if limited and peak_memory(problem, plain) > problem.memory_limit:
        _penalized_search(problem, plain, usage, consider, began + time_limit * 0.7)
    else:
        consider(plain)
    if best is None:
        best = plain
    return HeuristicResult(tuple(int(x) for x in best), sweeps, time.perf_counter() - began)


def _penalized_search(problem: Problem, plain: np.ndarray, usage: list[np.ndarray],
                      consider, until: float) -> None:
    """Lagrangian-style search: a price per time segment on the bytes live there.

    Each round solves the tree DP with unary costs raised by ``usage * price``
    summed over the segments a use is live in, then doubles the price where the
    answer is over the limit and halves it elsewhere. Answers that (nearly) fit
    go to ``consider`` (repair + descent). Uses nodes' own uses only: prices
    follow the time structure, so memory is freed where it is short, not everywhere.
    """
    mem = _Memory(problem, plain)
    limit = problem.memory_limit
    uses = [(i, u) for i, u in enumerate(problem.memory) if u.start < u.end]
    lo = np.array([mem.lo[i] for i, _ in uses], np.int64)
    hi = np.array([mem.hi[i] for i, _ in uses], np.int64)
    segments = len(mem.load)
    base = max(1, _cost(problem, plain) % FORBIDDEN) / max(
        1.0, float(sum(int(u.max()) for u in usage)))
    price = np.zeros(segments, np.float64)
    labels = plain
    for _ in range(PRICE_ROUNDS):
        if time.perf_counter() > until:
            break
        load = _Memory(problem, labels).load
        over = load > limit
        price = np.where(over, np.maximum(price * 2.0, base), price * 0.5)
        # Per use: the summed price over its live segments (prefix sums).
        total = np.concatenate([[0.0], np.cumsum(price)])
        per_use = total[hi] - total[lo]
        penalty = [np.zeros(problem.label_count(n), np.int64) for n in range(problem.num_nodes)]
        for (i, use), weight in zip(uses, per_use.tolist()):
            if weight:
                penalty[use.node] = penalty[use.node] + (use.usage * min(weight, 1e6)).astype(np.int64)
        labels = tree_labels(problem, penalty)
        if peak_memory(problem, labels) <= limit * 1.02:
            consider(labels.copy())


def _usage_sums(problem: Problem) -> list[np.ndarray]:
    usage = [np.zeros(problem.label_count(n), np.int64) for n in range(problem.num_nodes)]
    for use in problem.memory:
        if use.start < use.end:
            usage[use.node] = usage[use.node] + use.usage
    return usage

