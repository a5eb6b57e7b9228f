"""The reproducible mode's plan: stages sized in estimated seconds, so that the clock
decides no answer. The oracle for "the clock decides nothing" is a second solve under a
clock that runs half as fast again: the same stages must do the same work and give the
same answer."""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
import pytest
from oracle import Raw
from test_reductions import build
from test_solve import grid

import solver.lns
import solver.penalties
import solver.solve
from solver import cpsat
from solver.options import SolveOptions
from solver.plan import Plan
from solver.problem import Status


def test_a_plan_counts_the_steps_that_fit_and_its_parts_spend_in_it() -> None:
    plan = Plan(45.0)
    plan.spend(30.0)
    assert plan.left() == 15.0
    assert plan.fitting(4.0, most=60) == 3
    assert plan.fitting(4.0, most=2) == 2
    assert plan.fitting(4.0, most=60, seconds=9.0) == 2
    assert plan.fitting(100.0, most=60) == 1  # at least one step
    part = plan.part(10.0)
    assert part.total == 10.0
    part.spend(6.0)
    assert part.left() == 4.0 and plan.left() == 9.0
    assert plan.part(20.0).total == 9.0  # never more than is left
    plan.spend(50.0)
    assert plan.left() == 0.0


class _Spy:
    """Records the work each stage was given and did."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.rounds: list[int] = []
        self.windows: list[tuple[int | None, int]] = []
        self.shifted: list[tuple[int, int]] = []
        self.tb2 = 0
        heuristic, improve, wcsp = (solver.solve.heuristic, solver.lns.improve,
                                    solver.penalties.solve_wcsp)
        shifted = solver.lns.improve_shifted

        def spied_heuristic(problem, time_limit=1.0, rounds=16):
            self.rounds.append(rounds)
            return heuristic(problem, time_limit, rounds)

        def spied_improve(*args, max_windows=None, **kwargs):
            found = improve(*args, max_windows=max_windows, **kwargs)
            self.windows.append((max_windows, found[1]))
            return found

        def spied_shifted(*args, **kwargs):
            found = shifted(*args, **kwargs)
            self.shifted.append((args[4], found[1]))
            return found

        def spied_wcsp(*args, **kwargs):
            self.tb2 += 1
            return wcsp(*args, **kwargs)

        monkeypatch.setattr(solver.solve, "heuristic", spied_heuristic)
        monkeypatch.setattr(solver.lns, "improve", spied_improve)
        monkeypatch.setattr(solver.lns, "improve_shifted", spied_shifted)
        monkeypatch.setattr(solver.penalties, "solve_wcsp", spied_wcsp)


def solve_counted(problem, options, spy: _Spy):
    """The solve's answer, and the heuristic's rounds, the first window search's planned
    and solved windows, the toulbar2 solves it did and the shifted windows' asked and
    solved counts."""
    spy.rounds.clear()
    spy.windows.clear()
    spy.shifted.clear()
    spy.tb2 = 0
    got = solver.solve.solve(problem, options)
    return got, (tuple(spy.rounds), spy.windows[0], spy.tb2, tuple(spy.shifted))


def chain(n: int, labels: int, seed: int) -> Raw:
    """A chain whose memory limit binds: each node's usage is live with its two
    successors', at most 15 at once."""
    rng = np.random.default_rng(seed)
    raw = Raw([rng.integers(0, 20, labels).tolist() for _ in range(n)])
    for i in range(n - 1):
        raw.edges.append((i, i + 1, rng.integers(0, 20, (labels, labels)).tolist()))
    for i in range(n):
        raw.memory.append((i, i, i + 2, rng.integers(1, 10, labels).tolist()))
    raw.limit = 15
    return raw


