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


def anneal(problem: Problem, labels: Sequence[int], moves: int, seed: int = 0,
           deadline: float | None = None, rounds: int = 1) -> tuple[tuple[int, ...], int]:
    """The cheapest answer met on ``rounds`` walks of ``moves`` moves each, the first
    from ``labels`` (which must keep every rule and the memory limit), each next one
    reheated from the cheapest so far with the next seed; with its cost. ``labels``
    themselves when no cheaper answer was met. Problems with ties are returned unchanged.

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
        found, found_cost = walk.run(moves, random.Random(seed + round_), deadline)
        if found_cost < best_cost:
            best, best_cost = found, found_cost
    return tuple(best), best_cost


@dataclass(frozen=True, slots=True, eq=False)
class _Profile:
    """The load over the elementary time intervals of a problem, and per node its
    uses as ``(first interval, end interval, usage per label)``."""

    load: np.ndarray
    uses: list[list[tuple[int, int, list[int]]]]

    @staticmethod
    def build(problem: Problem, labels: Sequence[int]) -> _Profile:
        times = _times(problem)
        delta = np.zeros(len(times) + 1, np.int64)
        uses: list[list[tuple[int, int, list[int]]]] = [[] for _ in range(problem.num_nodes)]
        for use in problem.memory:
            if use.start < use.end:
                lo, hi = int(np.searchsorted(times, use.start)), int(np.searchsorted(times, use.end))
                amounts = [int(x) for x in use.usage]
                uses[use.node].append((lo, hi, amounts))
                delta[lo] += amounts[labels[use.node]]
                delta[hi] -= amounts[labels[use.node]]
        for fixed in problem.fixed_memory:
            if fixed.start < fixed.end:
                delta[np.searchsorted(times, fixed.start)] += fixed.amount
                delta[np.searchsorted(times, fixed.end)] -= fixed.amount
        return _Profile(np.cumsum(delta[:-1]), uses)


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

    def _local(self, node: int) -> int:
        label = self.labels[node]
        total = self.unary[node][label]
        for other, table in self.adjacent[node]:
            total += table[label][self.labels[other]]
        return total

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
        old = {node: self.labels[node] for node in moved}
        before = sum(self._local(node) for node in moved)
        for node, label in moved.items():
            self.labels[node] = label
        after = sum(self._local(node) for node in moved)
        inner_before = inner_after = 0
        for node in moved:
            for other, table in self.adjacent[node]:
                if other in moved and node < other:
                    inner_before += table[old[node]][old[other]]
                    inner_after += table[self.labels[node]][self.labels[other]]
        return (after - inner_after) - (before - inner_before)

    def _fits(self, old: dict[int, int]) -> bool:
        """Apply the moved nodes' usage changes to the load; undo them and say False
        when the limit breaks."""
        if self.limit is None:
            return True
        load = self.profile.load
        changed = []
        for node, previous in old.items():
            label = self.labels[node]
            for lo, hi, amounts in self.profile.uses[node]:
                change = amounts[label] - amounts[previous]
                if change:
                    load[lo:hi] += change
                    changed.append((lo, hi, change))
        if all(change < 0 or load[lo:hi].max() <= self.limit for lo, hi, change in changed):
            return True
        for lo, hi, change in changed:
            load[lo:hi] -= change
        return False

    def run(self, moves: int, rng: random.Random, deadline: float | None
            ) -> tuple[list[int], int]:
        n = len(self.labels)
        best, best_cost = list(self.labels), self.cost
        hot = TEMPERATURE * max(1, self.cost)
        for step in range(moves):
            if deadline is not None and step % 1024 == 0 and time.perf_counter() > deadline:
                break
            node = rng.randrange(n)
            choices = self.allowed[node]
            label = choices[rng.randrange(len(choices))]
            if label == self.labels[node]:
                continue
            change = self._single_change(node, label)
            if change is None:
                # Some neighbour must follow: the compound move.
                moved = {node: label}
                if not self._follow(node, label, moved):
                    continue
                old = {x: self.labels[x] for x in moved}
                change = self._cost_change(moved)
            else:
                old = {node: self.labels[node]}
                self.labels[node] = label
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
