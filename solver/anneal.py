"""Simulated annealing under the memory limit, for small memory-bound cores.

On a core where the memory limit binds hard (the smallest usages alone fill most
of it), single-node descent stalls: every cheaper label needs memory that some
other node must first give up, and CP-SAT's own search, reproducible, barely
moves from its hint there. Annealing walks through costlier answers to reach
cheaper ones; every step it takes keeps the limit.

A move: one node to a random allowed label; each neighbour whose pair with it
becomes forbidden follows, to its allowed label with the smallest usage (on
ties the cheapest), so the moves cross functional edges (the contest instances'
forbidden pairs lie on them). A move that breaks the limit anywhere is refused;
one that costs ``delta`` more is taken with probability ``exp(-delta / T)``,
``T`` falling from ``TEMPERATURE`` times the start's cost to 0 over the moves.

Deterministic: a seeded generator and a fixed number of moves (the wall clock
only cuts the walk short at ``deadline``).

Kicks (:func:`blocked_moves`, :func:`kick`) reach what the walks refuse: a move
that would be cheaper but breaks the limit is taken anyway, and the memory it
overdraws is freed by greedy moves of other nodes, each the cheapest a byte freed
where the load is highest; a search then settles the neighbourhood.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from solver.errors import ProblemError
from solver.problem import FORBIDDEN, Problem, evaluate, memory_feasible

#: The starting temperature, as a share of the start's cost (the best of the values
#: tried on contest core V; BENCHMARKS.md, Solver core).
TEMPERATURE = 1e-2
#: :func:`kick` gives up after this many freeing moves a node.
REPAIR_STEPS_PER_NODE = 2


def anneal(problem: Problem, labels: Sequence[int], moves: int, seed: int = 0,
           deadline: float | None = None, rounds: int = 1,
           temperatures: Sequence[float] = (TEMPERATURE,)) -> tuple[tuple[int, ...], int]:
    """The cheapest answer met on ``rounds`` walks of ``moves`` moves each, the first
    from ``labels`` (which must keep every rule and the memory limit), each next one
    reheated from the cheapest so far with the next seed; with its cost. ``labels``
    themselves when no cheaper answer was met. Problems with ties are returned unchanged.
    Walk ``r`` starts at ``temperatures[r % len(temperatures)]`` times its start's cost.

    A reheat from the best lets a walk leave its basin: on contest core V, three walks
    did much better than one walk of as many moves (BENCHMARKS.md, Solver core)."""
    start = tuple(int(x) for x in labels)
    cost = evaluate(problem, start)
    if cost is None or not memory_feasible(problem, start):
        raise ProblemError("annealing needs a start that keeps every rule and the memory limit")
    if problem.ties or problem.num_nodes < 2 or moves <= 0:
        return start, cost
    best, best_cost = list(start), cost
    for round_ in range(rounds):
        if deadline is not None and time.perf_counter() > deadline:
            break
        walk = _Walk(problem, list(best), best_cost)
        hot = temperatures[round_ % len(temperatures)] * max(1, best_cost)
        found, found_cost = walk.run(moves, hot, random.Random(seed + round_), deadline)
        if found_cost < best_cost:
            best, best_cost = found, found_cost
    return tuple(best), best_cost


@dataclass(frozen=True, slots=True, eq=False)
class _Shape:
    """A node's memory uses over the intervals ``first .. last - 1`` it spans: per use
    its interval range (relative to ``first``) and its usage per label."""

    first: int
    last: int
    lo: np.ndarray
    hi: np.ndarray
    usage: np.ndarray  # uses x labels

    def change(self, old: int, new: int) -> np.ndarray | None:
        """The load change over the span when the node moves from label ``old`` to
        ``new`` (``None`` when no use changes): one vector, so a move costs a few
        array operations however many uses the node has (contest core Q: 180 a node)."""
        step = self.usage[:, new] - self.usage[:, old]
        moved = step != 0
        if not moved.any():
            return None
        width = self.last - self.first
        edges = (np.bincount(self.lo[moved], step[moved], width + 1)
                 - np.bincount(self.hi[moved], step[moved], width + 1))
        return np.cumsum(np.rint(edges[:-1]).astype(np.int64))


@dataclass(frozen=True, slots=True, eq=False)
class _Profile:
    """The load over the elementary time intervals of a problem, and per node the
    shape of its uses (``None`` for a node without any)."""

    load: np.ndarray
    shapes: list[_Shape | None]

    @staticmethod
    def build(problem: Problem, labels: Sequence[int]) -> _Profile:
        times = _times(problem)
        delta = np.zeros(len(times) + 1, np.int64)
        spans: list[list[tuple[int, int, np.ndarray]]] = [[] for _ in range(problem.num_nodes)]
        for use in problem.memory:
            if use.start < use.end:
                lo, hi = int(np.searchsorted(times, use.start)), int(np.searchsorted(times, use.end))
                amounts = np.asarray(use.usage, np.int64)
                spans[use.node].append((lo, hi, amounts))
                delta[lo] += amounts[labels[use.node]]
                delta[hi] -= amounts[labels[use.node]]
        for fixed in problem.fixed_memory:
            if fixed.start < fixed.end:
                delta[np.searchsorted(times, fixed.start)] += fixed.amount
                delta[np.searchsorted(times, fixed.end)] -= fixed.amount
        return _Profile(np.cumsum(delta[:-1]), [_shape(own) for own in spans])


def _shape(own: list[tuple[int, int, np.ndarray]]) -> _Shape | None:
    if not own:
        return None
    lo = np.array([u[0] for u in own], np.int64)
    hi = np.array([u[1] for u in own], np.int64)
    first, last = int(lo.min()), int(hi.max())
    return _Shape(first, last, lo - first, hi - first, np.stack([u[2] for u in own]))


def _times(problem: Problem) -> np.ndarray:
    """The sorted event times: interval ``j`` runs from ``times[j]`` to ``times[j + 1]``."""
    events = [t for use in problem.memory if use.start < use.end for t in (use.start, use.end)]
    events += [t for f in problem.fixed_memory if f.start < f.end for t in (f.start, f.end)]
    return np.unique(np.array(events, np.int64))


class _Walk:
    """The current labels, cost and memory load, with the problem as plain lists."""

    def __init__(self, problem: Problem, labels: list[int], cost: int) -> None:
        n = problem.num_nodes
        self.labels = labels
        self.cost = cost
        self.unary = [u.tolist() for u in problem.unary]
        self.allowed = [[a for a, c in enumerate(u) if c < FORBIDDEN] for u in self.unary]
        self.adjacent: list[list[tuple[int, list[list[int]]]]] = [[] for _ in range(n)]
        for edge in problem.edges:
            self.adjacent[edge.u].append((edge.v, edge.costs.tolist()))
            self.adjacent[edge.v].append((edge.u, edge.costs.T.tolist()))
        self.usage = [[0] * len(u) for u in self.unary]
        self.profile = _Profile.build(problem, labels)
        for use in problem.memory:
            if use.start < use.end:
                self.usage[use.node] = [x + int(y) for x, y in zip(self.usage[use.node], use.usage)]
        self.limit = problem.memory_limit

    def _single_change(self, node: int, label: int) -> int | None:
        """The cost change of moving ``node`` alone to ``label``; None when a
        neighbour would be left on a forbidden pair."""
        labels, previous = self.labels, self.labels[node]
        change = self.unary[node][label] - self.unary[node][previous]
        for other, table in self.adjacent[node]:
            now = labels[other]
            entry = table[label][now]
            if entry >= FORBIDDEN:
                return None
            change += entry - table[previous][now]
        return change

    def _follow(self, node: int, label: int, moved: dict[int, int]) -> bool:
        """Neighbours forbidden next to ``node`` at ``label`` follow it; False when one cannot."""
        for other, table in self.adjacent[node]:
            row = table[label]
            if other in moved or row[self.labels[other]] < FORBIDDEN:
                continue
            fits = [b for b in self.allowed[other] if row[b] < FORBIDDEN]
            if not fits:
                return False
            usage, unary = self.usage[other], self.unary[other]
            moved[other] = min(fits, key=lambda b: (usage[b], unary[b]))
        return True

    def _cost_change(self, moved: dict[int, int]) -> int:
        """Apply ``moved`` to the labels; the cost change (edges among moved nodes once)."""
        labels = self.labels
        change = 0
        for node, label in moved.items():
            previous = labels[node]
            change += self.unary[node][label] - self.unary[node][previous]
            for other, table in self.adjacent[node]:
                if other not in moved:
                    now = labels[other]
                    change += table[label][now] - table[previous][now]
                elif node < other:
                    change += table[label][moved[other]] - table[previous][labels[other]]
        for node, label in moved.items():
            labels[node] = label
        return change

    def _loaded(self, old: dict[int, int]) -> list[tuple[int, int, np.ndarray]]:
        """Apply the moved nodes' usage changes (from their ``old`` labels) to the load;
        the changes applied, as (first, last, change)."""
        load = self.profile.load
        changed = []
        for node, previous in old.items():
            shape = self.profile.shapes[node]
            change = None if shape is None else shape.change(previous, self.labels[node])
            if change is not None:
                load[shape.first:shape.last] += change
                changed.append((shape.first, shape.last, change))
        return changed

    def _fits(self, old: dict[int, int]) -> bool:
        """Apply the moved nodes' usage changes to the load; undo them and say False
        when the limit breaks."""
        if self.limit is None:
            return True
        changed = self._loaded(old)
        if self._within(changed):
            return True
        self._unloaded(changed)
        return False

    def _within(self, changed: list[tuple[int, int, np.ndarray]]) -> bool:
        load = self.profile.load
        return all(load[lo:hi].max() <= self.limit for lo, hi, _ in changed)

    def _unloaded(self, changed: list[tuple[int, int, np.ndarray]]) -> None:
        for lo, hi, change in changed:
            self.profile.load[lo:hi] -= change

    def _moved(self, node: int, label: int) -> tuple[dict[int, int], int] | None:
        """Move ``node`` to ``label`` with the neighbours it pushes along (the labels
        changed, the load not): their old labels and the cost change; None (nothing
        changed) when some neighbour cannot follow."""
        change = self._single_change(node, label)
        if change is not None:
            old = {node: self.labels[node]}
            self.labels[node] = label
            return old, change
        moved = {node: label}
        if not self._follow(node, label, moved):
            return None
        old = {x: self.labels[x] for x in moved}
        return old, self._cost_change(moved)

    def run(self, moves: int, hot: float, rng: random.Random, deadline: float | None
            ) -> tuple[list[int], int]:
        n = len(self.labels)
        best, best_cost = list(self.labels), self.cost
        for step in range(moves):
            if deadline is not None and step % 1024 == 0 and time.perf_counter() > deadline:
                break
            node = rng.randrange(n)
            choices = self.allowed[node]
            label = choices[rng.randrange(len(choices))]
            if label == self.labels[node]:
                continue
            found = self._moved(node, label)
            if found is None:
                continue
            old, change = found
            temperature = hot * (1.0 - step / moves) ** 2
            taken = change <= 0 or (change < FORBIDDEN // 2 and temperature > 0 and
                                    rng.random() < math.exp(-change / temperature))
            if not taken or not self._fits(old):
                for x, previous in old.items():
                    self.labels[x] = previous
                continue
            self.cost += change
            if self.cost < best_cost:
                best, best_cost = list(self.labels), self.cost
        return best, best_cost


def blocked_moves(problem: Problem, labels: Sequence[int], least: int
                  ) -> list[tuple[int, int, int]]:
    """The walk's moves from ``labels`` (one node to another label, the neighbours its
    forbidden pairs push along) that would lower the cost by at least ``least`` but
    that the memory limit refuses, as (gain, node, label), the largest gain first
    (ties: lower node, lower label). Empty without a memory limit or with ties.

    After the walks these are the cheaper answers no single move reaches: on contest
    core Q one node could shed 1.8e9 (0.34 % of the cost) but for memory over the
    limit at one time (BENCHMARKS.md, Solver core)."""
    walk = _walk_at(problem, labels)
    if walk is None:
        return []
    start = list(walk.labels)
    found = []
    for node in range(problem.num_nodes):
        for label in walk.allowed[node]:
            moved = None if label == start[node] else walk._moved(node, label)
            if moved is None:
                continue
            old, change = moved
            if -change >= least:
                changed = walk._loaded(old)
                if not walk._within(changed):
                    found.append((-change, node, label))
                walk._unloaded(changed)
            for x, previous in old.items():
                walk.labels[x] = previous
    return sorted(found, key=lambda g: (-g[0], g[1], g[2]))


def kick(problem: Problem, labels: Sequence[int], node: int, label: int,
         deadline: float | None = None) -> tuple[int, ...] | None:
    """``labels`` with ``node`` moved to ``label`` (the neighbours its forbidden pairs
    push along following), then the memory that overdraws freed: while the load
    passes the limit, at the most loaded time, the single move of another node that
    frees memory there at the least cost a byte freed (counting at most the excess),
    ties to the lower node and label. None when no move frees memory there, after
    REPAIR_STEPS_PER_NODE steps a node, or at ``deadline``. The answer keeps every
    rule and the limit, and may cost more than ``labels``: a search settles it."""
    walk = _walk_at(problem, labels)
    moved = None if walk is None else walk._moved(node, label)
    if walk is None or moved is None:
        return None
    held = set(moved[0])
    walk._loaded(moved[0])
    for step in range(REPAIR_STEPS_PER_NODE * problem.num_nodes):
        load = walk.profile.load
        worst = int(np.argmax(load))
        excess = int(load[worst]) - walk.limit
        if excess <= 0:
            return tuple(walk.labels)
        if deadline is not None and step % 16 == 0 and time.perf_counter() > deadline:
            return None
        chosen = _freeing_move(walk, held, worst, excess)
        if chosen is None:
            return None
        other, new = chosen
        old = {other: walk.labels[other]}
        walk.labels[other] = new
        walk._loaded(old)
    return None


def _walk_at(problem: Problem, labels: Sequence[int]) -> _Walk | None:
    """A walk standing at ``labels``; None without a memory limit, with ties, or when
    ``labels`` break a rule (nothing for a kick to do)."""
    start = [int(x) for x in labels]
    cost = evaluate(problem, start)
    if problem.memory_limit is None or cost is None or problem.ties:
        return None
    return _Walk(problem, start, cost)


def _freeing_move(walk: _Walk, held: set[int], worst: int, excess: int
                  ) -> tuple[int, int] | None:
    """The single move of a node outside ``held`` that frees memory at interval
    ``worst`` at the least cost a byte (of at most ``excess`` bytes)."""
    best: tuple[float, int, int] | None = None
    for other, shape in enumerate(walk.profile.shapes):
        if shape is None or other in held or not shape.first <= worst < shape.last:
            continue
        at = worst - shape.first
        there = shape.usage[(shape.lo <= at) & (at < shape.hi)].sum(axis=0)
        freed = there[walk.labels[other]] - there
        for new in np.flatnonzero(freed > 0).tolist():
            if walk.unary[other][new] >= FORBIDDEN:
                continue
            change = walk._single_change(other, new)
            if change is None:
                continue
            price = max(change, 0) / min(int(freed[new]), excess)
            if best is None or price < best[0]:
                best = (price, other, new)
    return None if best is None else (best[1], best[2])
