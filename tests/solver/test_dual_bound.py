"""The dual lower bound against a brute-force oracle: never above the optimum
without memory, never below the trivial bound, exact on trees and chains."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator

import numpy as np
import pytest
from oracle import BIG, Raw, brute_force, random_raw
from test_plan import chain
from test_reductions import build

from solver.dual_bound import dual_bound, dual_bound_detail
import solver.dual_bound
import solver.dual_memory
from solver.dual_memory import MemoryRows, ascend_multipliers, exact_multipliers, node_part
from solver.problem import FORBIDDEN, Problem, make_problem, peak_memory


def trivial_bound(problem: Problem) -> int:
    """Smallest allowed unary per node plus smallest allowed entry per table."""
    return (sum(int(c[c < FORBIDDEN].min()) for c in problem.unary)
            + sum(int(e.costs[e.costs < FORBIDDEN].min()) for e in problem.edges))


def relaxed_optimum(raw: Raw) -> int | None:
    """The brute-force optimum with the memory rules dropped (what the bound bounds)."""
    best = brute_force(dataclasses.replace(raw, memory=[], fixed=[], limit=None))
    return None if best is None else best[0]


def with_binding_limit(raw: Raw) -> tuple[int, int] | None:
    """Sets ``raw``'s memory limit one byte below the peak of its optimum without the
    memory rule, so that the rule binds: (that optimum, the brute-force optimum with the
    rule), or ``None`` where either does not exist."""
    relaxed = brute_force(dataclasses.replace(raw, memory=[], fixed=[], limit=None))
    if relaxed is None:
        return None
    raw.limit = peak_memory(build(raw), relaxed[1]) - 1
    full = brute_force(raw)
    return None if full is None else (relaxed[0], full[0])


def binding_limit_problems(first_seed: int, seeds: Iterable[int], nodes: tuple[int, int],
                           labels: int | tuple[int, int], forbid_pairs: bool = False
                           ) -> Iterator[tuple[int, np.random.Generator, Problem, tuple[int, int]]]:
    """``(seed, its generator, problem, optima)`` of random loopy problems with memory whose
    limit binds (:func:`with_binding_limit`), one per seed where both optima exist: node
    counts drawn from ``nodes``, labels per node at most ``labels`` (or drawn from it)."""
    for seed in seeds:
        rng = np.random.default_rng(first_seed + seed)
        count = int(rng.integers(*nodes))
        most = labels if isinstance(labels, int) else int(rng.integers(*labels))
        density = float(rng.uniform(0.3, 0.9))
        extra = {"forbid_pairs": float(rng.uniform(0, 0.2))} if forbid_pairs else {}
        raw = random_raw(rng, nodes=count, max_labels=most, density=density, ties=0,
                         memory=True, **extra)
        optima = with_binding_limit(raw)
        if optima is not None:
            yield seed, rng, build(raw), optima


def _counted_exact_steps(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """A list that gets an entry for each exact multiplier step the bound takes from now."""
    steps: list[bool] = []
    exact_step = solver.dual_bound._exact_step

    def counted(*args, **kwargs):
        steps.append(True)
        return exact_step(*args, **kwargs)

    monkeypatch.setattr(solver.dual_bound, "_exact_step", counted)
    return steps


def random_tree(rng: np.random.Generator, nodes: int, chain: bool) -> Raw:
    """A random tree (or chain) with forbidden labels and pairs, edges either way round."""
    ks = [int(rng.integers(1, 5)) for _ in range(nodes)]
    raw = Raw([[int(rng.integers(0, 40)) for _ in range(k)] for k in ks])
    for v in range(1, nodes):
        u = v - 1 if chain else int(rng.integers(0, v))
        table = rng.integers(0, 40, size=(ks[u], ks[v]))
        table[rng.random(size=table.shape) < 0.2] = BIG
        if rng.random() < 0.5:
            raw.edges.append((u, v, table.tolist()))
        else:
            raw.edges.append((v, u, table.T.tolist()))
    raw.forbidden = [(n, a) for n in range(nodes) for a in range(ks[n]) if rng.random() < 0.1]
    return raw


@pytest.mark.parametrize("block", range(3))
def test_bound_between_trivial_and_optimum(block: int) -> None:
    better = 0
    for seed in range(block * 60, block * 60 + 60):
        rng = np.random.default_rng(7000 + seed)
        raw = random_raw(rng, nodes=int(rng.integers(2, 9)), max_labels=int(rng.integers(1, 4)),
                         density=float(rng.uniform(0.2, 0.8)), ties=int(rng.integers(0, 3)),
                         memory=seed % 4 != 0, forbid_pairs=float(rng.uniform(0, 0.3)),
                         functional=0.3 if seed % 3 == 0 else 0.0)
        problem = build(raw)
        sweeps = int(rng.integers(0, 60))
        relaxed = relaxed_optimum(raw)
        full = brute_force(raw)
        # FORBIDDEN is claimed only when there is no assignment at all.
        free = dual_bound(problem, 30.0, sweeps=sweeps, memory=False)
        with_memory = dual_bound(problem, 30.0, sweeps=sweeps)
        if relaxed is None:
            continue  # any bound holds
        assert trivial_bound(problem) <= free <= relaxed, f"seed {seed}"
        assert trivial_bound(problem) <= with_memory, f"seed {seed}"
        if full is not None:
            assert with_memory <= full[0], f"seed {seed}"
        better += free > trivial_bound(problem)
    assert better >= 8  # the dual step does something on these loopy problems


def test_memory_multipliers() -> None:
    # Both cheap labels need 5 bytes at time 1, the limit is 5: one node pays 10.
    # Without the memory rule the optimum is 0; the LP with the memory row has 10.
    problem = make_problem([[0, 10], [0, 10]], memory=[(0, 0, 2, [5, 0]), (1, 1, 3, [5, 0])],
                           memory_limit=5)
    assert dual_bound(problem, 30.0, sweeps=200, memory=False) == 0
    assert dual_bound(problem, 30.0, sweeps=200) == 10
    assert dual_bound_detail(problem, 30.0, sweeps=200, target=10).stopped == "target"
    # Without a sweep cap or a target, both stages stop once the bound no longer moves,
    # not at the deadline (a small problem would otherwise hold the whole time limit).
    detail = dual_bound_detail(problem, 600.0)
    assert detail.stopped == "converged" and detail.value == 10
    # Fixed amounts count against the limit: a limit of 8 with 3 fixed is the same.
    problem = make_problem([[0, 10], [0, 10]], memory=[(0, 0, 2, [5, 0]), (1, 1, 3, [5, 0])],
                           fixed_memory=[(0, 4, 3)], memory_limit=8)
    assert dual_bound(problem, 30.0, sweeps=200) == 10


@pytest.mark.parametrize("pricing", [False, True])
@pytest.mark.parametrize("exact", [True, False])
def test_memory_multipliers_as_prices_per_use(exact: bool, pricing: bool,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    # The problem above with a third use live at no check (start = end). The memory rows
    # are checked at the uses' starts, times 0 and 1; only time 1 binds (10 bytes, limit
    # 5). The dual function is 2 * min(5 mu, 10) - 5 mu there: its best multiplier is
    # mu = 2 (bound 10), at time 0 it is 0. Use 0 is live at both checks, use 1 at time 1,
    # use 2 at none: prices 2, 2 and 0 per byte.
    if not exact:
        monkeypatch.setattr(solver.dual_memory, "EXACT_ENTRIES", -1)
    problem = make_problem([[0, 10], [0, 10]],
                           memory=[(0, 0, 2, [5, 0]), (1, 1, 3, [5, 0]), (0, 5, 5, [3, 0])],
                           memory_limit=5)
    detail = dual_bound_detail(problem, 30.0, sweeps=200, pricing=pricing)
    assert detail.value == 10
    assert detail.prices == pytest.approx((2.0, 2.0, 0.0), abs=1e-6)
    # Without the memory rule there are no multipliers.
    assert dual_bound_detail(problem, 30.0, sweeps=200, memory=False).prices is None


@pytest.mark.parametrize("path", ["default", "small", "subgradient"])
@pytest.mark.parametrize("block", range(2))
def test_both_multiplier_stages_below_the_optimum(block: int, path: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # Loopy problems whose limit is one byte below the peak of the optimum without
    # the memory rule (so the rule binds): with 40 sweeps the subgradient stage gets
    # some and the alternating stage the rest; the bound, certified at the better of
    # their points, never exceeds the brute-force optimum with the memory rule. As
    # the bound goes by default (a short subgradient stage, exact steps, the scale
    # searches), and as the priced search's bound goes (``pricing``) on small rows
    # (exact steps, the scale searches) and on large ones (subgradient steps
    # throughout); and from a start (10 sweeps
    # from the multipliers of the first bound, or from random ones).
    if path == "subgradient":
        monkeypatch.setattr(solver.dual_memory, "EXACT_ENTRIES", -1)
    pricing = path != "default"
    above_relaxed = tried = 0
    # (The default bound gets 60 sweeps: 9 of subgradient steps leave room for the two
    # rounds of exact steps it needs to take any.)
    sweeps = 40 if pricing else 60
    for seed, rng, problem, optima in binding_limit_problems(
            9100, range(block * 60, block * 60 + 60), (3, 9), (2, 4), forbid_pairs=True):
        got = dual_bound_detail(problem, 30.0, sweeps=sweeps, pricing=pricing)
        assert got == dual_bound_detail(problem, 30.0, sweeps=sweeps, pricing=pricing), seed
        assert got.value <= optima[1], f"seed {seed}"
        assert got.multipliers is not None
        for start in (got.multipliers, tuple(rng.exponential(5.0, len(got.multipliers)))):
            warm = dual_bound_detail(problem, 30.0, sweeps=10, start=start, pricing=pricing)
            assert warm.value <= optima[1], f"seed {seed}"
        tried += 1
        above_relaxed += got.value > optima[0]
    assert tried >= 15 and above_relaxed >= 5  # the memory rule raises the bound


def test_multiplier_steps_never_lower_the_node_terms() -> None:
    # Three nodes whose cheap labels need 6 bytes each at the same time, limit 10:
    # one may be cheap, so the optimum is 8. The LP (and the best multiplier, 2/3
    # per byte) has 12 - 4 * 10/6 = 16/3; the kept steps only raise the node terms
    # (messages fixed at zero) and stay below it.
    problem = make_problem([[0, 4], [0, 4], [0, 4]],
                           memory=[(n, 0, 2, [6, 0]) for n in range(3)], memory_limit=10)
    live = [np.ones(2, bool)] * 3
    rows = MemoryRows.build(problem, live, np.array([0, 2, 4]))
    node = np.array([0.0, 4.0] * 3)
    start = np.array([0, 2, 4, 6])
    q = np.zeros(rows.checks)
    before, _ = node_part(rows, node, start, q)
    q, _ = ascend_multipliers(rows, node, start, q, 0.01, 200)
    after, _ = node_part(rows, node, start, q)
    assert before == 0 and 5 < after <= 16 / 3 + 1e-9
    assert dual_bound(problem, 30.0, sweeps=40) == 6
    # The exact step finds the best multiplier (2/3 per byte) and so the LP's 16/3.
    best = exact_multipliers(rows, node, start, 30.0)
    assert best is not None and np.allclose(best, [2 / 3])
    assert abs(node_part(rows, node, start, best)[0] - 16 / 3) < 1e-6


def test_unsolved_exact_steps_fall_back_to_subgradient_steps(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # As if every LP were cut by the clock: the subgradient steps take over and still
    # reach the LP value (10, as in test_memory_multipliers).
    monkeypatch.setattr(solver.dual_bound, "exact_multipliers", lambda *args: None)
    problem = make_problem([[0, 10], [0, 10]], memory=[(0, 0, 2, [5, 0]), (1, 1, 3, [5, 0])],
                           memory_limit=5)
    assert dual_bound(problem, 30.0, sweeps=200) == 10


def test_memory_rows_without_usage_or_room() -> None:
    # Every kept label uses no memory: the rows add nothing, and the bound is the
    # optimum (3, labels (0, 1)). With a fixed amount over the limit no multiplier
    # step is found by the LP (infeasible); the bound stays valid (the rule cannot be
    # kept, so any bound holds, but it must not fail).
    edges = [(0, 1, [[4, 3], [0, 9]])]
    problem = make_problem([[0, 1], [2, 0]], edges=edges,
                           memory=[(0, 0, 2, [0, 0]), (1, 1, 3, [0, 0])], memory_limit=5)
    assert dual_bound(problem, 30.0, sweeps=20) == 3
    problem = make_problem([[0, 1], [2, 0]], edges=edges,
                           memory=[(0, 0, 2, [1, 0]), (1, 1, 3, [1, 0])],
                           fixed_memory=[(0, 4, 9)], memory_limit=5)
    assert dual_bound(problem, 30.0, sweeps=20) >= 3


@pytest.mark.parametrize("chain", [True, False])

def test_exact_on_trees_and_chains(chain: bool) -> None:
    for seed in range(80):
        rng = np.random.default_rng(8000 + seed)
        raw = random_tree(rng, int(rng.integers(1, 9)), chain)
        optimum = relaxed_optimum(raw)
        # On a tree the local-polytope LP is tight and arc consistency decides
        # feasibility, so the bound is the optimum (or FORBIDDEN when there is none).
        got = dual_bound(build(raw), 30.0, sweeps=200)
        assert got == (FORBIDDEN if optimum is None else optimum), f"seed {seed}"


def test_strictly_better_than_trivial() -> None:
    # The module's example: trivial 0, optimum 3 at labels (0, 0).
    problem = make_problem([[0, 5], [3, 0]], [(0, 1, [[0, 9], [9, 0]])])
    assert trivial_bound(problem) == 0
    assert dual_bound(problem, 10.0, sweeps=10) == 3


def test_ties_count_and_memory_can_be_dropped() -> None:
    # The tie forces equal labels: cost 10 either way; without it 0. No label
    # fits the memory limit, so with the memory rule any bound holds.
    problem = make_problem([[0, 10], [10, 0]], ties=[(0, 1)],
                           memory=[(0, 0, 1, [5, 5])], memory_limit=0)
    assert dual_bound(problem, 10.0, sweeps=10, memory=False) == 10
    assert dual_bound(problem, 10.0, sweeps=10) >= 10
    # A mapped tie whose only allowed row is label 1 of node 0 (a None rules out 0).
    problem = make_problem([[0, 10], [4, 7, 1]], ties=[(0, 1, [None, 2])])
    assert dual_bound(problem, 10.0, sweeps=10) == 11


def test_infeasible_reported_as_forbidden() -> None:
    # Every pair forbidden across a chain: arc consistency empties the nodes.
    problem = make_problem([[0, 1], [0, 1], [0]], [(0, 1, [[0, BIG], [BIG, 0]]),
                                                   (1, 2, [[BIG], [BIG]])])
    assert dual_bound(problem, 10.0) == FORBIDDEN
    problem = make_problem([[0, 1]], forbidden=[(0, 0), (0, 1)])
    assert dual_bound(problem, 10.0) == FORBIDDEN


def test_large_costs_and_forbidden_pairs() -> None:
    # Costs near 2**45 (exact in float64) with forbidden pairs on a loopy graph.
    for seed in range(20):
        rng = np.random.default_rng(9000 + seed)
        raw = random_raw(rng, nodes=6, max_labels=3, density=0.6, ties=0, memory=False,
                         forbid_pairs=0.2)
        scale = 2**45 // 20
        raw.unary = [[c * scale + int(rng.integers(0, 1000)) for c in u] for u in raw.unary]
        raw.edges = [(u, v, [[c if c >= BIG else c * scale + 7 for c in row] for row in t])
                     for u, v, t in raw.edges]
        problem = build(raw)
        optimum = relaxed_optimum(raw)
        got = dual_bound(problem, 30.0, sweeps=60)
        if optimum is not None:
            assert trivial_bound(problem) <= got <= optimum, f"seed {seed}"


def test_huge_costs_fall_back_to_trivial() -> None:
    problem = make_problem([[0, 2**55], [3, 0]], [(0, 1, [[0, 2**55], [2**55, 0]])])
    detail = dual_bound_detail(problem, 10.0, sweeps=5)
    assert detail.stopped == "trivial" and detail.value == trivial_bound(problem) == 0


def test_grid_deterministic_and_stops() -> None:
    # A 12x12 grid with 6 labels: loopy, so the bound climbs over many sweeps.
    rng = np.random.default_rng(5)
    side, k = 12, 6
    unary = rng.integers(0, 100, size=(side * side, k)).tolist()
    edges = []
    for r in range(side):
        for c in range(side):
            node = r * side + c
            for other in ((node + 1) if c + 1 < side else None,
                          (node + side) if r + 1 < side else None):
                if other is not None:
                    edges.append((node, other, rng.integers(0, 100, size=(k, k)).tolist()))
    problem = make_problem(unary, edges)
    first = dual_bound_detail(problem, 60.0, sweeps=25)
    second = dual_bound_detail(problem, 60.0, sweeps=25)
    assert first == second and first.sweeps <= 25
    assert first.value > trivial_bound(problem)
    more = dual_bound_detail(problem, 60.0, sweeps=60)
    assert more.value >= first.value  # block-coordinate ascent: no step lowers the bound
    none = dual_bound_detail(problem, 0.0)
    assert none.stopped == "time" and none.sweeps == 0
    assert none.value == trivial_bound(problem)
    assert dual_bound_detail(problem, 60.0, sweeps=60, target=first.value).stopped == "target"


def reference_sweep(layout, m: np.ndarray) -> None:
    """One TRW-S sweep over ``layout``'s levels in plain loops, every min-marginal of a
    level computed afresh from the messages as they are when the level comes."""
    starts = layout.row_start.tolist()
    levels = layout.classes.tolist()
    for weights, classes in ((layout.weight_forward, levels),
                             (layout.weight_backward, levels[::-1])):
        for _, _, _, s0, _, s1, _, _, _, l0, l1 in classes:
            h = [min((float(layout.table[e]) - m[layout.column_slot[e]]
                      for e in range(starts[s], starts[s + 1])), default=np.inf)
                 for s in range(s0, s1)]
            total = [0.0] * (l1 - l0)
            for s in range(s0, s1):
                total[layout.slot_label[s]] += h[s - s0]
            total = [t + float(layout.unary[l0 + i]) for i, t in enumerate(total)]
            for s in range(s0, s1):
                m[s] = h[s - s0] - weights[s] * total[layout.slot_label[s]]


def test_compiled_sweeps_match_sweeps_that_recompute_every_marginal(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A sweep computes, at each level, only the min-marginals of the edges towards the
    # nodes its pass has done, and keeps the others from the pass before (compiled,
    # solver.trws). Against sweeps in plain loops that compute every min-marginal afresh:
    # the same messages, float for float, and the same float bound read from the kept
    # marginals as from a pass over the tables; a sweep cut by the clock leaves them stale.
    layouts = []
    layout_build = solver.dual_bound._Layout.build

    def spied(*args, **kwargs):
        layouts.append(layout_build(*args, **kwargs))
        return layouts[-1]

    monkeypatch.setattr(solver.dual_bound._Layout, "build", spied)
    Messages = solver.dual_bound._Messages
    checked = 0
    for seed in range(12):
        rng = np.random.default_rng(900 + seed)
        raw = random_raw(rng, nodes=int(rng.integers(6, 14)), max_labels=4, density=0.5,
                         ties=0, memory=False)
        layouts.clear()
        dual_bound_detail(build(raw), 60.0, sweeps=1)
        if not layouts:
            continue  # infeasible or trivial: nothing built
        layout = layouts[0]
        kept, afresh = Messages.zeros(layout.slots), np.zeros(layout.slots)
        for _ in range(8):
            assert layout.sweep(kept, float("inf"))
            reference_sweep(layout, afresh)
            assert np.array_equal(kept.m, afresh)
            stale = kept.copy()
            stale.fresh = False
            assert layout.float_bound(kept) == layout.float_bound(stale)
        checked += layout.slots > 0
        if layout.slots:
            assert not layout.sweep(kept, 0.0) and not kept.fresh
    assert checked >= 6


def test_a_start_from_earlier_multipliers_climbs_faster(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    # A chain whose memory limit binds at every step (each node's usage is live with its
    # successors'), its multipliers found by subgradient steps as the priced search's
    # bound finds them on large rows: 20 sweeps from the multipliers of 200 sweeps before
    # reach higher than 20 from zeros; no higher than 400 from zeros reach (the LP dual's
    # optimum bounds both). A start of the wrong length is refused.
    raw = chain(40, 3, seed=3)
    raw.limit = 12
    problem = build(raw)
    monkeypatch.setattr(solver.dual_memory, "EXACT_ENTRIES", -1)
    earlier = dual_bound_detail(problem, 60.0, sweeps=200, pricing=True)
    cold = dual_bound_detail(problem, 60.0, sweeps=20, pricing=True)
    warm = dual_bound_detail(problem, 60.0, sweeps=20, start=earlier.multipliers, pricing=True)
    assert cold.value < warm.value
    assert warm.value <= dual_bound_detail(problem, 60.0, sweeps=400, pricing=True).value + 1
    with pytest.raises(ValueError):
        dual_bound_detail(problem, 60.0, sweeps=20, start=earlier.multipliers[1:])


def test_without_the_time_to_build_its_tables_the_bound_is_trivial(monkeypatch) -> None:
    # Building the tables takes BUILD_SECONDS per table entry whatever the time limit:
    # with no time, or less than that, nothing is built and the bound is the trivial one;
    # with the room, the dual bound (here above the trivial one).
    problem = build(chain(40, 3, seed=0))
    built = []
    layout_build = solver.dual_bound._Layout.build

    def spied(*args, **kwargs):
        built.append(True)
        return layout_build(*args, **kwargs)

    monkeypatch.setattr(solver.dual_bound._Layout, "build", spied)
    none = dual_bound_detail(problem, 0.0, sweeps=20)
    assert (none.value, none.sweeps, none.stopped) == (trivial_bound(problem), 0, "time")
    assert built == []
    entries = sum(edge.costs.size for edge in problem.edges)
    monkeypatch.setattr(solver.dual_bound, "BUILD_SECONDS", 2.0 / entries)  # needs 2 s
    assert dual_bound_detail(problem, 1.0, sweeps=20).value == trivial_bound(problem)
    assert built == []
    assert dual_bound_detail(problem, 3.0, sweeps=20).value > trivial_bound(problem)
    assert built == [True]


@pytest.mark.parametrize(("stage", "least"), [("_SCALE_SWEEPS", 5), ("_CHECK_SWEEPS", 1)])
def test_searches_where_the_exact_steps_stopped(stage: str, least: int,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    # Random loopy problems whose memory limit binds (one byte below the peak of the optimum
    # without the rule), the exact (LP) multiplier steps the priced search's bound takes on
    # these small rows (``pricing``): where they stop, the search over a scale of their
    # multipliers and then over each multiplier on its own (``_SCALE_SWEEPS`` 0: neither;
    # ``_CHECK_SWEEPS`` 0: the scale alone) raise the bound on some and lower it on none,
    # and the bound stays at most the brute-force optimum with the rule. (On these small
    # problems the scale alone mostly reaches the best the multipliers can give.) The
    # default bound searches the same way where its exact steps stop, after a subgradient
    # stage that mostly finds the scale already: lower on none there either.
    raised = tried = default_raised = 0
    for seed, _, problem, optima in binding_limit_problems(777000, range(120), (4, 9), (2, 5)):
        tried += 1
        searched = dual_bound(problem, 30.0, pricing=True)
        default = dual_bound(problem, 30.0)
        with monkeypatch.context() as patch:
            patch.setattr(solver.dual_bound, stage, 0)
            plain = dual_bound(problem, 30.0, pricing=True)
            default_plain = dual_bound(problem, 30.0)
        assert plain <= searched <= optima[1], f"seed {seed}"
        assert default_plain <= default <= optima[1], f"seed {seed}"
        raised += searched > plain
        default_raised += default > default_plain
    assert tried >= 40 and raised >= least and default_raised >= 1, (tried, raised)


def test_the_pattern_search_refines_where_factors_of_two_stop(monkeypatch: pytest.MonkeyPatch
                                                                ) -> None:
    # Random loopy problems whose memory limit binds, with the exact multiplier steps of the
    # priced search's bound on small rows: the pattern search after the scale shrinks each
    # factor where neither way raises the bound; stopped once every factor is below two
    # (_CHECK_LEAST 1.99: factors of two alone), the bound is lower on some and higher on
    # none; both stay at most the brute-force optimum with the rule.
    raised = tried = 0
    for seed, _, problem, optima in binding_limit_problems(777000, range(120), (4, 9), (2, 5)):
        tried += 1
        refined = dual_bound(problem, 30.0, pricing=True)
        with monkeypatch.context() as patch:
            patch.setattr(solver.dual_bound, "_CHECK_LEAST", 1.99)
            halving = dual_bound(problem, 30.0, pricing=True)
        assert halving <= refined <= optima[1], f"seed {seed}"
        raised += refined > halving
    assert tried >= 40 and raised >= 5, (tried, raised)


def test_an_earlier_searchs_multipliers_skip_the_exact_steps(monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    # Chains whose memory limit binds at every step, with rows small enough for the exact
    # steps of the priced search's bound (``pricing``): from the multipliers of 200 sweeps
    # before, no exact step is taken (the sweeps
    # start at those multipliers), and 20 sweeps reach at least what 20 from zeros reach,
    # higher on most. On small random problems whose limit binds, such a start keeps the
    # bound at most the brute-force optimum with the rule.
    steps = _counted_exact_steps(monkeypatch)
    higher = 0
    for seed in range(6):
        raw = chain(40, 3, seed=seed)
        raw.limit = 12
        problem = build(raw)
        earlier = dual_bound_detail(problem, 60.0, sweeps=200, pricing=True)
        assert steps and earlier.multipliers is not None and any(earlier.multipliers)
        cold = dual_bound(problem, 60.0, sweeps=20, pricing=True)
        steps.clear()
        warm = dual_bound(problem, 60.0, sweeps=20, start=earlier.multipliers, pricing=True)
        assert not steps and warm >= cold, seed
        higher += warm > cold
    assert higher >= 3
    for seed, _, problem, optima in binding_limit_problems(778000, range(60), (4, 9), (2, 5)):
        earlier = dual_bound_detail(problem, 30.0, sweeps=40)
        if earlier.multipliers is not None:
            assert dual_bound(problem, 30.0, start=earlier.multipliers) <= optima[1], seed


def test_exact_rows_counts_the_entries_the_rows_hold(monkeypatch: pytest.MonkeyPatch) -> None:
    # Whether a problem's memory rows take the exact steps, read from its uses alone, agrees
    # with the rows built over every label: with the threshold at their entries and one
    # below; never without a memory rule.
    from solver.dual_memory import exact_rows

    seen = 0
    for seed in range(40):
        rng = np.random.default_rng(4400 + seed)
        problem = build(random_raw(rng, nodes=int(rng.integers(2, 9)), max_labels=3,
                                   memory=seed % 5 != 0))
        start = np.concatenate([[0], np.cumsum([len(u) for u in problem.unary])])
        rows = MemoryRows.build(problem, [np.ones(len(u), bool) for u in problem.unary], start)
        if rows is None:
            assert not exact_rows(problem), seed
            continue
        seen += 1
        for threshold, want in ((rows.entries, True), (rows.entries - 1, False)):
            monkeypatch.setattr(solver.dual_memory, "EXACT_ENTRIES", threshold)
            assert exact_rows(problem) == want, seed
        assert not exact_rows(dataclasses.replace(problem, memory_limit=None)), seed
    assert seen >= 20


def test_warm_compiles_the_kernels_a_layout_calls() -> None:
    # The image build calls solver.trws.warm(); the layouts then find their kernels
    # compiled: a bound on a small problem adds no new signature.
    import solver.trws

    solver.trws.warm()
    before = (list(solver.trws.sweep_pass.signatures),
              list(solver.trws.fill_marginals.signatures))
    rng = np.random.default_rng(5)
    problem = build(random_raw(rng, nodes=10, max_labels=4, density=0.5, ties=0,
                               memory=False))
    dual_bound_detail(problem, 60.0, sweeps=3)
    assert before[0] and before[1]
    assert list(solver.trws.sweep_pass.signatures) == before[0]
    assert list(solver.trws.fill_marginals.signatures) == before[1]


def test_the_alternating_stage_stops_only_once_its_bound_stops_rising(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A bound that rises for 10 rounds and then stays: the stage goes on while it rises and
    # stops after _ALTERNATE_PATIENCE rounds without a gain (30 rounds), not after the first
    # _ALTERNATE_PATIENCE rounds whatever the bound does. With exact steps it hands over to
    # the searches after _EXACT_ROUNDS rounds.
    from types import SimpleNamespace

    module = solver.dual_bound
    swept = [0]
    fake = SimpleNamespace(
        sweep=lambda messages, deadline: swept.__setitem__(0, swept[0] + 1) or True,
        float_bound=lambda messages: float(min(swept[0] // module._ALTERNATE_SWEEPS, 10)),
        choice=lambda messages: np.zeros(1, bool))
    rows = SimpleNamespace(load=lambda chosen: np.zeros(1), cap=np.zeros(1),
                           constant=lambda q: 0.0)
    scaled = SimpleNamespace(slot_label_abs=np.zeros(0, np.int64), max_cost=1,
                             node_start=np.array([0, 1]))
    monkeypatch.setattr(module, "_penalized", lambda *args: fake)
    monkeypatch.setattr(module, "ascend_multipliers", lambda rows, node, start, q, step, n:
                        (q, step))
    monkeypatch.setattr(module, "_exact_step", lambda rows, node, start, q, deadline:
                        (q, True))
    messages = module._Messages.zeros(0)
    q, _, done, stopped = module._alternate(scaled, np.zeros(1), rows, np.zeros(1), messages,
                                            None, float("inf"), None)
    assert stopped == "converged"
    assert done == (10 + module._ALTERNATE_PATIENCE) * module._ALTERNATE_SWEEPS
    swept[0] = 0
    _, _, done, stopped = module._alternate(scaled, np.zeros(1), rows, np.zeros(1), messages,
                                            None, float("inf"), None, exact=True)
    assert (stopped, done) == ("converged", module._EXACT_ROUNDS * module._ALTERNATE_SWEEPS)


def _rows_case(seed: int) -> tuple[MemoryRows, np.ndarray, np.ndarray, set[int]]:
    """Random memory rows over 3-8 nodes of 1-6 labels, with random node costs: nodes
    with one use, with several uses on one profile (usages proportional, as folded equal
    nodes have), with several unrelated uses, with none; uses live at no check; zero
    usages; ties in costs and usages. The limit lies between the smallest and the largest
    peak, so the rows bind and some assignment keeps them. Also the kinds of nodes drawn
    (0: no use, 1: one, 2: several on one profile, 3: several unrelated)."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 7, size=int(rng.integers(3, 9)))
    unary = [rng.integers(0, 4, size=k) for k in sizes]
    memory, kinds = [], set()
    for node, k in enumerate(sizes):
        kind = int(rng.integers(0, 4))
        kinds.add(kind)
        profile = rng.integers(0, 5, size=k) * int(rng.choice([1, 3, 1000]))
        for _ in range(0 if kind == 0 else 1 if kind == 1 else int(rng.integers(2, 4))):
            start = int(rng.integers(0, 8))
            end = start + int(rng.integers(0, 6))
            usage = profile * int(rng.integers(1, 4)) if kind == 2 else rng.integers(0, 9, k)
            memory.append((node, start, end, usage.tolist()))
    low = make_problem(unary, memory=memory, memory_limit=0)
    least = peak_memory(low, [int(np.argmin(np.sum([u for n, _, _, u in memory if n == node]
                                                   or [[0] * k], axis=0)))
                              for node, k in enumerate(sizes)])
    most = peak_memory(low, [int(np.argmax(np.sum([u for n, _, _, u in memory if n == node]
                                                  or [[0] * k], axis=0)))
                             for node, k in enumerate(sizes)])
    problem = dataclasses.replace(low, memory_limit=int(rng.integers(least, max(least, most) + 1)))
    start = np.concatenate([[0], np.cumsum(sizes)])
    rows = MemoryRows.build(problem, [np.ones(k, bool) for k in sizes], start[:-1])
    node = rng.integers(0, 6, size=int(start[-1])).astype(float) * rng.choice([1.0, 0.5])
    return rows, node, start, kinds


