"""Layout graph + candidates -> the generic labeling problem, and back to costs.

Every number in the model comes from :func:`relation_cost` or :func:`node_cost`;
the scorer and the report call the same two functions, so the model objective
and the explained terms cannot disagree.

Padding accounting (tiled targets): a buffer pays its padding once per write
and once per read that no relation prices; a relation that reads its producer
(``reader``) pays the producer's padding itself. A conversion of a read value
pays the copy, the copy's padding written and read, and the producer's padding
read by the copy; of a forwarded value (while init, call operand, root), the
copy, its padding written and the producer's padding read.

Loops: a relation or backend preference inside a while body with a known trip
count (``backend_config`` ``known_trip_count``) is charged once per iteration
(:func:`~.layout_graph.computation_weights`); a buffer's own padding term (its
writes and the reads no relation prices) is charged once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hlo.bitcast import is_bitcast, transpose_is_bitcast
from hlo.errors import HloError
from hlo.layout_verifier import bitcast_kind
from hlo.shape import ArrayShape
from solver.layout_assignment.costs import Candidate, CostModel, Term, physical_bytes
from solver.layout_assignment.layout_graph import LayoutGraph, Relation
from solver.layout_assignment.rules import preference
from solver.problem import FORBIDDEN, Problem, Tie, make_problem

__all__ = ["Compiled", "compile_problem", "evaluate", "relation_cost", "node_cost", "view_of"]


@dataclass(frozen=True, slots=True, eq=False)
class Compiled:
    graph: LayoutGraph
    candidates: tuple[tuple[Candidate, ...], ...]
    problem: Problem


def view_of(rel: Relation, cv: Candidate) -> Candidate:
    """The layout in which the consumer reads the producer, given the consumer's label."""
    mtm = cv.minor_to_major
    if rel.view == "restrict":
        renumber = {d: i for i, d in enumerate(rel.dims)}
        return Candidate(tuple(renumber[d] for d in mtm if d in renumber))
    if rel.view == "drop_last":
        r = rel.shape.rank
        return Candidate(tuple(d for d in mtm if d != r))
    if rel.view == "add_last":
        return Candidate((len(mtm),) + mtm)
    return cv


def _movement(cm: CostModel, rel: Relation, src: ArrayShape, dst: ArrayShape,
              cu: Candidate, cv: Candidate) -> tuple[int, str]:
    """Cost of the transpose/reshape/copy/bitcast op itself (0 when it is a bitcast)."""
    if rel.kind == "copy":
        return cm.conversion(src, cu.format, dst, cv.format)
    free = False
    if cu.format == cv.format == "":
        try:
            if rel.kind == "transpose":
                free = transpose_is_bitcast(src, dst, rel.dims)
            elif rel.kind == "bitcast":
                # A written bitcast may be a free reshape or a free transpose
                # (normalization writes the latter).
                free = bitcast_kind(src, dst) is not None
            elif src.element_count == dst.element_count:
                free = is_bitcast(src, dst)
        except HloError:
            free = False
    if free:
        return 0, "a bitcast: moves no bytes"
    if rel.kind == "transpose":
        want = Candidate(tuple(rel.dims[d] for d in cv.minor_to_major))
        ns, why = cm.conversion(src, cu.format, cm.laid_out(rel.shape, want), "")
        return ns, f"transpose moves data: {why}"
    target = cm.target
    nbytes = physical_bytes(src, cu.format) + physical_bytes(dst, cv.format)
    ns = target.pass_ns(nbytes) * target.copies.factor * target.transpose.minor_moving
    return int(np.ceil(ns + target.copies.fixed_ns)), f"{rel.kind} is not a bitcast: {nbytes} bytes"


def relation_cost(cm: CostModel, graph: LayoutGraph, rel: Relation, cu: Candidate,
                  cv: Candidate) -> tuple[int, str, str]:
    """``(ns, kind, reason)`` of relation ``rel`` with labels ``cu``/``cv``; a relation
    inside a loop body is charged once per iteration (``rel.weight``)."""
    ns, kind, reason = _once(cm, graph, rel, cu, cv)
    if rel.weight == 1 or not 0 < ns < FORBIDDEN:
        return ns, kind, reason
    return (min(FORBIDDEN - 1, ns * rel.weight), kind,
            f"{reason} (x{rel.weight}: runs {rel.weight} times per execution)")


