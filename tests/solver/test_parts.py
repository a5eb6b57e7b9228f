"""Solving by components and by conditioning on a hub: the optimum is brute force's, and
identical pieces are solved once per state of the hub."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import Raw, brute_force, cost_of, random_raw

from solver.conditioning import components, find_split, solve_split
from solver.options import SolveOptions
from solver.parts import solve_in_parts
from solver.problem import Problem, Status, make_problem
from solver.solve import solve

BIG = 10**18


def build(raw: Raw) -> Problem:
    return make_problem(raw.unary, raw.edges, ties=raw.ties, forbidden=raw.forbidden)


def hub_raw(rng: np.random.Generator, pieces: int, same: bool, hub_labels: int = 2) -> Raw:
    """Node 0, the hub, joined to every node of ``pieces`` triangles of 2-label nodes
    (identical triangles when ``same``); some pairs forbidden."""
    raw = Raw([[int(rng.integers(0, 9)) for _ in range(hub_labels)]])

    def triangle():
        inner = [rng.integers(0, 20, size=(2, 2)) for _ in range(3)]
        to_hub = [rng.integers(0, 20, size=(hub_labels, 2)) for _ in range(3)]
        to_hub[0][0, 1] = BIG
        return [[int(x) for x in rng.integers(0, 9, size=2)] for _ in range(3)], inner, to_hub

    first = triangle()
    for _ in range(pieces):
        unary, inner, to_hub = first if same else triangle()
        base = len(raw.unary)
        raw.unary.extend(unary)
        for i, (a, b) in enumerate(((0, 1), (1, 2), (0, 2))):
            raw.edges.append((base + a, base + b, inner[i].tolist()))
        for i in range(3):
            raw.edges.append((0, base + i, to_hub[i].tolist()))
    return raw


def counting(calls: list[int]):
    def solve_piece(piece: Problem):
        calls.append(piece.num_nodes)
        found = solve(piece, SolveOptions(time_limit=5, num_workers=1))
        assert found.status == Status.OPTIMAL
        return found.labels, found.objective
    return solve_piece


@pytest.mark.parametrize("same", [True, False])
def test_conditioning_on_a_hub_finds_the_brute_force_optimum(same: bool) -> None:
    for seed in range(6):
        raw = hub_raw(np.random.default_rng(seed), pieces=3, same=same)
        problem = build(raw)
        split = find_split(problem, tuple(range(problem.num_nodes)))
        assert split is not None and split.separator == (0,)
        assert sorted(map(len, split.pieces)) == [3, 3, 3]
        calls: list[int] = []
        chosen, cost = solve_split(problem, split, counting(calls))
        best = brute_force(raw)
        assert best is not None and cost == best[0], seed
        labels = tuple(chosen[n] for n in range(problem.num_nodes))
        assert cost_of(raw, labels) == cost
        # One solve per piece and hub label; identical pieces share theirs.
        assert len(calls) == (2 if same else 6)


def test_no_split_without_a_hub() -> None:
    raw = random_raw(np.random.default_rng(3), nodes=8, memory=False, ties=0)
    problem = build(raw)
    assert find_split(problem, tuple(range(problem.num_nodes))) is None


def test_components_cover_every_node_once() -> None:
    problem = make_problem([[0, 1]] * 5, [(0, 2, [[0, 1], [1, 0]]), (3, 4, [[0, 1], [1, 0]])])
    assert components(problem) == [(0, 2), (1,), (3, 4)]


@pytest.mark.parametrize("same", [True, False])
def test_solve_in_parts_proves_the_hub_problem(same: bool) -> None:
    raw = hub_raw(np.random.default_rng(11), pieces=8, same=same, hub_labels=3)
    # Two such problems side by side: two components.
    other = hub_raw(np.random.default_rng(12), pieces=2, same=same)
    shift = len(raw.unary)
    raw.unary.extend(other.unary)
    raw.edges.extend((u + shift, v + shift, t) for u, v, t in other.edges)
    problem = build(raw)
    answer = solve_in_parts(problem, SolveOptions(time_limit=30))
    whole = solve(problem, SolveOptions(time_limit=30))
    assert answer.status == whole.status == Status.OPTIMAL
    assert answer.objective == whole.objective == answer.lower_bound
    assert answer.labels is not None and cost_of(raw, answer.labels) == answer.objective


def test_solve_in_parts_matches_brute_force_on_random_problems() -> None:
    checked = 0
    for seed in range(40):
        raw = random_raw(np.random.default_rng(seed), nodes=7, memory=False, ties=1,
                         density=0.3)
        best = brute_force(raw)
        answer = solve_in_parts(build(raw), SolveOptions(time_limit=10))
        if best is None:
            assert answer.status == Status.INFEASIBLE, seed
            continue
        assert answer.status == Status.OPTIMAL and answer.objective == best[0], seed
        assert cost_of(raw, answer.labels) == best[0]
        checked += 1
    assert checked >= 20