def _dense_lp(rows: MemoryRows, node: np.ndarray, start: np.ndarray) -> float:
    """The LP the node terms are the dual of, written plainly: a distribution over each
    node's labels (costs ``node``) and a row per check summing every live use's bytes."""
    from scipy.optimize import linprog

    nodes = len(start) - 1
    owner = np.repeat(np.arange(nodes), np.diff(start))
    matrix = np.zeros((rows.checks, len(node)))
    for use, slot, usage in zip(rows.pair_use, rows.pair_slot, rows.pair_usage):
        matrix[rows.first[use]:rows.last[use], slot] += usage
    simplex = (owner[None, :] == np.arange(nodes)[:, None]).astype(float)
    result = linprog(node, A_ub=matrix, b_ub=rows.cap, A_eq=simplex, b_eq=np.ones(nodes),
                     bounds=(0, None), method="highs")
    assert result.status == 0
    return float(result.fun)


def test_exact_multipliers_reach_the_plain_lp() -> None:
    # By LP duality the best multipliers' node terms equal the optimum of the LP written
    # plainly (one row per check over every live use): the differenced rows and the
    # hull segments of the profile nodes lose nothing. Mutations caught: a hull that
    # keeps a point above it, a profile use's share or rows off by one.
    drawn = np.zeros(4, int)
    for seed in range(120):
        rows, node, start, kinds = _rows_case(4200 + seed)
        drawn[list(kinds)] += 1
        got = exact_multipliers(rows, node, start, 30.0)
        assert got is not None, seed
        assert (got >= 0).all(), seed
        value = node_part(rows, node, start, got)[0]
        assert value == pytest.approx(_dense_lp(rows, node, start), abs=1e-6), seed
    assert (drawn >= 60).all()


