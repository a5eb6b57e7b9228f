"""Exact reductions before the model, and the record that undoes them.

In order (each keeps the optimum and the feasible set, mapped back by
:class:`~solver.workgraph.Postsolve`):

0. ``functional-ties``: an edge whose allowed pairs make one end's label a
   function of the other's (every row, or every column, has at most one
   allowed entry) is also stated as a tie, so the merge below fuses its ends
   (a group stays at most :data:`GROUP_LABELS` joint labels). Contest
   instances chain most memory-bound nodes this way; fused, a single move
   changes the whole chain instead of being blocked by a forbidden pair.
1. ``merge-ties``: each tie group becomes one node whose labels are the
   group's consistent joint assignments; parallel edges are summed.
2. ``prune-labels``: drop forbidden labels and labels with no allowed partner
   on some edge (arc consistency), to a fixpoint.
3. ``reparametrize``: move each table's row/column minima into unary costs and
   drop tables that become all-zero.
4. ``memory``: keep only memory uses that meet a binding check
   (:mod:`solver.memory`); the rest become constant (fixed) uses.
5. ``dominated-labels``: drop label ``b`` when another label ``a`` is no worse
   in unary cost, on every edge row, and in every binding memory use.
6. ``eliminate``: fold single-label nodes into their neighbours; eliminate
   memory-free nodes of degree 0, 1, 2 by dynamic programming (a degree-2 node
   becomes an edge between its neighbours holding the min over its labels).
7. ``components``: solve small memory-free components by exact enumeration.

Example: a chain ``a - b - c`` without memory reduces to nothing: ``a`` is a
leaf folded into ``b``, then ``b`` into ``c``, then ``c`` takes its best label.
"""

from __future__ import annotations

import time
from collections import defaultdict, deque
from dataclasses import dataclass

import numpy as np

from solver import memory as memory_checks
from solver.conditioning import connected_pieces
from solver.errors import Infeasible, ProblemError
from solver.options import ALL_PASSES
from solver.fusion import functional_groups
from solver.problem import FORBIDDEN, Edge, FixedUse, MemoryUse, Problem
from solver.workgraph import Fix, Leaf, Postsolve, Series, WorkGraph, as_private, clamp_add

#: Largest ``k_u * k_node * k_w`` for which a degree-2 node is eliminated.
SERIES_LIMIT = 2_000_000
#: Largest product of label counts of a component solved by enumeration.
ENUMERATION_LIMIT = 200_000
#: Largest joint label count of a group fused along functional edges.
GROUP_LABELS = 48
#: Largest label count for which dominated labels are searched (quadratic).
DOMINANCE_LIMIT = 64
#: Largest ``k * k * row width`` compared when searching dominated labels.
DOMINANCE_WORK = 4_000_000


@dataclass(frozen=True, slots=True, eq=False)
class Reduction:
    """The reduced problem (``None`` if infeasible) and the way back.

    ``cost(original labels) == offset + cost(reduced labels)`` for every
    feasible reduced assignment restored by ``postsolve``.
    """

    problem: Problem | None
    offset: int
    postsolve: Postsolve | None
    infeasible: str | None = None
    stats: tuple[tuple[str, int], ...] = ()