def _once(cm: CostModel, graph: LayoutGraph, rel: Relation, cu: Candidate,
          cv: Candidate) -> tuple[int, str, str]:
    if rel.kind == "same_order":
        if cu.minor_to_major == cv.minor_to_major:
            return 0, "", ""
        return FORBIDDEN, "rule", "variadic reduce results share one layout"
    v_shape = graph.nodes[rel.v].shape
    if rel.kind == "convert":
        src = cm.laid_out(rel.shape, cu)
        want = view_of(rel, cv)
        dst = cm.laid_out(rel.shape, want)
        if src == dst and cu.format == want.format:
            return (cm.padding_ns(src, cu.format, 1) if rel.reader else 0), "padding", "read"
        pad_dst = cm.padding_ns(dst, want.format, 2 if rel.reader else 1)
        if graph.nodes[rel.u].constant:
            return pad_dst, "constant", f"constant re-laid out at compile time as {want}"
        ns, why = cm.conversion(src, cu.format, dst, want.format)
        return ns + pad_dst + cm.padding_ns(src, cu.format, 1), "copy", f"{cu} -> {want}: {why}"
    if rel.kind == "reduce_out":
        kept = [d for d in range(graph.nodes[rel.u].shape.rank) if d not in rel.dims]
        renumber = {d: i for i, d in enumerate(kept)}
        natural = Candidate(tuple(renumber[d] for d in cu.minor_to_major if d in renumber))
        if natural.minor_to_major == cv.minor_to_major:
            return 0, "", ""
        out = cm.laid_out(rel.shape, cv)
        ns, why = cm.conversion(cm.laid_out(rel.shape, natural), "", out, cv.format)
        return ns, "reduce", f"reduce writes {cv}, not its natural {natural}: {why}"
    src = cm.laid_out(rel.shape, cu)
    dst = cm.laid_out(v_shape, cv)
    ns, why = _movement(cm, rel, src, dst, cu, cv)
    return ns + cm.padding_ns(src, cu.format, 1), rel.kind, why


def node_cost(cm: CostModel, graph: LayoutGraph, prefs_of: dict[int, list], node_id: int,
              c: Candidate) -> list[tuple[int, str, str, bool]]:
    """``[(ns, kind, reason, hard)]`` of giving node ``node_id`` the label ``c``."""
    node = graph.nodes[node_id]
    out: list[tuple[int, str, str, bool]] = []
    if node.kind == "buffer":
        pad = cm.padding_ns(cm.laid_out(node.shape, c), c.format, node.writes + node.free_reads)
        if pad:
            out.append((pad, "padding", f"tile padding x{node.writes + node.free_reads}", False))
    for pref in prefs_of.get(node_id, ()):
        p = preference(cm, pref.instruction, pref.role, pref.index, node.shape, c)
        if p is not None:
            ns, reason = p.ns, p.reason
            if pref.weight != 1 and ns:
                ns = min(FORBIDDEN - 1, ns * pref.weight)
                reason = f"{reason} (x{pref.weight}: runs {pref.weight} times per execution)"
            out.append((ns, "backend", reason, p.hard))
    return out


def prefs_by_node(graph: LayoutGraph) -> dict[int, list]:
    out: dict[int, list] = {}
    for pref in graph.prefs:
        out.setdefault(pref.node, []).append(pref)
    return out