def test_lower_hulls_against_every_pair_of_points() -> None:
    # Per node, the hull from its cheapest label down: each corner is a label, the slopes
    # rise, and no label with a usage in its range lies below it (checked against the
    # points themselves, brute force).
    from solver.trws import lower_hulls

    rng = np.random.default_rng(77)
    for _ in range(200):
        sizes = rng.integers(1, 9, size=int(rng.integers(1, 6)))
        start = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        cost = rng.integers(0, 6, size=int(start[-1])).astype(float)
        usage = rng.integers(0, 6, size=int(start[-1])).astype(float)
        nodes = np.flatnonzero(rng.random(len(sizes)) < 0.8).astype(np.int64)
        seg_node, length, slope, top = lower_hulls(cost, usage, start, nodes)
        assert (length > 0).all()
        for i, u in enumerate(nodes):
            c, m = cost[start[u]:start[u + 1]], usage[start[u]:start[u + 1]]
            cheapest = c.min()
            assert top[i] == m[c == cheapest].min()
            mine = seg_node == u
            assert (np.diff(slope[mine]) > 0).all()
            assert length[mine].sum() == top[i] - m.min()
            corners = zip(top[i] - np.cumsum(length[mine]),
                          cheapest + np.cumsum(length[mine] * slope[mine]))
            for bytes_, price in corners:
                assert np.isclose(c[m == bytes_], price).any()
            # The hull's cost at each label's usage, walking down from the top.
            for a in range(len(c)):
                if m[a] > top[i]:
                    continue
                given, at = top[i] - m[a], cheapest
                for piece, rate in zip(length[mine], slope[mine]):
                    at += min(piece, given) * rate
                    given -= min(piece, given)
                assert at <= c[a] + 1e-9


def test_exact_steps_only_where_two_rounds_fit(monkeypatch: pytest.MonkeyPatch) -> None:
    # After the subgradient stage (15 % of the sweeps) the default bound takes exact steps
    # only where _LEAST_ROUNDS rounds of _LARGE_SWEEPS sweeps fit in the sweeps left: 40
    # sweeps leave 34, too few (the steps of ascend_multipliers follow), 60 leave 51.
    # Every bound stays at most the brute-force optimum with the rule.
    steps = _counted_exact_steps(monkeypatch)
    checked = 0
    for seed, _, problem, optima in binding_limit_problems(9300, range(20), (4, 8), (2, 4)):
        for sweeps, taken in ((40, False), (60, True)):
            steps.clear()
            got = dual_bound_detail(problem, 30.0, sweeps=sweeps)
            assert got.value <= optima[1], seed
            if got.sweeps == sweeps:  # not stopped early (target, convergence)
                assert bool(steps) == taken, (seed, sweeps)
                checked += 1
    assert checked >= 10