def test_the_clock_decides_no_answer_on_the_penalty_and_window_path(monkeypatch) -> None:
    # A memory-limited chain too small to anneal, unreduced and forced onto the window
    # search (as the contest's large cores are): heuristic, penalty rounds, windows (each
    # proven in well under a second), dual bound. Solved once as it is and once under a
    # clock running 1.5 times as fast (every stage sees less time left): the same rounds,
    # windows and answer. With windows run until the deadline, as before the plan, about
    # 25 windows ran and their count followed the clock.
    problem = build(chain(40, 3, seed=0))
    options = SolveOptions(time_limit=3.0, whole_model_labels=10, num_workers=1, passes=())
    spy = _Spy(monkeypatch)
    first = solve_counted(problem, options, spy)
    real = time.perf_counter
    began = real()
    monkeypatch.setattr(time, "perf_counter", lambda: began + 1.5 * (real() - began))
    second = solve_counted(problem, options, spy)
    steps = [name for name, _ in first[0].timings_ms]
    assert steps.index("penalties") < steps.index("small-windows") < steps.index("window-search")
    assert "dual-bound" in steps
    assert first[1:] == second[1:]
    assert first[0].labels == second[0].labels and first[0].objective == second[0].objective
    windows, solved = first[1][1]
    assert windows is not None and solved == windows  # the plan, not the clock, ended them
    # The small windows first: as many as SMALL_SHARE of the limit holds at their estimate.
    each = solver.solve.SMALL_SECONDS * (1 + 40 / 40 / solver.solve.SMALL_USES)
    asked = min(solver.solve.SMALL_WINDOWS, int(solver.solve.SMALL_SHARE * 3.0 / each))
    assert first[1][3][0][0] == asked >= 2


@pytest.mark.parametrize("deterministic", [True, False])
def test_cpsat_on_a_whole_model_ends_on_a_work_budget(monkeypatch, deterministic) -> None:
    # In the reproducible mode CP-SAT gets deterministic units from the plan, whatever
    # the clock says; otherwise only the time limit; a budget in the options is kept.
    given = []
    solve_model = cpsat.solve_model

    def spied(built, options, time_limit, report=None):
        given.append(options.deterministic_time)
        return solve_model(built, options, time_limit, report)

    monkeypatch.setattr(cpsat, "solve_model", spied)
    problem = build(grid(4, 3, seed=5))
    got = solver.solve.solve(problem, SolveOptions(time_limit=10.0,
                                                   deterministic=deterministic))
    assert got.status in (Status.OPTIMAL, Status.FEASIBLE)
    # At most the whole search share of the 10 s limit, in units.
    most = 0.8 * 10 * solver.solve.CPSAT_WORK_PER_SECOND
    assert given and all((g is not None and 0 < g <= most) if deterministic else g is None
                         for g in given)
    given.clear()
    solver.solve.solve(problem, SolveOptions(time_limit=10.0, deterministic_time=0.01))
    assert given == [0.01]


@pytest.mark.parametrize("whole", [False, True])
def test_the_penalty_stage_bound_counts_in_the_answer(monkeypatch, whole) -> None:
    # The chain above on the penalty path, then the windows (or the whole model). The
    # bound the priced search's dual bound found comes out as the answer's lower bound
    # when the later stage's own bound is lower: here that stage's bound is forced to 0
    # (the end's dual bound, or CP-SAT's reported bound).
    from solver.dual_bound import dual_bound_detail

    problem = build(chain(40, 3, seed=0))
    options = SolveOptions(time_limit=3.0, whole_model_labels=10**6 if whole else 10,
                           num_workers=1, passes=())
    entries = sum(edge.costs.size for edge in problem.edges)
    want = dual_bound_detail(problem, 60.0, sweeps=solver.solve._price_sweeps(entries),
                             pricing=True).value
    if whole:
        model_search = solver.solve._model_search

        def unbounded(*args, **kwargs):
            found = model_search(*args, **kwargs)
            return solver.solve.Search(found.best, 0, Status.FEASIBLE, found.first_ms)

        monkeypatch.setattr(solver.solve, "_model_search", unbounded)
    else:
        monkeypatch.setattr(solver.solve, "dual_bound", lambda *args, **kwargs: 0)
    got = solver.solve.solve(problem, options)
    assert "penalties" in dict(got.timings_ms)
    assert 0 < want == got.lower_bound <= got.objective


