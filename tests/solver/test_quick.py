"""The quick answer (groups moving along functional edges) against independent oracles:
brute force on small problems, planted feasible answers on larger ones."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from oracle import BIG, Raw, brute_force, cost_of, random_raw
from test_reductions import build

from solver.flat import Flat, colour_nodes
from solver.quick import Descent, Groups, improve, quick_answer, with_tie_edges


def small(seed: int, functional: float = 0.6, ties: int = 1) -> Raw:
    rng = np.random.default_rng(seed)
    return random_raw(rng, nodes=int(rng.integers(2, 8)), max_labels=3, density=0.4,
                      ties=ties, forbid=0.1, forbid_pairs=0.1, functional=functional)


@pytest.mark.parametrize("part", range(4))
def test_quick_answer_is_feasible_and_priced_right(part: int) -> None:
    """Whatever it returns is feasible at exactly that cost; it finds an answer
    on most feasible problems and never claims one for an infeasible problem."""
    feasible = found = 0
    for seed in range(part * 50, part * 50 + 50):
        raw = small(seed, ties=seed % 2)
        want = brute_force(raw)
        got = quick_answer(build(raw))
        if want is None:
            assert got is None, seed
            continue
        feasible += 1
        if got is not None:
            found += 1
            assert cost_of(raw, got[0]) == got[1], seed
            assert got[1] >= want[0], seed
    assert feasible >= 12 and found >= 0.8 * feasible, (feasible, found)


def test_group_rows_are_the_consistent_joint_labels() -> None:
    """Each group's rows (with allowed inner edges) are exactly the joint labels of its
    members that no unary rule or edge between members forbids; inner costs match."""
    checked = 0
    for seed in range(80):
        raw = small(1000 + seed, functional=0.8)
        problem = with_tie_edges(build(raw))
        groups = Groups(Flat(problem))
        for g in range(groups.count):
            members = groups.members[groups.moff[g]:groups.moff[g + 1]].tolist()
            inner = [(u, v, t) for u, v, t in
                     [(e.u, e.v, e.costs) for e in problem.edges] if u in members and v in members]
            want = {}
            for joint in itertools.product(*(range(len(raw.unary[m])) for m in members)):
                label = dict(zip(members, joint))
                if any(problem.unary[m][label[m]] >= BIG for m in members):
                    continue
                costs = [int(t[label[u], label[v]]) for u, v, t in inner]
                if all(c < BIG for c in costs):
                    want[joint] = sum(costs)
            got = {}
            for r in range(groups.roff[g], groups.roff[g + 1]):
                if groups.inner[r] >= BIG:
                    continue
                block = groups.entry[groups.eoff[g] + (r - groups.roff[g]) * groups.size[g]:
                                     groups.eoff[g] + (r - groups.roff[g] + 1) * groups.size[g]]
                got[tuple(int(x - groups.flat.off[m]) for x, m in zip(block, members))] = \
                    int(groups.inner[r])
            assert set(got) <= set(want), (seed, g)
            # A missing joint label: only a forbidden pair toward a single-label node
            # (folded into the allowed labels) explains it.
            for joint in set(want) - set(got):
                label = dict(zip(members, joint))
                assert any((e.u in label and len(problem.unary[e.v]) == 1
                            and e.costs[label[e.u], 0] >= BIG)
                           or (e.v in label and len(problem.unary[e.u]) == 1
                               and e.costs[0, label[e.v]] >= BIG)
                           for e in problem.edges), (seed, g, joint)
            assert all(got[j] == want[j] for j in got), (seed, g)
            checked += len(members) > 1
    assert checked >= 40


def test_descent_never_worsens_keeps_memory_and_ends_in_a_group_optimum() -> None:
    for seed in range(40):
        raw = small(2000 + seed, functional=0.7, ties=0)
        free = Raw(raw.unary, raw.edges, [], raw.forbidden, raw.memory, None, raw.fixed)
        for problem_raw in (raw, free):
            problem = build(problem_raw)
            groups = Groups(Flat(problem))
            if (groups.rows == 0).any():
                assert brute_force(problem_raw) is None, seed
                continue
            start, _ = groups.best_rows(groups.inner + groups.row_sum(groups.flat.usage_total),
                                        np.arange(groups.count))
            before = cost_of(problem_raw, tuple(groups.labels(start).tolist()))
            if before is None:
                continue
            descent = Descent(groups, start)
            after = tuple(descent.run(100).tolist())
            assert cost_of(problem_raw, after) is not None, seed
            assert cost_of(problem_raw, after) <= before, seed
            if problem_raw.limit is None:
                # No single group move is cheaper.
                best = cost_of(problem_raw, after)
                for row in range(len(groups.inner)):
                    trial = descent.row.copy()
                    trial[groups.row_group[row]] = row
                    cost = cost_of(problem_raw, tuple(groups.labels(trial).tolist()))
                    assert cost is None or cost >= best, (seed, row)


def planted(seed: int, n: int = 1500, limit: bool = True) -> tuple[Raw, tuple[int, ...]]:
    """Hubs and chains of partial bijections (as on the contest instances) with a
    planted feasible answer; plain cost tables elsewhere; memory that the planted
    answer meets."""
    rng = np.random.default_rng(seed)
    ks = rng.integers(2, 7, size=n)
    answer = [int(rng.integers(0, k)) for k in ks]
    raw = Raw([[int(c) for c in rng.integers(0, 50, size=k)] for k in ks])
    for node in range(1, n):
        other = int(rng.integers(max(0, node - 40), node))
        if rng.random() < 0.7 and ks[other] == ks[node]:
            # A bijection mapping the planted labels onto each other, some pairs missing.
            perm = rng.permutation(int(ks[node]))
            perm[[perm.tolist().index(answer[node]), answer[other]]] = \
                perm[[answer[other], perm.tolist().index(answer[node])]]
            table = np.full((ks[other], ks[node]), BIG, np.int64)
            for a, b in enumerate(perm.tolist()):
                if a == answer[other] or rng.random() < 0.85:
                    table[a, b] = int(rng.integers(0, 30))
        else:
            table = rng.integers(0, 30, size=(ks[other], ks[node]))
        raw.edges.append((other, node, table.tolist()))
    for node in range(n):
        for a in range(int(ks[node])):
            if a != answer[node] and rng.random() < 0.1:
                raw.forbidden.append((node, a))
        start = int(rng.integers(0, 200))
        raw.memory.append((node, start, start + int(rng.integers(1, 20)),
                           [int(u) for u in rng.integers(1, 100, size=ks[node])]))
    if limit:
        live = np.zeros(230, np.int64)
        for node, start, end, usage in raw.memory:
            live[start:end] += usage[answer[node]]
        raw.limit = int(live.max() * 1.5)
    return raw, tuple(answer)


@pytest.mark.parametrize("seed", range(3))
def test_planted_functional_chains_get_a_feasible_answer(seed: int) -> None:
    raw, answer = planted(seed, limit=False)
    assert cost_of(raw, answer) is not None
    got = quick_answer(build(raw))
    assert got is not None and cost_of(raw, got[0]) == got[1]


def test_planted_with_memory_is_feasible_when_found_and_deterministic() -> None:
    found = 0
    for seed in range(3):
        raw, answer = planted(10 + seed)
        assert cost_of(raw, answer) is not None
        problem = build(raw)
        got = quick_answer(problem)
        if got is None:
            continue
        found += 1
        assert cost_of(raw, got[0]) == got[1]
        assert quick_answer(build(raw)) == got
    assert found >= 2


def test_price_rounds_never_return_worse() -> None:
    """The price rounds keep the cheapest answer seen: never above the plain descent."""
    compared = 0
    for seed in range(4):
        raw, _ = planted(20 + seed, n=800)
        # Tight: 1.3 times the peak of every node at its smallest usage.
        live = np.zeros(230, np.int64)
        for _node, start, end, usage in raw.memory:
            live[start:end] += min(usage)
        raw.limit = int(live.max() * 1.3)
        plain = quick_answer(build(raw), rounds=0)
        priced = quick_answer(build(raw), rounds=3)
        if plain is None:
            continue
        compared += 1
        assert priced is not None and priced[1] <= plain[1], seed
        assert cost_of(raw, priced[0]) == priced[1]
    assert compared >= 2


def test_improve_keeps_feasibility_and_never_worsens() -> None:
    """From the costliest feasible labels (brute force), ``improve`` returns feasible
    labels no costlier; from an optimum, an optimum."""
    improved = 0
    for seed in range(40):
        raw = small(3000 + seed, functional=0.6, ties=0)
        feasible = [(cost_of(raw, labels), labels) for labels in
                    itertools.product(*(range(len(u)) for u in raw.unary))]
        feasible = [(c, labels) for c, labels in feasible if c is not None]
        if not feasible:
            continue
        flat = Flat(build(raw))
        worst, best = max(feasible), min(feasible)
        for cost, labels in (worst, best):
            got = improve(flat, np.array(labels))
            assert cost_of(raw, tuple(got.tolist())) is not None, seed
            assert cost_of(raw, tuple(got.tolist())) <= cost, seed
        got = cost_of(raw, tuple(improve(flat, np.array(worst[1])).tolist()))
        improved += got < worst[0]
    assert improved >= 10


def test_colouring_is_proper() -> None:
    for seed in range(30):
        rng = np.random.default_rng(seed)
        n = int(rng.integers(1, 300))
        m = int(rng.integers(0, 4 * n))
        a, b = rng.integers(0, n, size=m), rng.integers(0, n, size=m)
        # Some hubs: many edges on a few nodes.
        hub = rng.integers(0, n, size=m // 3)
        a[: len(hub)] = hub
        colour = colour_nodes(n, a, b)
        assert (colour >= 0).all()
        loop = a == b
        assert (colour[a[~loop]] != colour[b[~loop]]).all(), seed
        degree = np.bincount(np.concatenate([a[~loop], b[~loop]]), minlength=n)
        assert colour.max(initial=0) <= degree.max(initial=0), seed
