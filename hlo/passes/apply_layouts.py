"""``apply-layouts``: a module plus a layout plan -> the laid-out module.

The plan says, for every array position (``(computation, instruction, path)``),
its layout, and lists the *conversions*: an operand (or a computation's root)
that must be read in another layout than its producer's. The pass

* sets every array leaf's layout (scalars get ``{}``);
* inserts exactly one ``copy`` per distinct (value, layout) needed, right after
  the producer, named ``<value>.relayout`` (``.relayout.1``, ... when taken); a
  conversion marked ``after`` lays the transpose out as its bitcast layout instead and
  copies its result to the planned layout right after it, for all its readers;
  a constant is cloned with the new layout instead (free at compile time);
  tuple-shaped operands are rebuilt from their elements (a ``tuple`` operand's
  own elements, else ``get-tuple-element``s) with only the mismatched leaves copied;
* with ``emit_bitcasts``, turns transposes/reshapes that became free into ``bitcast``;
* marks non-XLA formats (Ascend ``FRACTAL_Z``) with ``frontend_attributes={layout_format="..."}``;
* rewrites the computations' signatures and ``entry_computation_layout``.

It never looks at costs: which layouts and conversions is the caller's choice.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from hlo.bitcast import is_bitcast, transpose_is_bitcast
from hlo.buffers import Position
from hlo.errors import HloError, LayoutError
from hlo.ir import Computation, Instruction, Module, Parameter, ProgramShape, Verbatim
from hlo.passes.instruction_sequence import NameTable
from hlo.shape import ArrayShape, Layout, Shape, TupleShape

__all__ = ["Conversion", "LayoutPlan", "apply_layouts", "NAME"]

NAME = "apply-layouts"


@dataclass(frozen=True, slots=True)
class Conversion:
    """Operand ``operand`` of ``instruction`` (``""``/-1: the computation's root) is
    read at leaf ``path`` in ``layout`` (``format``: a non-XLA format name).

    ``after``: ``instruction`` is a transpose that reads its operand as it is and takes
    ``layout`` itself (a bitcast of the operand); a copy right after it gives its readers
    the planned layout (XLA's form of a layout-changing transpose)."""

    computation: str
    instruction: str
    operand: int
    path: tuple[int, ...]
    layout: Layout
    format: str = ""
    after: bool = False


@dataclass(frozen=True, slots=True)
class LayoutPlan:
    layouts: dict[Position, Layout] = field(compare=False)
    conversions: tuple[Conversion, ...] = ()
    formats: dict[Position, str] = field(default_factory=dict, compare=False)
    emit_bitcasts: bool = False


def _relayout(shape: Shape, comp: str, name: str, plan: LayoutPlan, prefix=()) -> Shape:
    if isinstance(shape, ArrayShape):
        layout = plan.layouts.get((comp, name, prefix))
        if layout is None:
            layout = shape.layout if shape.layout is not None or shape.rank else Layout(())
            if layout is None:
                raise LayoutError(f"no layout planned for '{name}' in '{comp}'")
        return shape if shape.layout == layout else shape.with_layout(layout)
    if isinstance(shape, TupleShape):
        elements = tuple(_relayout(e, comp, name, plan, (*prefix, i))
                         for i, e in enumerate(shape.elements))
        if all(a is b for a, b in zip(elements, shape.elements)):
            return shape
        return TupleShape(elements)
    return shape


def _format_attr(fmt: str) -> tuple[str, Verbatim]:
    return ("frontend_attributes", Verbatim('{layout_format="' + fmt + '"}'))


class _Rewriter:
    def __init__(self, comp: Computation, plan: LayoutPlan, names: NameTable) -> None:
        self.comp = comp
        self.plan = plan
        self.names = names
        self.instrs: dict[str, Instruction] = {}
        self.after: dict[str, list[Instruction]] = {}
        self.before: dict[str, list[Instruction]] = {}
        self.memo: dict[tuple, str] = {}

    def shape(self, name: str) -> Shape:
        return self.instrs[name].shape

    def leaf_value(self, value: str, path: tuple[int, ...], anchor: str) -> str:
        """An instruction producing ``value``'s leaf at ``path`` (gte or tuple operand)."""
        if not path:
            return value
        key = ("leaf", value, path)
        if key in self.memo:
            return self.memo[key]
        instr = self.instrs[value]
        if instr.opcode == "tuple":
            out = self.leaf_value(instr.operands[path[0]], path[1:], anchor)
        else:
            shape = self.shape(value)
            element = shape.elements[path[0]]  # type: ignore[union-attr]
            gte = Instruction(self.names.fresh(f"{value}.gte{path[0]}"), "get-tuple-element",
                              element, (value,), (("index", path[0]),))
            self.instrs[gte.name] = gte
            self.after.setdefault(value, []).append(gte)
            out = self.leaf_value(gte.name, path[1:], anchor)
        self.memo[key] = out
        return out

    def converted(self, value: str, path: tuple[int, ...], layout: Layout, fmt: str,
                  anchor: str) -> str:
        key = ("conv", value, path, layout, fmt)
        if key in self.memo:
            return self.memo[key]
        source = self.leaf_value(value, path, anchor)
        src = self.instrs[source]
        shape = src.shape.with_layout(layout)  # type: ignore[union-attr]
        attrs = (_format_attr(fmt),) if fmt else ()
        if src.opcode == "constant":
            attrs = tuple(a for a in src.attributes if a[0] != "frontend_attributes") + attrs
            new = Instruction(self.names.fresh(f"{source}.relayout"), "constant", shape, (), attrs)
        else:
            new = Instruction(self.names.fresh(f"{source}.relayout"), "copy", shape, (source,), attrs)
        self.instrs[new.name] = new
        self.after.setdefault(source, []).append(new)
        self.memo[key] = new.name
        return new.name

    def copy_after(self, instr: Instruction, layout: Layout) -> str:
        """``instr`` laid out in ``layout``, and a copy of it to its planned layout right
        after it; returns the copy's name."""
        planned = instr.shape
        self.instrs[instr.name] = dataclasses.replace(
            instr, shape=planned.with_layout(layout))  # type: ignore[union-attr]
        copy = Instruction(self.names.fresh(f"{instr.name}.relayout"), "copy", planned,
                           (instr.name,))
        self.instrs[copy.name] = copy
        self.after.setdefault(instr.name, []).append(copy)
        return copy.name

    def rebuild(self, value: str, wants: dict[tuple[int, ...], tuple[Layout, str]],
                prefix: tuple[int, ...], anchor: str) -> str:
        """``value`` (at ``prefix``) with the wanted leaves converted."""
        if prefix in wants:
            layout, fmt = wants[prefix]
            return self.converted(value, prefix, layout, fmt, anchor)
        below = [p for p in wants if p[: len(prefix)] == prefix]
        if not below:
            return self.leaf_value(value, prefix, anchor)
        shape = self.shape(value)
        for i in prefix:
            shape = shape.elements[i]  # type: ignore[union-attr]
        parts = [self.rebuild(value, wants, (*prefix, i), anchor)
                 for i in range(len(shape.elements))]  # type: ignore[union-attr]
        key = ("tuple", tuple(parts))
        if key in self.memo:
            return self.memo[key]
        elements = tuple(self.instrs[p].shape for p in parts)
        new = Instruction(self.names.fresh(f"{value}.relayout"), "tuple", TupleShape(elements),
                          tuple(parts))
        self.instrs[new.name] = new
        self.before.setdefault(anchor, []).append(new)
        self.memo[key] = new.name
        return new.name

    def run(self, conversions: list[Conversion]) -> Computation:
        comp, plan = self.comp, self.plan
        by_use: dict[tuple[str, int], dict[tuple[int, ...], tuple[Layout, str]]] = {}
        first = {c.instruction: c.layout for c in conversions if c.after}
        for c in conversions:
            if not c.after:
                by_use.setdefault((c.instruction, c.operand), {})[c.path] = (c.layout, c.format)
        order: list[str] = []
        alias: dict[str, str] = {}  # a transpose written in XLA's form -> the copy after it
        for instr in comp.instructions:
            shape = _relayout(instr.shape, comp.name, instr.name, plan)
            attrs = instr.attributes
            fmt = plan.formats.get((comp.name, instr.name, ()))
            if fmt:
                attrs = tuple(a for a in attrs if a[0] != "frontend_attributes") + (_format_attr(fmt),)
            operands = [alias.get(name, name) for name in instr.operands]
            for k, name in enumerate(operands):
                wants = by_use.get((instr.name, k))
                if wants:
                    operands[k] = self.rebuild(name, wants, (), instr.name)
            new = instr
            if shape is not instr.shape or attrs is not instr.attributes \
                    or tuple(operands) != instr.operands:
                new = dataclasses.replace(instr, shape=shape, attributes=attrs,
                                          operands=tuple(operands))
            if instr.name in first:
                alias[instr.name] = self.copy_after(new, first[instr.name])
                new = self.instrs[instr.name]
            if plan.emit_bitcasts and new.opcode in ("transpose", "reshape"):
                new = _as_bitcast(new, self.instrs[new.operands[0]].shape)
            self.instrs[instr.name] = new
            order.append(instr.name)
        root = alias.get(comp.root, comp.root)
        wants = by_use.get(("", -1))
        if wants:
            root = self.rebuild(root, wants, (), "")
        listed: list[Instruction] = []

        def emit(name: str) -> None:
            listed.append(self.instrs[name])
            for extra in self.after.get(name, ()):
                emit(extra.name)

        for name in order:
            for extra in self.before.get(name, ()):
                listed.append(extra)
            emit(name)
        listed.extend(self.before.get("", ()))
        params = None
        if comp.parameters is not None:
            by_name = {i.name: i for i in listed}
            params = tuple(Parameter(p.name, by_name[p.name].shape if p.name in by_name else p.shape)
                           for p in comp.parameters)
        result = self.instrs[root].shape if comp.result_shape is not None else None
        return dataclasses.replace(comp, instructions=tuple(listed), root=root,
                                   parameters=params, result_shape=result)


def _as_bitcast(instr: Instruction, src: Shape) -> Instruction:
    dst = instr.shape
    if not (isinstance(src, ArrayShape) and isinstance(dst, ArrayShape)):
        return instr
    try:
        if instr.opcode == "transpose":
            dims = instr.attr("dimensions")
            free = transpose_is_bitcast(src, dst, tuple(dims) if isinstance(dims, tuple) else (dims,))
        else:
            free = is_bitcast(src, dst)
    except HloError:
        return instr
    if not free:
        return instr
    attrs = tuple(a for a in instr.attributes if a[0] != "dimensions")
    return dataclasses.replace(instr, opcode="bitcast", attributes=attrs)


def apply_layouts(module: Module, plan: LayoutPlan) -> Module:
    """The module with ``plan``'s layouts and conversions (see the module docstring)."""
    names = NameTable(module)
    by_comp: dict[str, list[Conversion]] = {}
    for c in plan.conversions:
        by_comp.setdefault(c.computation, []).append(c)
    comps = tuple(_Rewriter(c, plan, names).run(by_comp.get(c.name, [])) for c in module.computations)
    new = dataclasses.replace(module, computations=comps)
    entry = new.entry
    program = ProgramShape(tuple(p.shape for p in entry.parameter_instructions()),
                           entry.root_instruction.shape)
    attrs = tuple((k, program if k == "entry_computation_layout" else v) for k, v in new.attributes)
    if not any(k == "entry_computation_layout" for k, _ in attrs):
        attrs = (("entry_computation_layout", program),) + attrs
    return dataclasses.replace(new, attributes=attrs)
