"""Folding identical pieces on the same hubs: the folded problem has the original's
optimum (brute force, an oracle that recomputes costs from the raw parts), its answers
unfold at their cost, and the parts solver proves deep repeated problems with it (CP-SAT
on the whole problem is the oracle there)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from oracle import Raw, brute_force, cost_of

from solver import parts
from solver.bucket import eliminate
from solver.folding import fold
from solver.options import SolveOptions
from solver.parts import solve_in_parts
from solver.problem import FORBIDDEN, Problem, Status, make_problem
from solver.solve import solve

BIG = 10**18


def build(raw: Raw) -> Problem:
    return make_problem(raw.unary, raw.edges, forbidden=raw.forbidden)


def repeated_raw(rng: np.random.Generator, layers: int, hubs: int = 3,
                 forbid: float = 0.1) -> Raw:
    """``hubs`` two-label nodes (one table between the first two) and ``layers`` chains of
    3 nodes, each a copy of one of two templates joined to one of two pairs of hubs (every
    node of the chain to both): copies of a template on the same pair fold, and the first
    two layers are such copies."""
    raw = Raw([[int(x) for x in rng.integers(0, 9, size=2)] for _ in range(hubs)])
    raw.edges.append((0, 1, rng.integers(0, 9, size=(2, 2)).tolist()))

    def template():
        ks = [int(rng.integers(1, 3)) for _ in range(3)]
        unary = [[int(x) for x in rng.integers(0, 20, size=k)] for k in ks]
        chain = []
        for i in range(2):
            table = rng.integers(0, 20, size=(ks[i], ks[i + 1]))
            table[rng.random(size=table.shape) < forbid] = BIG
            chain.append(table.tolist())
        to_hub = [[rng.integers(0, 20, size=(k, 2)).tolist() for _ in range(2)] for k in ks]
        return unary, chain, to_hub

    templates = [template(), template()]
    pairs = [(0, 1), (1, hubs - 1)]
    for layer in range(layers):
        unary, chain, to_hub = templates[0 if layer < 2 else int(rng.integers(0, 2))]
        pair = pairs[0 if layer < 2 else int(rng.integers(0, 2))]
        base = len(raw.unary)
        raw.unary.extend(unary)
        raw.edges.extend((base + i, base + i + 1, table) for i, table in enumerate(chain))
        raw.edges.extend((base + i, hub, tables[j]) for i, tables in enumerate(to_hub)
                         for j, hub in enumerate(pair))
    return raw


@pytest.mark.parametrize("seed", range(16))
def test_the_folded_problem_has_the_brute_force_optimum(seed: int) -> None:
    # Chain nodes have 4 neighbours at most; a hub joined to two layers has 6.
    raw = repeated_raw(np.random.default_rng(seed), layers=4)
    folded = fold(build(raw), hub_degree=6)
    best = brute_force(raw)
    assert folded is not None
    assert folded.problem.num_nodes <= len(raw.unary) - 3
    found = eliminate(folded.problem)
    assert found is not None
    labels, cost = found
    if best is None:
        assert cost >= FORBIDDEN, seed
        return
    assert cost == best[0], seed
    assert cost_of(raw, folded.unfold(labels)) == best[0], seed


@pytest.mark.parametrize("seed", range(6))
def test_a_start_folds_to_one_that_costs_no_more(seed: int) -> None:
    raw = repeated_raw(np.random.default_rng(50 + seed), layers=4, forbid=0.0)
    folded = fold(build(raw), hub_degree=6)
    assert folded is not None
    rng = np.random.default_rng(seed)
    for _ in range(20):
        start = tuple(int(rng.integers(0, len(u))) for u in raw.unary)
        again = folded.unfold(folded.folded_labels(start))
        assert cost_of(raw, again) <= cost_of(raw, start)
        # The hubs keep their labels.
        assert all(again[h] == start[h] for h in folded.hubs)


def test_nothing_folds_without_repeated_pieces() -> None:
    # Two chains on the same hubs, different costs: no group has two copies.
    raw = Raw([[0, 1], [1, 0], [0, 5], [5, 0]],
              [(0, 2, [[0, 1], [1, 0]]), (1, 3, [[0, 2], [2, 0]])])
    assert fold(build(raw), hub_degree=1) is None
    assert fold(make_problem([[0, 1], [1, 0]], ties=[(0, 1)])) is None


def test_scaled_costs_that_would_reach_forbidden_do_not_fold() -> None:
    huge = FORBIDDEN // 2
    raw = Raw([[0, 1], [huge, 0], [huge, 0]], [(0, 1, [[0, 1], [1, 0]]), (0, 2, [[0, 1], [1, 0]])])
    assert fold(build(raw), hub_degree=2) is None
    raw.unary[1] = raw.unary[2] = [7, 0]
    folded = fold(build(raw), hub_degree=2)
    assert folded is not None and folded.problem.num_nodes == 2
    assert [int(x) for x in folded.problem.unary[1]] == [14, 0]


@pytest.mark.parametrize("hinted", [False, True])
def test_deep_repeated_layers_are_proven_by_parts_through_folding(
        hinted: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    # 40 layers: hubs of degree 3 * 20 or so, past HUB_DEGREE; far beyond brute force,
    # so CP-SAT on the whole problem is the oracle.
    raw = repeated_raw(np.random.default_rng(9), layers=40, forbid=0.0)
    problem = build(raw)
    folds: list[int] = []
    real = parts.fold

    def spied(sub: Problem):
        found = real(sub)
        folds.append(0 if found is None else sub.num_nodes - found.problem.num_nodes)
        return found

    monkeypatch.setattr(parts, "fold", spied)
    whole = solve(problem, SolveOptions(time_limit=30))
    assert whole.status == Status.OPTIMAL
    start = None
    if hinted:
        start = next(labels for labels in itertools.product(*(range(len(u)) for u in raw.unary))
                     if cost_of(raw, labels) is not None)
    answer = solve_in_parts(problem, SolveOptions(time_limit=30),
                            hint=start)
    assert answer.status == Status.OPTIMAL and answer.objective == whole.objective
    assert cost_of(raw, answer.labels) == whole.objective
    assert max(folds, default=0) > 0
