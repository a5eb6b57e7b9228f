"""Annealing against brute force: every answer keeps the rules and the memory limit
(checked by the independent oracle), never costs more than its start, and is reproducible."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from oracle import brute_force, cost_of, random_raw
from test_reductions import build

from solver.anneal import anneal
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
