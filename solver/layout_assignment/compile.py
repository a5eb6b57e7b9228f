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

Shared copies: the rewrite inserts one ``copy`` per (value, layout) however many
uses read it, while the labeling model charges a ``convert`` relation's copy per
use. :func:`copy_parts` splits a copying cell into what every use pays (reading
the copy) and what the copy costs once (the copy, the source read, the copy's
padding written); :class:`RelationTables` keep the parts so that
:mod:`.shared_copies` can compute the true cost of a labeling, and the
*relaxed* problem charges each use ``per_use + shared // n`` where ``n`` is the
number of uses of the value that can need a copy to that same target (layout,
format). One copy to a target serves at most those ``n`` uses, so the relaxed
cost of any labeling is at most its true cost, and the relaxed optimum (or any
proven bound on it) bounds the true optimum over the candidate layouts from
below.

Loops: a relation or backend preference inside a while body with a known trip
count (``backend_config`` ``known_trip_count``) is charged once per iteration
(:func:`~.layout_graph.computation_weights`); a buffer's own padding term (its
writes and the reads no relation prices) is charged once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import NamedTuple, Sequence

import numpy as np

from hlo.bitcast import bitcast_kind, is_bitcast, transpose_is_bitcast
from hlo.errors import HloError
from hlo.shape import ArrayShape, element_bytes
from solver.layout_assignment.costs import Candidate, CostModel, Term, physical_bytes
from solver.layout_assignment.layout_graph import LayoutGraph, Relation, runs_note, weighted
from solver.layout_assignment.rules import dot_nn_rule, naive_loop, preference
from solver.problem import FORBIDDEN, Problem, Tie, make_problem

__all__ = ["Compiled", "RelationTables", "compile_problem", "copy_parts", "evaluate",
           "relation_cost", "node_cost", "reshape_via_copy", "transpose_via_copy",
           "view_of"]


@dataclass(frozen=True, slots=True, eq=False)
class RelationTables:
    """One priced relation over (label of ``u``, label of ``v``), split for the true cost.

    ``base``: what this use pays by itself (the whole model cost where no copy is
    needed; where one is, only the consumer's read of the copy). ``dst``: the
    copy's target (an id of (layout, format); -1: no copy). ``shared``: what that
    copy costs once, whichever uses of ``group`` (one value in one computation)
    share it. ``dst``/``shared`` are ``None`` for relations that never copy.
    """

    u: int
    v: int
    group: int
    base: np.ndarray
    dst: np.ndarray | None = None
    shared: np.ndarray | None = None


class RelationSignature(NamedTuple):
    """Everything :func:`relation_cost` reads of a relation: relations with equal
    signatures cost the same for the same labels, so the repeated layers of a model
    are priced once. (A named tuple: it is hashed once per relation.)"""

    kind: str
    shape: ArrayShape
    consumer_shape: ArrayShape
    view: str
    dims: tuple[int, ...]
    reader: bool
    constant: bool
    weight: Fraction
    inline: bool
    overwrites: str
    flops: int
    forms: tuple
    op: object
    v_member: tuple[str, int]


def relation_signature(graph: LayoutGraph, rel: Relation) -> RelationSignature:
    return RelationSignature(rel.kind, rel.shape, graph.nodes[rel.v].shape, rel.view, rel.dims,
                             rel.reader, graph.nodes[rel.u].constant, rel.weight, rel.inline,
                             rel.overwrites, rel.flops, rel.forms, rel.op, rel.v_member)


class NodeSignature(NamedTuple):
    """Everything :func:`node_cost` reads of a node without backend preferences."""

    kind: str
    shape: ArrayShape
    accesses: int


def node_signature(graph: LayoutGraph, node_id: int, prefs_of: dict[int, list]
                   ) -> NodeSignature | None:
    """The node's signature, or ``None`` when it has backend preferences of its own."""
    if node_id in prefs_of:
        return None
    node = graph.nodes[node_id]
    return NodeSignature(node.kind, node.shape, node.writes + node.free_reads)


@dataclass(frozen=True, slots=True)
class CopyParts:
    """A ``convert`` cell that needs a copy, split (see :func:`copy_parts`)."""

    per_use: int
    shared: int
    #: The copy as the rewrite keys it: (layout, format).
    target: tuple


@dataclass(frozen=True, slots=True)
class NodeTerm:
    """One term of a node's cost for one label; ``hard``: a rule, not a price."""

    ns: int
    kind: str
    reason: str
    hard: bool


