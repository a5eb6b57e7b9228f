"""The full solve against a brute-force oracle; determinism; time limit; infeasibility."""

from __future__ import annotations

import time

import numpy as np
import pytest
from oracle import Raw, brute_force, cost_of, random_raw
from test_reductions import build

from solver.errors import ProblemError
from solver.options import SolveOptions
from solver.problem import FORBIDDEN, Status, make_problem
from solver.solve import prepare, solve

QUICK = SolveOptions(time_limit=10.0, heuristic_time=0.2)


@pytest.mark.parametrize("block", range(4))
def test_solve_matches_brute_force(block: int) -> None:
    for seed in range(block * 20, block * 20 + 20):
        rng = np.random.default_rng(1000 + seed)
        raw = random_raw(rng, nodes=int(rng.integers(2, 10)), memory=seed % 4 != 0,
                         ties=int(rng.integers(0, 3)), max_labels=int(rng.integers(2, 4)))
        want = brute_force(raw)
        got = solve(build(raw), QUICK)
        if want is None:
            assert got.status == Status.INFEASIBLE, f"seed {seed}: {got}"
            assert got.labels is None
            continue
        assert got.status == Status.OPTIMAL, f"seed {seed}: {got}"
        assert got.objective == want[0], f"seed {seed}"
        assert cost_of(raw, got.labels) == want[0], f"seed {seed}"
        assert got.lower_bound == want[0] and got.gap == 0.0
        assert got.memory_feasible


def test_solve_without_reductions_matches_brute_force() -> None:
    for seed in range(15):
        rng = np.random.default_rng(2000 + seed)
        raw = random_raw(rng, nodes=8)
        want = brute_force(raw)
        got = solve(build(raw), SolveOptions(time_limit=10.0, heuristic_time=0.2, passes=()))
        assert (got.objective if got.labels else None) == (want[0] if want else None), seed


def grid(side: int, labels: int, seed: int) -> Raw:
    """A frustrated grid with a memory limit: hard enough not to be proved in a second."""
    rng = np.random.default_rng(seed)
    n = side * side
    raw = Raw([rng.integers(0, 50, labels).tolist() for _ in range(n)])
    for r in range(side):
        for c in range(side):
            node = r * side + c
            right = [node + 1] if c + 1 < side else []
            down = [node + side] if r + 1 < side else []
            for other in right + down:
                raw.edges.append((node, other, rng.integers(0, 60, (labels, labels)).tolist()))
            raw.memory.append((node, node // side, node // side + 3,
                               rng.integers(1, 10, labels).tolist()))
    raw.limit = 4 * 3 * side
    return raw


def test_deterministic() -> None:
    problem = build(grid(8, 4, seed=5))
    options = SolveOptions(time_limit=60.0, heuristic_time=5.0, deterministic_time=0.1)
    first, second = solve(problem, options), solve(problem, options)
    assert first.labels == second.labels and first.objective == second.objective


def test_time_limit_respected_with_valid_bound() -> None:
    problem = build(grid(10, 6, seed=7))
    began = time.perf_counter()
    result = solve(problem, SolveOptions(time_limit=2.0, heuristic_time=0.3))
    elapsed = time.perf_counter() - began
    assert elapsed < 5.0, elapsed  # reduce/heuristic/build run inside the limit too
    assert result.status == Status.FEASIBLE
    assert result.lower_bound is not None and result.lower_bound <= result.objective
    assert 0.0 < result.gap <= 1.0
    assert result.first_solution_ms is not None
    assert dict(result.timings_ms)["cpsat"] > 0  # CP-SAT ran, not only the heuristic
    assert "dual-bound" in dict(result.timings_ms)  # unproven with memory rows: the dual too


def test_memory_limit_too_small_is_infeasible() -> None:
    problem = make_problem([[0, 1], [0, 1]], memory=[(0, 0, 2, [5, 6]), (1, 1, 3, [5, 7])],
                           memory_limit=9)
    result = solve(problem, QUICK)
    assert result.status == Status.INFEASIBLE and result.labels is None
    assert "memory limit" in result.message


