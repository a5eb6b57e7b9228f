"""toulbar2 with bisected memory penalties, against brute force (the independent
oracle): every answer keeps the rules and the memory limit, states its true cost,
is often optimal, and is reproducible."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import brute_force, cost_of, random_raw
from test_reductions import build

from solver.errors import ProblemError
from solver.dual_bound import dual_bound_detail
from solver.penalties import (GROWTH, PRICE_GROWTH, PRICE_LEAST_ROUNDS, PRICE_SCALE,
                              _ScaledPrices, _Weights, penalty_search, price_search)
from solver.plan import Plan
from solver.problem import make_problem


def _binding_raw(rng: np.random.Generator):
    """A random problem whose memory-free optimum breaks the limit: the limit lies
    half-way between the smallest possible peak and that optimum's peak."""
    raw = random_raw(rng, nodes=int(rng.integers(3, 8)), max_labels=4, ties=0,
                     functional=0.2, memory=False)
    free = brute_force(raw)
    if free is None:
        return None
    raw.memory = [(n, int(rng.integers(0, 2)), int(rng.integers(2, 4)),
                   [int(x) for x in rng.integers(0, 10, size=len(u))])
                  for n, u in enumerate(raw.unary)]
    lowest = sum(min(use[3]) for use in raw.memory)
    peak = sum(use[3][free[1][use[0]]] for use in raw.memory)
    raw.limit = (lowest + peak) // 2
    return raw if peak > raw.limit else None


def test_weights_grow_then_bisect_between_their_ends_geometrically() -> None:
    """Node 0 breaks the limit three rounds running, then keeps clear twice, then
    breaks; node 1 never breaks. The weights, worked by hand: growth by GROWTH
    from w0 while no upper end is known, then the geometric mean of the ends."""
    weights = _Weights(2)
    broke, clear = np.array([True, False]), np.array([False, False])
    expected = [1.0, GROWTH, GROWTH**2]
    for want in expected:
        weights.update(broke, w0=1.0)
        assert weights.w[0] == pytest.approx(want)
    weights.update(clear, w0=1.0)  # ends GROWTH and GROWTH**2
    assert weights.w[0] == pytest.approx(GROWTH**1.5)
    weights.update(clear, w0=1.0)  # ends GROWTH and GROWTH**1.5
    assert weights.w[0] == pytest.approx(GROWTH**1.25)
    weights.update(broke, w0=1.0)  # ends GROWTH**1.25 and GROWTH**1.5
    assert weights.w[0] == pytest.approx(GROWTH**1.375)
    assert weights.w[1] == 0.0  # never broke: no penalty on it


def test_the_first_penalised_round_weighs_the_penalty_as_the_answer_costs(monkeypatch) -> None:
    # One node: label 0 costs 10 and uses 10 bytes, label 1 costs 100 and uses 1; the
    # limit is 5. Round 1 (no penalty) takes label 0 and breaks the limit; label 0's extra
    # usage is 9, w0 = 10 / 9 (its penalty as large as its cost), so round 2's penalty
    # row is w0 * [9, 0] = [10, 0].
    import solver.penalties as penalties

    rows = []
    solve = penalties.solve_wcsp

    def recorded(problem, extra, **kwargs):
        rows.append([int(x) for r in extra for x in r])
        return solve(problem, extra, **kwargs)

    monkeypatch.setattr(penalties, "solve_wcsp", recorded)
    problem = make_problem([[10, 100]], memory=[(0, 0, 1, [10, 1])], memory_limit=5)
    assert penalty_search(problem, rounds=2) == ((1,), 100)
    assert rows == [[0, 0], [10, 0]]


@pytest.mark.parametrize(("search", "seeds", "least"), [
    ("per-node", 6100, 20), ("hinted", 6400, 15), ("priced", 6700, 20)])
