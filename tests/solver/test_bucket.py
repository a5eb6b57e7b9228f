"""Bucket elimination: the optimum is brute force's (an oracle that recomputes costs from
the raw parts), the table limits are kept, and a start lets the parts solver prove an
answer without CP-SAT."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from oracle import Raw, brute_force, cost_of, random_raw

from solver import bucket
from solver.bucket import eliminate, elimination_order
from solver.options import SolveOptions
from solver.parts import solve_in_parts
from solver.problem import FORBIDDEN, Problem, Status, make_problem
from solver.solve import solve

BIG = 10**18


def build(raw: Raw) -> Problem:
    return make_problem(raw.unary, raw.edges, ties=raw.ties, forbidden=raw.forbidden)


def layered_raw(rng: np.random.Generator, layers: int, hubs: int = 3, forbid: float = 0.1,
                same: bool = False) -> Raw:
    """``hubs`` two-label nodes, each joined to every layer: a chain of 4 nodes with
    1-3 labels, every node of it joined to every hub, a share ``forbid`` of the chain's
    label pairs forbidden (``same``: every layer a copy of the first)."""
    raw = Raw([[int(x) for x in rng.integers(0, 9, size=2)] for _ in range(hubs)])

    def layer():
        ks = [int(rng.integers(1, 4)) for _ in range(4)]
        unary = [[int(x) for x in rng.integers(0, 20, size=k)] for k in ks]
        chain = []
        for i in range(3):
            table = rng.integers(0, 20, size=(ks[i], ks[i + 1]))
            table[rng.random(size=table.shape) < forbid] = BIG
            chain.append(table.tolist())
        to_hub = [(i, hub, rng.integers(0, 20, size=(k, 2)).tolist())
                  for i, k in enumerate(ks) for hub in range(hubs)]
        return unary, chain, to_hub

    first = layer()
    for _ in range(layers):
        unary, chain, to_hub = first if same else layer()
        base = len(raw.unary)
        raw.unary.extend(unary)
        raw.edges.extend((base + i, base + i + 1, table) for i, table in enumerate(chain))
        raw.edges.extend((base + i, hub, table) for i, hub, table in to_hub)
    return raw


@pytest.mark.parametrize("seed", range(30))
def test_elimination_finds_the_brute_force_optimum(seed: int) -> None:
    raw = random_raw(np.random.default_rng(seed), nodes=8, memory=False, ties=0, density=0.4)
    found = eliminate(build(raw))
    assert found is not None
    labels, cost = found
    best = brute_force(raw)
    if best is None:
        assert cost >= FORBIDDEN, seed
        return
    assert cost == best[0], seed
    assert cost_of(raw, labels) == cost


@pytest.mark.parametrize("seed", range(6))
def test_elimination_of_layers_on_hubs_finds_the_brute_force_optimum(seed: int) -> None:
    raw = layered_raw(np.random.default_rng(100 + seed), layers=2)
    found = eliminate(build(raw))
    best = brute_force(raw)
    assert found is not None
    if best is None:
        assert found[1] >= FORBIDDEN
        return
    assert found[1] == best[0]
    assert cost_of(raw, found[0]) == best[0]


def test_a_long_chain_of_layers_is_eliminated_within_small_tables() -> None:
    # 24 layers on 2 hubs: 98 nodes, far beyond brute force (the solve pipeline,
    # reductions and CP-SAT, is the oracle); every table stays within the 2 hubs and 2
    # chain nodes (2 * 2 * 3 * 3 = 36 entries), pieces or not.
    raw = layered_raw(np.random.default_rng(7), layers=24, hubs=2, forbid=0.0)
    problem = build(raw)
    assert elimination_order(problem, max_entries=36) is not None
    assert elimination_order(problem, max_entries=8) is None
    found = eliminate(problem, max_entries=36)
    assert found is not None
    labels, cost = found
    assert cost_of(raw, labels) == cost
    whole = solve(problem, SolveOptions(time_limit=30))
    assert whole.status == Status.OPTIMAL and whole.objective == cost


@pytest.mark.parametrize("same", [True, False])
def test_pieces_around_hubs_find_the_brute_force_optimum_and_repeat(
        same: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    # Hubs of degree 5 or more (the chain's nodes have at most 4 neighbours): every layer
    # is a piece, eliminated on its own (identical layers once), then the hubs.
    monkeypatch.setattr(bucket, "HUB_DEGREE", 5)
    runs: list[int] = []
    real = bucket._run

    def counted(factors, sizes, order):
        runs.append(len(order))
        return real(factors, sizes, order)

    monkeypatch.setattr(bucket, "_run", counted)
    for seed in range(4):
        raw = layered_raw(np.random.default_rng(300 + seed), layers=2, hubs=2, same=same)
        runs.clear()
        found = bucket.eliminate(build(raw))
        best = brute_force(raw)
        assert found is not None, seed
        if best is None:
            assert found[1] >= FORBIDDEN, seed
            continue
        assert found[1] == best[0] and cost_of(raw, found[0]) == best[0], seed
        # Each distinct layer (4 nodes) once, then the 2 hubs.
        assert runs == ([4, 2] if same else [4, 4, 2]), seed


def test_limits_are_kept() -> None:
    # A 6-clique of 4-label nodes: the first node eliminated needs 4**6 entries.
    rng = np.random.default_rng(5)
    edges = [(u, v, rng.integers(0, 9, size=(4, 4))) for u in range(6) for v in range(u + 1, 6)]
    problem = make_problem([[0, 1, 2, 3]] * 6, edges)
    assert eliminate(problem, max_entries=4**6 - 1) is None
    assert eliminate(problem, max_entries=4**6, max_work=10) is None
    assert eliminate(problem, max_entries=4**6) is not None


def test_ties_are_left_to_other_solvers() -> None:
    assert eliminate(make_problem([[0, 1], [1, 0]], ties=[(0, 1)])) is None


def test_an_infeasible_problem_costs_forbidden() -> None:
    problem = make_problem([[0, 1], [0, 1]], [(0, 1, [[BIG, 0], [0, 0]])], forbidden=[(0, 1), (1, 1)])
    found = eliminate(problem)
    assert found is not None and found[1] >= FORBIDDEN


def test_parts_with_a_start_prove_the_brute_force_optimum() -> None:
    checked = 0
    heard: list[tuple[int, int]] = []

    def report(best: int, bound: int) -> None:
        heard.append((best, bound))

    for seed in range(12):
        raw = random_raw(np.random.default_rng(200 + seed), nodes=7, memory=False, ties=0,
                         density=0.3)
        best = brute_force(raw)
        if best is None:
            continue
        problem = build(raw)
        # The first feasible labeling in enumeration order: a start, rarely the optimum.
        start = next(labels for labels in itertools.product(*(range(len(u)) for u in raw.unary))
                     if cost_of(raw, labels) is not None)
        heard.clear()
        answer = solve_in_parts(problem, SolveOptions(time_limit=10), hint=start, report=report)
        assert answer.status == Status.OPTIMAL and answer.objective == best[0], seed
        assert cost_of(raw, answer.labels) == best[0]
        assert heard == [(best[0], best[0])]
        checked += 1
    assert checked >= 6