def test_memory_infeasible_only_jointly() -> None:
    # The smallest usages fit together, but the only allowed pairs (equal labels) do not.
    problem = make_problem([[0, 1], [0, 1]], [(0, 1, [[0, FORBIDDEN], [FORBIDDEN, 0]])],
                           memory=[(0, 0, 2, [2, 8]), (1, 1, 3, [8, 2])], memory_limit=9)
    assert solve(problem, QUICK).status == Status.INFEASIBLE


def test_contradictory_ties_infeasible() -> None:
    problem = make_problem([[0, 0], [0, 0]], ties=[(0, 1), (1, 0, [1, 0])])
    result = solve(problem, QUICK)
    assert result.status == Status.INFEASIBLE and "ties" in result.message


def test_window_search_keeps_feasibility_and_never_worsens() -> None:
    from solver import lns
    from solver.heuristics import heuristic
    from solver.problem import evaluate, memory_feasible

    raw = grid(7, 4, seed=11)
    problem = build(raw)
    start = heuristic(problem, 2.0).labels
    start_cost = cost_of(raw, start)
    assert start_cost is not None
    labels, windows = lns.improve(problem, start, time.perf_counter() + 3.0, SolveOptions(),
                                  window=12, window_time=0.3)
    assert windows >= 2
    assert evaluate(problem, labels) == cost_of(raw, labels) <= start_cost
    assert memory_feasible(problem, labels)


@pytest.mark.parametrize("presolve", ["full", "light"])
def test_hinted_solve_matches_brute_force(presolve: str) -> None:
    """Any hint (optimal, merely feasible, or breaking a hard rule) leaves the optimum
    found and proven; the light presolve proves the same optima."""
    options = SolveOptions(time_limit=10.0, heuristic_time=0.2, presolve=presolve)
    kinds = set()
    for seed in range(30):
        rng = np.random.default_rng(3000 + seed)
        raw = random_raw(rng, nodes=int(rng.integers(2, 9)), memory=seed % 3 != 0,
                         ties=int(rng.integers(0, 3)))
        want = brute_force(raw)
        if want is None:
            continue
        random_labels = tuple(int(rng.integers(0, len(u))) for u in raw.unary)
        for hint in (want[1], random_labels):
            kinds.add("feasible" if cost_of(raw, hint) is not None else "infeasible")
            got = solve(build(raw), options, hint=hint)
            assert got.status == Status.OPTIMAL and got.objective == want[0], f"seed {seed}"
            assert cost_of(raw, got.labels) == want[0], f"seed {seed}"
    assert kinds == {"feasible", "infeasible"}


def test_a_hint_is_never_lost_when_time_runs_out() -> None:
    """With no time for the search to improve on it, the answer costs at most the hint,
    which started the search in place of the heuristic."""
    raw = grid(9, 8, seed=4)
    raw.memory, raw.limit = [], None
    problem = build(raw)
    good = solve(problem, SolveOptions(time_limit=4.0, heuristic_time=0.5))
    hinted = solve(problem, SolveOptions(time_limit=0.05, heuristic_time=0.01), hint=good.labels)
    assert hinted.labels is not None and hinted.objective <= good.objective
    assert cost_of(raw, hinted.labels) == hinted.objective
    steps = dict(hinted.timings_ms)
    assert "hint" in steps and "heuristic" not in steps and "quick" not in steps


def test_hint_of_the_wrong_length_is_rejected() -> None:
    with pytest.raises(ProblemError, match="hint has 1 labels"):
        solve(make_problem([[0, 1], [0, 1]]), QUICK, hint=(0,))


def test_small_table_level_layout_matches_the_vectorized_one() -> None:
    from solver.cpsat import _level_layout, _level_layout_small

    rng = np.random.default_rng(9)
    for _ in range(200):
        shape = tuple(int(x) for x in rng.integers(1, 8, size=2))
        table = rng.integers(0, 4, size=shape) * int(rng.integers(1, 50))
        table[rng.random(shape) < 0.2] = FORBIDDEN
        assert _level_layout_small(table.tolist()) == _level_layout(table)


