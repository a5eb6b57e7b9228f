"""The vectorized local search against the independent oracle: costs, memory, and the
invariants the solver relies on (descent never worsens, never breaks memory)."""

from __future__ import annotations

import numpy as np
from oracle import Raw, cost_of, random_raw
from test_reductions import build

from solver.flat import BAD, Flat
from solver.heuristics import heuristic


def free_raw(raw: Raw) -> Raw:
    """The same problem without the memory limit (cost only)."""
    return Raw(raw.unary, raw.edges, [], raw.forbidden, raw.memory, None, raw.fixed)


def test_cost_load_and_fits_agree_with_oracle() -> None:
    for seed in range(40):
        rng = np.random.default_rng(seed)
        raw = random_raw(rng, nodes=int(rng.integers(2, 12)), ties=0, forbid=0.0)
        flat = Flat(build(raw))
        for _ in range(5):
            labels = np.array([int(rng.integers(0, len(u))) for u in raw.unary])
            cost = cost_of(free_raw(raw), tuple(labels.tolist()))
            assert (flat.cost(labels) >= BAD) == (cost is None), seed
            if cost is not None:
                assert flat.cost(labels) == cost, seed
                assert flat.fits(labels) == (cost_of(raw, tuple(labels.tolist())) is not None)


def test_descent_never_worsens_and_keeps_memory() -> None:
    checked = 0
    for seed in range(60):
        rng = np.random.default_rng(100 + seed)
        raw = random_raw(rng, nodes=int(rng.integers(4, 14)), ties=0, forbid=0.0,
                         forbid_pairs=0.0, density=0.4)
        flat = Flat(build(raw))
        start = flat.smallest_usage()
        if cost_of(raw, tuple(start.tolist())) is None:
            continue  # the smallest usages do not fit: nothing to keep
        after = flat.icm(start, hard_memory=True)
        assert cost_of(raw, tuple(after.tolist())) is not None, seed
        assert flat.cost(after) <= flat.cost(start), seed
        # No single move is both cheaper and within memory (a local optimum).
        best = cost_of(raw, tuple(after.tolist()))
        for node in range(len(raw.unary)):
            for label in range(len(raw.unary[node])):
                trial = after.copy()
                trial[node] = label
                cost = cost_of(raw, tuple(trial.tolist()))
                assert cost is None or cost >= best, (seed, node, label)
        checked += 1
    assert checked >= 20


def test_repair_reaches_memory_feasibility() -> None:
    repaired = 0
    for seed in range(60):
        rng = np.random.default_rng(300 + seed)
        raw = random_raw(rng, nodes=10, ties=0, forbid=0.0, forbid_pairs=0.0)
        flat = Flat(build(raw))
        if cost_of(raw, tuple(flat.smallest_usage().tolist())) is None:
            continue
        cheapest = flat.segment_argmin(flat.unary, np.arange(flat.n))[0]
        labels, fits = flat.repair(cheapest)
        assert fits == (cost_of(raw, tuple(labels.tolist())) is not None), seed
        assert fits, seed  # smaller usages always exist down to the fitting start
        repaired += not flat.fits(cheapest)
    assert repaired >= 5


def test_heuristic_answer_is_feasible() -> None:
    for seed in range(30):
        rng = np.random.default_rng(700 + seed)
        raw = random_raw(rng, nodes=12, ties=0, forbid=0.0, forbid_pairs=0.0, density=0.3)
        problem = build(raw)
        flat = Flat(problem)
        result = heuristic(problem, 5.0)
        if cost_of(raw, tuple(flat.smallest_usage().tolist())) is not None:
            assert cost_of(raw, result.labels) is not None, seed
            assert result.first_seconds is not None
