"""toulbar2 on the problem without memory, against brute force (the independent
oracle): a complete search returns an optimum, extra unary costs steer it exactly
as if they were part of the problem, and the same input gives the same labels."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from oracle import brute_force, cost_of, random_raw
from test_reductions import build

from solver.errors import ProblemError
from solver.problem import make_problem
from solver.wcsp import solve_wcsp


def _without_memory(raw):
    return dataclasses.replace(raw, memory=[], limit=None, fixed=[])


def test_complete_search_is_optimal_on_random_problems() -> None:
    checked = infeasible = 0
    for seed in range(60):
        rng = np.random.default_rng(4100 + seed)
        raw = _without_memory(random_raw(rng, nodes=int(rng.integers(2, 8)), max_labels=4,
                                         ties=int(rng.integers(0, 3)), memory=False,
                                         forbid_pairs=0.15))
        want = brute_force(raw)
        got = solve_wcsp(build(raw))
        assert got.complete, f"seed {seed}"
        if want is None:
            assert got.labels is None, f"seed {seed}"
            infeasible += 1
            continue
        assert cost_of(raw, got.labels) == got.cost == want[0], f"seed {seed}"
        checked += 1
    assert checked >= 40 and infeasible >= 1


def test_extra_costs_act_as_unary_costs() -> None:
    for seed in range(30):
        rng = np.random.default_rng(5100 + seed)
        raw = _without_memory(random_raw(rng, nodes=int(rng.integers(2, 7)), max_labels=4,
                                         ties=0, memory=False))
        extra = [rng.integers(0, 25, size=len(u)) for u in raw.unary]
        steered = dataclasses.replace(raw, unary=[[a + int(b) for a, b in zip(u, e)]
                                                  for u, e in zip(raw.unary, extra)])
        want = brute_force(steered)
        got = solve_wcsp(build(raw), extra)
        if want is None:
            assert got.labels is None
            continue
        assert cost_of(steered, got.labels) == want[0], f"seed {seed}"
        assert got.cost == cost_of(raw, got.labels), f"seed {seed}"


def test_same_input_same_labels_under_a_small_budget() -> None:
    rng = np.random.default_rng(77)
    raw = _without_memory(random_raw(rng, nodes=60, max_labels=6, density=0.1, ties=0,
                                     memory=False, forbid=0.0, forbid_pairs=0.0))
    problem = build(raw)
    first = solve_wcsp(problem, backtracks=5)
    assert first.labels is not None
    assert cost_of(raw, first.labels) == first.cost
    assert solve_wcsp(problem, backtracks=5) == first


def test_worked_example_and_bad_extra() -> None:
    problem = make_problem([[0, 5], [3, 0]], [(0, 1, [[0, 9], [9, 0]])])
    assert solve_wcsp(problem).labels == (0, 0)
    assert solve_wcsp(problem, [np.array([9, 0]), np.array([0, 0])]).labels == (1, 1)
    with pytest.raises(ProblemError):
        solve_wcsp(problem, [np.array([1, 0])])
    with pytest.raises(ProblemError):
        solve_wcsp(problem, [np.array([-1, 0]), np.array([0, 0])])


def test_a_hint_picks_among_equal_optima_and_bad_hints_are_refused() -> None:
    # Three optima of cost 0 (both nodes on the same label): the hint decides which.
    problem = make_problem([[0, 0, 0], [0, 0, 0]],
                           [(0, 1, [[0, 5, 5], [5, 0, 5], [5, 5, 0]])])
    assert solve_wcsp(problem, hint=(2, 2)).labels == (2, 2)
    assert solve_wcsp(problem, hint=(1, 1)).labels == (1, 1)
    # A hint that is not an optimum does not cost anything: the search still ends optimal.
    got = solve_wcsp(problem, hint=(1, 2))
    assert got.cost == 0 and got.complete
    with pytest.raises(ProblemError):
        solve_wcsp(problem, hint=(0,))
    with pytest.raises(ProblemError):
        solve_wcsp(problem, hint=(0, 3))