@pytest.mark.parametrize("form", ["levels", "pairs-and-running-totals"])
def test_hint_is_a_feasible_point_of_the_model_at_its_cost(form: str, monkeypatch) -> None:
    """Every hinted variable fixed to its hinted value leaves the model feasible with
    the hint's cost as objective: the hint of the auxiliary variables is right."""
    from ortools.sat.python import cp_model

    from solver import cpsat

    if form != "levels":
        monkeypatch.setattr(cpsat, "SMALL_TABLE", 0)
        monkeypatch.setattr(cpsat, "LEVEL_LITERALS_LIMIT", 0)
        monkeypatch.setattr(cpsat, "DIRECT_MEMORY_TERMS", 0)
        monkeypatch.setattr(cpsat, "LABEL_ROW_TERMS", 0)
    checked, forms = 0, set()
    for seed in range(40):
        rng = np.random.default_rng(4000 + seed)
        raw = random_raw(rng, nodes=int(rng.integers(3, 9)), memory=True, ties=0)
        want = brute_force(raw)
        if want is None:
            continue
        problem = build(raw)
        built = cpsat.build_model(problem)
        cpsat.add_hint(built, want[1])
        forms.update(name for name, used in [("levels", built.level_vars),
                                             ("pairs", built.pair_vars),
                                             ("running", built.running_vars)] if used)
        proto = built.model.proto
        for index, value in zip(list(proto.solution_hint.vars), list(proto.solution_hint.values)):
            built.model.add(built.model.get_int_var_from_proto_index(index) == value)
        solver = cp_model.CpSolver()
        solver.parameters.num_workers = 1
        assert solver.solve(built.model) == cp_model.OPTIMAL, seed
        assert round(solver.objective_value) == want[0], seed
        checked += 1
    assert checked >= 15
    assert forms == ({"levels"} if form == "levels" else {"pairs", "running"})


def test_prepared_solve_matches_brute_force_and_the_plain_solve() -> None:
    from solver.solve import prepare

    for seed in range(25):
        rng = np.random.default_rng(5000 + seed)
        raw = random_raw(rng, nodes=int(rng.integers(2, 9)), memory=seed % 2 == 0,
                         ties=int(rng.integers(0, 3)))
        want = brute_force(raw)
        problem = build(raw)
        got = solve(problem, QUICK, prepared=prepare(problem, QUICK))
        if want is None:
            assert got.status == Status.INFEASIBLE, seed
            continue
        assert got.status == Status.OPTIMAL and got.objective == want[0], seed
        assert got.labels == solve(problem, QUICK).labels, seed
    with pytest.raises(ProblemError, match="another problem"):
        solve(build(raw), QUICK, prepared=prepare(problem, QUICK))


def test_window_search_path_reports_a_valid_dual_bound() -> None:
    """Forced onto the window search (as the contest's large cores are), the windows run
    and then the dual bound; the answer is exact and feasible and the reported bound lies
    between the trivial bound and the optimum; on some problems the bound proves the
    answer optimal."""
    from solver.problem import trivial_bound

    proven = 0
    for seed in range(12):
        rng = np.random.default_rng(6000 + seed)
        raw = random_raw(rng, nodes=int(rng.integers(4, 9)), memory=seed % 2 == 0, density=0.5)
        want = brute_force(raw)
        if want is None:
            continue
        problem = build(raw)
        got = solve(problem, SolveOptions(time_limit=0.8, heuristic_time=0.1, passes=(),
                                          whole_model_labels=0))
        steps = dict(got.timings_ms)
        assert "dual-bound" in steps and "cpsat" not in steps, seed
        assert "window-search" in steps, seed
        assert cost_of(raw, got.labels) == got.objective >= want[0], seed
        assert trivial_bound(problem) <= got.lower_bound <= want[0], seed
        proven += got.status == Status.OPTIMAL
    assert proven >= 2


def test_whole_model_labels_chooses_windows_or_the_whole_model() -> None:
    """Below ``whole_model_labels`` the reduced problem is one CP-SAT model, above it the
    windows with the dual bound; both answers are the brute-force optimum's cost or above
    it with a bound below it, and the whole model proves its answer."""
    for seed in range(8):
        rng = np.random.default_rng(7000 + seed)
        raw = random_raw(rng, nodes=int(rng.integers(4, 9)), memory=False, density=0.5)
        want = brute_force(raw)
        if want is None:
            continue
        problem = build(raw)
        core = prepare(problem, SolveOptions(passes=())).reduction.problem
        labels = sum(len(u) for u in core.unary)
        whole = solve(problem, SolveOptions(time_limit=5.0, heuristic_time=0.1, passes=(),
                                            whole_model_labels=labels))
        assert "cpsat" in dict(whole.timings_ms), seed
        assert whole.status == Status.OPTIMAL and whole.objective == want[0], seed
        windows = solve(problem, SolveOptions(time_limit=0.8, heuristic_time=0.1, passes=(),
                                              whole_model_labels=labels - 1))
        assert "cpsat" not in dict(windows.timings_ms), seed
        assert windows.lower_bound <= want[0] <= windows.objective, seed


