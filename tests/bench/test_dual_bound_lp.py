"""The LP ``bench/dual_bound.py --lp`` solves, against oracles: on a tree without memory the
local polytope is exact (the brute-force optimum); with a binding memory limit it lies at most
at the brute-force optimum and at least at the dual bound, which is a bound of that LP
(rounded up, the optimum being an integer)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "solver"))
from oracle import brute_force  # noqa: E402
from test_dual_bound import binding_limit_problems, random_tree  # noqa: E402
from test_reductions import build  # noqa: E402

from bench.dual_bound import local_polytope_lp  # noqa: E402
from solver.dual_bound import dual_bound  # noqa: E402


@pytest.mark.parametrize("seed", range(6))
def test_the_lp_of_a_tree_is_its_optimum(seed: int) -> None:
    raw = random_tree(np.random.default_rng(4400 + seed), nodes=7, chain=False)
    best = brute_force(raw)
    value = local_polytope_lp(build(raw), 60.0)
    if best is None:
        assert value is None
    else:
        assert value == pytest.approx(best[0], abs=1e-6)


def test_the_lp_with_memory_rows_lies_between_the_dual_bound_and_the_optimum() -> None:
    checked = 0
    for seed, _, problem, optima in binding_limit_problems(5500, range(40), (4, 8), 3):
        value = local_polytope_lp(problem, 60.0)
        assert value is not None, f"seed {seed}"
        assert dual_bound(problem, 30.0) <= math.ceil(value - 1e-6), f"seed {seed}"
        assert value <= optima[1] + 1e-6, f"seed {seed}"
        checked += 1
    assert checked >= 10
