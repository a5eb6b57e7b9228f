"""Windows of the large-neighbourhood search against the whole problem (independent cost)."""

from __future__ import annotations

import itertools
from dataclasses import replace
import time

import numpy as np
from oracle import Raw, brute_force, cost_of, random_raw
from test_reductions import build

from solver import lns
from solver.options import SolveOptions
from solver.problem import evaluate, memory_feasible


def _window_of(raw: Raw, nodes: list[int], labels: np.ndarray):
    problem = build(raw)
    return lns._window_problem(problem, nodes, labels, lns._Index.build(problem))


def test_a_window_prices_and_limits_exactly_as_the_whole_problem() -> None:
    """Around a feasible answer, every labelling of a window costs (in the window
    problem) the whole problem's cost minus a constant, and keeps the memory limit
    exactly when the whole problem does: the rest's load is summarized per interval,
    not dropped."""
    checked = tight = 0
    for seed in range(40):
        rng = np.random.default_rng(7000 + seed)
        raw = random_raw(rng, nodes=int(rng.integers(4, 9)), ties=0, forbid=0.0,
                         forbid_pairs=0.0, max_labels=3)
        if raw.limit is None:
            continue
        raw.fixed = [(int(s), int(s) + int(rng.integers(1, 4)), int(rng.integers(1, 5)))
                     for s in rng.integers(0, 6, size=2)]
        labels = None
        for guess in itertools.product(*(range(len(u)) for u in raw.unary)):
            if cost_of(raw, guess) is not None:
                labels = np.array(guess, np.int64)
                break
        if labels is None:
            continue
        nodes = sorted(rng.choice(len(raw.unary), size=3, replace=False).tolist())
        window = _window_of(raw, nodes, labels)
        offsets = set()
        for inner in itertools.product(*(range(len(raw.unary[n])) for n in nodes)):
            full = labels.copy()
            full[nodes] = inner
            whole = cost_of(raw, tuple(int(x) for x in full))
            part = evaluate(window, inner)
            fits = memory_feasible(window, inner)
            assert (whole is not None) == (part is not None and fits), f"seed {seed} {inner}"
            tight += whole is None
            if whole is not None:
                offsets.add(whole - part)
        assert len(offsets) == 1, f"seed {seed}"
        checked += 1
    assert checked >= 15 and tight > 0


def test_windows_are_reproducible_and_never_worsen() -> None:
    """The same windows give the same labels: each ends on CP-SAT's work budget."""
    from solver.heuristics import heuristic
    from test_solve import grid

    raw = grid(7, 4, seed=11)
    problem = build(raw)
    start = heuristic(problem, 30.0).labels
    runs = [lns.improve(problem, start, time.perf_counter() + 60.0, SolveOptions(),
                        window=12, window_time=0.2, max_windows=4) for _ in range(2)]
    assert runs[0] == runs[1]
    labels, windows = runs[0]
    assert windows == 4
    assert cost_of(raw, labels) is not None
    assert cost_of(raw, labels) <= cost_of(raw, start)


def test_shifted_sweeps_reach_a_pair_that_fixed_windows_never_hold_together() -> None:
    """Nodes 1 and 3 gain only by moving together. Windows of 3 nodes stepping by 2
    ([0, 2], [2, 4], [4, 5]) never hold both, so the fixed sweep stays at the start;
    the shifted sweeps start a later sweep at node 1 and reach the brute-force optimum."""
    raw = Raw(unary=[[0, 0] for _ in range(6)],
              edges=[(1, 3, [[5, 9], [9, 0]]), (0, 1, [[0, 1], [1, 0]])],
              memory=[(n, 0, 2, [1, 1]) for n in range(6)], limit=6)
    problem = build(raw)
    start = (0,) * 6
    optimum, _ = brute_force(raw)
    fixed, _ = lns.improve(problem, start, time.perf_counter() + 60.0, SolveOptions(),
                           window=3, window_time=0.2, max_windows=12)
    shifted, solved = lns.improve_shifted(problem, start, time.perf_counter() + 60.0,
                                          SolveOptions(), windows=40, window=3, window_time=0.2)
    assert cost_of(raw, fixed) == 5
    assert cost_of(raw, shifted) == optimum == 0
    assert solved < 40  # the sweeps stopped once three in a row gained nothing


def test_fixed_sweeps_end_after_a_sweep_that_gains_nothing() -> None:
    """The next sweep would solve the same windows from the same labels: the sweeps of
    the pair problem above stop after its three windows (of the 12 allowed) once they
    gain nothing, and a problem no larger than one window gets a single window; a sweep
    that gained is followed by another."""
    raw = Raw(unary=[[0, 0] for _ in range(6)],
              edges=[(1, 3, [[5, 9], [9, 0]]), (0, 1, [[0, 1], [1, 0]])],
              memory=[(n, 0, 2, [1, 1]) for n in range(6)], limit=6)
    problem = build(raw)
    far = time.perf_counter() + 60.0
    labels, solved = lns.improve(problem, (0,) * 6, far, SolveOptions(), window=3,
                                 window_time=0.2, max_windows=12)
    assert (cost_of(raw, labels), solved) == (5, 3)
    labels, solved = lns.improve(problem, (0,) * 6, far, SolveOptions(), window=6,
                                 window_time=0.2)
    assert (cost_of(raw, labels), solved) == (brute_force(raw)[0], 2) == (0, 2)
    labels, solved = lns.improve(problem, (1, 0, 0, 0, 0, 0), far, SolveOptions(), window=3,
                                 window_time=0.2, max_windows=12)
    assert cost_of(raw, labels) == 5 and solved == 6  # the first window gains 1


