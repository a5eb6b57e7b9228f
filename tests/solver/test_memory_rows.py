"""Merged memory rows and the quick answer, against the independent oracle."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from oracle import Raw, brute_force, cost_of, random_raw
from test_reductions import build

from solver import memory, solve as solve_module
from solver.options import SolveOptions
from solver.problem import Status
from solver.quick import quick_answer
from solver.solve import solve


def many_uses(rng: np.random.Generator) -> Raw:
    """Only memory: several uses per node (as after fusion), fixed uses, a tight limit."""
    ks = [int(rng.integers(1, 4)) for _ in range(int(rng.integers(2, 6)))]
    raw = Raw([[0] * k for k in ks])
    for n, k in enumerate(ks):
        for _ in range(int(rng.integers(1, 5))):
            start = int(rng.integers(0, 8))
            raw.memory.append((n, start, start + int(rng.integers(0, 4)),
                               [int(rng.integers(0, 8)) for _ in range(k)]))
    for _ in range(int(rng.integers(0, 3))):
        start = int(rng.integers(0, 8))
        raw.fixed.append((start, start + int(rng.integers(1, 4)), int(rng.integers(0, 5))))
    raw.limit = int(rng.integers(4, 25))
    return raw


@pytest.mark.parametrize("seed", range(60))
def test_label_rows_accept_exactly_the_fitting_assignments(seed: int) -> None:
    rng = np.random.default_rng(7000 + seed)
    raw = many_uses(rng)
    problem = build(raw)
    checks = memory.analyze(problem)
    rows = None if checks.infeasible_time is not None else memory.label_rows(problem, checks)
    for labels in itertools.product(*(range(len(u)) for u in raw.unary)):
        fits = cost_of(raw, labels) is not None
        if checks.infeasible_time is not None:
            assert not fits
            continue
        if rows is None:  # no binding check at all
            assert fits, labels
            continue
        x = np.zeros(rows.coefficients.shape[1], np.int64)
        x[rows.offsets[:-1] + np.array(labels)] = 1
        assert bool((rows.coefficients @ x <= rows.caps).all()) == fits, (seed, labels)


def test_quick_answer_is_feasible_and_priced_right() -> None:
    found = 0
    for seed in range(40):
        rng = np.random.default_rng(8000 + seed)
        raw = random_raw(rng, nodes=int(rng.integers(2, 9)), ties=0)
        got = quick_answer(build(raw))
        if got is None:
            continue
        found += 1
        assert cost_of(raw, got[0]) == got[1], seed
    assert found >= 20


def test_solve_with_quick_start_matches_brute_force(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(solve_module, "QUICK_START_SIZE", 0)
    for seed in range(30):
        rng = np.random.default_rng(9000 + seed)
        raw = random_raw(rng, nodes=int(rng.integers(2, 9)), ties=int(rng.integers(0, 2)))
        want = brute_force(raw)
        got = solve(build(raw), SolveOptions(time_limit=10.0, heuristic_time=0.2))
        if want is None:
            assert got.status == Status.INFEASIBLE, seed
            continue
        assert got.status == Status.OPTIMAL and got.objective == want[0], seed
        assert cost_of(raw, got.labels) == want[0] and got.first_solution_ms is not None


def test_quick_answer_keeps_ties() -> None:
    # Tie (0, 1) with the swapped mapping: only (0, 1) and (1, 0) are allowed.
    raw = Raw([[1, 2], [4, 3]], ties=[(0, 1, [1, 0])])
    assert quick_answer(build(raw)) == ((0, 1), 4)
    found = 0
    for seed in range(60):
        rng = np.random.default_rng(9500 + seed)
        raw = random_raw(rng, nodes=int(rng.integers(2, 9)), ties=int(rng.integers(1, 3)))
        got = quick_answer(build(raw))
        if got is None:
            continue
        assert brute_force(raw) is not None, seed
        assert cost_of(raw, got[0]) == got[1], seed
        found += 1
    assert found >= 20
