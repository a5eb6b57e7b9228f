"""Candidate layouts per node: the closure of DESIGN §7, capped, deterministic.

Start: a pinned node has exactly its pin. Otherwise the default order first,
then the layouts written in the input (hints), then what the target's rules
name for this operand/result. Then a few rounds of propagation through the
relations, each direction, in relation order: a relation proposes, for one
side, the layouts that make it free given a candidate of the other side
(tied ops share orders; broadcast restricts/extends; transpose permutes;
reshape uses the bitcast layout finders; reduce drops/inserts the reduced
dims). Each node keeps at most ``cap`` candidates, in discovery order. With ``cap`` at least
:data:`EVERY_ORDER_CAP`, a rank-r array with ``r! <= cap`` also gets every dim order the closure
did not find (so ``max_candidates=64`` makes OPTIMAL cover every plain layout of arrays up to
rank 4); the default cap keeps the closure alone.

Example: ``t = f32[4,8]{?} transpose(p), dimensions={1,0}`` with ``p`` pinned
to ``{1,0}`` gets candidates ``{1,0}`` (default) and ``{0,1}`` (the bitcast).
"""

from __future__ import annotations

import functools
import itertools
import math

from hlo.bitcast import reshape_input_layout_for_bitcast, reshape_output_layout_for_bitcast
from hlo.errors import HloError
from hlo.shape import ArrayShape, Layout, default_layout
from solver.layout_assignment.costs import FRACTAL_Z, NC1HWC0, Candidate, CostModel, padding
from solver.layout_assignment.layout_graph import LayoutGraph, Relation
from solver.layout_assignment.rules import preferred_candidates

__all__ = ["EVERY_ORDER_CAP", "candidate_sets"]

#: From this cap on, arrays whose every dim order fits under the cap get all of them (4! = 24).
EVERY_ORDER_CAP = 24


@functools.cache
def _default(rank: int) -> Candidate:
    return Candidate(default_layout(rank).minor_to_major)


class _Reshapes:
    """Memoized bitcast layout finders on untiled shapes."""

    def __init__(self) -> None:
        self.memo: dict[tuple, tuple[int, ...] | None] = {}

    def forward(self, src: ArrayShape, mtm: tuple[int, ...], out_dims: tuple[int, ...]):
        key = ("f", src.element_type, src.dims, mtm, out_dims)
        if key not in self.memo:
            try:
                layout = reshape_output_layout_for_bitcast(
                    src.with_layout(Layout(mtm)), out_dims)
            except HloError:
                layout = None
            self.memo[key] = layout.minor_to_major if layout is not None else None
        return self.memo[key]

    def backward(self, src_dims: tuple[int, ...], dst: ArrayShape, mtm: tuple[int, ...]):
        key = ("b", dst.element_type, src_dims, dst.dims, mtm)
        if key not in self.memo:
            try:
                layout = reshape_input_layout_for_bitcast(src_dims, dst.with_layout(Layout(mtm)))
            except HloError:
                layout = None
            self.memo[key] = layout.minor_to_major if layout is not None else None
        return self.memo[key]


def _propose(rel: Relation, graph: LayoutGraph, side: str, others: list[Candidate],
             reshapes: _Reshapes) -> list[Candidate]:
    """Candidates for ``side`` ('u' or 'v') that make ``rel`` free given ``others``."""
    u_shape = graph.nodes[rel.u].shape
    v_shape = graph.nodes[rel.v].shape
    out: list[Candidate] = []
    for c in others:
        mtm = c.minor_to_major
        if rel.kind in ("convert", "copy", "bitcast", "same_order"):
            if rel.kind == "bitcast" and u_shape.dims != v_shape.dims:
                continue
            if rel.view in ("same",):
                out.append(c if len(c.minor_to_major) == (u_shape if side == "u" else v_shape).rank
                           else _default((u_shape if side == "u" else v_shape).rank))
            elif rel.view == "restrict":
                dims = rel.dims
                if side == "u":
                    renumber = {d: i for i, d in enumerate(dims)}
                    out.append(Candidate(tuple(renumber[d] for d in mtm if d in renumber)))
                else:
                    new = [d for d in range(v_shape.rank) if d not in dims]
                    kept = tuple(dims[d] for d in mtm)
                    out.append(Candidate(kept + tuple(sorted(new, reverse=True))))
                    out.append(Candidate(tuple(sorted(new, reverse=True)) + kept))
            elif rel.view == "drop_last":
                if side == "u":
                    r = u_shape.rank
                    out.append(Candidate(tuple(d for d in mtm if d != r)))
                else:
                    out.append(Candidate((len(mtm),) + mtm))
            elif rel.view == "add_last":
                if side == "u":
                    out.append(Candidate((len(mtm),) + mtm))
                else:
                    r = v_shape.rank
                    out.append(Candidate(tuple(d for d in mtm if d != r)))
        elif rel.kind == "transpose":
            dims = rel.dims
            if side == "v":
                inverse = [0] * len(dims)
                for o, i in enumerate(dims):
                    inverse[i] = o
                out.append(Candidate(tuple(inverse[d] for d in mtm)))
            else:
                out.append(Candidate(tuple(dims[d] for d in mtm)))
        elif rel.kind == "reshape":
            found = (reshapes.forward(u_shape, mtm, v_shape.dims) if side == "v"
                     else reshapes.backward(u_shape.dims, v_shape, mtm))
            if found is not None:
                out.append(Candidate(found))
        elif rel.kind == "reduce_out":
            reduced = rel.dims
            if side == "v":
                kept = [d for d in range(u_shape.rank) if d not in reduced]
                renumber = {d: i for i, d in enumerate(kept)}
                out.append(Candidate(tuple(renumber[d] for d in mtm if d in renumber)))
            else:
                kept = [d for d in range(u_shape.rank) if d not in reduced]
                mapped = tuple(kept[d] for d in mtm)
                red = tuple(sorted(reduced, reverse=True))
                out.append(Candidate(red + mapped))
                out.append(Candidate(mapped + red))
    return out


