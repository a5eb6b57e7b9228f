"""Annealing against brute force: every answer keeps the rules and the memory limit
(checked by the independent oracle), never costs more than its start, and is reproducible."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
from oracle import Raw, brute_force, cost_of, random_raw
from test_reductions import build

from solver.anneal import _Profile, _Walk, anneal, blocked_moves, kick
from solver.errors import ProblemError


def _feasible_start(raw) -> tuple[int, ...] | None:
    """The feasible labels of largest cost (a poor start leaves room to improve)."""
    worst = None
    for labels in itertools.product(*(range(len(u)) for u in raw.unary)):
        cost = cost_of(raw, labels)
        if cost is not None and (worst is None or cost > worst[0]):
            worst = (cost, labels)
    return None if worst is None else worst[1]


def test_annealing_keeps_every_rule_and_often_reaches_the_optimum() -> None:
    tried = optimal = 0
    for seed in range(40):
        rng = np.random.default_rng(9000 + seed)
        raw = random_raw(rng, nodes=int(rng.integers(3, 8)), ties=0, max_labels=3,
                         functional=0.3)
        if raw.limit is None:
            continue
        start = _feasible_start(raw)
        want = brute_force(raw)
        if start is None or want is None:
            continue
        labels, cost = anneal(build(raw), start, moves=3000, seed=seed, rounds=2)
        assert cost_of(raw, labels) == cost, f"seed {seed}"
        assert cost <= cost_of(raw, start)
        assert cost >= want[0]
        assert anneal(build(raw), start, moves=3000, seed=seed, rounds=2) == (labels, cost)
        tried += 1
        optimal += cost == want[0]
    assert tried >= 15
    assert optimal >= 0.8 * tried, f"{optimal} of {tried}"


def test_annealing_refuses_an_infeasible_start() -> None:
    rng = np.random.default_rng(5)
    for _ in range(50):
        raw = random_raw(rng, nodes=5, ties=0)
        if raw.limit is None:
            continue
        bad = next((labels for labels in itertools.product(*(range(len(u)) for u in raw.unary))
                    if cost_of(raw, labels) is None), None)
        if bad is not None:
            with pytest.raises(ProblemError):
                anneal(build(raw), bad, moves=10)
            return
    pytest.fail("no infeasible labels among the random problems")


def _dense(rng: np.random.Generator, nodes: int, uses: int) -> tuple[Raw, tuple[int, ...]]:
    """A chain whose nodes each hold ``uses`` memory uses over overlapping intervals, and
    a start that keeps its limit: the labels of least usage, the limit a fifth above
    their peak load."""
    raw = Raw([rng.integers(0, 30, 3).tolist() for _ in range(nodes)])
    for v in range(nodes - 1):
        raw.edges.append((v, v + 1, rng.integers(0, 40, (3, 3)).tolist()))
    for v in range(nodes):
        for _ in range(uses):
            start = int(rng.integers(0, nodes))
            raw.memory.append((v, start, start + int(rng.integers(1, 6)),
                               rng.integers(0, 9, 3).tolist()))
    usage = np.zeros((nodes, 3), np.int64)
    for v, _, _, amounts in raw.memory:
        usage[v] += amounts
    start = tuple(int(x) for x in usage.argmin(axis=1))
    load = np.zeros(2 * nodes + 6, np.int64)
    for v, lo, hi, amounts in raw.memory:
        load[lo:hi] += amounts[start[v]]
    raw.limit = int(1.2 * load.max()) + 1
    return raw, start


def test_a_walk_keeps_its_load_equal_to_the_loads_of_its_labels() -> None:
    """After every walk the incrementally kept load (one vector per moved node) is the
    load computed afresh from the walk's labels, on nodes of many uses each; the answers
    keep every rule and the limit (the independent oracle's cost)."""
    for seed in range(12):
        rng = np.random.default_rng(700 + seed)
        raw, start = _dense(rng, nodes=30, uses=int(rng.integers(2, 7)))
        problem = build(raw)
        walk = _Walk(problem, list(start), cost_of(raw, start))
        walk.run(3000, 5.0, random.Random(seed), None)
        assert np.array_equal(walk.profile.load, _Profile.build(problem, walk.labels).load)
        assert cost_of(raw, walk.labels) == walk.cost, seed
        labels, cost = anneal(problem, start, moves=3000, seed=seed, rounds=3,
                              temperatures=(1e-2, 1e-3))
        assert cost_of(raw, labels) == cost < cost_of(raw, start), seed


def test_walks_take_their_temperatures_in_turn(monkeypatch) -> None:
    """Walk ``r`` starts at ``temperatures[r % len]`` times the cost it starts from (the
    cheapest so far), whatever came before it."""
    raw, start = _dense(np.random.default_rng(3), nodes=20, uses=3)
    problem = build(raw)
    heard: list[tuple[float, int]] = []
    run = _Walk.run

    def recorded(walk, moves, hot, rng, deadline):
        heard.append((hot, walk.cost))
        return run(walk, moves, hot, rng, deadline)

    monkeypatch.setattr(_Walk, "run", recorded)
    temperatures = (0.2, 1e-3, 0.05)
    anneal(problem, start, moves=500, rounds=5, temperatures=temperatures)
    assert len(heard) == 5
    assert heard[0][1] == cost_of(raw, start)
    for r, (hot, cost) in enumerate(heard):
        assert hot == temperatures[r % 3] * cost, r
    assert [cost for _, cost in heard] == sorted((cost for _, cost in heard), reverse=True)


def _blocked_by_brute_force(raw: Raw, start: tuple[int, ...], least: int) -> list[tuple]:
    """Every single move from ``start`` at least ``least`` cheaper without the limit
    that breaks it (the oracle's cost with and without the limit)."""
    free = Raw(raw.unary, raw.edges, memory=raw.memory)
    base = cost_of(raw, start)
    found = []
    for v, unary in enumerate(raw.unary):
        for a in range(len(unary)):
            labels = start[:v] + (a,) + start[v + 1:]
            unlimited = cost_of(free, labels)
            if (a != start[v] and unlimited is not None and base - unlimited >= least
                    and cost_of(raw, labels) is None):
                found.append((base - unlimited, v, a))
    return sorted(found, key=lambda g: (-g[0], g[1], g[2]))


def test_blocked_moves_are_the_cheaper_moves_the_limit_refuses() -> None:
    """On chains without forbidden pairs (no neighbour follows), the blocked moves are
    exactly the oracle's: the single moves at least ``least`` cheaper that break the
    limit, largest gain first; a kick from each keeps every rule and the limit, with
    the kicked node at its new label."""
    listed = kicked = 0
    for seed in range(15):
        rng = np.random.default_rng(1300 + seed)
        raw, start = _dense(rng, nodes=12, uses=int(rng.integers(1, 4)))
        raw.limit = int(0.85 * raw.limit)  # nearer the start's peak: more moves refused
        if cost_of(raw, start) is None:
            continue
        problem = build(raw)
        for least in (1, 10):
            want = _blocked_by_brute_force(raw, start, least)
            assert blocked_moves(problem, start, least) == want, (seed, least)
            listed += len(want)
        for _, node, label in _blocked_by_brute_force(raw, start, 1):
            labels = kick(problem, start, node, label)
            if labels is not None:
                assert labels[node] == label and cost_of(raw, labels) is not None, seed
                kicked += 1
    assert listed >= 20 and kicked >= 10, (listed, kicked)


def _three() -> Raw:
    """Node 0 saves 100 at label 1 but needs 10 bytes more at time 1, where the limit
    binds; nodes 1 and 2 can each free 10 bytes there, at a cost of 5 and of 50."""
    raw = Raw([[100, 0], [0, 5], [0, 50]])
    raw.memory = [(0, 0, 2, [10, 20]), (1, 1, 3, [10, 0]), (2, 1, 3, [10, 0])]
    raw.limit = 30
    return raw


def test_a_kick_frees_the_memory_it_overdraws_at_the_least_cost() -> None:
    raw = _three()
    problem = build(raw)
    assert blocked_moves(problem, (0, 0, 0), 1) == [(100, 0, 1)]
    assert blocked_moves(problem, (0, 0, 0), 101) == []
    assert kick(problem, (0, 0, 0), 0, 1) == (1, 1, 0)
    assert cost_of(raw, (1, 1, 0)) == brute_force(raw)[0] == 5
    # Nothing can free the memory: the kick gives up.
    raw.unary[1], raw.unary[2] = [0], [0]
    raw.memory[1:] = [(1, 1, 3, [10]), (2, 1, 3, [10])]
    assert kick(build(raw), (0, 0, 0), 0, 1) is None