@dataclass(frozen=True, slots=True, eq=False)
class PricedTables:
    """The tables of one relation: the model's (``table``) and its split for the
    true cost (``base``/``dst``/``shared`` as in :class:`RelationTables`; the last two
    ``None`` when no label pair needs a copy)."""

    table: np.ndarray
    base: np.ndarray
    dst: np.ndarray | None = None
    shared: np.ndarray | None = None


@dataclass(frozen=True, slots=True, eq=False)
class Compiled:
    graph: LayoutGraph
    candidates: tuple[tuple[Candidate, ...], ...]
    problem: Problem
    #: The per-use model with each copying cell charged ``per_use + shared // n``:
    #: a relaxation of the true (shared-copy) cost (see the module docstring).
    relaxed: Problem | None = None
    #: Unary costs without the self-relations folded in (those are in ``tables``).
    unary: tuple[np.ndarray, ...] = ()
    tables: tuple[RelationTables, ...] = ()


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
    if rel.kind == "reshape" and not rel.inline:
        plain = reshape_via_copy(cm, rel, src, dst, cu, cv)
        if plain is not None:
            ns, why = cm.conversion(src, cu.format, plain, "")
            return ns, (f"reshape moves data: the rewrite copies its operand to the default "
                        f"layout ({why}), then the reshape is a bitcast (XLA's own form)")
    if rel.kind == "transpose":
        return _transpose_movement(cm, rel, src, dst, cu, cv)
    target = cm.target
    nbytes = physical_bytes(src, cu.format) + physical_bytes(dst, cv.format)
    ns = (target.copy_pass_ns(nbytes) * target.copies.factor
          * target.transpose.minor_factor(src.element_type, target.copy_cached(nbytes)))
    why = f"{rel.kind} is not a bitcast: {nbytes} bytes"
    slower = target.transpose.reshape_standalone
    stride = _reshape_read_stride(src, dst) if rel.kind == "reshape" else 0
    if rel.kind == "reshape" and slower != 1.0 and stride < target.transpose.standalone_min_stride:
        why += (f": its innermost loop reads {stride} bytes apart, close enough to cost what "
                "the copy costs")
    elif rel.kind == "reshape" and slower != 1.0 and (streams := _streams(target, stride, dst)):
        why += f": {streams}"
    elif rel.kind == "reshape" and slower != 1.0:
        slower = _by_stride(target, slower, stride)
        ns *= slower
        why += (f", x{slower:g}: a reshape that moves data runs as its own elementwise loop, "
                "slower than a copy moving the same bytes")
    return int(np.ceil(ns + target.copies.fixed_ns)), why


def _transpose_movement(cm: CostModel, rel: Relation, src: ArrayShape, dst: ArrayShape,
                        cu: Candidate, cv: Candidate) -> tuple[int, str]:
    """A data-moving transpose: as written (``rel.inline``), the standalone transpose's price
    (:func:`_transpose_prices`); in an assignment, the cheaper of that and XLA's form (the
    rewrite writes the latter where it is cheaper, :func:`transpose_via_copy`)."""
    want, copy_ns, copy_why, standalone_ns, standalone_why = _transpose_prices(
        cm, rel, src, dst, cu, cv)
    if _rewritten(rel, cu, cv, copy_ns, standalone_ns):
        return copy_ns, (f"transpose moves data: the rewrite copies its operand to {want} "
                         f"({copy_why}), then the transpose is a bitcast (XLA's own form)")
    return standalone_ns, standalone_why


def _rewritten(rel: Relation, cu: Candidate, cv: Candidate, copy_ns: int,
               standalone_ns: int) -> bool:
    """Whether assignment writes a data-moving transpose in XLA's form."""
    return not rel.inline and cu.format == cv.format == "" and copy_ns < standalone_ns