def test_search_reports_answers_and_bounds_in_order() -> None:
    """The ``report`` callback hears costs of the problem solved (the reductions' offset
    added back): answers never below the optimum and never rising, bounds never above
    it and never falling, the last of both the returned objective."""
    heard_any = 0
    for seed in range(10):
        rng = np.random.default_rng(8000 + seed)
        raw = random_raw(rng, nodes=int(rng.integers(5, 10)), memory=seed % 2 == 0,
                         max_labels=3)
        want = brute_force(raw)
        if want is None:
            continue
        events: list[tuple[int | None, int | None]] = []
        got = solve(build(raw), SolveOptions(time_limit=10.0, heuristic_time=0.2, passes=()),
                    report=lambda best, bound, events=events: events.append((best, bound)))
        assert got.status == Status.OPTIMAL and got.objective == want[0], seed
        bests = [b for b, _ in events if b is not None]
        bounds = [b for _, b in events if b is not None]
        assert all(b >= want[0] for b in bests) and bests == sorted(bests, reverse=True), seed
        assert all(b <= want[0] for b in bounds) and bounds == sorted(bounds), seed
        if events:
            heard_any += 1
            assert events[-1] == (want[0], want[0]), (seed, events)
    assert heard_any >= 3


def test_a_memory_bound_core_is_annealed_and_stays_reproducible(monkeypatch) -> None:
    """A memory-bound core of 64+ nodes is annealed before CP-SAT; the answer keeps
    every rule (independent cost) and is reproducible (CP-SAT ends on its work budget,
    and few moves, so the clock never cuts the walk)."""
    import solver.solve

    monkeypatch.setattr(solver.solve, "ANNEAL_MOVES_PER_NODE", 100)
    raw = grid(10, 3, seed=21)
    problem = build(raw)
    options = SolveOptions(time_limit=30.0, heuristic_time=1.0, deterministic_time=0.05)
    got = solve(problem, options)
    assert {"anneal", "windows", "peak-windows"} <= set(dict(got.timings_ms))
    assert got.objective == cost_of(raw, got.labels)
    assert solve(problem, options).labels == got.labels


def test_a_core_of_many_uses_a_node_is_walked_after_cpsat(monkeypatch) -> None:
    """A memory-bound core modelled whole whose nodes hold more than ANNEAL_USES_PER_NODE
    uses each gets cool walks after CP-SAT, from its answer: the answer keeps every
    rule (independent cost), is reproducible, and here costs less than CP-SAT's answer
    alone (the same work budget, the walks turned off); the report hears it last."""
    import solver.solve

    monkeypatch.setattr(solver.solve, "ANNEAL_MOVES_PER_NODE", 200)
    raw = grid(10, 3, seed=27)
    rng = np.random.default_rng(4)
    for node, start, end, amounts in list(raw.memory):
        for shift in range(1, 6):
            raw.memory.append((node, start + shift, end + shift,
                               rng.integers(1, 4, len(amounts)).tolist()))
    usage = np.zeros((100, 3), np.int64)
    for node, _, _, amounts in raw.memory:
        usage[node] += amounts
    least = usage.argmin(axis=1)
    load = np.zeros(20, np.int64)
    for node, start, end, amounts in raw.memory:
        load[start:end] += amounts[least[node]]
    raw.limit = int(1.15 * load.max())  # binding, and the least usages keep it
    problem = build(raw)
    options = SolveOptions(time_limit=30.0, heuristic_time=1.0, deterministic_time=0.05)
    heard: list[tuple[int | None, int | None]] = []
    got = solve(problem, options, report=lambda best, bound: heard.append((best, bound)))
    stages = [name for name, _ in got.timings_ms]
    assert "anneal" in stages and stages.index("anneal") > stages.index("cpsat"), stages
    assert stages.index("kicks") == stages.index("anneal") + 1, stages
    assert got.objective == cost_of(raw, got.labels)
    assert solve(problem, options).labels == got.labels
    monkeypatch.setattr(solver.solve, "_anneals_cool", lambda core: False)
    alone = solve(problem, options)
    assert "anneal" not in dict(alone.timings_ms)
    assert got.objective < alone.objective
    assert heard[-1][0] == got.objective


