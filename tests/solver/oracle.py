"""Independent oracles for the solver tests: random small problems and brute force.

Nothing here imports the solver's evaluation code: the brute force recomputes
costs, ties, forbidden labels and memory from the raw parts.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

BIG = 10**18


@dataclass
class Raw:
    """A problem as plain lists (what the test hands to ``make_problem``)."""

    unary: list[list[int]]
    edges: list[tuple[int, int, list[list[int]]]] = field(default_factory=list)
    ties: list[tuple] = field(default_factory=list)
    forbidden: list[tuple[int, int]] = field(default_factory=list)
    memory: list[tuple[int, int, int, list[int]]] = field(default_factory=list)
    limit: int | None = None
    fixed: list[tuple[int, int, int]] = field(default_factory=list)


def random_raw(rng: np.random.Generator, nodes: int = 8, max_labels: int = 3,
               density: float = 0.35, ties: int = 1, forbid: float = 0.1,
               memory: bool = True, forbid_pairs: float = 0.05, functional: float = 0.0) -> Raw:
    ks = [int(rng.integers(1, max_labels + 1)) for _ in range(nodes)]
    raw = Raw([[int(rng.integers(0, 20)) for _ in range(k)] for k in ks])
    for u in range(nodes):
        for v in range(u + 1, nodes):
            if rng.random() < density:
                table = rng.integers(0, 15, size=(ks[u], ks[v]))
                table[rng.random(size=table.shape) < forbid_pairs] = BIG
                if rng.random() < functional:
                    # One allowed entry per row (or per column): v's label is a function of u's.
                    rows = table.shape[0] if rng.random() < 0.5 else -1
                    view = table if rows > 0 else table.T
                    keep = rng.integers(0, view.shape[1], size=view.shape[0])
                    mask = np.ones(view.shape, bool)
                    mask[np.arange(view.shape[0]), keep] = False
                    mask[rng.random(size=view.shape[0]) < 0.1] = True  # some rows: none
                    view[mask] = BIG
                raw.edges.append((u, v, table.tolist()))
                if rng.random() < 0.15:  # a parallel edge
                    raw.edges.append((v, u, rng.integers(0, 5, size=(ks[v], ks[u])).tolist()))
    for _ in range(ties):
        u, v = (int(x) for x in rng.choice(nodes, 2, replace=False))
        if ks[u] == ks[v] and rng.random() < 0.5:
            raw.ties.append((u, v))
        else:
            mapping = [None if rng.random() < 0.2 else int(rng.integers(0, ks[v]))
                       for _ in range(ks[u])]
            raw.ties.append((u, v, mapping))
    for n in range(nodes):
        for a in range(ks[n]):
            if rng.random() < forbid:
                raw.forbidden.append((n, a))
    if memory:
        for n in range(nodes):
            if rng.random() < 0.8:
                start = int(rng.integers(0, 6))
                end = start + int(rng.integers(0, 4))
                raw.memory.append((n, start, end, [int(rng.integers(0, 10)) for _ in range(ks[n])]))
        raw.limit = int(rng.integers(5, 30))
    return raw


def cost_of(raw: Raw, labels: tuple[int, ...]) -> int | None:
    """Cost of ``labels``, or None when a hard rule or the memory limit is broken."""
    if any((n, a) in set(raw.forbidden) for n, a in enumerate(labels)):
        return None
    for tie in raw.ties:
        u, v = tie[0], tie[1]
        want = labels[u] if len(tie) == 2 or tie[2] is None else tie[2][labels[u]]
        if want is None or labels[v] != want:
            return None
    cost = sum(raw.unary[n][a] for n, a in enumerate(labels))
    if any(raw.unary[n][a] >= BIG for n, a in enumerate(labels)):
        return None
    for u, v, table in raw.edges:
        c = table[labels[u]][labels[v]]
        if c >= BIG:
            return None
        cost += c
    if raw.limit is not None:
        spans = [(s, e) for _, s, e, _ in raw.memory] + [(s, e) for s, e, _ in raw.fixed]
        horizon = max([e for _, e in spans], default=0) + 1
        live = [0] * horizon
        for n, start, end, usage in raw.memory:
            for t in range(start, end):
                live[t] += usage[labels[n]]
        for start, end, amount in raw.fixed:
            for t in range(start, end):
                live[t] += amount
        if max(live) > raw.limit:
            return None
    return cost


def brute_force(raw: Raw) -> tuple[int, tuple[int, ...]] | None:
    """The optimum (cost, lexicographically first optimal labels), or None if infeasible."""
    best = None
    for labels in itertools.product(*(range(len(u)) for u in raw.unary)):
        cost = cost_of(raw, labels)
        if cost is not None and (best is None or cost < best[0]):
            best = (cost, labels)
    return best