def _transpose_prices(cm: CostModel, rel: Relation, src: ArrayShape, dst: ArrayShape,
                      cu: Candidate, cv: Candidate) -> tuple[Candidate, int, str, int, str]:
    """The operand layout that makes the transpose a bitcast; XLA's form (a copy to it, then
    the bitcast) and the standalone transpose, each ``(ns, reason)``. A standalone transpose
    costs the copy's passes doing its movement (its own loop: per run of the result's minor
    dim ``standalone_row_ns``, unset the copy's ``row_ns``; never the copy's blocked-transpose
    tiles) times ``standalone`` at its read stride (:func:`_by_stride`) where its reads do
    not stream through the cache (:func:`_streams`);
    one reading closer than ``standalone_min_stride`` costs that, or ``standalone_near``
    times XLA's form where it swaps the only two dims with more than one element and its
    operand has ``standalone_near_min_bytes`` or more (measured: 2-D from 64 KiB, 1.1-1.5x
    XLA's form; 16 KiB 0.6-0.9x; with a third dim, 0.1-0.9x). One moving only major dims
    (reading rows contiguously) costs ``standalone_major`` times XLA's form of it."""
    target = cm.target.transpose
    want = Candidate(tuple(rel.dims[d] for d in cv.minor_to_major))
    laid = cm.laid_out(rel.shape, want)
    ns, why = cm.conversion(src, cu.format, laid, "")
    stride = _read_stride(src, dst, rel.dims)
    standalone = target.standalone_factor(
        cm.target.copy_cached(physical_bytes(src, cu.format) + physical_bytes(laid)))
    if standalone == 1.0:
        return want, ns, why, ns, f"transpose moves data: {why}"
    if (target.standalone_major != 1.0 and not cu.format and not cv.format
            and stride == element_bytes(src.element_type)):
        # The result's physically minor dim is the operand's: only major dims move, and the
        # standalone loop reads whole rows (measured against XLA's form, calibrate's
        # major-only transpose groups).
        return want, ns, why, _scaled(cm, ns, target.standalone_major), (
            f"transpose moves data: {why}; x{target.standalone_major:.3g}: a standalone "
            "transpose moving only major dims (it reads rows contiguously), against XLA's "
            "form of it (a bitcast transpose and a copy)")
    # XLA:CPU's elementwise loop does not pay per run of a short minor dim as its copy loop
    # does (measured, the copy-rows calibration groups), nor does it tile.
    own = (cm.target.copies.row_ns if target.standalone_row_ns is None
           else target.standalone_row_ns)
    base, base_why = cm.conversion(src, cu.format, laid, "", row_ns=own)
    if stride < target.standalone_min_stride:
        near = (_dims_over_one(src) == 2
                and physical_bytes(src) >= target.standalone_near_min_bytes)
        if near and target.standalone_near != 1.0:
            return want, ns, why, _scaled(cm, ns, target.standalone_near), (
                f"transpose moves data: {why}; x{target.standalone_near:.3g}: a standalone 2-D "
                f"transpose reading {stride} bytes apart, against a copy doing the same "
                "movement")
        return want, ns, why, base, (
            f"transpose moves data: {base_why}; its innermost loop reads {stride} bytes "
            f"apart, close enough to cost the copy's passes with {own:g} ns per run (a "
            "standalone loop)")
    cache = target.cache
    nest = (_transpose_nest(src, dst, rel.dims, cache.line_bytes)
            if cache is not None and target.nest_min_bytes
            and physical_bytes(src) >= target.nest_min_bytes else None)
    streams = _streams(cm.target, stride, dst, nest)
    if streams:
        return want, ns, why, base, f"transpose moves data: {base_why}; {streams}"
    slower = _by_stride(cm.target, standalone, stride)
    share = ""
    if nest and len(nest) > 1:
        # Only the reads whose lines are evicted before they are read again miss.
        over = cache.overflow(nest)
        slower = 1.0 + (slower - 1.0) * over
        share = f"; {over:.0%} of the lines its loops read are evicted before they are read again"
    return want, ns, why, _scaled(cm, base, slower), (
        f"transpose moves data: {base_why}; x{slower:.3g}: a standalone transpose, slower than "
        f"a copy doing the same movement (reads {stride} bytes apart{share})")


def _scaled(cm: CostModel, ns: int, factor: float) -> int:
    """A standalone loop's price from a copy's ``ns``: its movement times ``factor``, its
    fixed cost (the op's own, ``copies.fixed_ns``) once."""
    fixed = cm.target.copies.fixed_ns
    return math.ceil((ns - fixed) * factor + fixed)


def _dims_over_one(shape: ArrayShape) -> int:
    """How many dims of ``shape`` have more than one element."""
    return sum(1 for d in shape.dims if d != 1)


def transpose_via_copy(cm: CostModel, rel: Relation, src: ArrayShape, dst: ArrayShape,
                       cu: Candidate, cv: Candidate) -> ArrayShape | None:
    """The laid-out operand that makes a data-moving transpose a bitcast, where a copy and
    the bitcast (XLA's own form; :func:`.plan.plan_for` writes the copy after the transpose
    where it can, as XLA does) are priced cheaper than the standalone transpose, else
    ``None``."""
    if rel.inline or cu.format or cv.format:
        return None
    try:
        if transpose_is_bitcast(src, dst, rel.dims):
            return None
    except HloError:
        return None
    want, copy_ns, _, standalone_ns, _ = _transpose_prices(cm, rel, src, dst, cu, cv)
    return cm.laid_out(rel.shape, want) if _rewritten(rel, cu, cv, copy_ns, standalone_ns) else None