def reduce_problem(problem: Problem, passes: tuple[str, ...] = ALL_PASSES,
                   deadline: float | None = None) -> Reduction:
    """Apply the reductions named in ``passes`` (ties and forbidden labels always).

    Past ``deadline`` (``time.perf_counter()``), the optional passes that are left
    are skipped: the result stays exact, only less reduced.
    """

    def in_time() -> bool:
        return deadline is None or time.perf_counter() < deadline

    unknown = set(passes) - set(ALL_PASSES)
    if unknown:
        raise ProblemError(f"unknown reduction passes: {sorted(unknown)}")
    stats: list[tuple[str, int]] = [("nodes", problem.num_nodes), ("edges", len(problem.edges))]
    fixed = list(problem.fixed_memory)
    try:
        fused = (functional_groups(problem, GROUP_LABELS) if "functional-ties" in passes
                 else [])
        graph, groups = _merge_ties(problem, fused)
        stats.append(("after merge-ties", len(graph.alive())))
        _prune_labels(graph, graph.alive())
        if "reparametrize" in passes:
            graph.reparametrize_all()
        if "memory" in passes:
            relevant = _memory(graph, problem.memory_limit, fixed)
        else:
            relevant = {use[0] for use in graph.uses if use is not None}
            if problem.memory_limit is None:
                relevant = set()
        stats.append(("memory nodes", len(relevant)))
        if "dominated-labels" in passes:
            _drop_all_dominated(graph, relevant, in_time)
        stats.append(("labels", sum(len(graph.unary[n]) for n in graph.alive())))
        if "eliminate" in passes and in_time():
            _eliminate(graph, relevant, fixed)
            stats.append(("after eliminate", len(graph.alive())))
        if "components" in passes and in_time():
            _enumerate_components(graph, relevant)
    except Infeasible as err:
        return Reduction(None, 0, None, str(err), tuple(stats))
    core = tuple(graph.alive())
    index = {node: i for i, node in enumerate(core)}
    # The parts come from a validated problem by exact rewrites: no second validation.
    for array in [graph.unary[n] for n in core] + list(graph.tables.values()):
        array.flags.writeable = False
    reduced = Problem(
        unary=tuple(graph.unary[n] for n in core),
        edges=tuple(Edge(index[u], index[v], t) for (u, v), t in sorted(graph.tables.items())),
        memory=tuple(MemoryUse(index[use[0]], use[1], use[2], use[3])
                     for use in graph.uses if use is not None),
        fixed_memory=tuple(fixed),
        memory_limit=problem.memory_limit,
    )
    stats += [("core nodes", reduced.num_nodes), ("core edges", len(reduced.edges))]
    postsolve = Postsolve(problem.num_nodes, core, tuple(graph.steps), tuple(graph.orig), groups)
    return Reduction(reduced, graph.offset, postsolve, None, tuple(stats))


def _merge_ties(problem: Problem, fused: list[dict[int, np.ndarray]] = ()
                ) -> tuple[WorkGraph, tuple]:
    """One node per tie group (and per ``fused`` group, given as member -> column);
    its labels are the group's joint assignments."""
    n = problem.num_nodes
    tie_adj: list[list[int]] = [[] for _ in range(n)]
    for k, tie in enumerate(problem.ties):
        tie_adj[tie.u].append(k)
        tie_adj[tie.v].append(k)
    given: dict[int, dict[int, np.ndarray]] = {}
    for cols in fused:
        for member in cols:
            given[member] = cols
    grouped = [bool(tie_adj[node]) or node in given for node in range(n)]
    rep = list(range(n))
    columns: list[np.ndarray | None] = [None] * n
    groups = []
    unary: list[np.ndarray] = list(problem.unary)  # WorkGraph copies them
    identity: dict[int, np.ndarray] = {}  # one read-only arange per label count
    for root in range(n):
        if columns[root] is not None:
            continue
        if not grouped[root]:
            k = len(unary[root])
            col = identity.get(k)
            if col is None:
                col = identity[k] = np.arange(k)
                col.flags.writeable = False
            columns[root] = col
            groups.append((root, ((root, col),)))
            continue
        cols = given[root] if root in given else _join_group(problem, root, tie_adj)
        alive = np.ones(len(cols[root]), bool)
        for member, col in cols.items():
            alive &= problem.unary[member][col] < FORBIDDEN
        if not alive.any():
            names = ", ".join(problem.node_name(m) for m in sorted(cols))
            raise Infeasible(f"ties among {names} admit no allowed labels")
        cols = {m: c[alive] for m, c in cols.items()}
        total = np.zeros(len(cols[root]), np.int64)
        for member, col in cols.items():
            total = clamp_add(total, problem.unary[member][col])
            rep[member] = root
        unary[root] = total
        for member, col in cols.items():
            columns[member] = col
        groups.append((root, tuple(sorted(cols.items()))))
    graph = WorkGraph([unary[r] if rep[r] == r else np.zeros(1, np.int64) for r in range(n)])
    for node in range(n):
        if rep[node] != node:
            graph.unary[node] = None
    tables, adj = graph.tables, graph.adj
    for edge in problem.edges:
        u, v = edge.u, edge.v
        if not grouped[u] and not grouped[v]:
            # Untied ends, labels unchanged: WorkGraph.add_table, inline.
            key, oriented = ((u, v), edge.costs) if u < v else ((v, u), edge.costs.T)
            old = tables.get(key)
            tables[key] = as_private(oriented) if old is None else clamp_add(old, oriented)
            adj[u].add(v)
            adj[v].add(u)
            continue
        ru, rv = rep[u], rep[v]
        cu, cv = columns[edge.u], columns[edge.v]
        if ru == rv:
            graph.unary[ru] = clamp_add(graph.unary[ru], edge.costs[cu, cv])
        else:
            graph.add_table(ru, rv, edge.costs[np.ix_(cu, cv)])
    for use in problem.memory:
        usage = use.usage if not grouped[use.node] else use.usage[columns[use.node]]
        graph.add_use(rep[use.node], use.start, use.end, usage)
    return graph, tuple(groups)


