"""The rewrite plan of one labeling: the layout of every array, and the conversions
(copies) to insert, each described for the report as an :class:`InsertedCopy`."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from fractions import Fraction

from hlo.bitcast import transpose_is_bitcast
from hlo.errors import HloError
from hlo.passes.apply_layouts import Conversion, LayoutPlan
from hlo.passes.physical_shapes import inverse_permutation
from hlo.shape import ArrayShape, Layout
from solver.layout_assignment.compile import reshape_via_copy, transpose_via_copy, view_of
from solver.layout_assignment.costs import Candidate, CostModel, physical_bytes
from solver.layout_assignment.layout_graph import LayoutGraph, weighted

__all__ = ["InsertedCopy", "plan_for"]


@dataclass(frozen=True, slots=True)
class InsertedCopy:
    """One conversion the rewrite inserts before a use (``for``: the consuming
    instruction, or ``ROOT``); ``shared`` when an earlier entry already makes the same
    copy of the same value, which then serves this use too."""

    value: str
    path: tuple[int, ...]
    computation: str
    consumer: str
    operand: int
    source: str
    destination: str
    bytes: int
    cost_ns: int
    runs: Fraction  # per execution: a conditional's branch counts its share of the runs
    shared: bool
    why: str

    def to_json(self) -> dict:
        return {"value": self.value, "path": list(self.path), "computation": self.computation,
                "for": self.consumer, "operand": self.operand, "from": self.source,
                "to": self.destination, "bytes": self.bytes, "cost_ns": self.cost_ns,
                "runs": int(self.runs) if self.runs.denominator == 1 else float(self.runs),
                "shared": self.shared, "why": self.why}


def plan_for(graph: LayoutGraph, cm: CostModel, chosen: list[Candidate],
             emit_bitcasts: bool) -> tuple[LayoutPlan, tuple[InsertedCopy, ...]]:
    """The rewrite plan of one labeling, and the inserted conversions for the report."""
    layouts, formats = _array_layouts(graph, cm, chosen)
    conversions: list[Conversion] = []
    inserted: list[InsertedCopy] = []
    seen: set = set()
    for rel in graph.relations:
        if rel.kind != "convert":
            continue
        cu, want = chosen[rel.u], view_of(rel, chosen[rel.v])
        src = cm.laid_out(rel.shape, cu)
        dst = cm.laid_out(rel.shape, want)
        if src == dst and cu.format == want.format:
            continue
        conversions.append(Conversion(rel.computation, rel.instruction, rel.operand, rel.path,
                                      dst.layout, want.format if want.format != "NC1HWC0" else ""))
        key = (rel.computation, rel.value, rel.path, dst, want.format)
        ns, why = cm.conversion(src, cu.format, dst, want.format)
        constant = graph.nodes[rel.u].constant
        inserted.append(InsertedCopy(
            value=rel.value, path=tuple(rel.path), computation=rel.computation,
            consumer=rel.instruction or "ROOT", operand=rel.operand, source=str(src),
            destination=str(dst) + (f" ({want.format})" if want.format else ""),
            bytes=int(physical_bytes(src, cu.format) + physical_bytes(dst, want.format)),
            cost_ns=0 if constant else weighted(ns, rel.weight), runs=rel.weight,
            shared=key in seen,
            why=("constant re-laid out at compile time" if constant
                 else f"{rel.instruction or 'the root'} needs {want}: {why}")))
        seen.add(key)
    for rel in graph.relations:
        if rel.kind in ("reshape", "transpose"):
            _copy_before(graph, cm, chosen, rel, conversions, inserted, seen)
    _copies_after_transposes(graph, cm, chosen, conversions, inserted)
    return LayoutPlan(layouts, tuple(conversions), formats, emit_bitcasts), tuple(inserted)


def _copies_after_transposes(graph: LayoutGraph, cm: CostModel, chosen: list[Candidate],
                             conversions: list[Conversion], inserted: list[InsertedCopy]) -> None:
    """A transpose that reads a copy of its operand, which makes it a bitcast, written in
    XLA's own form instead: the transpose a bitcast of the operand, the copy after it (XLA's
    layout assignment writes a layout-changing transpose so), where that copy moves the same
    bytes at the same price and the copy of the operand would serve this transpose alone.
    XLA:CPU's scheduler places the two forms differently: measured, ``fft_1d``'s temporary
    buffers 384 KiB in this form against 512 KiB, and 0.97 of its time. ``inserted[k]``
    describes ``conversions[k]`` (:func:`plan_for` appends them together)."""
    assert len(inserted) == len(conversions)
    transposes = {(r.computation, r.instruction): r for r in graph.relations
                  if r.kind == "transpose"}
    value = {(r.computation, r.instruction, r.operand): r.value for r in graph.relations
             if r.kind in ("convert", "reshape", "transpose")}
    copies: dict[tuple, int] = {}
    for c in conversions:
        key = (c.computation, value.get((c.computation, c.instruction, c.operand)), c.path,
               c.layout, c.format)
        copies[key] = copies.get(key, 0) + 1
    for k, c in enumerate(conversions):
        rel = transposes.get((c.computation, c.instruction))
        if rel is None or c.operand != 0 or c.path or c.format or graph.nodes[rel.u].constant \
                or copies[(c.computation, rel.value, (), c.layout, "")] > 1:
            continue
        forms = _bitcast_first(cm, rel, graph.nodes[rel.v].shape, chosen[rel.u],
                               chosen[rel.v], c.layout)
        if forms is None:
            continue
        first, planned = forms
        conversions[k] = dataclasses.replace(c, layout=first.layout, after=True)
        why = cm.conversion(first, "", planned, "")[1]
        inserted[k] = dataclasses.replace(
            inserted[k], value=rel.instruction, source=str(first), destination=str(planned),
            why=f"{rel.instruction} moves data: written as a bitcast of its operand to "
                f"{first.layout} and a copy to {planned.layout} after it, XLA's form ({why})")


def _bitcast_first(cm: CostModel, rel, shape: ArrayShape, cu: Candidate, cv: Candidate, layout: Layout
                   ) -> tuple[ArrayShape, ArrayShape] | None:
    """``(the transpose as a bitcast of its operand, the transpose as planned)`` where both
    are untiled, the first is a bitcast and a copy between them costs what the copy of
    the operand to ``layout`` costs; else ``None``."""
    if cu.format or cv.format:
        return None
    src = cm.laid_out(rel.shape, cu)
    plain = src.with_layout(layout)
    dst = cm.laid_out(shape, cv)
    inverse = inverse_permutation(rel.dims)
    first = cm.laid_out(shape, Candidate(tuple(inverse[d] for d in cu.minor_to_major)))
    if any(s.layout is None or not _plain(s.layout) for s in (src, plain, dst, first)):
        return None
    try:
        if not (transpose_is_bitcast(src, first, rel.dims)
                and transpose_is_bitcast(plain, dst, rel.dims)):
            return None
    except HloError:
        return None
    if cm.conversion(first, "", dst, "")[0] != cm.conversion(src, "", plain, "")[0]:
        return None
    return first, dst


def _copy_before(graph: LayoutGraph, cm: CostModel, chosen: list[Candidate], rel,
                 conversions: list[Conversion], inserted: list[InsertedCopy], seen: set) -> None:
    """A reshape or transpose that moves data reads a copy of its operand in the layout that
    makes it a bitcast, XLA's own form (:func:`.compile.reshape_via_copy`: the default
    layout; :func:`.compile.transpose_via_copy`), where the model prices that form cheaper."""
    cu, cv = chosen[rel.u], chosen[rel.v]
    src = cm.laid_out(rel.shape, cu)
    dst = cm.laid_out(graph.nodes[rel.v].shape, cv)
    via = reshape_via_copy if rel.kind == "reshape" else transpose_via_copy
    plain = via(cm, rel, src, dst, cu, cv)
    if plain is None:
        return
    conversions.append(Conversion(rel.computation, rel.instruction, 0, (), plain.layout))
    key = (rel.computation, rel.value, (), plain, "")
    ns, why = cm.conversion(src, cu.format, plain, "")
    layout = "the default layout" if rel.kind == "reshape" else str(plain.layout)
    inserted.append(InsertedCopy(
        value=rel.value, path=(), computation=rel.computation, consumer=rel.instruction,
        operand=0, source=str(src), destination=str(plain),
        bytes=int(physical_bytes(src) + physical_bytes(plain)), cost_ns=weighted(ns, rel.weight),
        runs=rel.weight, shared=key in seen,
        why=f"{rel.instruction} moves data: a copy to {layout} makes it a bitcast "
            f"({why})"))
    seen.add(key)


def _plain(layout: Layout) -> bool:
    """An untiled layout: a dimension order and nothing more (a memory space at most)."""
    return layout == Layout(layout.minor_to_major, memory_space=layout.memory_space)


def _array_layouts(graph: LayoutGraph, cm: CostModel, chosen: list[Candidate]
                   ) -> tuple[dict, dict]:
    """The layout of every array position, and the storage format where it has one."""
    layouts: dict = {}
    formats: dict = {}
    for pos, nid in graph.position_node.items():
        node = graph.nodes[nid]
        c = chosen[nid]
        layouts[pos] = cm.laid_out(node.shape, c).layout
        if c.format and c.format != "NC1HWC0":
            formats[pos] = c.format
    for buf in graph.buffers.buffers:
        if buf.shape.rank == 0:
            for pos in buf.members:
                layouts[pos] = Layout(())
    return layouts, formats