def reshape_via_copy(cm: CostModel, rel: Relation, src: ArrayShape, dst: ArrayShape,
                     cu: Candidate, cv: Candidate) -> ArrayShape | None:
    """The default-laid-out operand a data-moving reshape is rewritten to read (a copy, then
    a reshape that is a bitcast: XLA's own form, far cheaper on XLA:CPU than a reshape that
    moves data itself), or ``None`` where that does not make it a bitcast."""
    if cu.format or cv.format:
        return None
    plain = cm.laid_out(rel.shape, Candidate(tuple(range(rel.shape.rank - 1, -1, -1))))
    if plain == src:
        return None
    try:
        return plain if is_bitcast(plain, dst) and not is_bitcast(src, dst) else None
    except HloError:
        return None


def copy_parts(cm: CostModel, graph: LayoutGraph, rel: Relation, cu: Candidate,
               cv: Candidate) -> CopyParts | None:
    """The parts of a ``convert`` cell that needs a copy, else ``None``.

    The rewritten module pays, per copy (per value and target): the copy and its read
    of the source, once per iteration of its computation, plus the copy's padding
    written, which the scorer charges once per buffer; and per reading use, the
    consumer's read of the copy's padding. A constant is cloned instead: only the
    clone's padding. ``target`` names the copy as the rewrite keys it (layout, format).
    """
    src = cm.laid_out(rel.shape, cu)
    want = view_of(rel, cv)
    dst = cm.laid_out(rel.shape, want)
    if src == dst and cu.format == want.format:
        return None
    pad = cm.padding_ns(dst, want.format, 1)
    per_use = weighted(pad, rel.weight) if rel.reader else 0
    if graph.nodes[rel.u].constant:
        shared = pad
    else:
        ns, _ = cm.conversion(src, cu.format, dst, want.format)
        shared = weighted(ns + cm.padding_ns(src, cu.format, 1), rel.weight) + pad
    fmt = want.format if want.format != "NC1HWC0" else ""
    return CopyParts(min(FORBIDDEN - 1, per_use), min(FORBIDDEN - 1, shared), (dst.layout, fmt))


def relation_cost(cm: CostModel, graph: LayoutGraph, rel: Relation, cu: Candidate,
                  cv: Candidate) -> tuple[int, str, str]:
    """``(ns, kind, reason)`` of relation ``rel`` with labels ``cu``/``cv``; a relation
    inside a loop body is charged once per iteration (``rel.weight``)."""
    ns, kind, reason = _once(cm, graph, rel, cu, cv)
    if rel.weight == 1 or not 0 < ns < FORBIDDEN:
        return ns, kind, reason
    return (min(FORBIDDEN - 1, weighted(ns, rel.weight)), kind,
            f"{reason} {runs_note(rel.weight)}")


def _once(cm: CostModel, graph: LayoutGraph, rel: Relation, cu: Candidate,
          cv: Candidate) -> tuple[int, str, str]:
    if rel.kind == "same_order":
        if cu.minor_to_major == cv.minor_to_major:
            return 0, "", ""
        return FORBIDDEN, "rule", "variadic reduce results share one layout"
    if rel.kind == "dot_form":
        return _dot_form(cm, rel, cu, cv)
    if rel.kind == "conv_naive":
        return _conv_naive(cm, graph, rel, cu, cv)
    v_shape = graph.nodes[rel.v].shape
    if rel.kind == "convert":
        src = cm.laid_out(rel.shape, cu)
        want = view_of(rel, cv)
        dst = cm.laid_out(rel.shape, want)
        if src == dst and cu.format == want.format:
            over_ns, over_why = _overwrite(cm, rel)
            if over_ns:
                return over_ns, "in_place", over_why
            return (cm.padding_ns(src, cu.format, 1) if rel.reader else 0), "padding", "read"
        pad_dst = cm.padding_ns(dst, want.format, 2 if rel.reader else 1)
        if graph.nodes[rel.u].constant:
            return pad_dst, "constant", f"constant re-laid out at compile time as {want}"
        ns, why = cm.conversion(src, cu.format, dst, want.format)
        inline = cm.target.copies.inline_relayout
        if rel.inline and (inline != 1.0 or cm.target.copies.fixed_ns):
            # No op of its own: the movement, not a copy's fixed cost.
            moved = ns - cm.target.copies.fixed_ns
            return (math.ceil(moved * inline), "inline",
                    f"{rel.instruction} reads {rel.value} as {cu}, not {want}, itself "
                    f"(no copy): x{inline:g} the copy {why}")
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


