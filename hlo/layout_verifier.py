"""Layout verification: the invariants a laid-out module must satisfy.

Each rule below states what XLA guarantees after its ``layout-assignment`` pass
and where that guarantee comes from, so a rewritten module can be held to the
same standard. Rules compare :class:`~hlo.shape.Layout` values leaf by leaf; a
*violation* names the instruction, the rule, the expected and the actual layout.

``layout`` (every array has a layout valid for its shape)
    ``LayoutAssignment::CheckLayouts`` requires ``LayoutUtil::HasLayout`` and a
    valid shape for every instruction. A scalar without a written layout has the
    only possible one, ``{}``. Tiles must be applicable (:func:`hlo.tiling.tiling_plan`).

``tie`` (operand layout = result layout)
    ``HloVerifier``'s ``InstructionVerifier::Postprocess``: for an instruction
    that ``LayoutAssignment::InstructionCanChangeLayout`` says cannot change
    layouts (elementwise ops, convert, bitcast-convert, clamp, select, compare,
    map, slice, dynamic-slice, dynamic-update-slice, pad, reverse, concatenate,
    reduce-window, select-and-scatter, scatter, sort, topk, fft, triangular-solve,
    cholesky, while-free collectives ...) with an array result, every array operand
    *of the same rank* must have the result's layout. Size-1 dims are **not**
    ignored: XLA compares ``minor_to_major`` exactly (``f32[1,8]{0,1}`` and
    ``f32[1,8]{1,0}`` differ). Ignored, as in XLA: memory space; the element
    size ``E(n)`` for convert, compare, is-finite and the pred operand of select.
    XLA also ignores tiles here (its tiling is assigned by a later, target pass);
    this project assigns tiles together with the dim order, so a tile change on a
    tied op is a hidden relayout and tiles are compared unless
    ``compare_tiles=False`` (which gives XLA's exact predicate). Tiles are compared
    only between an operand and a result of the *same element width* (``E(n)``
    when written, else the type's width) *and the same dims*: a target's tile is a
    function of the element width and the shape (TPU: 32-bit ``T(8,128)``, 16-bit
    ``T(8,128)(2,1)``, 8-bit ``T(8,128)(4,1)``; a second-minor dim of 1-2 takes the
    compact ``T(2,128)``; ``pred`` is a width of its own, packed 32 rows to a word by
    ``T(32,128)(32,1)`` though stored in 8 bits), so an op that changes the width (``convert`` f32 -> bf16,
    ``compare`` -> pred, the pred operand of ``select``) or the shape (the update of
    a ``dynamic-update-slice``, a ``slice``) may change the tiles with it, while the
    same width and shape with other tiles is a hidden relayout. Operands of
    other ranks (scalar bounds of clamp, start indices, a pad value) are free.
    For the variadic forms (tuple results of sort, reduce-window, scatter,
    all-reduce) operand ``i`` is tied to result element ``i`` (DESIGN §6;
    ``InstructionCanChangeLayout``'s note on variadic all-reduce).

``variadic``
    A variadic ``reduce``, ``reduce-window`` or ``sort`` gives all its tuple
    results one layout: ``LayoutAssignment::SetInstructionLayout`` sets a single
    layout on every output of these opcodes (``RequiresSameShapeForAllOutput``),
    and for ``reduce`` the output layout is derived from one operand layout
    (``GetReduceLayoutFromOperand``). The inputs of a variadic ``reduce`` share
    one layout too (DESIGN §6; XLA propagates an operand's layout to its
    siblings, ``OperandLayoutAlwaysPropagateToSiblings``, and the reduction
    normalizer requires it).

``broadcast``
    ``CheckBroadcastLayout``: the operand's ``minor_to_major`` equals the result's
    restricted to the broadcast dims (``f32[3]{0}`` -> ``f32[2,3]{0,1}`` is fine).

``while`` / ``conditional`` / ``call`` / ``fusion``
    ``CheckWhileLayout``: init = condition parameter = body parameter = body root
    = result. ``CheckConditionalLayout``: branch ``j``'s parameter = operand
    ``j+1``; every branch root = the result. ``CheckCallLayout`` and
    ``CheckFusionLayout``: callee parameters = operands, callee root = result.

``tuple`` / ``get-tuple-element`` / ``opt-barrier`` / ``domain``
    These forward buffers (points-to analysis in ``CheckLayouts``; layout-
    sensitive ``ShapeVerifier::CheckShape`` compares them with ``Shape::Equal``).

``entry-layout``
    ``ShapeVerifier::VerifyEntryComputationLayout``: entry parameters and root
    agree with ``entry_computation_layout`` ignoring tiles, tail-padding
    alignment and memory space. AUTO entries (no layout written) are free.

``signature``
    A computation's written ``(p: shape) -> shape`` agrees with its parameter
    instructions and root where it writes a layout (XLA prints it from them, so a
    mismatch means an edit forgot one side; a signature without layouts is free).

``custom-call-operand-layout``
    ``CheckCustomCallLayout``: operands of a layout-constrained custom-call have
    the ``operand_layout_constraints`` layouts.

``bitcast``
    ``ShapeVerifier::HandleBitcast`` (layout-sensitive) requires equal buffer
    sizes; here padded sizes count (tiles included). Beyond that, XLA only ever
    makes a ``bitcast`` out of a reshape or a transpose whose layouts make it free,
    so a bitcast must be one of those: a reshape keeping every element at its
    physical offset (:func:`hlo.bitcast.is_bitcast`) or a transpose by some
    permutation that moves no bytes (:func:`hlo.bitcast.transpose_is_bitcast`);
    see :func:`bitcast_kind`.

Checked against XLA itself: every corpus ``after_layout`` module (XLA's layout
assignment) and every ``final`` module (fused, scheduled, with XLA's own
bitcasts) passes with ``compare_tiles=True``; ``before_layout`` modules break
``tie``/``entry-layout``/``custom-call-operand-layout`` exactly where XLA's pass
then changed a layout or inserted a copy.

Not required (XLA does not require them either): a reduce's result layout
(``reduce`` may change layouts; DESIGN §6's "operand minus reduced dims" is
what the solver *prefers*), layouts across ``copy``, ``transpose``,
``reshape``, ``dot``, ``convolution``, ``gather``, ``custom-call`` results.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from hlo.bitcast import bitcast_kind
from hlo.errors import HloError, Location, VerifyError
from hlo.ir import Computation, Instruction, Module, ProgramShape, computation_name
from hlo.opcode_facts import SHARED_LAYOUT, TIED, VARIADIC_TIED
from hlo.shape import ArrayShape, Layout, Shape, TupleShape, element_bits, leaf_arrays
from hlo.tiling import physical_size_bytes, tiling_plan

__all__ = ["LayoutViolation", "check_layouts", "verify_layouts"]

#: Ops whose tie ignores the element size ``E(n)`` (they may change the element type).
_ELEMENT_SIZE_FREE = frozenset({"convert", "compare", "is-finite"})

@dataclass(frozen=True, slots=True)
class LayoutViolation:
    """One broken layout rule at one instruction."""

    computation: str
    instruction: str
    rule: str
    expected: str
    actual: str
    message: str
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        where = f"{self.line}:{self.column}: " if self.line is not None else ""
        return (f"{where}[{self.rule}] computation '{self.computation}', instruction "
                f"'{self.instruction}': {self.message} (expected {self.expected}, "
                f"actual {self.actual})")


# ---------------------------------------------------------------------------
# Layout comparison
# ---------------------------------------------------------------------------


def _layout_of(shape: ArrayShape) -> Layout:
    return shape.effective_layout()


def _equal(a: Layout, b: Layout, *, tiles: bool, memory_space: bool = True,
           element_size: bool = True) -> bool:
    """``Layout::Equal`` with XLA's ``Ignore*`` switches."""
    return (
        a.minor_to_major == b.minor_to_major
        and a.dim_levels == b.dim_levels
        and (not tiles or a.tiles == b.tiles)
        and a.tail_padding_alignment == b.tail_padding_alignment
        and a.index_type == b.index_type
        and a.pointer_type == b.pointer_type
        and (not element_size or a.element_size_bits == b.element_size_bits)
        and (not memory_space or a.memory_space == b.memory_space)
        and a.split_configs == b.split_configs
        and a.physical_shape == b.physical_shape
        and a.dynamic_metadata_prefix_bytes == b.dynamic_metadata_prefix_bytes
    )