def test_answers_keep_the_limit_and_are_often_optimal(search: str, seeds: int, least: int) -> None:
    # The hint, where given: an answer that keeps the limit (every node on its smallest
    # usage); the prices: the memory multipliers of the dual bound on the same problem.
    # The answers must keep every rule and the limit either way, and be reproducible.
    tried = optimal = 0
    for seed in range(50):
        rng = np.random.default_rng(seeds + seed)
        raw = _binding_raw(rng)
        want = None if raw is None else brute_force(raw)
        if want is None:
            continue
        problem = build(raw)
        if search == "priced":
            prices = dual_bound_detail(problem, 30.0, sweeps=40).prices
            assert prices is not None and len(prices) == len(problem.memory)
            got = price_search(problem, np.array(prices), rounds=8)
            assert got == price_search(problem, np.array(prices), rounds=8), f"seed {seed}"
        else:
            hint = [int(np.argmin(use[3])) for use in raw.memory] if search == "hinted" else None
            if hint is not None and cost_of(raw, hint) is None:
                continue
            got = penalty_search(problem, rounds=8, hint=hint)
        tried += 1
        if got is None:
            continue
        labels, cost = got
        assert cost_of(raw, labels) == cost >= want[0], f"seed {seed}"
        optimal += cost == want[0]
    assert tried >= least
    assert optimal >= 0.6 * tried


class _Fits:
    """A stand-in for a flat view: whether labels keep the limit follows a script."""

    def __init__(self, answers: list[bool]) -> None:
        self.answers = answers
        self.size = 2

    def fits(self, labels: np.ndarray) -> bool:
        return self.answers.pop(0)

    def penalty_per_use(self, prices: np.ndarray) -> np.ndarray:
        return np.array([1.0, 0.0])


@pytest.mark.parametrize(("fits", "scales"), [
    # Breaks twice (growth to 2, 4), keeps (the ends 2 and 4: 2**1.5), breaks (the ends
    # 2**1.5 and 4: 2**1.75).
    ([False, False, True, False], [2.0, 4.0, 2**1.5, 2**1.75]),
    # Keeps at once: the scale shrinks while no breaking one is known, then bisects.
    ([True, False], [1 / 2, 2**-0.5]),
])
def test_the_price_scale_grows_or_shrinks_then_bisects_geometrically(fits, scales) -> None:
    # Scales in units of the first (3.0), worked by hand for PRICE_GROWTH 2.
    prices = _ScaledPrices(_Fits(fits), np.ones(1), 3.0)  # type: ignore[arg-type]
    assert prices.first()[0] == 3.0
    assert PRICE_GROWTH == 2.0
    for want in scales:
        assert prices.after(np.zeros(1, np.int64))[0] == pytest.approx(want * 3.0)


def test_the_first_price_rounds_run_whatever_the_work_left(monkeypatch) -> None:
    # With no planned work left the per-node search runs its first round only; the
    # priced search its first PRICE_LEAST_ROUNDS. The problem of the test below with an
    # edge of zeros (a round's estimate counts table entries; no round ends early), and a
    # use live at no time listed first: its price (1e6) reaches no label, the others'
    # (1 per byte) do, so the first priced round's rows are 8 * [10, 1] for both nodes.
    import solver.penalties as penalties

    rows = []
    solve = penalties.solve_wcsp

    def recorded(problem, extra, **kwargs):
        rows.append(None if extra is None else [[int(x) for x in r] for r in extra])
        return solve(problem, extra, **kwargs)

    monkeypatch.setattr(penalties, "solve_wcsp", recorded)
    problem = make_problem([[0, 5], [0, 3]], [(0, 1, [[0, 0], [0, 0]])],
                           memory=[(0, 4, 4, [7, 7]), (0, 0, 2, [10, 1]), (1, 1, 3, [10, 1])],
                           memory_limit=15)
    assert penalty_search(problem, rounds=6) is not None
    assert len(rows) == 6
    rows.clear()
    assert penalty_search(problem, rounds=6, work=Plan(0.0)) is not None
    assert len(rows) == 1
    rows.clear()
    got = price_search(problem, [1e6, 1.0, 1.0], rounds=6, work=Plan(0.0))
    assert len(rows) == PRICE_LEAST_ROUNDS == 5
    assert rows[0] == [[80, 8], [80, 8]] and PRICE_SCALE == 8.0
    assert got is not None and got[1] in (3, 5)  # either node on its small label
    with pytest.raises(ProblemError, match="prices"):
        price_search(problem, [1.0, 1.0])


def test_the_limit_moves_the_answer() -> None:
    # Memory-free, both nodes take label 0 (cost 0) but use 10 bytes each at once;
    # the limit 15 leaves room for one: the cheapest way is node 1 to label 1.
    problem = make_problem([[0, 5], [0, 3]], memory=[(0, 0, 2, [10, 1]), (1, 1, 3, [10, 1])],
                           memory_limit=15)
    assert penalty_search(problem) == ((0, 1), 3)