def _dot_form(cm: CostModel, rel: Relation, cu: Candidate, cv: Candidate
              ) -> tuple[int, str, str]:
    """A dot operand read as ``cu`` while the result is written ``cv``: off the form the
    result's layout picks (the nn form, or its mirror image where the result is written
    transposed; the nn form where the result is in neither, whose own price is the result's
    preference), the dot runs a slower kernel: the target's ``dot_nn`` ``ns_per_flop``."""
    rule = dot_nn_rule(cm, rel.shape.element_type, rel.operand)
    if rule is None or "ns_per_flop" not in rule.params:
        return 0, "", ""
    mirror = len(rel.forms) > 1 and cv.minor_to_major == rel.forms[1][1]
    operand = rel.forms[1 if mirror else 0][0]
    if cu.minor_to_major == operand:
        return 0, "", ""
    form = "its mirror image (the result written transposed)" if mirror else "the nn form"
    if rule.hard:
        return FORBIDDEN, "rule", f"dot operand {rel.operand} not {Candidate(operand)} ({form})"
    per = float(rule.params["ns_per_flop"])
    return (int(rel.flops * per), "backend",
            f"dot operand {rel.operand} not {Candidate(operand)} ({form}): the dot runs a slower "
            f"kernel, {rel.flops} flops x {per:g} ns ({rule.note or rule.kind})")


def _conv_naive(cm: CostModel, graph: LayoutGraph, rel: Relation, cu: Candidate,
                cv: Candidate) -> tuple[int, str, str]:
    """A convolution's operand ``rel.operand`` read as ``cu`` runs it as a naive loop
    (:func:`.rules.naive_loop`) that its member ``v`` written or read as ``cv`` does not
    already run: the loop runs once per convolution, and ``v`` prices it where it misses."""
    assert rel.op is not None
    ns, why = naive_loop(cm, rel.op, "operand", rel.operand, rel.shape, cu, rel.flops)
    if not ns:
        return 0, "", ""
    role, k = rel.v_member
    if naive_loop(cm, rel.op, role, k, graph.nodes[rel.v].shape, cv, rel.flops)[0]:
        return 0, "", ""
    return ns, "backend", f"{rel.op.name} operand {rel.operand} {why}"


def _overwrite(cm: CostModel, rel: Relation) -> tuple[int, str]:
    """What ``rel``'s consumer pays for writing over the operand's buffer (XLA:CPU runs
    such a loop scalar), and why; ``(0, "")`` where it does not or the target has no price.
    Only a module scored as written has such relations (:class:`.layout_graph.Relation`),
    and only an untiled target prices them (:class:`hlo.target.InPlaceCost`): its read of
    the operand's own layout has no padding to add."""
    if not rel.overwrites:
        return 0, ""
    dtype = rel.shape.element_type
    per = cm.target.in_place.price(rel.overwrites, dtype)
    if per <= 0:
        return 0, ""
    ns = math.ceil(math.prod(rel.shape.dims) * per)
    return ns, (f"{rel.overwrites} writes over its operand's buffer (predicted from XLA:CPU's buffer "
                f"assignment), so its loop runs scalar: {per:g} ns per {dtype} element")


def node_cost(cm: CostModel, graph: LayoutGraph, prefs_of: dict[int, list], node_id: int,
              c: Candidate) -> list[NodeTerm]:
    """The terms of giving node ``node_id`` the label ``c``."""
    node = graph.nodes[node_id]
    out: list[NodeTerm] = []
    if node.kind == "buffer":
        pad = cm.padding_ns(cm.laid_out(node.shape, c), c.format, node.writes + node.free_reads)
        if pad:
            out.append(NodeTerm(pad, "padding", f"tile padding x{node.writes + node.free_reads}",
                                False))
    for pref in prefs_of.get(node_id, ()):
        p = preference(cm, pref.instruction, pref.role, pref.index, node.shape, c, pref.flops,
                       pref.combiner, pref.ranks, pref.chained)
        if p is not None:
            ns, reason = p.ns, p.reason
            if pref.weight != 1 and ns:
                ns = min(FORBIDDEN - 1, weighted(ns, pref.weight))
                reason = f"{reason} {runs_note(pref.weight)}"
            out.append(NodeTerm(ns, "backend", reason, p.hard))
    return out


