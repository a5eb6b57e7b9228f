"""HLO -> layout graph: nodes that pick a layout, relations that price pairs.

Nodes (one label each):

* ``buffer``: one :class:`hlo.buffers.Buffer` of rank >= 1 (scalars have one layout);
* ``view``: the layout an instruction *reads* an operand in, where that may
  differ from the producer's buffer (dot/convolution/reduce operands, custom-call
  operand constraints). A view that differs from its producer is a copy;
* ``output``: an entry result leaf as ``entry_computation_layout`` fixes it.

Relations (DESIGN §6), each between two nodes:

* ``convert``: the consumer reads producer ``u`` in the layout ``view(v)``;
  equal: free, else a copy (one per use in the model; the rewrite shares one
  copy per value and layout). ``view`` is ``same`` (tied ops, the view node
  itself), ``restrict`` (broadcast), ``drop_last``/``add_last``
  (bitcast-convert between widths). ``reader`` says whether the consumer reads
  the bytes (an elementwise op) or only passes them on (while init, call
  operands, roots);
* ``transpose``/``reshape``/``copy``/``bitcast``: the op itself moves bytes
  unless the two layouts make it a bitcast;
* ``reduce_out``: a reduce writes ``operand minus reduced dims`` naturally;
* ``same_order``: variadic reduce results share one order (hard); so do an entry
  result and the parameter it aliases (``input_output_alias``) when one is AUTO.

The same graph serves assignment (free nodes get candidates) and scoring
(``actual=True``: every node is fixed to the layout written in the module).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from fractions import Fraction

from hlo.bitcast import reject_layout_dependent_bitcasts
from hlo.buffers import BufferAnalysis, Position, analyze_buffers
from hlo.graph import CallGraph
from hlo.ir import ConvDimLabels, Instruction, Module, ProgramShape, computation_name
from hlo.opcode_facts import ELEMENTWISE, LAYOUT_FREE, TIED, VARIADIC_TIED
from hlo.shape import ArrayShape, Shape, TupleShape, leaf_arrays
from solver.layout_assignment.costs import NC1HWC0, Candidate
from solver.layout_assignment.in_place import in_place_reads
from solver.layout_assignment.rules import dot_forms, rule_op

__all__ = ["LayoutGraph", "Node", "Relation", "build_graph"]

#: Custom-call targets whose operands and results XLA requires dim-0-major (the default
#: layout): XLA:CPU's ``TopK`` checks ``IsMonotonicWithDim0Major`` when it compiles, a check
#: its parser does not make.
DIM0_MAJOR_CALLS = frozenset({"TopK"})

@dataclass(frozen=True, slots=True)
class Node:
    id: int
    kind: str
    name: str
    shape: ArrayShape
    pinned: Candidate | None
    hints: tuple[Candidate, ...]
    buffer: int | None = None
    writes: int = 0
    free_reads: int = 0
    constant: bool = False


@dataclass(frozen=True, slots=True)
class Relation:
    kind: str
    u: int
    v: int
    computation: str
    instruction: str
    operand: int
    path: tuple[int, ...]
    value: str
    shape: ArrayShape
    view: str = "same"
    dims: tuple[int, ...] = ()
    reader: bool = True
    #: How many times the relation's computation runs per module execution (while
    #: bodies with a known trip count multiply it, a conditional's branches share their
    #: caller's runs; see :func:`computation_weights`).
    weight: Fraction = Fraction(1)
    #: A ``convert`` an elementwise op does itself, reading its operand in another layout,
    #: or a ``reshape`` or ``transpose`` that moves data itself (only when scoring a module as
    #: written: assignment inserts a copy instead).
    inline: bool = False
    #: The consumer's opcode where it (an elementwise op) is predicted to write over this
    #: operand's buffer (:mod:`.in_place`; only in a module scored as written), else "".
    overwrites: str = ""
    #: A ``dot_form``'s dot: its flops and its fast forms, ``(operand layout, result layout)``
    #: pairs (:func:`.rules.dot_forms`). A ``conv_naive``'s convolution: its flops.
    flops: int = 0
    forms: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...] = ()
    #: A ``conv_naive``'s convolution, and the role and index of its ``v`` member (``u`` is
    #: operand ``operand``).
    op: Instruction | None = None
    v_member: tuple[str, int] = ("", 0)


@dataclass(frozen=True, slots=True)
class Pref:
    """Node ``node`` is read (``role='operand'``) or written by ``instruction``."""

    node: int
    computation: str
    instruction: Instruction
    role: str
    index: int
    weight: Fraction = Fraction(1)
    #: Multiply-adds x 2 of a convolution or a dot (what a rule priced per flop charges:
    #: a naive loop, a slower kernel); 0 for other ops.
    flops: int = 0
    #: The opcode of a reduce's combiner root (``add``, ``maximum``...; ``tuple`` for a
    #: variadic one): whether the backend vectorizes its loop; "" for other ops.
    combiner: str = ""
    #: A dot's lhs, rhs and result ranks (where its nn form and the mirror image lie).
    ranks: tuple[int, ...] = ()
    #: A convolution's operand whose naive-loop price its ``conv_naive`` relation charges
    #: instead (the loop runs once, whichever of the convolution's arrays misses).
    chained: bool = False


@dataclass(frozen=True, slots=True, eq=False)
class LayoutGraph:
    nodes: tuple[Node, ...]
    relations: tuple[Relation, ...]
    prefs: tuple[Pref, ...]
    buffers: BufferAnalysis
    position_node: dict[Position, int] = field(compare=False)
    views: dict[tuple[str, str, int, tuple[int, ...]], int] = field(compare=False)
    outputs: tuple[tuple[tuple[int, ...], int], ...] = ()


def _cand(shape: ArrayShape) -> Candidate | None:
    """The written layout as a candidate (a ``T(C0,1,1)`` tile on rank 4 is NC1HWC0)."""
    layout = shape.layout
    if layout is None:
        return None
    tiles = layout.tiles
    if shape.rank == 4 and len(tiles) == 1 and len(tiles[0].dims) == 3 \
            and tiles[0].dims[1:] == (1, 1) and tiles[0].dims[0] > 1:
        return Candidate(layout.minor_to_major, NC1HWC0)
    return Candidate(layout.minor_to_major)


def _format_of(instr: Instruction) -> str:
    text = getattr(instr.attr("frontend_attributes"), "text", "")
    marker = 'layout_format="'
    if marker in text:
        return text.split(marker, 1)[1].split('"', 1)[0]
    return ""


def _dims(value: object) -> tuple[int, ...]:
    if value is None:
        return ()
    return (value,) if isinstance(value, int) else tuple(value)


class _Builder:
    def __init__(self, module: Module, entry_auto: bool, actual: bool) -> None:
        self.module = module
        self.actual = actual
        self.entry_auto = entry_auto
        self.buffers = analyze_buffers(module)
        self.nodes: list[Node] = []
        self.relations: list[Relation] = []
        self.prefs: list[Pref] = []
        self.position_node: dict[Position, int] = {}
        self.views: dict[tuple[str, str, int, tuple[int, ...]], int] = {}
        self.outputs: list[tuple[tuple[int, ...], int]] = []
        self.comps = {c.name: c for c in module.computations}
        self.instrs = {c.name: {i.name: i for i in c.instructions} for c in module.computations}
        self.pins: dict[int, Candidate] = {}
        self.relation_reads: dict[int, int] = {}
        self.weights = computation_weights(module)
        # Which elementwise ops overwrite an operand depends on the copies a module has: it
        # is predicted for a module as written (scoring), not for assignment's input.
        self.in_place = in_place_reads(module.entry) if actual else {}

    # -- nodes -----------------------------------------------------------
    def add_node(self, kind: str, name: str, shape: ArrayShape, pinned: Candidate | None,
                 hints: tuple[Candidate, ...] = (), buffer: int | None = None,
                 writes: int = 0, reads: int = 0) -> int:
        nid = len(self.nodes)
        self.nodes.append(Node(nid, kind, name, shape, pinned, hints, buffer, writes, reads))
        return nid

    def leaf(self, comp: str, name: str, path: tuple[int, ...]) -> int | None:
        return self.position_node.get((comp, name, path))

    def leaves(self, comp: str, name: str) -> list[tuple[tuple[int, ...], ArrayShape]]:
        instr = self.instrs[comp].get(name)
        return leaf_arrays(instr.shape) if instr is not None else []

    def pin_position(self, comp: str, name: str, path: tuple[int, ...], cand: Candidate) -> None:
        node = self.leaf(comp, name, path)
        if node is not None:
            self.pins.setdefault(node, cand)

    def view(self, comp: str, instr: Instruction, k: int, path: tuple[int, ...],
             shape: ArrayShape, pinned: Candidate | None) -> int:
        key = (comp, instr.name, k, path)
        if key in self.views:
            return self.views[key]
        if self.actual:
            pinned = _cand(shape) or pinned
            producer = self.instrs[comp].get(instr.operands[k]) if k < len(instr.operands) else None
            fmt = _format_of(producer) if producer is not None and not path else ""
            if fmt and pinned is not None:
                pinned = Candidate(pinned.minor_to_major, fmt)
        nid = self.add_node("view", f"{instr.name} operand {k}{_path(path)}", shape, pinned,
                            tuple(c for c in (_cand(shape),) if c is not None))
        self.views[key] = nid
        return nid

    def prefer(self, node: int, comp: str, instr: Instruction, role: str, index: int,
               flops: int = 0, combiner: str = "", ranks: tuple[int, ...] = (),
               chained: bool = False) -> None:
        self.prefs.append(Pref(node, comp, instr, role, index, self.weights.get(comp, 1),
                               flops, combiner, ranks, chained))

    def relate(self, kind: str, u: int | None, v: int | None, comp: str, instr: str, k: int,
               path: tuple[int, ...], value: str, shape: ArrayShape, **extra) -> None:
        if u is None or v is None:
            return
        rel = Relation(kind, u, v, comp, instr, k, path, value, shape,
                       weight=self.weights.get(comp, 1), **extra)
        self.relations.append(rel)
        if rel.reader:
            self.relation_reads[u] = self.relation_reads.get(u, 0) + 1

    def convert_leaves(self, comp: str, consumer: str, k: int, value: str, target_comp: str,
                       target: str, reader: bool) -> None:
        """Operand ``value`` (in ``comp``) flows into ``target``'s leaves (in ``target_comp``)."""
        for path, shape in self.leaves(comp, value):
            self.relate("convert", self.leaf(comp, value, path),
                        self.leaf(target_comp, target, path), comp, consumer, k, path, value,
                        shape, reader=reader)

    # -- the walk --------------------------------------------------------
    def build(self) -> LayoutGraph:
        module = self.module
        written: dict[int, list[Candidate]] = {}
        for buf in self.buffers.buffers:
            if buf.shape.rank == 0:
                continue
            hints: list[Candidate] = []
            for comp, name, path in buf.members:
                leaf = _leaf(self.instrs[comp][name].shape, path)
                cand = _cand(leaf)
                if cand is not None and cand not in hints:
                    fmt = _format_of(self.instrs[comp][name])
                    hints.append(Candidate(cand.minor_to_major, fmt) if fmt else cand)
            first = buf.members[0]
            nid = self.add_node("buffer", _name(first), buf.shape, None, tuple(hints), buf.id,
                                buf.writes, buf.reads)
            written[nid] = hints
            for m in buf.members:
                self.position_node[m] = nid
        self.pin_entry()
        for comp in module.computations:
            for instr in comp.instructions:
                self.instruction(comp.name, instr)
        nodes = []
        for n in self.nodes:
            pinned = n.pinned
            if n.kind == "buffer":
                pinned = self.pins.get(n.id)
                if self.actual and written.get(n.id):
                    pinned = written[n.id][0]
            free_reads = max(0, n.free_reads - self.relation_reads.get(n.id, 0))
            constant = False
            if n.kind == "buffer" and n.writes == 1:
                comp, name, _ = self.buffers.buffers[n.buffer].members[0]
                constant = self.instrs[comp][name].opcode == "constant"
            nodes.append(Node(n.id, n.kind, n.name, n.shape, pinned, n.hints, n.buffer,
                              n.writes, free_reads if n.kind == "buffer" else 0, constant))
        return LayoutGraph(tuple(nodes), tuple(self.relations), tuple(self.prefs),
                           self.buffers, self.position_node, self.views, tuple(self.outputs))

    def pin_entry(self) -> None:
        entry = self.module.entry
        layout = self.module.attr("entry_computation_layout")
        params = entry.parameter_instructions()
        declared = layout.parameters if isinstance(layout, ProgramShape) else ()
        for k, p in enumerate(params):
            decl = declared[k] if k < len(declared) else p.shape
            for path, leaf in leaf_arrays(decl):
                cand = _cand(leaf)
                if cand is not None and not self.entry_auto:
                    self.pin_position(entry.name, p.name, path, cand)
        result = layout.result if isinstance(layout, ProgramShape) else entry.root_instruction.shape
        root = entry.root_instruction
        for path, leaf in leaf_arrays(result):
            cand = None if self.entry_auto else _cand(leaf)
            if self.actual:
                cand = _cand(leaf) or _cand(_leaf(root.shape, path))
            out = self.add_node("output", f"entry result{_path(path)}", leaf, cand,
                                tuple(c for c in (_cand(leaf),) if c is not None))
            self.outputs.append((path, out))
            self.relate("convert", self.leaf(entry.name, root.name, path), out, entry.name, "",
                        -1, path, root.name, leaf, reader=False)
        self.tie_aliased_entry(params)

    def tie_aliased_entry(self, params: list[Instruction]) -> None:
        """An entry result aliased with a parameter (``input_output_alias``) shares its
        buffer, so it has the parameter's layout. Tied only when one side is free
        (AUTO): when both are fixed the caller has already chosen."""
        aliases = self.module.attr("input_output_alias")
        outputs = dict(self.outputs)
        entry = self.module.entry.name
        for alias in aliases if isinstance(aliases, tuple) else ():
            if alias.operand >= len(params):
                continue
            param = self.leaf(entry, params[alias.operand].name, alias.operand_index)
            out = outputs.get(alias.output_index)
            if param is None or out is None or out == param:
                continue
            p_shape, o_shape = self.nodes[param].shape, self.nodes[out].shape
            if p_shape.dims != o_shape.dims:
                continue
            if param in self.pins and self.nodes[out].pinned is not None:
                continue
            self.relate("same_order", param, out, entry, "", -1, alias.output_index,
                        params[alias.operand].name, o_shape, reader=False)

    def instruction(self, comp: str, instr: Instruction) -> None:
        op = instr.opcode
        shapes = {n: self.instrs[comp][n].shape for n in instr.operands if n in self.instrs[comp]}
        here = instr.name
        if instr.attr("constrain_layout") is True and not self.actual:
            # A layout-constrained collective (``constrain_layout=true``) keeps the
            # layouts it is written with: its operands are converted to them.
            for path, leaf in leaf_arrays(instr.shape):
                cand = _cand(leaf)
                if cand is not None:
                    self.pin_position(comp, here, path, cand)
        if op in TIED and op not in ("while", "bitcast-convert"):
            self.tied(comp, instr, shapes)
        elif op == "broadcast" and instr.operands:
            self.relate("convert", self.leaf(comp, instr.operands[0], ()), self.leaf(comp, here, ()),
                        comp, here, 0, (), instr.operands[0], _array(shapes[instr.operands[0]]),
                        view="restrict", dims=_dims(instr.attr("dimensions")))
        elif op in ("transpose", "reshape", "copy", "bitcast") and instr.operands:
            if op == "bitcast" and not self.actual:
                # Only in a fully laid out module (``build_graph`` rejects the others).
                for name, path in ((instr.operands[0], ()), (here, ())):
                    cand = _cand(_leaf(self.instrs[comp][name].shape, path))
                    if cand is not None:
                        self.pin_position(comp, name, path, cand)
            src = instr.operands[0]
            self.relate(op, self.leaf(comp, src, ()), self.leaf(comp, here, ()), comp, here, 0, (),
                        src, _array(shapes[src]), dims=_dims(instr.attr("dimensions")),
                        inline=self.actual and op in ("reshape", "transpose"))
        elif op == "bitcast-convert" and instr.operands:
            src = instr.operands[0]
            a, b = _array(shapes[src]), instr.shape
            view = "same" if a.rank == b.rank else ("drop_last" if b.rank > a.rank else "add_last")
            self.relate("convert", self.leaf(comp, src, ()), self.leaf(comp, here, ()), comp, here,
                        0, (), src, a, view=view)
        elif op == "reduce":
            self.reduce(comp, instr, shapes)
        elif rule_op(instr) in ("dot", "convolution") and op != "custom-call" or (
                op == "custom-call" and rule_op(instr) == "convolution"):
            self.contraction(comp, instr, shapes)
        elif op == "custom-call":
            self.custom_call(comp, instr, shapes)
        elif op == "while":
            body = self.comps.get(computation_name(instr.attr("body")) or "")
            if instr.operands:
                self.convert_leaves(comp, here, 0, instr.operands[0], comp, here, reader=False)
            if body is not None:
                self.convert_leaves(body.name, "", -1, body.root, comp, here, reader=False)
        elif op in ("call", "fusion", "async-start"):
            callee = self.comps.get(computation_name(instr.attr("to_apply") or instr.attr("calls")) or "")
            if callee is not None:
                self.call(comp, instr, callee, 0)
        elif op == "conditional":
            refs = instr.attr("branch_computations")
            if refs is None:
                refs = (instr.attr("true_computation"), instr.attr("false_computation"))
            for j, ref in enumerate(refs if isinstance(refs, tuple) else (refs,)):
                branch = self.comps.get(computation_name(ref) or "")
                if branch is not None:
                    self.call(comp, instr, branch, j + 1)
        elif op in LAYOUT_FREE:
            pass
        else:
            self.opaque(comp, instr, shapes)
        if op in ("sort", "reduce-window") or rule_op(instr) == "fft":
            self.prefer_results(comp, instr)

    def contraction(self, comp: str, instr: Instruction, shapes: dict[str, Shape]) -> None:
        """A dot or a convolution: its operands' views and its result carry the target's
        preferences, priced per flop; a dot's operands are also priced against its result's
        layout (``dot_form``: the nn form and its mirror image, :func:`.rules.dot_forms`).
        A convolution that runs as a naive loop runs it once, whichever of its arrays misses:
        its result prices the loop itself, its lhs only where the result does not
        (``conv_naive``), its rhs only where the lhs does not (exact but for the rhs and the
        result both missing, which pays twice)."""
        dot = rule_op(instr) == "dot"
        count = len(instr.operands) if dot else 2
        flops = _dot_flops(instr, shapes) if dot else _conv_flops(instr, shapes)
        operands = [_array(shapes[name]) for name in instr.operands[:count]]
        path, result = leaf_arrays(instr.shape)[0] if leaf_arrays(instr.shape) else ((), None)
        ranks = ((operands[0].rank, operands[1].rank, result.rank)
                 if dot and len(operands) == 2 and isinstance(result, ArrayShape) else ())
        out = self.leaf(comp, instr.name, path) if result is not None else None
        chained = not dot and out is not None and len(operands) == 2
        views = []
        for k, (name, shape) in enumerate(zip(instr.operands, operands)):
            v = self.view(comp, instr, k, (), shape, None)
            views.append(v)
            self.prefer(v, comp, instr, "operand", k, flops, ranks=ranks, chained=chained)
            self.relate("convert", self.leaf(comp, name, ()), v, comp, instr.name, k, (), name,
                        shape)
        if out is None:
            return
        self.prefer(out, comp, instr, "result", 0, flops, ranks=ranks)
        for k, v in enumerate(views if ranks else ()):
            self.relate("dot_form", v, out, comp, instr.name, k, (), instr.operands[k],
                        operands[k], reader=False, flops=flops,
                        forms=dot_forms(instr, k, ranks))
        if chained:
            for k, v, member in ((0, out, ("result", 0)), (1, views[0], ("operand", 0))):
                self.relate("conv_naive", views[k], v, comp, instr.name, k, (),
                            instr.operands[k], operands[k], reader=False, flops=flops,
                            op=instr, v_member=member)

    def prefer_results(self, comp: str, instr: Instruction) -> None:
        """The target's rules price ``instr``'s result layouts (a variadic reduce-window's
        results share one layout: its first prices them all)."""
        leaves = leaf_arrays(instr.shape)
        for path, _ in leaves[:1] if instr.opcode == "reduce-window" else leaves:
            node = self.leaf(comp, instr.name, path)
            if node is not None:
                self.prefer(node, comp, instr, "result", 0)

    def tied(self, comp: str, instr: Instruction, shapes: dict[str, Shape]) -> None:
        result = instr.shape
        if isinstance(result, ArrayShape):
            pairs = [(k, name, ()) for k, name in enumerate(instr.operands)]
        elif isinstance(result, TupleShape) and instr.opcode in VARIADIC_TIED:
            pairs = [(k, name, (k,)) for k, name in enumerate(instr.operands)
                     if k < len(result.elements)]
        else:
            return
        if isinstance(result, TupleShape) and instr.opcode in ("sort", "reduce-window"):
            leaves = leaf_arrays(result)
            first = self.leaf(comp, instr.name, leaves[0][0]) if leaves else None
            for path, leaf in leaves[1:]:
                self.relate("same_order", first, self.leaf(comp, instr.name, path), comp,
                            instr.name, -1, path, instr.name, leaf, reader=False)
        for k, name, out_path in pairs:
            shape = shapes.get(name)
            out = _leaf(result, out_path) if isinstance(_sub(result, out_path), ArrayShape) else None
            if not isinstance(shape, ArrayShape) or out is None or shape.rank != out.rank:
                continue
            over = self.in_place.get(instr.name) if comp == self.module.entry.name else None
            self.relate("convert", self.leaf(comp, name, ()), self.leaf(comp, instr.name, out_path),
                        comp, instr.name, k, (), name, shape,
                        inline=self.actual and instr.opcode in ELEMENTWISE,
                        overwrites=instr.opcode if over is not None and over.operand == k else "")

    def reduce(self, comp: str, instr: Instruction, shapes: dict[str, Shape]) -> None:
        inputs = instr.operands[: len(instr.operands) // 2]
        arrays = [(k, n, _array(shapes[n])) for k, n in enumerate(inputs)]
        if not arrays or arrays[0][2].rank == 0:
            return
        v = self.view(comp, instr, 0, (), arrays[0][2], None)
        reducer = self.comps.get(computation_name(instr.attr("to_apply")) or "")
        self.prefer(v, comp, instr, "operand", 0,
                    combiner=reducer.root_instruction.opcode if reducer is not None else "")
        for k, name, shape in arrays:
            self.relate("convert", self.leaf(comp, name, ()), v, comp, instr.name, k, (), name, shape)
            if k:
                self.views[(comp, instr.name, k, ())] = v
        reduced = _dims(instr.attr("dimensions"))
        first = None
        for path, leaf in leaf_arrays(instr.shape):
            node = self.leaf(comp, instr.name, path)
            self.relate("reduce_out", v, node, comp, instr.name, -1, path, instr.name, leaf,
                        dims=reduced, reader=False)
            if first is None:
                first = node
            else:
                self.relate("same_order", first, node, comp, instr.name, -1, path, instr.name,
                            leaf, reader=False)

    def custom_call(self, comp: str, instr: Instruction, shapes: dict[str, Shape]) -> None:
        if getattr(instr.attr("custom_call_target"), "text", None) in DIM0_MAJOR_CALLS:
            self.opaque(comp, instr, shapes, written=False)
            return
        constraints = instr.attr("operand_layout_constraints")
        if not isinstance(constraints, tuple):
            self.aliased_operands(comp, instr, shapes)
            return
        for k, (want, name) in enumerate(zip(constraints, instr.operands)):
            for path, leaf in leaf_arrays(want):
                shape = _leaf(shapes[name], path)
                v = self.view(comp, instr, k, path, shape, _cand(leaf))
                self.relate("convert", self.leaf(comp, name, path), v, comp, instr.name, k, path,
                            name, shape)
        for path, leaf in leaf_arrays(instr.shape):
            self.pin_position(comp, instr.name, path,
                              _cand(leaf) or Candidate(tuple(range(leaf.rank - 1, -1, -1))))

    def aliased_operands(self, comp: str, instr: Instruction, shapes: dict[str, Shape]) -> None:
        """An output that aliases an operand (``output_to_operand_aliasing``) is written
        into the operand's buffer, so the operand is read in the output's layout (a copy
        where they differ, which also breaks the alias with the operand's other uses)."""
        aliases = instr.attr("output_to_operand_aliasing")
        for alias in aliases if isinstance(aliases, tuple) else ():
            if alias.operand >= len(instr.operands):
                continue
            name = instr.operands[alias.operand]
            shape = _sub(shapes.get(name, TupleShape(())), alias.operand_index)
            out = _sub(instr.shape, alias.output_index)
            if not (isinstance(shape, ArrayShape) and isinstance(out, ArrayShape)
                    and shape.dims == out.dims and shape.rank > 0):
                continue
            self.relate("convert", self.leaf(comp, name, alias.operand_index),
                        self.leaf(comp, instr.name, alias.output_index), comp, instr.name,
                        alias.operand, alias.operand_index, name, shape)

    def call(self, comp: str, instr: Instruction, callee, first: int) -> None:
        params = callee.parameter_instructions()
        for j, p in enumerate(params):
            k = first + j
            if k < len(instr.operands):
                self.convert_leaves(comp, instr.name, k, instr.operands[k], callee.name, p.name,
                                    reader=False)
        if instr.opcode == "async-start":
            # async-start's shape is ((operands), callee result, context): the callee's
            # root lands at index {1}.
            for path, shape in self.leaves(callee.name, callee.root):
                self.relate("convert", self.leaf(callee.name, callee.root, path),
                            self.leaf(comp, instr.name, (1, *path)), callee.name, "", -1, path,
                            callee.root, shape, reader=False)
            return
        self.convert_leaves(callee.name, "", -1, callee.root, comp, instr.name, reader=False)

    def opaque(self, comp: str, instr: Instruction, shapes: dict[str, Shape],
               written: bool = True) -> None:
        """An op we know no layout rule for: keep its layouts exactly as written (or, with
        ``written=False``, the default dim-0-major layouts it requires)."""
        for path, leaf in leaf_arrays(instr.shape):
            self.pin_position(comp, instr.name, path,
                              (_cand(leaf) if written else None)
                              or Candidate(tuple(range(leaf.rank - 1, -1, -1))))
        for k, name in enumerate(instr.operands):
            for path, leaf in leaf_arrays(shapes.get(name, TupleShape(()))):
                if leaf.rank == 0:
                    continue
                pinned = ((_cand(leaf) if written else None)
                          or Candidate(tuple(range(leaf.rank - 1, -1, -1))))
                v = self.view(comp, instr, k, path, leaf, pinned)
                self.relate("convert", self.leaf(comp, name, path), v, comp, instr.name, k, path,
                            name, leaf)


def trip_count(instr: Instruction) -> int | None:
    """A while loop's ``known_trip_count`` from its ``backend_config`` (as XLA writes it:
    ``{"known_trip_count":{"n":"32"},...}``), or ``None`` when it is not known."""
    text = getattr(instr.attr("backend_config"), "text", None)
    if not isinstance(text, str) or "known_trip_count" not in text:
        return None
    try:
        n = json.loads(text).get("known_trip_count", {}).get("n")
        return max(0, int(n)) if n is not None else None
    except (ValueError, AttributeError, TypeError):
        return None


def computation_weights(module: Module) -> dict[str, Fraction]:
    """How many times each computation runs per execution of the entry.

    The entry runs once; a while body runs ``known_trip_count`` times per run of
    its caller (once when unknown: the model then charges one iteration, as it
    did before trip counts were read) and its condition one more time; a
    conditional runs one of its n branches per run, which is not known before it
    runs: each branch counts 1/n of its caller's runs (the expected cost when
    every branch is as likely); every other callee (call, fusion, async) runs as
    often as its caller, summed over call sites. Reducers and other ``to_apply`` scalar
    computations hold no arrays and do not matter. One pass over the call graph,
    callers before callees (:meth:`hlo.graph.CallGraph.post_order` reversed),
    settles every caller before its callees, whatever order the text defines them in.
    """
    weights: dict[str, Fraction] = {module.entry.name: Fraction(1)}
    by_name = {comp.name: comp for comp in module.computations}
    for name in reversed(CallGraph(module).post_order()):
        comp = by_name[name]
        w = weights.get(comp.name, 0)
        if not w:
            continue
        for instr in comp.instructions:
            if instr.opcode == "while":
                trips = trip_count(instr)
                trips = 1 if trips is None else trips
                for attr, times in (("body", trips), ("condition", trips + 1)):
                    name = computation_name(instr.attr(attr))
                    if name:
                        weights[name] = weights.get(name, 0) + w * max(1, times)
            elif instr.opcode in ("call", "fusion", "async-start", "conditional"):
                refs = [instr.attr(a) for a in ("to_apply", "calls", "true_computation",
                                                "false_computation")]
                branches = instr.attr("branch_computations")
                refs.extend(branches if isinstance(branches, tuple) else (branches,))
                names = [n for n in map(computation_name, refs) if n]
                share = w / len(names) if instr.opcode == "conditional" and names else w
                for name in names:
                    weights[name] = weights.get(name, 0) + share
    return weights


def weighted(ns: int, weight: Fraction) -> int:
    """``ns`` charged ``weight`` times (a loop body's iterations, a conditional branch's
    share), rounded up to whole nanoseconds."""
    return ns if weight == 1 else math.ceil(ns * weight)


def runs_note(weight: Fraction) -> str:
    """What a term's reason says of its computation's runs."""
    if weight.denominator == 1:
        return f"(x{weight}: runs {weight} times per execution)"
    return (f"(x{weight}: runs {weight} times per execution, a conditional's branch counted "
            f"as its share of the conditional's runs)")


def _sub(shape: Shape, path: tuple[int, ...]) -> Shape:
    for i in path:
        if not isinstance(shape, TupleShape) or i >= len(shape.elements):
            return TupleShape(())
        shape = shape.elements[i]
    return shape


def _leaf(shape: Shape, path: tuple[int, ...]) -> ArrayShape:
    sub = _sub(shape, path)
    return _array(sub)


def _conv_flops(instr: Instruction, shapes: dict[str, Shape]) -> int:
    """``2 x result elements x kernel elements / output features``: the multiply-adds of a
    convolution (grouped ones included: the kernel holds one group's input features)."""
    result = leaf_arrays(instr.shape)[0][1] if leaf_arrays(instr.shape) else None
    kernel = shapes.get(instr.operands[1]) if len(instr.operands) > 1 else None
    labels = instr.attr("dim_labels")
    if not isinstance(result, ArrayShape) or not isinstance(kernel, ArrayShape) or \
            not isinstance(labels, ConvDimLabels):
        return 0
    out_features = kernel.dims[labels.kernel_output_feature] or 1
    return 2 * result.element_count * kernel.element_count // out_features


def _dot_flops(instr: Instruction, shapes: dict[str, Shape]) -> int:
    """``2 x result elements x contracted elements``: the multiply-adds of a ``dot``."""
    result = leaf_arrays(instr.shape)[0][1] if leaf_arrays(instr.shape) else None
    lhs = shapes.get(instr.operands[0]) if instr.operands else None
    if not isinstance(result, ArrayShape) or not isinstance(lhs, ArrayShape):
        return 0
    dims = instr.attr("lhs_contracting_dims") or ()
    contracted = 1
    for d in (dims,) if isinstance(dims, int) else dims:
        contracted *= lhs.dims[d]
    return 2 * result.element_count * contracted


def _array(shape: Shape | None) -> ArrayShape:
    if isinstance(shape, ArrayShape):
        return shape
    array = getattr(shape, "array", None)
    if isinstance(array, ArrayShape):
        return array
    return ArrayShape("f32", ())


def _path(path: tuple[int, ...]) -> str:
    return "{" + ",".join(map(str, path)) + "}" if path else ""


def _name(pos: Position) -> str:
    return f"{pos[1]}{_path(pos[2])}"


def build_graph(module: Module, *, entry_auto: bool = False, actual: bool = False) -> LayoutGraph:
    """The layout graph of ``module``; ``actual`` fixes every node to the written layouts.

    Raises :class:`~hlo.errors.LayoutDependentBitcast` for a module with a bitcast and
    layouts still to choose."""
    if not actual:
        reject_layout_dependent_bitcasts(module)
    return _Builder(module, entry_auto, actual).build()
