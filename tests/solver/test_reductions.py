"""Each reduction keeps the optimum: reduced optimum + offset == brute force of the original,
and the postsolved labels are feasible in the original with exactly that cost."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from oracle import Raw, brute_force, cost_of, random_raw

from solver.options import ALL_PASSES
from solver.problem import FORBIDDEN, Problem, make_problem
from solver.reductions import reduce_problem


def build(raw: Raw) -> Problem:
    return make_problem(raw.unary, raw.edges, ties=raw.ties, forbidden=raw.forbidden,
                        memory=raw.memory, fixed_memory=raw.fixed, memory_limit=raw.limit)


def as_raw(problem: Problem) -> Raw:
    """The reduced problem back as plain lists, for the independent brute force."""
    return Raw(
        unary=[[int(c) for c in u] for u in problem.unary],
        edges=[(e.u, e.v, e.costs.tolist()) for e in problem.edges],
        ties=[(t.u, t.v, t.mapping) for t in problem.ties],
        memory=[(m.node, m.start, m.end, m.usage.tolist()) for m in problem.memory],
        fixed=[(f.start, f.end, f.amount) for f in problem.fixed_memory],
        limit=problem.memory_limit,
    )


PASS_SETS = [()] + [(p,) for p in ALL_PASSES] + [ALL_PASSES]


@pytest.mark.parametrize("passes", PASS_SETS, ids=lambda p: "+".join(p) or "none")
def test_reduction_keeps_optimum(passes: tuple[str, ...]) -> None:
    checked = infeasible = 0
    for seed in range(60):
        rng = np.random.default_rng(seed)
        raw = random_raw(rng, nodes=int(rng.integers(3, 9)), memory=seed % 3 != 0,
                         ties=int(rng.integers(0, 3)))
        want = brute_force(raw)
        reduction = reduce_problem(build(raw), passes)
        if reduction.problem is None:
            assert want is None, f"seed {seed}: reported infeasible ({reduction.infeasible})"
            infeasible += 1
            continue
        got = brute_force(as_raw(reduction.problem))
        if want is None:
            assert got is None, f"seed {seed}: reduced problem feasible, original not"
            infeasible += 1
            continue
        assert got is not None, f"seed {seed}: reduced problem lost every solution"
        assert got[0] + reduction.offset == want[0], f"seed {seed}"
        restored = reduction.postsolve.restore(got[1])
        assert cost_of(raw, restored) == want[0], f"seed {seed}"
        checked += 1
    assert checked >= 25 and infeasible >= 1  # the generator exercises both outcomes


def test_chain_without_memory_reduces_to_nothing() -> None:
    raw = Raw([[3, 0], [0, 4], [1, 1]], [(0, 1, [[0, 5], [5, 0]]), (1, 2, [[0, 2], [2, 0]])])
    reduction = reduce_problem(build(raw))
    assert reduction.problem.num_nodes == 0
    assert reduction.offset == brute_force(raw)[0]
    assert cost_of(raw, reduction.postsolve.restore(())) == brute_force(raw)[0]


def test_dominated_labels_dropped_but_not_memory_cheaper_ones() -> None:
    # Label 1 of node 0 costs more everywhere, but uses less memory: it must stay
    # while the limit binds and go when there is no limit.
    raw = Raw([[0, 5], [0, 0]], [(0, 1, [[0, 1], [2, 3], ])], memory=[(0, 0, 2, [9, 1]),
              (1, 0, 2, [1, 1])], limit=5)
    bound = reduce_problem(build(raw), ("dominated-labels",))
    assert bound.problem.label_count(0) == 2
    raw.limit = None
    free = reduce_problem(build(raw), ("dominated-labels",))
    assert free.problem.label_count(0) == 1


def test_contradictory_ties_are_infeasible() -> None:
    raw = Raw([[0, 0], [0, 0], [0, 0]], ties=[(0, 1), (1, 2), (2, 0, [1, 0])])
    reduction = reduce_problem(build(raw))
    assert reduction.problem is None and "ties among" in reduction.infeasible


def test_forbidden_pairs_prune_labels() -> None:
    raw = Raw([[0, 0], [0, 0]], [(0, 1, [[FORBIDDEN, FORBIDDEN], [0, 7]])])
    reduction = reduce_problem(build(raw), ())
    assert reduction.problem.label_count(0) == 1


def chain_optimum(unary: list[list[int]], tables: list[list[list[int]]]) -> int:
    """Min-sum of a chain by plain dynamic programming (independent of the solver)."""
    best = list(unary[0])
    for node in range(1, len(unary)):
        table = tables[node - 1]
        best = [unary[node][b] + min(best[a] + table[a][b] for a in range(len(best)))
                for b in range(len(unary[node]))]
    return min(best)


def test_component_too_large_to_count_in_floats() -> None:
    # 2**1100 joint assignments: a float product overflows to inf. The component is
    # left to the solver (too large to enumerate), and the answer is the chain optimum.
    rng = np.random.default_rng(3)
    n = 1100
    unary = rng.integers(0, 9, (n, 2)).tolist()
    tables = rng.integers(0, 9, (n - 1, 2, 2)).tolist()
    raw = Raw(unary, [(i, i + 1, tables[i]) for i in range(n - 1)])
    reduction = reduce_problem(build(raw), ("components",))
    assert reduction.problem.num_nodes == n  # not enumerated, and no OverflowError

    from solver.options import SolveOptions
    from solver.solve import solve

    result = solve(build(raw), SolveOptions(time_limit=20.0, passes=("components",)))
    assert result.objective == chain_optimum(unary, tables) == cost_of(raw, result.labels)


@pytest.mark.parametrize("passes", [("functional-ties",), ALL_PASSES], ids=["fuse", "all"])
def test_functional_edges_fused_keep_optimum(passes: tuple[str, ...]) -> None:
    fused = 0
    for seed in range(80):
        rng = np.random.default_rng(500 + seed)
        raw = random_raw(rng, nodes=int(rng.integers(3, 9)), density=0.45, memory=seed % 3 != 0,
                         ties=seed % 2, functional=0.7, forbid_pairs=0.0,
                         max_labels=int(rng.integers(2, 5)))
        problem = build(raw)
        want = brute_force(raw)
        reduction = reduce_problem(problem, passes)
        if reduction.problem is None:
            assert want is None, f"seed {seed}: reported infeasible ({reduction.infeasible})"
            continue
        got = brute_force(as_raw(reduction.problem))
        assert (got is None) == (want is None), f"seed {seed}"
        if want is None:
            continue
        assert got[0] + reduction.offset == want[0], f"seed {seed}"
        assert cost_of(raw, reduction.postsolve.restore(got[1])) == want[0], f"seed {seed}"
        fused += not raw.ties and dict(reduction.stats)["after merge-ties"] < problem.num_nodes
    assert fused >= 5  # the generator does produce fusable edges


def test_functional_chain_fuses_to_one_node() -> None:
    # a -> b -> c, each table allowing only the diagonal: one node with 3 joint labels.
    diag = [[0 if a == b else FORBIDDEN for b in range(3)] for a in range(3)]
    raw = Raw([[1, 2, 3], [3, 2, 1], [5, 0, 5]], [(0, 1, diag), (1, 2, diag)])
    reduction = reduce_problem(build(raw), ("functional-ties",))
    assert dict(reduction.stats)["after merge-ties"] == 1
    assert reduction.problem.num_nodes == 1
    assert reduction.problem.unary[0].tolist() == [9, 4, 9]


def test_project_inverts_restore_on_the_core() -> None:
    """Every reduced assignment, restored to full labels and projected back, is itself
    (the hint path of ``solve`` relies on it), across ties, fusion and pruning."""
    checked = 0
    for seed in range(120):
        rng = np.random.default_rng(1000 + seed)
        raw = random_raw(rng, nodes=int(rng.integers(3, 9)), memory=seed % 2 == 0,
                         ties=int(rng.integers(0, 3)), functional=0.3, forbid=0.0)
        # Without eliminations, so that a core remains to project onto.
        reduction = reduce_problem(build(raw), ("functional-ties", "reparametrize", "memory",
                                                "dominated-labels"))
        if reduction.problem is None:
            continue
        core = reduction.problem
        for labels in itertools.islice(
                itertools.product(*(range(core.label_count(n)) for n in range(core.num_nodes))), 50):
            full = reduction.postsolve.restore(labels)
            assert reduction.postsolve.project(full) == labels, f"seed {seed}"
            checked += 1
    assert checked >= 100


def test_project_marks_labels_the_reductions_dropped() -> None:
    # Node 0's label 1 is dominated (costlier, same table rows) and dropped; so are
    # node 1's labels 0 and 1 (label 2 is cheaper against every row).
    problem = make_problem([[0, 5], [0, 0, 0]], [(0, 1, [[1, 2, 0], [1, 2, 0]])])
    reduction = reduce_problem(problem, ("dominated-labels",))
    assert reduction.problem.label_count(0) == reduction.problem.label_count(1) == 1
    assert reduction.postsolve.project((0, 2)) == (0, 0)
    assert reduction.postsolve.restore((0, 0)) == (0, 2)
    assert reduction.postsolve.project((1, 2)) == (-1, 0)
    assert reduction.postsolve.project((0, 1)) == (0, -1)


def test_reparametrize_all_equals_one_edge_at_a_time() -> None:
    from solver.workgraph import WorkGraph

    for seed in range(20):
        rng = np.random.default_rng(500 + seed)
        raw = random_raw(rng, nodes=10, density=0.5, forbid_pairs=0.2)
        graphs = [WorkGraph(raw.unary), WorkGraph(raw.unary)]
        for graph in graphs:
            for u, v, table in raw.edges:
                graph.add_table(u, v, np.minimum(np.array(table, np.int64), FORBIDDEN))
        for u, v in sorted(graphs[0].tables):
            graphs[0].reparametrize(u, v)
        graphs[1].reparametrize_all()
        one, every = graphs
        assert sorted(one.tables) == sorted(every.tables), seed
        for key in one.tables:
            assert np.array_equal(one.tables[key], every.tables[key]), (seed, key)
        for a, b in zip(one.unary, every.unary):
            assert np.array_equal(a, b), seed
        assert one.adj == every.adj, seed


def test_dominated_labels_all_at_once_equal_one_node_at_a_time() -> None:
    """The batched pass drops exactly the labels the node-by-node pass drops, in the same
    order of nodes (a node is checked again when a neighbour lost labels before it)."""
    from solver.reductions import _drop_all_dominated, _drop_dominated
    from solver.workgraph import WorkGraph

    # Node 0 loses label 1 (dominated); only then is node 1's label 1 dominated too.
    chained = WorkGraph([np.array([0, 5]), np.array([0, 0])])
    chained.add_table(0, 1, np.array([[0, 1], [5, 1]]))
    _drop_all_dominated(chained, set(), lambda: True)
    assert [len(u) for u in chained.unary] == [1, 1]
    dropped = 0
    for seed in range(40):
        rng = np.random.default_rng(700 + seed)
        raw = random_raw(rng, nodes=12, max_labels=4, density=0.3, forbid_pairs=0.1,
                         memory=seed % 2 == 0)
        # Small costs: labels often tie or dominate, and losing labels makes more of them.
        raw.unary = [[c % 3 for c in row] for row in raw.unary]
        raw.edges = [(u, v, [[c if c >= FORBIDDEN else c % 3 for c in row] for row in t])
                     for u, v, t in raw.edges]
        graphs = [WorkGraph(raw.unary), WorkGraph(raw.unary)]
        for graph in graphs:
            for u, v, table in raw.edges:
                graph.add_table(u, v, np.minimum(np.array(table, np.int64), FORBIDDEN))
            for node, start, end, usage in raw.memory:
                graph.add_use(node, start, end, np.array(usage, np.int64))
        relevant = {int(rng.integers(0, 12)) for _ in range(4)}
        one, every = graphs
        for node in one.alive():
            _drop_dominated(one, node, relevant)
        _drop_all_dominated(every, relevant, lambda: True)
        for a, b, labels in zip(one.orig, every.orig, raw.unary):
            assert np.array_equal(a, b), seed
            dropped += len(labels) - len(a)
        assert sorted(one.tables) == sorted(every.tables), seed
        for key in one.tables:
            assert np.array_equal(one.tables[key], every.tables[key]), (seed, key)
    assert dropped > 0