def _join_group(problem: Problem, root: int, tie_adj: list[list[int]]) -> dict[int, np.ndarray]:
    """Joint assignments of the tie group of ``root``: one column per member."""
    cols: dict[int, np.ndarray] = {root: np.arange(problem.label_count(root))}
    done: set[int] = set()
    queue = deque([root])
    while queue:
        x = queue.popleft()
        for k in tie_adj[x]:
            if k in done:
                continue
            done.add(k)
            tie = problem.ties[k]
            m = (np.arange(problem.label_count(tie.u)) if tie.mapping is None
                 else np.array([-1 if b is None else b for b in tie.mapping]))
            if tie.u in cols and tie.v in cols:
                ok = m[cols[tie.u]] == cols[tie.v]
                cols = {key: c[ok] for key, c in cols.items()}
            elif tie.u in cols:
                target = m[cols[tie.u]]
                ok = target >= 0
                cols = {key: c[ok] for key, c in cols.items()}
                cols[tie.v] = target[ok]
                queue.append(tie.v)
            else:
                # v known, u not: each row expands to every u label mapping onto it.
                rows, labels = np.nonzero(cols[tie.v][:, None] == m[None, :])
                cols = {key: c[rows] for key, c in cols.items()}
                cols[tie.u] = labels
                queue.append(tie.u)
    return cols


def _prune_labels(graph: WorkGraph, nodes: list[int]) -> None:
    """Drop forbidden labels and labels without an allowed partner, to a fixpoint."""
    keep = _supported(graph, nodes)
    queue: deque[int] = deque()
    queued: set[int] = set()
    for node in nodes:
        if not keep[node].all():
            if not keep[node].any():
                raise Infeasible(f"node {node} has no label allowed by its costs and edges")
            graph.restrict(node, keep[node])
            for other in graph.adj[node]:
                if other not in queued:
                    queued.add(other)
                    queue.append(other)
    # Then to a fixpoint around the nodes that lost labels.
    while queue:
        node = queue.popleft()
        queued.discard(node)
        if graph.unary[node] is None:
            continue
        keep_node = graph.unary[node] < FORBIDDEN
        for other in graph.adj[node]:
            keep_node &= (graph.table(node, other) < FORBIDDEN).any(axis=1)
        if keep_node.all():
            continue
        if not keep_node.any():
            raise Infeasible(f"node {node} has no label allowed by its costs and edges")
        graph.restrict(node, keep_node)
        for other in graph.adj[node]:
            if other not in queued:
                queued.add(other)
                queue.append(other)