def test_shifted_windows_keep_the_limit_and_reach_the_optimum_when_whole() -> None:
    """On random problems with a memory limit: every answer keeps it (checked
    by the independent oracle) and never costs more than the start; a window as large
    as the problem reaches the brute-force optimum; runs are reproducible."""
    checked = 0
    for seed in range(30):
        case = _limited_case(9100 + seed)
        if case is None:
            continue
        raw, found, start = case
        problem = build(raw)
        small = [lns.improve_shifted(problem, start, time.perf_counter() + 60.0, SolveOptions(),
                                     windows=10, window=3, window_time=0.1) for _ in range(2)]
        assert small[0] == small[1], f"seed {seed}"
        assert cost_of(raw, small[0][0]) is not None
        assert cost_of(raw, small[0][0]) <= cost_of(raw, start)
        whole, _ = lns.improve_shifted(problem, start, time.perf_counter() + 60.0, SolveOptions(),
                                       windows=1, window=7, window_time=1.0)
        assert cost_of(raw, whole) == found[0], f"seed {seed}"
        checked += 1
    assert checked >= 10


def test_a_peak_window_trades_memory_between_distant_nodes() -> None:
    """Nodes 0 and 9 hold memory over the whole program and only one of them fits on
    its large label; node 0's large label pays only if node 1 follows it. Windows of
    3 consecutive nodes never hold 0 and 9 together, so the shifted sweeps stay at the
    start; the window of the nodes live at the peak (0 and 9, node 1 as a neighbour)
    reaches the brute-force optimum, keeping the limit."""
    raw = Raw(unary=[[10, 0]] + [[0, 0]] * 8 + [[3, 0]],
              edges=[(0, 1, [[0, 9], [9, 0]])],
              memory=[(0, 0, 10, [1, 5]), (9, 0, 10, [1, 5])]
              + [(n, n, n + 1, [1, 1]) for n in range(1, 9)], limit=7)
    problem = build(raw)
    start = (0,) * 9 + (1,)
    optimum, _ = brute_force(raw)
    assert lns.peak_nodes(problem, start, 10) == [0, 1, 9]
    shifted, _ = lns.improve_shifted(problem, start, time.perf_counter() + 60.0,
                                     SolveOptions(), windows=40, window=3, window_time=0.2)
    peaked, solved = lns.improve_peak(problem, start, time.perf_counter() + 60.0,
                                      SolveOptions(), rounds=3, work=1.0, max_nodes=10)
    assert cost_of(raw, start) == cost_of(raw, shifted) == 10
    assert cost_of(raw, peaked) == optimum == 3
    assert solved == 2  # the second window, around the new peak, gained nothing


def test_peak_windows_keep_the_limit_and_never_worsen() -> None:
    """On random problems with a memory limit every peak window's answer keeps it
    (independent oracle), never costs more than the start, and is reproducible."""
    checked = 0
    for seed in range(20):
        case = _limited_case(9400 + seed)
        if case is None:
            continue
        raw, _, start = case
        problem = build(raw)
        runs = [lns.improve_peak(problem, start, time.perf_counter() + 60.0, SolveOptions(),
                                 rounds=3, work=0.2, max_nodes=4) for _ in range(2)]
        assert runs[0] == runs[1], f"seed {seed}"
        assert cost_of(raw, runs[0][0]) is not None
        assert cost_of(raw, runs[0][0]) <= cost_of(raw, start)
        checked += 1
    assert checked >= 8


def _limited_case(seed: int):
    """A random 7-node problem with a memory limit, its brute-force optimum and the first
    feasible assignment in lexicographic order (a poor start), or ``None`` when it has no
    limit or no feasible assignment."""
    rng = np.random.default_rng(seed)
    raw = random_raw(rng, nodes=7, ties=0, forbid=0.0, forbid_pairs=0.0, max_labels=3)
    found = brute_force(raw)
    if raw.limit is None or found is None:
        return None
    start = next(guess for guess in itertools.product(*(range(len(u)) for u in raw.unary))
                 if cost_of(raw, guess) is not None)
    return raw, found, start


def test_shifted_windows_end_on_the_work_they_were_given(monkeypatch) -> None:
    """With ``work_limit`` the windows stop once CP-SAT's deterministic time over them
    reaches it (each window here reports one unit): 2.5 units, three windows; the
    windows solve what they did without the limit, and CP-SAT's reported work is the
    same on a second run (the reproducible mode)."""
    from solver import cpsat

    raw = Raw(unary=[[0, 3], [2, 0]] * 10,
              edges=[(n, n + 1, [[0, 4], [4, 0]]) for n in range(19)])
    problem = build(raw)
    start = (1,) * 20
    heard: list[float] = []
    solve_model = cpsat.solve_model

    def one_unit(*args, **kwargs):
        raw_result = solve_model(*args, **kwargs)
        heard.append(raw_result.work)
        return replace(raw_result, work=1.0)

    monkeypatch.setattr(cpsat, "solve_model", one_unit)
    deadline = time.perf_counter() + 60.0
    _, solved = lns.improve_shifted(problem, start, deadline, SolveOptions(), windows=40,
                                    window=3, work_limit=2.5)
    assert solved == 3
    _, unlimited = lns.improve_shifted(problem, start, deadline, SolveOptions(), windows=40,
                                       window=3)
    assert unlimited > 3
    assert all(work >= 0 for work in heard)
    heard.clear()
    for _ in range(2):
        lns.improve_shifted(problem, start, deadline, SolveOptions(), windows=2, window=3)
    assert heard[:2] == heard[2:]