def prefs_by_node(graph: LayoutGraph) -> dict[int, list]:
    out: dict[int, list] = {}
    for pref in graph.prefs:
        out.setdefault(pref.node, []).append(pref)
    return out


def compile_problem(graph: LayoutGraph, candidates: list[list[Candidate]],
                    cm: CostModel) -> Compiled:
    """The labeling problem: unary = padding + preferences, edges = relations.

    Tables are memoized by everything :func:`relation_cost` reads (a
    :class:`RelationSignature`) plus both candidate lists, so the repeated layers of
    a model cost one table each; unary costs of nodes without backend preferences
    likewise (by :class:`NodeSignature`).
    """
    plain = _unary_costs(cm, graph, candidates)
    ties: list[Tie] = []
    memo: dict[tuple[RelationSignature, tuple, tuple], PricedTables] = {}
    targets: dict[tuple, int] = {}
    priced: list[tuple[Relation, PricedTables]] = []
    for rel in graph.relations:
        cu_list, cv_list = candidates[rel.u], candidates[rel.v]
        if rel.kind == "same_order":
            index = {c.minor_to_major: j for j, c in enumerate(cv_list)}
            ties.append(Tie(rel.u, rel.v, tuple(index.get(c.minor_to_major) for c in cu_list)))
            continue
        key = (relation_signature(graph, rel), tuple(cu_list), tuple(cv_list))
        tables = memo.get(key)
        if tables is None:
            tables = memo[key] = _tables(cm, graph, rel, cu_list, cv_list, targets)
        priced.append((rel, tables))
    unary, edges = list(plain), []
    relaxed_unary, relaxed_edges = list(plain), []
    split: list[RelationTables] = []
    for rel, tables, group, loose in _relaxed(priced):
        split.append(RelationTables(rel.u, rel.v, group, tables.base, tables.dst, tables.shared))
        _add_relation(unary, edges, rel, tables.table)
        _add_relation(relaxed_unary, relaxed_edges, rel, loose)
    names = [n.name for n in graph.nodes]
    problem = make_problem(unary, edges, ties=ties, names=names)
    relaxed = make_problem(relaxed_unary, relaxed_edges, ties=ties, names=names)
    return Compiled(graph, tuple(tuple(c) for c in candidates), problem, relaxed, plain,
                    tuple(split))


def _unary_costs(cm: CostModel, graph: LayoutGraph, candidates: list[list[Candidate]]
                 ) -> tuple[np.ndarray, ...]:
    """Per node, the cost of each of its candidates (``FORBIDDEN`` when a rule forbids it)."""
    prefs_of = prefs_by_node(graph)
    unary: list[np.ndarray] = []
    memo: dict[tuple[NodeSignature, tuple], np.ndarray] = {}
    for node in graph.nodes:
        cands = candidates[node.id]
        signature = node_signature(graph, node.id, prefs_of)
        key = None if signature is None else (signature, tuple(cands))
        row = memo.get(key) if key is not None else None
        if row is None:
            costs = []
            for c in cands:
                total = 0
                for term in node_cost(cm, graph, prefs_of, node.id, c):
                    total = FORBIDDEN if term.hard else min(FORBIDDEN, total + term.ns)
                costs.append(total)
            row = np.array(costs, np.int64)
            row.flags.writeable = False
            if key is not None:
                memo[key] = row
        unary.append(row)
    return tuple(unary)