@pytest.mark.parametrize("whole", [False, True])
def test_the_last_dual_bound_starts_from_the_priced_search_multipliers(monkeypatch,
                                                                        whole) -> None:
    # On the penalty path the dual bound after the windows (or after CP-SAT on the whole
    # model) starts from the memory multipliers the priced search's dual bound reached.
    problem = build(chain(40, 3, seed=0))
    options = SolveOptions(time_limit=3.0, whole_model_labels=10**6 if whole else 10,
                           num_workers=1, passes=())
    priced, started = [], []
    detail, bound = solver.solve.dual_bound_detail, solver.solve.dual_bound

    def spied_detail(*args, **kwargs):
        priced.append(detail(*args, **kwargs))
        return priced[-1]

    def spied_bound(*args, start=None, **kwargs):
        started.append(start)
        return bound(*args, start=start, **kwargs)

    def unproven(*args, **kwargs):
        raw = solve_model(*args, **kwargs)
        return replace(raw, status=Status.FEASIBLE, bound=0)

    solve_model = cpsat.solve_model
    monkeypatch.setattr(cpsat, "solve_model", unproven)  # the last dual bound runs
    monkeypatch.setattr(solver.solve, "dual_bound_detail", spied_detail)
    monkeypatch.setattr(solver.solve, "dual_bound", spied_bound)
    got = solver.solve.solve(problem, options)
    assert "penalties" in dict(got.timings_ms) and "dual-bound" in dict(got.timings_ms)
    assert len(priced) == 1 and priced[0].multipliers is not None
    assert started == [priced[0].multipliers]


def test_the_priced_dual_bound_sweeps_fit_its_planned_seconds() -> None:
    # PRICE_DUAL_SECONDS 20 at PRICE_SWEEP_SECONDS 3e-8 per entry: 5M entries fit
    # 20 / 0.15 = 133 sweeps; a small core the most, PRICE_SWEEPS; a huge one still one.
    assert solver.solve.PRICE_DUAL_SECONDS == 20.0 and solver.solve.PRICE_SWEEP_SECONDS == 3e-8
    assert solver.solve._price_sweeps(5_000_000) == 133
    assert solver.solve._price_sweeps(1_000) == solver.solve.PRICE_SWEEPS == 240
    assert solver.solve._price_sweeps(10**12) == 1


def test_the_shifted_windows_after_a_gaining_peak_window_get_their_least_share(
        monkeypatch) -> None:
    # The annealed path with a plan that has room for one window at each stage (a search
    # share of 1 %); the peak window gains (the annealing and the first windows are left
    # out, and the peak window returns a cheaper answer found beforehand with more work):
    # the shifted windows after it run as many as fit in AGAIN_LEAST_SHARE of the time
    # limit at ANNEALED_WINDOW_SECONDS each, not the plan's one.
    monkeypatch.setattr(solver.solve, "SEARCH_SHARE", 0.01)
    monkeypatch.setattr(solver.solve, "_annealed", lambda core, start, *args: start)
    windowed = solver.solve._windowed
    given: list[int] = []
    shifted = solver.lns.improve_shifted

    def spied_shifted(core, labels, cut, options, windows, size, **given_too):
        given.append(windows)
        return shifted(core, labels, cut, options, windows, size, **given_too)

    def first_skipped(core, start, options, deadline, laps, plan, lap="windows", *args):
        if lap == "windows":
            return start
        return windowed(core, start, options, deadline, laps, plan, lap, *args)

    problem = build(grid(10, 3, seed=21))
    options = SolveOptions(time_limit=12.0, heuristic_time=1.0, deterministic_time=0.05)
    cheaper = solver.solve.solve(problem, replace(options, deterministic_time=1.0))

    def whole_peak(core, labels, cut, options, rounds, work, nodes):
        assert core.num_nodes == problem.num_nodes  # no reductions: the same labels
        return cheaper.labels, 1

    monkeypatch.setattr(solver.lns, "improve_shifted", spied_shifted)
    monkeypatch.setattr(solver.lns, "improve_peak", whole_peak)
    monkeypatch.setattr(solver.solve, "_windowed", first_skipped)
    got = solver.solve.solve(problem, options)
    assert "windows-again" in dict(got.timings_ms) and got.objective <= cheaper.objective
    assert given == [int(solver.solve.AGAIN_LEAST_SHARE * 12.0
                         / solver.solve.ANNEALED_WINDOW_SECONDS)] == [3]