def _supported(graph: WorkGraph, nodes: list[int]) -> dict[int, np.ndarray]:
    """Per node, its labels that are allowed and have an allowed partner on every edge,
    computed table shape by table shape (a table without a forbidden entry keeps every
    label)."""
    keep = {n: graph.unary[n] < FORBIDDEN for n in nodes}
    by_shape: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
    for key, table in graph.tables.items():
        by_shape[table.shape].append(key)
    for keys in by_shape.values():
        finite = np.array([graph.tables[key] for key in keys]) < FORBIDDEN
        pruning = np.flatnonzero(~finite.all(axis=(1, 2))).tolist()
        if not pruning:
            continue
        rows, cols = finite.any(axis=2), finite.any(axis=1)
        for j in pruning:
            u, v = keys[j]
            if u in keep:
                keep[u] = keep[u] & rows[j]
            if v in keep:
                keep[v] = keep[v] & cols[j]
    return keep


def _memory(graph: WorkGraph, limit: int | None, fixed: list[FixedUse]) -> set[int]:
    """Turn uses that never meet a binding check into fixed uses; return memory nodes."""
    live = [i for i, use in enumerate(graph.uses) if use is not None]
    if limit is None:
        for i in live:
            graph.uses[i] = None
        graph.node_uses.clear()
        return set()
    checks = memory_checks.analyze_uses([tuple(graph.uses[i][1:]) for i in live], fixed, limit)
    if checks.infeasible_time is not None:
        raise Infeasible(f"memory limit {limit} is exceeded at time {checks.infeasible_time} "
                         "whatever the labels")
    relevant: set[int] = set()
    for j, i in enumerate(live):
        node, start, end, usage = graph.uses[i]
        if checks.first[j] < checks.last[j]:
            relevant.add(node)
        else:
            if start < end and usage.min() > 0:
                fixed.append(FixedUse(start, end, int(usage.min())))
            graph.uses[i] = None
    graph.node_uses = {n: [i for i in uses if graph.uses[i] is not None]
                       for n, uses in graph.node_uses.items() if n in relevant}
    return relevant


def _drop_all_dominated(graph: WorkGraph, relevant: set[int], in_time) -> None:
    """:func:`_drop_dominated` on every node in order, checked on every node at once first
    (:func:`_dominated_now`): a node's rows change only when a neighbour loses labels, so a
    node none of whose neighbours lost any before its turn takes the verdict computed on
    the graph as it was; the others are checked again on their own."""
    nodes = graph.alive()
    verdicts = _dominated_now(graph, nodes, relevant)
    shrunk: set[int] = set()
    for i, node in enumerate(nodes):
        if i % 1024 == 0 and not in_time():
            break
        if shrunk and not shrunk.isdisjoint(graph.adj[node]):
            k = len(graph.unary[node])
            _drop_dominated(graph, node, relevant)
            if len(graph.unary[node]) < k:
                shrunk.add(node)
        elif node in verdicts:
            graph.restrict(node, verdicts[node])
            shrunk.add(node)