def _relaxed(priced: list[tuple[Relation, PricedTables]]):
    """Per priced relation: its copy group (-1: it never copies) and its relaxed table,
    where each copying cell is charged ``base + shared // n`` (``n``: the uses of the
    value that can need a copy to that target; a copy to target L serves at most that
    many uses, so each may be charged that fraction of it)."""
    sizes: dict[tuple, int] = {}
    wanting: dict[tuple, dict[int, int]] = {}
    # The targets each table's cells can need, once per table object (memoized tables
    # are shared by the repeated layers of a model).
    targets: dict[int, list[int]] = {}
    for _, tables in priced:
        if tables.dst is not None and id(tables.dst) not in targets:
            targets[id(tables.dst)] = sorted(set(tables.dst[tables.dst >= 0].tolist()))
    for rel, tables in priced:
        if tables.dst is not None:
            group = (rel.computation, rel.value, rel.path)
            sizes[group] = sizes.get(group, 0) + 1
            counts = wanting.setdefault(group, {})
            for d in targets[id(tables.dst)]:
                counts[d] = counts.get(d, 0) + 1
    group_ids = {g: i for i, g in enumerate(sizes)}
    memo: dict[tuple, np.ndarray] = {}
    for rel, tables in priced:
        dst = tables.dst
        if dst is None:
            yield rel, tables, -1, tables.table
            continue
        g = (rel.computation, rel.value, rel.path)
        present = targets[id(dst)]
        uses = tuple(wanting[g][d] for d in present)
        # Also where n == 1: the model charges a copy's padding write once per loop
        # iteration, the scorer once per buffer (``copy_parts``).
        key = (id(tables.table), tuple(present), uses)
        loose = memo.get(key)
        if loose is None:
            lookup = np.ones(max(present) + 1, np.int64)
            lookup[present] = uses
            n = lookup[np.maximum(dst, 0)]
            loose = np.where(dst >= 0, tables.base + tables.shared // n, tables.table)
            loose.flags.writeable = False
            memo[key] = loose
        yield rel, tables, group_ids[g], loose


def _add_relation(unary: list[np.ndarray], edges: list[tuple[int, int, np.ndarray]],
                  rel: Relation, table: np.ndarray) -> None:
    """A self-relation folds into the node's unary costs; a relation that costs
    nothing anywhere is left out."""
    if rel.u == rel.v:
        unary[rel.u] = np.minimum(unary[rel.u] + np.diag(table), FORBIDDEN)
    elif table.any():
        edges.append((rel.u, rel.v, table))


def _tables(cm: CostModel, graph: LayoutGraph, rel: Relation, cu_list: list[Candidate],
            cv_list: list[Candidate], targets: dict[tuple, int]) -> PricedTables:
    """The tables of one relation; ``targets`` numbers the copies' targets."""
    shape = (len(cu_list), len(cv_list))
    table = np.array([[relation_cost(cm, graph, rel, cu, cv)[0] for cv in cv_list]
                      for cu in cu_list], np.int64).reshape(shape)
    table.flags.writeable = False
    if rel.kind != "convert":
        return PricedTables(table, table)
    base = table.copy()
    dst = np.full(shape, -1, np.int64)
    shared = np.zeros(shape, np.int64)
    for a, cu in enumerate(cu_list):
        for b, cv in enumerate(cv_list):
            parts = copy_parts(cm, graph, rel, cu, cv)
            if parts is not None:
                base[a, b], shared[a, b] = parts.per_use, parts.shared
                dst[a, b] = targets.setdefault(parts.target, len(targets))
    if not (dst >= 0).any():
        return PricedTables(table, table)
    for array in (base, dst, shared):
        array.flags.writeable = False
    return PricedTables(table, base, dst, shared)


def evaluate(cm: CostModel, graph: LayoutGraph, chosen: list[Candidate]
             ) -> tuple[int, list[Term], list[str]]:
    """Total cost, every nonzero term, and the hard rules broken, for one labeling.

    Costs are memoized by the same signatures as in :func:`compile_problem`."""
    prefs_of = prefs_by_node(graph)
    terms: list[Term] = []
    broken: list[str] = []
    node_memo: dict[tuple[NodeSignature, Candidate], list[NodeTerm]] = {}
    for node in graph.nodes:
        c = chosen[node.id]
        signature = node_signature(graph, node.id, prefs_of)
        key = None if signature is None else (signature, c)
        found = node_memo.get(key) if key is not None else None
        if found is None:
            found = node_cost(cm, graph, prefs_of, node.id, c)
            if key is not None:
                node_memo[key] = found
        for term in found:
            if term.hard:
                broken.append(f"{node.name}: {term.reason}")
            if term.ns:
                nbytes = physical_bytes(cm.laid_out(node.shape, c), c.format)
                terms.append(Term(term.kind, "", node.name, nbytes, term.ns, term.reason))
    memo: dict[tuple[RelationSignature, Candidate, Candidate], tuple[int, str, str]] = {}
    for rel in graph.relations:
        cu, cv = chosen[rel.u], chosen[rel.v]
        key = (relation_signature(graph, rel), cu, cv)
        cost = memo.get(key)
        if cost is None:
            cost = memo[key] = relation_cost(cm, graph, rel, cu, cv)
        ns, kind, reason = cost
        if ns >= FORBIDDEN:
            broken.append(f"{rel.instruction}: {reason}")
            continue
        if ns:
            # The bytes of the value the relation moves: a reduce's output (``reduce_out``)
            # has the rank of the consumer's label, not of the operand's.
            c = cu if len(cu.minor_to_major) == rel.shape.rank else cv
            nbytes = physical_bytes(cm.laid_out(rel.shape, c), c.format)
            where = rel.instruction or "ROOT"
            terms.append(Term(kind, rel.computation, where, nbytes, ns, reason))
    return sum(t.ns for t in terms), terms, broken


def _streams(target, stride: int, dst: ArrayShape,
             nest: Sequence[tuple[int, int]] | None = None) -> str:
    """Why a standalone loop over ``dst`` (laid out) reading ``stride`` bytes apart streams
    through the target's cache (:meth:`hlo.target.CacheGeometry.holds_nest`: the reads it
    makes before it reads the rest of their lines stay cached until then), or ``""`` where
    they do not (or the target has no cache geometry). ``nest``: those reads, ``(stride,
    count)`` per loop (:func:`_transpose_nest`); without it, one pass of the innermost loop,
    one read per element of the result's minor dim."""
    cache = target.transpose.cache
    minor = [d for d in dst.effective_layout().minor_to_major if dst.dims[d] != 1]
    if cache is None or not minor:
        return ""
    loops = tuple(nest) if nest else ((stride, dst.dims[minor[0]]),)
    if not cache.holds_nest(loops):
        return ""
    fits = (f"its {math.prod(n for _, n in loops)} reads before it reads the rest of their "
            f"lines ({len(loops)} loops)" if len(loops) > 1 else
            f"its innermost loop's {loops[0][1]} reads, {stride} bytes apart,")
    return (f"{fits} fit the cache ({cache.ways} ways of each of its {cache.sets} sets of "
            f"{cache.line_bytes}-byte lines): it streams, costing the copy's passes")


def _transpose_nest(src: ArrayShape, dst: ArrayShape, dims: tuple[int, ...],
                    line_bytes: int) -> list[tuple[int, int]]:
    """The loops of a standalone transpose's nest inside the first one that reads its operand
    less than a line apart, ``(operand stride in bytes, count)`` each, innermost first: the
    loop nest runs over the result in its layout, and a line the inner loops read is read
    again only when that loop moves on (XLA:CPU's elementwise loop)."""
    strides, step = {}, element_bytes(src.element_type)
    for d in src.effective_layout().minor_to_major:
        strides[d] = step
        step *= src.dims[d]
    nest = []
    for d in dst.effective_layout().minor_to_major:
        if dst.dims[d] == 1:
            continue
        if strides[dims[d]] < line_bytes:
            break
        nest.append((strides[dims[d]], dst.dims[d]))
    return nest


def _by_stride(target, factor: float, stride: int) -> float:
    """A standalone loop's factor at a read stride: the full ``factor`` from
    ``standalone_full_stride`` bytes on, in proportion to the stride below it (never below
    1); the full factor everywhere when that is 0."""
    full = target.transpose.standalone_full_stride
    if not full or stride >= full:
        return factor
    return max(1.0, factor * stride / full)


def _reshape_read_stride(src: ArrayShape, dst: ArrayShape) -> int:
    """Bytes between the operand elements a data-moving reshape's innermost loop reads one
    after the other (as :func:`_read_stride` for a transpose): one step along the result's
    physically minor dim is a step of the product of the dims after it in the row-major
    element order both shapes share; the distance in the operand's layout between the
    first element and the one that step away (size-1 dims aside)."""
    out = [d for d in dst.effective_layout().minor_to_major if dst.dims[d] != 1]
    if not out:
        return 0
    step = int(np.prod(dst.dims[out[0] + 1:], dtype=np.int64))
    if step >= src.element_count:
        return 0
    index = np.unravel_index(step, src.dims)
    offset, stride = 0, element_bytes(src.element_type)
    for d in src.effective_layout().minor_to_major:
        offset += int(index[d]) * stride
        stride *= src.dims[d]
    return offset


def _read_stride(src: ArrayShape, dst: ArrayShape, dims: tuple[int, ...]) -> int:
    """Bytes between the operand elements a transpose's innermost loop reads one after the
    other: the operand stride of the dim that is the result's physically minor one (the
    loop runs over the result in its layout; size-1 dims aside)."""
    out = [d for d in dst.effective_layout().minor_to_major if dst.dims[d] != 1]
    if not out:
        return 0
    read = dims[out[0]]
    stride = element_bytes(src.element_type)
    for d in src.effective_layout().minor_to_major:
        if d == read:
            return stride
        stride *= src.dims[d]
    return stride