def compile_problem(graph: LayoutGraph, candidates: list[list[Candidate]],
                    cm: CostModel) -> Compiled:
    """The labeling problem: unary = padding + preferences, edges = relations.

    Tables are memoized by everything :func:`relation_cost` reads (the relation's
    kind, shapes, view, dims, reader and constant flags) plus both candidate
    lists, so the repeated layers of a model cost one table each; unary costs of
    nodes without backend preferences likewise.
    """
    prefs_of = prefs_by_node(graph)
    unary: list[np.ndarray] = []
    unary_memo: dict[tuple, np.ndarray] = {}
    for node in graph.nodes:
        cands = candidates[node.id]
        key = None if node.id in prefs_of else (
            node.kind, node.shape, node.writes + node.free_reads, tuple(cands))
        row = unary_memo.get(key) if key is not None else None
        if row is None:
            costs = []
            for c in cands:
                total = 0
                for ns, _, _, hard in node_cost(cm, graph, prefs_of, node.id, c):
                    total = FORBIDDEN if hard else min(FORBIDDEN, total + ns)
                costs.append(total)
            row = np.array(costs, np.int64)
            row.flags.writeable = False
            if key is not None:
                unary_memo[key] = row
        unary.append(row)
    edges: list[tuple[int, int, np.ndarray]] = []
    ties: list[Tie] = []
    memo: dict[tuple, np.ndarray] = {}
    for rel in graph.relations:
        cu_list, cv_list = candidates[rel.u], candidates[rel.v]
        if rel.kind == "same_order":
            index = {c.minor_to_major: j for j, c in enumerate(cv_list)}
            ties.append(Tie(rel.u, rel.v, tuple(index.get(c.minor_to_major) for c in cu_list)))
            continue
        key = (rel.kind, rel.shape, graph.nodes[rel.v].shape, rel.view, rel.dims,
               rel.reader, graph.nodes[rel.u].constant, rel.weight, tuple(cu_list),
               tuple(cv_list))
        table = memo.get(key)
        if table is None:
            table = np.array([[relation_cost(cm, graph, rel, cu, cv)[0] for cv in cv_list]
                              for cu in cu_list], np.int64).reshape(len(cu_list), len(cv_list))
            table.flags.writeable = False
            memo[key] = table
        if rel.u == rel.v:
            unary[rel.u] = np.minimum(unary[rel.u] + np.diag(table), FORBIDDEN)
        elif table.any():
            edges.append((rel.u, rel.v, table))
    problem = make_problem(unary, edges, ties=ties, names=[n.name for n in graph.nodes])
    return Compiled(graph, tuple(tuple(c) for c in candidates), problem)


def evaluate(cm: CostModel, graph: LayoutGraph, chosen: list[Candidate]
             ) -> tuple[int, list[Term], list[str]]:
    """Total cost, every nonzero term, and the hard rules broken, for one labeling.

    Costs are memoized by the same signatures as in :func:`compile_problem`."""
    prefs_of = prefs_by_node(graph)
    terms: list[Term] = []
    broken: list[str] = []
    node_memo: dict[tuple, list] = {}
    for node in graph.nodes:
        c = chosen[node.id]
        key = None if node.id in prefs_of else (node.kind, node.shape,
                                                 node.writes + node.free_reads, c)
        found = node_memo.get(key) if key is not None else None
        if found is None:
            found = node_cost(cm, graph, prefs_of, node.id, c)
            if key is not None:
                node_memo[key] = found
        for ns, kind, reason, hard in found:
            if hard:
                broken.append(f"{node.name}: {reason}")
            if ns:
                nbytes = physical_bytes(cm.laid_out(node.shape, c), c.format)
                terms.append(Term(kind, "", node.name, nbytes, ns, reason))
    memo: dict[tuple, tuple[int, str, str]] = {}
    for rel in graph.relations:
        cu, cv = chosen[rel.u], chosen[rel.v]
        key = (rel.kind, rel.shape, graph.nodes[rel.v].shape, rel.view, rel.dims,
               rel.reader, graph.nodes[rel.u].constant, rel.weight, cu, cv)
        cost = memo.get(key)
        if cost is None:
            cost = memo[key] = relation_cost(cm, graph, rel, cu, cv)
        ns, kind, reason = cost
        if ns >= FORBIDDEN:
            broken.append(f"{rel.instruction}: {reason}")
            continue
        if ns:
            nbytes = physical_bytes(cm.laid_out(rel.shape, cu), cu.format)
            where = rel.instruction or "ROOT"
            terms.append(Term(kind, rel.computation, where, nbytes, ns, reason))
    return sum(t.ns for t in terms), terms, broken