def _dominated_now(graph: WorkGraph, nodes: list[int], relevant: set[int]
                   ) -> dict[int, np.ndarray]:
    """The labels :func:`_drop_dominated` keeps at each of ``nodes`` on the graph as it is,
    for the nodes where it drops some, computed table shape by table shape: ``no_worse``
    of a node is the AND of one comparison per part of its rows (unary, each incident
    table, each memory use)."""
    count = {n: len(graph.unary[n]) for n in nodes}
    width = {n: 1 + sum(count[o] for o in graph.adj[n])
             + (len(graph.node_uses.get(n, ())) if n in relevant else 0) for n in nodes}
    checked = [n for n in nodes
               if 2 <= count[n] <= DOMINANCE_LIMIT and count[n] ** 2 * width[n] <= DOMINANCE_WORK]
    # no_worse[k][slot[n]]: the (k, k) matrix of node n, nodes grouped by label count k.
    slot: dict[int, int] = {}
    members: dict[int, list[int]] = {}
    for n in checked:
        group = members.setdefault(count[n], [])
        slot[n] = len(group)
        group.append(n)
    no_worse = {}
    for k, group in members.items():
        unary = np.array([graph.unary[n] for n in group])
        no_worse[k] = unary[:, :, None] <= unary[:, None, :]
    for n in checked:
        if n in relevant:
            for i in graph.node_uses.get(n, ()):
                usage = graph.uses[i][3]
                no_worse[count[n]][slot[n]] &= usage[:, None] <= usage[None, :]
    by_shape: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
    for key, table in graph.tables.items():
        by_shape[table.shape].append(key)
    for (ku, kv), keys in by_shape.items():
        stack = np.array([graph.tables[key] for key in keys])
        for end, k, compare in ((0, ku, lambda t: (t[:, :, None, :] <= t[:, None, :, :]).all(axis=3)),
                                (1, kv, lambda t: (t[:, :, :, None] <= t[:, :, None, :]).all(axis=1))):
            if k not in members:
                continue
            picked = [j for j, key in enumerate(keys) if key[end] in slot and count[key[end]] == k]
            if not picked:
                continue
            slots = np.array([slot[keys[j][end]] for j in picked])
            worse = ~compare(stack[picked])
            # A node can meet several tables of one shape: OR its tables' failures
            # (grouped by slot), then clear.
            order = np.argsort(slots, kind="stable")
            slots = slots[order]
            starts = np.flatnonzero(np.concatenate(([True], slots[1:] != slots[:-1])))
            failed = np.logical_or.reduceat(worse[order], starts, axis=0)
            no_worse[k][slots[starts]] &= ~failed
    verdicts: dict[int, np.ndarray] = {}
    for k, group in members.items():
        nw = no_worse[k]
        index = np.arange(k)
        beats = nw & (~nw.transpose(0, 2, 1) | (index[:, None] < index[None, :]))
        beats[:, index, index] = False
        keep = ~beats.any(axis=1)
        for j in np.flatnonzero(~keep.all(axis=1)).tolist():
            verdicts[group[j]] = keep[j]
    return verdicts


def _drop_dominated(graph: WorkGraph, node: int, relevant: set[int]) -> None:
    """Drop labels another label beats (or ties) on every cost and memory term."""
    k = len(graph.unary[node])
    if k < 2 or k > DOMINANCE_LIMIT:
        return
    # One row per label: unary, every incident table row, every memory usage.
    parts = [graph.unary[node][:, None]]
    parts += [graph.table(node, other) for other in sorted(graph.adj[node])]
    if node in relevant:
        parts += [graph.uses[i][3][:, None] for i in graph.node_uses.get(node, ())]
    rows = np.concatenate(parts, axis=1)
    if k * k * rows.shape[1] > DOMINANCE_WORK:
        return
    # no_worse[a, b]: label a is pointwise <= label b. Label b goes when some a is
    # strictly better somewhere, or equal everywhere with a smaller index; the
    # minimal labels of that order always survive, so every dropped label has a
    # surviving one at least as good.
    no_worse = (rows[:, None, :] <= rows[None, :, :]).all(axis=2)
    index = np.arange(k)
    beats = no_worse & (~no_worse.T | (index[:, None] < index[None, :]))
    np.fill_diagonal(beats, False)
    keep = ~beats.any(axis=0)
    if not keep.all():
        graph.restrict(node, keep)


def _fold_single(graph: WorkGraph, node: int, fixed: list[FixedUse]) -> list[int]:
    """A node with one label: its edges become neighbours' unary costs."""
    neighbours = sorted(graph.adj[node])
    for other in neighbours:
        graph.unary[other] = clamp_add(graph.unary[other], graph.table(other, node)[:, 0])
    cost = int(graph.unary[node][0])
    if cost >= FORBIDDEN:
        raise Infeasible(f"node {node} has no allowed label")
    graph.offset += cost
    for i in graph.node_uses.get(node, ()):
        _, start, end, usage = graph.uses[i]
        if start < end and usage[0] > 0:
            fixed.append(FixedUse(start, end, int(usage[0])))
    graph.steps.append(Fix(node, 0))
    graph.remove_node(node)
    return neighbours