def _leaf_pairs(a: Shape, b: Shape, path: tuple[int, ...] = ()
                ) -> Iterator[tuple[tuple[int, ...], ArrayShape, ArrayShape]]:
    """Matching array leaves of two shapes of the same structure."""
    if isinstance(a, ArrayShape) and isinstance(b, ArrayShape):
        yield path, a, b
    elif isinstance(a, TupleShape) and isinstance(b, TupleShape):
        for i, (x, y) in enumerate(zip(a.elements, b.elements)):
            yield from _leaf_pairs(x, y, (*path, i))


def _where(path: tuple[int, ...]) -> str:
    return f" at tuple index {{{','.join(map(str, path))}}}" if path else ""


class _Checker:
    def __init__(self, module: Module, compare_tiles: bool) -> None:
        self.module = module
        self.tiles = compare_tiles
        self.comps = {c.name: c for c in module.computations}
        self.out: list[LayoutViolation] = []

    # -- reporting --------------------------------------------------------
    def report(self, comp: Computation, instr: Instruction, rule: str, expected: str,
               actual: str, message: str) -> None:
        span = instr.span or comp.span
        self.out.append(LayoutViolation(
            comp.name, instr.name, rule, expected, actual, message,
            span.line if span else None, span.column if span else None,
        ))

    def same(self, comp: Computation, instr: Instruction, rule: str, expected: Shape,
             actual: Shape, what: str, **ignore: bool) -> None:
        """Report every leaf where ``actual``'s layout differs from ``expected``'s."""
        tiles = ignore.pop("tiles", self.tiles)
        written_only = ignore.pop("written_only", False)
        for path, e, a in _leaf_pairs(expected, actual):
            if written_only and e.layout is None:
                continue
            le, la = _layout_of(e), _layout_of(a)
            if not _equal(le, la, tiles=tiles, **ignore):
                self.report(comp, instr, rule, str(le), str(la), f"{what}{_where(path)}")

    # -- rules ------------------------------------------------------------
    def check_valid(self, comp: Computation, instr: Instruction) -> None:
        for path, leaf in leaf_arrays(instr.shape):
            if leaf.layout is None and leaf.rank > 0:
                self.report(comp, instr, "layout", "a layout", "none",
                            f"array {leaf.dims_text()}{_where(path)} has no layout")
                continue
            if leaf.layout is not None and leaf.layout.tiles:
                try:
                    tiling_plan(leaf)
                except HloError as err:
                    self.report(comp, instr, "layout", "a valid tiling", str(leaf.layout),
                                f"invalid tiling{_where(path)}: {err.message}")

    def check_tie(self, comp: Computation, instr: Instruction,
                  operands: list[Instruction]) -> None:
        result = instr.shape
        if isinstance(result, ArrayShape):
            pairs = [(i, op.shape, result) for i, op in enumerate(operands)]
        elif isinstance(result, TupleShape) and instr.opcode in VARIADIC_TIED:
            outs = result.elements
            pairs = [(i, op.shape, outs[i]) for i, op in enumerate(operands) if i < len(outs)]
        else:
            return
        for i, shape, out in pairs:
            if not (isinstance(shape, ArrayShape) and isinstance(out, ArrayShape)):
                continue
            if shape.rank != out.rank:
                continue
            free_size = instr.opcode in _ELEMENT_SIZE_FREE or (
                instr.opcode == "select" and shape.element_type == "pred")
            le, la = _layout_of(out), _layout_of(shape)
            tiles = (self.tiles and shape.dims == out.dims
                     and _width(shape, la) == _width(out, le))
            if not _equal(le, la, tiles=tiles, memory_space=False,
                          element_size=not free_size):
                self.report(comp, instr, "tie", str(le), str(la),
                            f"operand {i} '{operands[i].name}' of {instr.opcode} must have the "
                            f"result's layout")

    def check_variadic(self, comp: Computation, instr: Instruction,
                       operands: list[Instruction]) -> None:
        outs = [e for e in instr.shape.elements if isinstance(e, ArrayShape)]
        if not outs:
            return
        first = _layout_of(outs[0]).minor_to_major
        for k, e in enumerate(outs[1:], start=1):
            if _layout_of(e).minor_to_major != first:
                self.report(comp, instr, "variadic", _mtm(first),
                            _mtm(_layout_of(e).minor_to_major),
                            f"result element {k} of variadic {instr.opcode} must share the layout "
                            f"of element 0")
        if instr.opcode != "reduce":
            return
        inputs = operands[: len(operands) // 2]
        if not inputs or not isinstance(inputs[0].shape, ArrayShape):
            return
        first_in = _layout_of(inputs[0].shape).minor_to_major
        for k, x in enumerate(inputs[1:], start=1):
            if isinstance(x.shape, ArrayShape) and _layout_of(x.shape).minor_to_major != first_in:
                self.report(comp, instr, "variadic", _mtm(first_in),
                            _mtm(_layout_of(x.shape).minor_to_major),
                            f"input {k} '{x.name}' of variadic reduce must share the layout of "
                            f"input 0 '{inputs[0].name}'")

    def check_broadcast(self, comp: Computation, instr: Instruction, operand: Instruction) -> None:
        x, out = operand.shape, instr.shape
        if not (isinstance(x, ArrayShape) and isinstance(out, ArrayShape)):
            return
        dims = instr.attr("dimensions", ())
        dims = (dims,) if isinstance(dims, int) else tuple(dims)
        renumber = {d: i for i, d in enumerate(dims)}
        expected = tuple(renumber[d] for d in _layout_of(out).minor_to_major if d in renumber)
        actual = _layout_of(x).minor_to_major
        if expected != actual:
            self.report(comp, instr, "broadcast", _mtm(expected), _mtm(actual),
                        f"operand '{operand.name}' must have the result's layout restricted "
                        f"to the broadcast dims {list(dims)}")

    def check_bitcast(self, comp: Computation, instr: Instruction, operand: Instruction) -> None:
        src, dst = operand.shape, instr.shape
        if not (isinstance(src, ArrayShape) and isinstance(dst, ArrayShape)):
            return
        try:
            size_src, size_dst = physical_size_bytes(src), physical_size_bytes(dst)
            kind = bitcast_kind(src, dst) if size_src == size_dst else None
        except HloError as err:
            self.report(comp, instr, "bitcast", str(src), str(dst),
                        f"cannot reinterpret '{operand.name}': {err.message}")
            return
        if size_src != size_dst:
            self.report(comp, instr, "bitcast", f"{size_src} bytes", f"{size_dst} bytes",
                        f"bitcast of '{operand.name}' ({src}) changes the buffer size")
        elif kind is None:
            self.report(comp, instr, "bitcast", f"a reshape or transpose of {src} moving no bytes",
                        str(dst), f"bitcast of '{operand.name}' would move elements")

    def check_callee(self, comp: Computation, instr: Instruction, operands: list[Instruction],
                     callee: Computation, rule: str, first_operand: int = 0,
                     result: bool = True) -> None:
        params = callee.parameter_instructions()
        for k, p in enumerate(params):
            j = first_operand + k
            if j < len(operands):
                self.same(comp, instr, rule, p.shape, operands[j].shape,
                          f"operand {j} '{operands[j].name}' must have the layout of parameter "
                          f"{k} of '{callee.name}'")
        if result:
            root = callee.root_instruction
            self.same(comp, instr, rule, root.shape, instr.shape,
                      f"result must have the layout of the root '{root.name}' of '{callee.name}'")

    def check_while(self, comp: Computation, instr: Instruction, init: Instruction) -> None:
        body = self.comps.get(computation_name(instr.attr("body")))
        cond = self.comps.get(computation_name(instr.attr("condition")))
        self.same(comp, instr, "while", init.shape, instr.shape,
                  f"result must have the layout of the init '{init.name}'")
        for role, callee in (("body", body), ("condition", cond)):
            if callee is None:
                continue
            for p in callee.parameter_instructions()[:1]:
                self.same(comp, instr, "while", init.shape, p.shape,
                          f"{role} '{callee.name}' parameter must have the init's layout")
        if body is not None:
            self.same(comp, instr, "while", init.shape, body.root_instruction.shape,
                      f"body '{body.name}' root must have the init's layout")

    def check_conditional(self, comp: Computation, instr: Instruction,
                          operands: list[Instruction]) -> None:
        refs = instr.attr("branch_computations")
        if refs is None:
            refs = (instr.attr("true_computation"), instr.attr("false_computation"))
        for j, ref in enumerate(refs if isinstance(refs, tuple) else (refs,)):
            branch = self.comps.get(computation_name(ref))
            if branch is None:
                continue
            self.check_callee(comp, instr, operands, branch, "conditional", first_operand=j + 1)

    def check_custom_call(self, comp: Computation, instr: Instruction,
                          operands: list[Instruction]) -> None:
        constraints = instr.attr("operand_layout_constraints")
        if not isinstance(constraints, tuple):
            return
        for i, (want, op) in enumerate(zip(constraints, operands)):
            for path, e, a in _leaf_pairs(want, op.shape):
                if e.layout is not None and e.layout.minor_to_major != _layout_of(a).minor_to_major:
                    self.report(comp, instr, "custom-call-operand-layout", str(e.layout),
                                str(_layout_of(a)),
                                f"operand {i} '{op.name}'{_where(path)} must have the layout in "
                                f"operand_layout_constraints")

    def check_signature(self, comp: Computation) -> None:
        if comp.parameters is not None:
            params = comp.parameter_instructions()
            for k, (declared, p) in enumerate(zip(comp.parameters, params)):
                self.same(comp, p, "signature", declared.shape, p.shape,
                          f"parameter {k} must have the layout of the computation's signature",
                          written_only=True)
        if comp.result_shape is not None:
            root = comp.root_instruction
            self.same(comp, root, "signature", comp.result_shape, root.shape,
                      "root must have the layout of the computation's result type",
                      written_only=True)

    def check_entry(self) -> None:
        layout = self.module.attr("entry_computation_layout")
        if not isinstance(layout, ProgramShape):
            return
        entry = self.module.entry
        loose = dict(tiles=False, memory_space=False)
        for k, (declared, p) in enumerate(zip(layout.parameters, entry.parameter_instructions())):
            for path, e, a in _leaf_pairs(declared, p.shape):
                if e.layout is not None and not _equal(
                        e.layout, _layout_of(a), **loose) and not _only_alignment(e.layout,
                                                                                   _layout_of(a)):
                    self.report(entry, p, "entry-layout", str(e.layout), str(_layout_of(a)),
                                f"entry parameter {k}{_where(path)} must have the layout of "
                                f"entry_computation_layout")
        root = entry.root_instruction
        for path, e, a in _leaf_pairs(layout.result, root.shape):
            if e.layout is not None and not _equal(e.layout, _layout_of(a), **loose) \
                    and not _only_alignment(e.layout, _layout_of(a)):
                self.report(entry, root, "entry-layout", str(e.layout), str(_layout_of(a)),
                            f"entry root{_where(path)} must have the layout of "
                            f"entry_computation_layout")

    # -- driver -----------------------------------------------------------
    def run(self) -> list[LayoutViolation]:
        for comp in self.module.computations:
            by_name = {i.name: i for i in comp.instructions}
            if comp.root in by_name:
                self.check_signature(comp)
            for instr in comp.instructions:
                self.check_valid(comp, instr)
                operands = [by_name[n] for n in instr.operands if n in by_name]
                if len(operands) != len(instr.operands):
                    continue  # a structural error; the structural verifier reports it
                self.check_instruction(comp, instr, operands)
        self.check_entry()
        return self.out

    def check_instruction(self, comp: Computation, instr: Instruction,
                          operands: list[Instruction]) -> None:
        op = instr.opcode
        if op in TIED and op != "while":
            self.check_tie(comp, instr, operands)
        if op in SHARED_LAYOUT and isinstance(instr.shape, TupleShape):
            self.check_variadic(comp, instr, operands)
        if op == "broadcast" and operands:
            self.check_broadcast(comp, instr, operands[0])
        elif op == "bitcast" and operands:
            self.check_bitcast(comp, instr, operands[0])
        elif op == "while" and operands:
            self.check_while(comp, instr, operands[0])
        elif op == "conditional":
            self.check_conditional(comp, instr, operands)
        elif op in ("call", "fusion"):
            callee = self.comps.get(computation_name(instr.attr("to_apply" if op == "call" else "calls")))
            if callee is not None:
                self.check_callee(comp, instr, operands, callee, op)
        elif op == "custom-call":
            self.check_custom_call(comp, instr, operands)
        elif op == "tuple":
            self.same(comp, instr, "tuple", TupleShape(tuple(o.shape for o in operands)),
                      instr.shape, "tuple elements must keep their operands' layouts")
        elif op == "get-tuple-element" and operands:
            t, index = operands[0].shape, instr.attr("index")
            if isinstance(t, TupleShape) and isinstance(index, int) and index < len(t.elements):
                self.same(comp, instr, "get-tuple-element", t.elements[index], instr.shape,
                          f"result must have the layout of element {index} of "
                          f"'{operands[0].name}'")
        elif op in ("opt-barrier", "domain") and operands:
            self.same(comp, instr, op, operands[0].shape, instr.shape,
                      f"result must have the layout of '{operands[0].name}'")


def _width(shape: ArrayShape, layout: Layout) -> tuple[bool, int]:
    """The width a target picks tiles by: ``pred`` is its own class (targets pack it as
    bits), then ``E(n)`` when written, else the type's width."""
    return (shape.element_type == "pred",
            layout.element_size_bits or element_bits(shape.element_type))


def _only_alignment(a: Layout, b: Layout) -> bool:
    """Equal up to tail-padding alignment (ignored by XLA's entry layout check)."""
    return _equal(Layout(a.minor_to_major, a.dim_levels, (), 1, a.index_type, a.pointer_type,
                         a.element_size_bits, 0, a.split_configs, a.physical_shape,
                         a.dynamic_metadata_prefix_bytes),
                  Layout(b.minor_to_major, b.dim_levels, (), 1, b.index_type, b.pointer_type,
                         b.element_size_bits, 0, b.split_configs, b.physical_shape,
                         b.dynamic_metadata_prefix_bytes), tiles=False)


def _mtm(mtm: tuple[int, ...]) -> str:
    return "{" + ",".join(map(str, mtm)) + "}"


def verify_layouts(module: Module, *, compare_tiles: bool = True) -> list[LayoutViolation]:
    """Every layout rule ``module`` breaks (see the module docstring), in text order.

    The module should pass :func:`hlo.verifier.verify_module` first; instructions
    with structural errors are skipped rather than reported twice.
    """
    return _Checker(module, compare_tiles).run()


def check_layouts(module: Module, *, compare_tiles: bool = True,
                  source_name: str | None = None) -> None:
    """Raise one :class:`VerifyError` listing every violation (located at the first)."""
    violations = verify_layouts(module, compare_tiles=compare_tiles)
    if not violations:
        return
    first = violations[0]
    location = (Location(source_name or module.name, first.line, first.column)
                if first.line is not None else None)
    lines = [f"{len(violations)} layout violation(s):"] + [f"  {v}" for v in violations]
    raise VerifyError("\n".join(lines), location)