def candidate_sets(graph: LayoutGraph, cm: CostModel, *, cap: int = 6,
                   rounds: int = 2) -> list[list[Candidate]]:
    """Candidates per node (index 0 is the default order unless the node is pinned)."""
    sets: list[list[Candidate]] = []
    fixed: list[bool] = []
    for node in graph.nodes:
        if node.pinned is not None:
            sets.append([node.pinned])
            fixed.append(True)
            continue
        start = [_default(node.shape.rank)]
        start.extend(node.hints)
        start.extend(_less_padding(cm, node.shape))
        sets.append(list(dict.fromkeys(c for c in start if _fits(c, node.shape))))
        fixed.append(node.shape.rank <= 1)
    for pref in graph.prefs:
        if fixed[pref.node]:
            continue
        shape = graph.nodes[pref.node].shape
        for c in preferred_candidates(cm, pref.instruction, pref.role, pref.index, shape,
                                      pref.combiner, pref.ranks):
            if c not in sets[pref.node] and _fits(c, shape):
                sets[pref.node].insert(1, c) if len(sets[pref.node]) else sets[pref.node].append(c)
    _propagate(graph, sets, fixed, cap, rounds)
    if cap >= EVERY_ORDER_CAP:
        _every_order(graph, sets, fixed, cap)
    return sets


def _propagate(graph: LayoutGraph, sets: list[list[Candidate]], fixed: list[bool], cap: int,
               rounds: int) -> None:
    """Rounds of propagation through the relations (each direction, in relation order).

    What a relation proposes for one side depends only on the relation's kind, view and
    dims, the two sides' types and dims and the other side's candidates, so it is computed
    once per distinct such key (the layers of a deep model repeat them) and kept with the
    proposals that fit that side already filtered."""
    reshapes = _Reshapes()
    # A relation between two fixed sides never proposes anything.
    relations = [r for r in graph.relations
                 if r.u != r.v and not (fixed[r.u] and fixed[r.v])]
    shapes = [(n.shape.element_type, n.shape.dims) for n in graph.nodes]
    proposals: dict[tuple, list[Candidate]] = {}
    # Sets only grow, so a set's length is its version: a relation proposes again for
    # a side only when the other side gained candidates since it last did.
    seen = {"u": [-1] * len(relations), "v": [-1] * len(relations)}
    for _ in range(rounds):
        changed = False
        for order in (range(len(relations)), range(len(relations) - 1, -1, -1)):
            for i in order:
                rel = relations[i]
                for side, mine, other in (("v", rel.v, rel.u), ("u", rel.u, rel.v)):
                    mine_set = sets[mine]
                    if fixed[mine] or len(mine_set) >= cap:
                        continue
                    others = sets[other]
                    if seen[side][i] == len(others):
                        continue
                    seen[side][i] = len(others)
                    key = (rel.kind, rel.view, rel.dims, side, shapes[rel.u], shapes[rel.v],
                           tuple(others))
                    found = proposals.get(key)
                    if found is None:
                        shape = graph.nodes[mine].shape
                        found = proposals[key] = [
                            c for c in _propose(rel, graph, side, others, reshapes)
                            if _fits(c, shape)]
                    for c in found:
                        if len(mine_set) >= cap:
                            break
                        if c not in mine_set:
                            mine_set.append(c)
                            changed = True
        if not changed:
            break


def _every_order(graph: LayoutGraph, sets: list[list[Candidate]], fixed: list[bool],
                 cap: int) -> None:
    """Where the cap leaves room for every plain dim order of an array (``rank! <= cap``), add
    the orders the closure did not find, after its own (so an optimum over these candidates
    is an optimum over every plain layout of that array)."""
    for node, cands in zip(graph.nodes, sets):
        rank = node.shape.rank
        if fixed[node.id] or rank < 2 or math.factorial(rank) > cap:
            continue
        have = {c.minor_to_major for c in cands if not c.format}
        for order in itertools.permutations(range(rank - 1, -1, -1)):
            if order not in have:
                cands.append(Candidate(order))


def _fits(c: Candidate, shape: ArrayShape) -> bool:
    if sorted(c.minor_to_major) != list(range(shape.rank)):
        return False
    return c.format not in (FRACTAL_Z, NC1HWC0) or shape.rank == 4


def _less_padding(cm: CostModel, shape: ArrayShape) -> list[Candidate]:
    """On tiled targets: the default with its two minor dims swapped, when that pads less
    (``f32[1024,2]``: ``{0,1}`` gets the compact ``T(2,128)`` tile instead of padding 2 to 128)."""
    if cm.target.layout_family != "tiled" or shape.rank < 2:
        return []
    base = _default(shape.rank)
    mtm = base.minor_to_major
    swapped = Candidate((mtm[1], mtm[0]) + mtm[2:])
    if padding(cm.laid_out(shape, swapped)) < padding(cm.laid_out(shape, base)):
        return [swapped]
    return []