def _eliminate(graph: WorkGraph, relevant: set[int], fixed: list[FixedUse]) -> None:
    """Fold single-label nodes; eliminate memory-free nodes of degree <= 2 exactly."""
    queue = deque(graph.alive())
    while queue:
        node = queue.popleft()
        unary = graph.unary[node]
        if unary is None:
            continue
        if len(unary) == 1:
            queue.extend(_fold_single(graph, node, fixed))
            continue
        if node in relevant:
            continue
        degree = len(graph.adj[node])
        if degree == 0:
            best = int(np.argmin(unary))
            if unary[best] >= FORBIDDEN:
                raise Infeasible(f"node {node} has no allowed label")
            graph.offset += int(unary[best])
            graph.steps.append(Fix(node, best))
            graph.remove_node(node)
        elif degree == 1:
            (u,) = graph.adj[node]
            total = clamp_add(graph.table(u, node), unary[None, :])
            best = total.argmin(axis=1)
            graph.unary[u] = clamp_add(graph.unary[u], total.min(axis=1))
            graph.steps.append(Leaf(node, u, best))
            graph.remove_node(node)
            queue.append(u)
        elif degree == 2:
            u, w = sorted(graph.adj[node])
            if len(graph.unary[u]) * len(unary) * len(graph.unary[w]) > SERIES_LIMIT:
                continue
            total = clamp_add(
                clamp_add(graph.table(u, node), unary[None, :])[:, :, None],
                graph.table(node, w)[None, :, :],
            )
            best = total.argmin(axis=1)
            through = total.min(axis=1)
            graph.steps.append(Series(node, u, w, best))
            graph.remove_node(node)
            graph.add_table(u, w, through)
            graph.reparametrize(u, w)
            queue.extend((u, w))


def _product_at_most(sizes: list[int], limit: int) -> bool:
    """Whether the product of ``sizes`` is at most ``limit``, stopping early.

    Exact in integers: a float product of a large component overflows to inf
    (and ``int(inf)`` raises), so the running product stops once past ``limit``.
    """
    product = 1
    for size in sizes:
        product *= size
        if product > limit:
            return False
    return True


def _enumerate_components(graph: WorkGraph, relevant: set[int]) -> None:
    """Solve small memory-free components by enumerating every assignment."""
    for members in connected_pieces(graph.alive(), graph.tables):
        if any(n in relevant for n in members):
            continue
        sizes = [len(graph.unary[n]) for n in members]
        if not _product_at_most(sizes, ENUMERATION_LIMIT):
            continue
        axis = {n: i for i, n in enumerate(members)}
        total = np.zeros(sizes, np.int64)
        for n in members:
            shape = [1] * len(members)
            shape[axis[n]] = sizes[axis[n]]
            total = clamp_add(total, graph.unary[n].reshape(shape))
        # The component's own tables, found through its members' neighbours (the sum
        # is the same in any order: every term is non-negative and clamped).
        own = sorted((a, b) for a in members for b in graph.adj[a] if a < b)
        for u, v in own:
            table = graph.tables[(u, v)]
            shape = [1] * len(members)
            shape[axis[u]], shape[axis[v]] = table.shape
            oriented = table if axis[u] < axis[v] else table.T
            total = clamp_add(total, oriented.reshape(shape))
        flat = int(np.argmin(total))
        if total.flat[flat] >= FORBIDDEN:
            raise Infeasible(f"nodes {members} admit no allowed joint labels")
        graph.offset += int(total.flat[flat])
        for n, label in zip(members, np.unravel_index(flat, sizes)):
            graph.steps.append(Fix(n, int(label)))
        for n in members:
            graph.remove_node(n)