def test_same_input_same_answer() -> None:
    rng = np.random.default_rng(8)
    raw = random_raw(rng, nodes=40, max_labels=5, density=0.15, ties=0, forbid=0.0,
                     forbid_pairs=0.0)
    raw.limit = 60
    problem = build(raw)
    first = penalty_search(problem, rounds=6, backtracks=20)
    assert first is not None and cost_of(raw, first[0]) == first[1]
    assert penalty_search(problem, rounds=6, backtracks=20) == first
    hinted = penalty_search(problem, rounds=6, backtracks=20, hint=first[0])
    assert hinted is not None and cost_of(raw, hinted[0]) == hinted[1]
    assert penalty_search(problem, rounds=6, backtracks=20, hint=first[0]) == hinted


def _searched_case():
    """A 40-node problem whose limit binds, the start (every node on its smallest usage),
    and the backtracks and dual sweeps the solve gives the penalty searches on it."""
    import solver.solve as solve_module
    from solver.solve import Answer

    rng = np.random.default_rng(8)
    raw = random_raw(rng, nodes=40, max_labels=5, density=0.15, ties=0, forbid=0.0,
                     forbid_pairs=0.0)
    raw.limit = 60
    problem = build(raw)
    usage = {use[0]: use[3] for use in raw.memory}
    smallest = tuple(int(np.argmin(usage.get(n, unary))) for n, unary in enumerate(raw.unary))
    entries = sum(edge.costs.size for edge in problem.edges)
    backtracks = min(solve_module.PENALTY_MAX_BACKTRACKS,
                     max(solve_module.PENALTY_MIN_BACKTRACKS, solve_module.PENALTY_SEARCH // entries))
    return (raw, problem, Answer(smallest, cost_of(raw, smallest)), backtracks,
            solve_module._price_sweeps(entries))


def test_both_searches_the_same_answer_beside_or_in_turn(monkeypatch) -> None:
    # The per-node search runs in a child process beside the priced one; run in turn in
    # this process instead, the answer is the same, and it is the cheaper of the two
    # searches' answers (checked against each search run alone, the priced one on the
    # multipliers of the dual bound of the planned sweeps, which is the bound returned).
    import time

    import solver.solve as solve_module
    from solver.beside import Beside
    from solver.laps import Laps
    from solver.solve import _penalty_searched

    raw, problem, start, backtracks, sweeps = _searched_case()
    assert start.cost is not None
    forked, bound = _penalty_searched(problem, start, time.perf_counter() + 60, Laps())
    monkeypatch.setattr(solve_module, "beside", lambda work: Beside(None, None, (True, work())))
    assert _penalty_searched(problem, start, time.perf_counter() + 60, Laps()) == (forked, bound)
    dual = dual_bound_detail(problem, 60.0, sweeps=sweeps, pricing=True)
    assert bound == dual and dual.prices is not None and dual.multipliers is not None
    priced = price_search(problem, np.array(dual.prices), solve_module.PENALTY_ROUNDS, backtracks)
    per_node = penalty_search(problem, solve_module.PENALTY_ROUNDS, backtracks)
    cheapest = min([start.cost] + [found[1] for found in (priced, per_node) if found is not None])
    assert forked.cost == cheapest == cost_of(raw, forked.labels)
    assert forked.cost >= bound.value
    # With one worker (num_workers=1) no child is started: the priced search alone.
    monkeypatch.setattr(solve_module, "beside", None)
    single, _ = _penalty_searched(problem, start, time.perf_counter() + 60, Laps(), workers=1)
    assert single.cost == min([start.cost] + ([priced[1]] if priced else []))


def test_large_cores_get_two_priced_searches_half_a_step_apart(monkeypatch) -> None:
    # Above PENALTY_LARGE_ENTRIES (here 0: every core) the search beside the priced one
    # is the priced search again from PRICE_OFFSET times its first scale, on the same
    # prices (those of the bound found with ``pricing``); the answer is the cheaper of
    # the two (run in turn here), each checked against a run alone. The bound returned
    # is the higher of the prices' bound and the default bound in as many sweeps, aimed
    # at the start's cost (the rows taken as large ones, as on the cores this runs on).
    import time

    import solver.dual_memory

    import solver.solve as solve_module
    from solver.beside import Beside
    from solver.laps import Laps
    from solver.solve import _penalty_searched

    monkeypatch.setattr(solve_module, "PENALTY_LARGE_ENTRIES", 0)
    monkeypatch.setattr(solver.dual_memory, "EXACT_ENTRIES", -1)
    monkeypatch.setattr(solve_module, "beside", lambda work: Beside(None, None, (True, work())))
    scales = []
    priced_search = solve_module.price_search

    def spied(*args, **kwargs):
        scales.append(kwargs["scale"])
        return priced_search(*args, **kwargs)

    monkeypatch.setattr(solve_module, "price_search", spied)
    bounds = []
    detail = solve_module.dual_bound_detail

    def recorded(*args, **kwargs):
        bounds.append(kwargs)
        return detail(*args, **kwargs)

    monkeypatch.setattr(solve_module, "dual_bound_detail", recorded)
    raw, problem, start, backtracks, sweeps = _searched_case()
    got, bound = _penalty_searched(problem, start, time.perf_counter() + 60, Laps())
    first = solve_module.PRICE_SCALE
    assert sorted(scales) == [first, pytest.approx(solve_module.PRICE_OFFSET * first)]
    priced = dual_bound_detail(problem, 60.0, sweeps=sweeps, pricing=True)
    alone = [priced_search(problem, np.array(priced.prices), solve_module.PENALTY_LARGE_ROUNDS,
                           backtracks, scale=scale) for scale in scales]
    assert got.cost == min([start.cost] + [f[1] for f in alone if f is not None])
    assert got.cost == cost_of(raw, got.labels) >= bound.value
    lp = dual_bound_detail(problem, 60.0, sweeps=sweeps, target=start.cost)
    assert bound == max(priced, lp, key=lambda b: b.value)
    assert [(kwargs["sweeps"], kwargs.get("target"), kwargs.get("pricing", False))
            for kwargs in bounds] == [(sweeps, start.cost, False), (sweeps, None, True)]


def test_ties_are_refused() -> None:
    problem = make_problem([[0, 1], [1, 0]], ties=[(0, 1)])
    with pytest.raises(ProblemError):
        penalty_search(problem)


def test_no_round_starts_that_would_end_past_the_deadline(monkeypatch) -> None:
    # Each toulbar2 solve takes 0.6 s (wall clock): with 1 s to go the second round
    # would end past the deadline, so only the first runs.
    import time

    import solver.penalties as penalties

    solve = penalties.solve_wcsp
    calls = []

    def slow(*args, **kwargs):
        calls.append(1)
        time.sleep(0.6)
        return solve(*args, **kwargs)

    monkeypatch.setattr(penalties, "solve_wcsp", slow)
    problem = make_problem([[0, 5], [0, 3]], memory=[(0, 0, 2, [10, 1]), (1, 1, 3, [10, 1])],
                           memory_limit=15)
    got = penalty_search(problem, rounds=6, deadline=time.perf_counter() + 1.0)
    assert len(calls) == 1
    assert got is not None and got[1] in (3, 5)


def test_wide_nodes_fixed_keep_their_labels_and_the_limit(monkeypatch) -> None:
    # With the nodes of more than 2 labels fixed at the start's labels, the penalty
    # search's answer keeps those labels, keeps every rule and the limit (checked by
    # the oracle's own evaluation), and costs at most the start.
    import time

    import solver.solve as solve_module
    from solver.laps import Laps
    from solver.solve import Answer, _narrowed_penalty_searched

    monkeypatch.setattr(solve_module, "PENALTY_FIXED_LABELS", 2)
    tried = moved = 0
    for seed in range(40):
        rng = np.random.default_rng(9300 + seed)
        raw = _binding_raw(rng)
        if raw is None or max(len(u) for u in raw.unary) <= 2:
            continue
        problem = build(raw)
        start = brute_force(raw)
        if start is None:
            continue
        # The start: the optimum's labels on the wide nodes, the smallest usage elsewhere.
        labels = [int(x) if len(u) > 2 else int(np.argmin(raw.memory[n][3]))
                  for n, (x, u) in enumerate(zip(start[1], raw.unary))]
        cost = cost_of(raw, labels)
        if cost is None:
            continue
        tried += 1
        got = _narrowed_penalty_searched(problem, Answer(tuple(labels), cost),
                                         time.perf_counter() + 60, Laps())
        assert cost_of(raw, got.labels) == got.cost <= cost, f"seed {seed}"
        assert got.cost >= start[0]
        assert all(a == b for a, b, u in zip(got.labels, labels, raw.unary) if len(u) > 2)
        moved += got.cost < cost
    assert tried >= 8 and moved >= 1