def test_a_kick_takes_a_move_the_limit_refused_and_keeps_the_cheaper_answer() -> None:
    """Node 0 saves 100 at its other label but the limit refuses the 10 bytes more it
    needs; the kick frees them where that costs least (node 1, 5) and settles on the
    brute-force optimum; the stage's lap is recorded."""
    from solver.laps import Laps
    from solver.solve import Answer, _kicked

    raw = Raw([[100, 0], [0, 5], [0, 50]])
    raw.memory = [(0, 0, 2, [10, 20]), (1, 1, 3, [10, 0]), (2, 1, 3, [10, 0])]
    raw.limit = 30
    laps = Laps()
    got = _kicked(build(raw), Answer((0, 0, 0), 100), SolveOptions(time_limit=10.0),
                  time.perf_counter() + 10.0, laps)
    assert (got.cost, got.labels) == (5, (1, 1, 0)) == brute_force(raw)
    assert "kicks" in dict(laps.timings())


def test_a_move_whose_memory_cannot_be_freed_is_not_counted_as_a_kick(monkeypatch) -> None:
    """Node 0 would save 1000 but nothing else is live beside it to free the memory it
    needs: its kick fails. With one kick allowed, the next refused move (node 2, 100,
    its memory freed by node 3 for 5) is still kicked and reaches the brute-force optimum."""
    import solver.solve
    from solver.laps import Laps
    from solver.solve import Answer, _kicked

    monkeypatch.setattr(solver.solve, "KICKS", 1)
    raw = Raw([[1000, 0], [0, 0], [100, 0], [0, 5]])
    raw.memory = [(0, 0, 1, [10, 40]), (1, 0, 1, [15, 15]), (2, 2, 4, [10, 25]),
                  (3, 3, 5, [10, 0])]
    raw.limit = 30
    got = _kicked(build(raw), Answer((0, 0, 0, 0), 1100), SolveOptions(time_limit=10.0),
                  time.perf_counter() + 10.0, Laps())
    assert (got.cost, got.labels) == (1005, (0, 0, 1, 1)) == brute_force(raw)


def test_the_dual_bound_keeps_more_of_the_time_where_the_memory_rows_are_small(monkeypatch
                                                                               ) -> None:
    """From CP-SAT on the whole model the dual bound keeps a slice of the time: where the
    memory rows take the exact multiplier steps EXACT_DUAL_SHARE of the limit (at most
    EXACT_DUAL_SECONDS), else MEMORY_DUAL_SHARE (at most MEMORY_DUAL_SECONDS); never more
    than is left, nothing without memory rows."""
    import solver.dual_memory
    from solver.solve import (EXACT_DUAL_SECONDS, EXACT_DUAL_SHARE, MEMORY_DUAL_SECONDS,
                              MEMORY_DUAL_SHARE, _dual_keep)

    small = build(grid(6, 3, seed=1))
    assert _dual_keep(small, 30.0, 100.0) == min(EXACT_DUAL_SHARE * 30.0, EXACT_DUAL_SECONDS)
    assert _dual_keep(small, 600.0, 100.0) == EXACT_DUAL_SECONDS
    assert _dual_keep(small, 30.0, 0.5) == 0.5
    monkeypatch.setattr(solver.dual_memory, "EXACT_ENTRIES", 10)
    assert _dual_keep(small, 30.0, 100.0) == min(MEMORY_DUAL_SHARE * 30.0, MEMORY_DUAL_SECONDS)
    assert MEMORY_DUAL_SHARE < EXACT_DUAL_SHARE and MEMORY_DUAL_SECONDS < EXACT_DUAL_SECONDS
    free = grid(6, 3, seed=1)
    free.memory, free.limit = [], None
    assert _dual_keep(build(free), 30.0, 100.0) == 0.0
