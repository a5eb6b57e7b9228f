"""The priced problem ``bench/priced_inner.py`` hands to toulbar2, against brute force: every
assignment that keeps the memory rule costs at least its priced cost (the multipliers are
non-negative), so the smallest priced cost lies at most at the optimum; and it lies at least
at the dual bound the multipliers come from (the sweeps certify a value below it)."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "solver"))
from test_dual_bound import binding_limit_problems  # noqa: E402

from bench.priced_inner import priced  # noqa: E402
from solver.dual_bound import dual_bound_detail  # noqa: E402
from solver.problem import evaluate, memory_feasible, trivial_bound  # noqa: E402


def test_the_smallest_priced_cost_lies_between_the_dual_bound_and_the_optimum() -> None:
    checked = 0
    for seed, _, problem, optima in binding_limit_problems(7100, range(40), (4, 8), 3):
        dual = dual_bound_detail(problem, 30.0)
        if dual.prices is None:
            continue
        extra, constant = priced(problem, dual.prices, dual.multipliers)
        smallest = None
        for labels in itertools.product(*(range(len(u)) for u in problem.unary)):
            cost = evaluate(problem, labels)
            if cost is None:
                continue
            value = cost + sum(e[a] for e, a in zip(extra, labels)) + constant
            if memory_feasible(problem, labels):
                assert value <= cost + 1e-6 * max(1, cost), f"seed {seed}"
            smallest = value if smallest is None else min(smallest, value)
        assert smallest is not None and smallest <= optima[1] + 1e-6, f"seed {seed}"
        if dual.value > trivial_bound(problem):
            assert smallest >= dual.value - 1 - 1e-6 * abs(dual.value), f"seed {seed}"
            checked += 1
    assert checked >= 10
