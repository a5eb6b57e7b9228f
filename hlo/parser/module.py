"""Parsing modules, computations and instructions (the top of the recursive descent)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from hlo.ir import Computation, Instruction, Module, Parameter, ProgramShape, Span
from hlo.lexer import Lexer
from hlo.parser.attributes import AttributeParsing
from hlo.parser.opcodes import allowed_attrs, infer_shape, is_opcode
from hlo.shape import ArrayShape, BufferShape, Shape, TupleShape, default_layout

FRAME_SECTIONS = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")
#: Header attributes XLA prints before ``entry_computation_layout``.
_BEFORE_ENTRY_LAYOUT = ("is_scheduled", "input_output_alias", "buffer_donor", "alias_passthrough_params")


def strip_layouts(shape: Shape) -> Shape:
    """``shape`` without any layout (what XLA calls a *compatible* shape)."""
    if isinstance(shape, ArrayShape):
        return shape if shape.layout is None else ArrayShape(shape.element_type, shape.dims, None, shape.dynamic)
    if isinstance(shape, TupleShape):
        return TupleShape(tuple(strip_layouts(e) for e in shape.elements))
    if isinstance(shape, BufferShape):
        return BufferShape(strip_layouts(shape.array))  # type: ignore[arg-type]
    return shape


def fill_layouts(shape: Shape) -> Shape:
    """``shape`` with the default layout on every non-scalar array written without one."""
    if isinstance(shape, ArrayShape):
        if shape.layout is None and shape.rank:
            return shape.with_layout(default_layout(shape.rank))
        return shape
    if isinstance(shape, TupleShape):
        return TupleShape(tuple(fill_layouts(e) for e in shape.elements))
    return shape


@dataclass(slots=True)
class _ComputationState:
    """What the parser tracks while inside one computation."""

    instructions: list[Instruction] = field(default_factory=list)
    shapes: dict[str, Shape] = field(default_factory=dict)
    #: (operand name, position, declared shape or None)
    uses: list[tuple[str, int, Shape | None]] = field(default_factory=list)
    #: (instruction index, position) of custom-calls with operand_layout_constraints
    constrained: list[tuple[int, int]] = field(default_factory=list)
    parameter_numbers: set[int] = field(default_factory=set)
    root: str | None = None
    anon: dict[str, int] = field(default_factory=dict)

    def fresh(self, base: str) -> str:
        n = self.anon.get(base, 0)
        name = base if n == 0 else f"{base}.{n}"
        while name in self.shapes:
            n += 1
            name = f"{base}.{n}"
        self.anon[base] = n + 1
        return name


class Parser(AttributeParsing):
    def __init__(self, text: str, name: str = "<input>", *, fill_missing_layouts: bool = False) -> None:
        super().__init__(Lexer(text, name))
        self.fill_missing_layouts = fill_missing_layouts
        self.computation_uses: list[tuple[str, int]] = []
        self.predecessor_uses: list[tuple[str, int]] = []

    def expect_eof(self, what: str) -> None:
        if self.lx.kind != "eof":
            raise self.error(f"expects the end of {what}, but sees {self.lx.describe()}")

    # -- module -------------------------------------------------------------

    def parse_module(self) -> Module:
        lx = self.lx
        start = lx.start
        name = "module"
        attrs: list[tuple[str, Any]] = []
        if self.at_ident("HloModule"):
            lx.advance()
            name = self.parse_name("a module name")
            self.accept_punct(":")
            seen: set[str] = set()
            while self.accept_punct(","):
                pos = lx.start
                key = self.parse_ident("a module attribute name")
                if key in seen:
                    raise self.error(f"attribute '{key}' already exists", pos)
                seen.add(key)
                self.expect_punct("=", f"after '{key}'")
                attrs.append((key, self.parse_attribute_value(key)))
        frames = self._parse_frames()
        computations: list[Computation] = []
        entry_pos = None
        names: set[str] = set()
        while lx.kind != "eof":
            pos = lx.start
            comp = self.parse_computation()
            if comp.is_entry:
                if entry_pos is not None:
                    raise self.error("expects only one ENTRY computation", pos)
                entry_pos = pos
            if comp.name in names:
                raise self.error(f"computation '{comp.name}' already exists", pos)
            names.add(comp.name)
            computations.append(comp)
        if not computations:
            raise self.error("expects at least one computation")
        if entry_pos is None:
            # The last computation is the entry; saying so keeps print -> parse stable.
            last = computations[-1]
            computations[-1] = Computation(
                last.name, last.instructions, last.root, True, last.parameters,
                last.result_shape, last.span,
            )
        for cname, pos in self.computation_uses:
            if cname not in names:
                raise self.error(f"computation does not exist: {cname}", pos)
        attrs = self._with_entry_layout(attrs, computations)
        line, col = lx.line_col(start)
        return Module(name, tuple(computations), tuple(attrs), frames, Span(line, col))

    def _with_entry_layout(self, attrs: list[tuple[str, Any]], comps: list[Computation]) -> list[tuple[str, Any]]:
        entry = next(c for c in comps if c.is_entry)
        if any(k == "entry_computation_layout" for k, _ in attrs):
            layout = dict(attrs)["entry_computation_layout"]
            assert isinstance(layout, ProgramShape)
            if entry.parameters is not None and len(layout.parameters) != len(entry.parameters):
                raise self.error(
                    f"entry_computation_layout has {len(layout.parameters)} parameters, but the "
                    f"entry computation has {len(entry.parameters)}"
                )
            return attrs
        params = entry.parameter_instructions()
        layout = ProgramShape(tuple(p.shape for p in params), entry.root_instruction.shape)
        at = 0
        while at < len(attrs) and attrs[at][0] in _BEFORE_ENTRY_LAYOUT:
            at += 1
        return attrs[:at] + [("entry_computation_layout", layout)] + attrs[at:]

    def _parse_frames(self) -> tuple[str, ...]:
        lx = self.lx
        lines: list[str] = []
        while lx.kind == "ident" and lx.raw in FRAME_SECTIONS:
            section_start = lx.start
            section = lx.raw
            lx.advance()
            if lx.kind != "int" and not (lx.kind == "ident" and lx.raw in FRAME_SECTIONS):
                lx.reset(section_start)  # a computation that happens to be named like a section
                break
            lines.append(section)
            while lx.kind == "int":
                ident = lx.raw
                lx.advance()
                if lx.kind == "str":
                    raw = lx.raw
                    lx.advance()
                elif self.at_punct("{"):
                    raw = self._parse_verbatim_braces().text
                else:
                    raise self.error(f"expects a string or '{{' in a {section} entry, but sees {lx.describe()}")
                lines.append(f"{ident} {raw}")
        return tuple(lines)

    # -- computation --------------------------------------------------------

    def parse_computation(self) -> Computation:
        lx = self.lx
        start = lx.start
        is_entry = False
        if self.at_ident("ENTRY"):
            is_entry = True
            lx.advance()
        name = self.parse_name("a computation name")
        signature: list[tuple[str, Shape, int]] | None = None
        result_shape = None
        if self.accept_punct("("):
            signature = []
            if not self.at_punct(")"):
                while True:
                    pos = lx.start
                    pname = self.parse_name("a parameter name")
                    self.expect_punct(":", "after a parameter name")
                    signature.append((pname, self.parse_shape(), pos))
                    if not self.accept_punct(","):
                        break
            self.expect_punct(")", "at the end of the computation's parameters")
            self.expect_punct("->", "before the computation's result shape")
            result_shape = self.parse_shape()
        self.expect_punct("{", "to start the computation's instructions")
        st = _ComputationState()
        while not self.at_punct("}"):
            if lx.kind == "eof":
                raise self.error("expects '}' at the end of the computation", lx.start)
            self._parse_instruction(st)
        lx.advance()
        if not st.instructions:
            raise self.error(f"computation '{name}' has no instructions", start)
        self._check_computation(st)
        root = st.root if st.root is not None else st.instructions[-1].name
        root_shape = st.shapes[root]
        if result_shape is not None and strip_layouts(result_shape) != strip_layouts(root_shape):
            raise self.error(
                f"Shape of computation {name}, {strip_layouts(result_shape)}, is not compatible "
                f"with that of its root instruction {root}, {strip_layouts(root_shape)}",
                start,
            )
        params = sorted(
            (i for i in st.instructions if i.opcode == "parameter"),
            key=lambda i: i.attr("parameter_number"),
        )
        if signature is not None:
            if len(signature) != len(params):
                raise self.error(
                    f"computation {name} declares {len(signature)} parameters but has {len(params)}",
                    start,
                )
            for (pname, pshape, pos), instr in zip(signature, params):
                if strip_layouts(pshape) != strip_layouts(instr.shape):
                    raise self.error(
                        f"parameter {pname} of computation {name} is declared {pshape}, but the "
                        f"parameter instruction has shape {strip_layouts(instr.shape)}",
                        pos,
                    )
        line, col = lx.line_col(start)
        return Computation(
            name,
            tuple(st.instructions),
            root,
            is_entry,
            tuple(Parameter(i.name, strip_layouts(i.shape)) for i in params),
            strip_layouts(root_shape),
            Span(line, col),
        )

    def _check_computation(self, st: _ComputationState) -> None:
        for name, pos, declared in st.uses:
            actual = st.shapes.get(name)
            if actual is None:
                raise self.error(f"instruction does not exist: {name}", pos)
            if declared is not None and strip_layouts(declared) != strip_layouts(actual):
                raise self.error(
                    f"The declared operand shape {declared} is not compatible with the shape of "
                    f"the operand instruction {actual}.",
                    pos,
                )
        for name, pos in self.predecessor_uses:
            if name not in st.shapes:
                raise self.error(f"'{name}' is not defined", pos)
        self.predecessor_uses.clear()
        for index, pos in st.constrained:
            instr = st.instructions[index]
            for i, (constraint, operand) in enumerate(zip(instr.attr("operand_layout_constraints"), instr.operands)):
                if strip_layouts(constraint) != strip_layouts(st.shapes[operand]):
                    raise self.error(
                        f"Operand layout constraint shape {constraint} for operand {i} is not "
                        f"compatible with operand shape {st.shapes[operand]}",
                        pos,
                    )

    # -- instruction --------------------------------------------------------

    def _parse_instruction(self, st: _ComputationState) -> None:
        lx = self.lx
        start = lx.start
        is_root = False
        if self.at_ident("ROOT"):
            is_root = True
            lx.advance()
        name_pos = lx.start
        name = self.parse_name("an instruction name")
        self.expect_punct("=", f"after the instruction name '{name}'")
        shape = self.parse_optional_shape()
        self._parse_instruction_rhs(st, name, name_pos, start, shape, nested=False)
        if is_root:
            if st.root is not None:
                raise self.error("one computation should have only one ROOT", start)
            st.root = name

    def _parse_instruction_rhs(
        self, st: _ComputationState, name: str, name_pos: int, start: int,
        shape: Shape | None, *, nested: bool,
    ) -> None:
        lx = self.lx
        if name in st.shapes:
            raise self.error(f"instruction '{name}' already exists in this computation", name_pos)
        op_pos = lx.start
        opcode = self.parse_ident("an opcode")
        if not is_opcode(opcode):
            raise self.error(f"unknown opcode: {opcode}", op_pos)
        self.expect_punct("(", f"after the opcode '{opcode}'")
        attrs: list[tuple[str, Any]] = []
        operands: list[str] = []
        if opcode == "parameter":
            num_pos = lx.start
            number = self.parse_int("a parameter number")
            if number in st.parameter_numbers:
                raise self.error(f"Duplicate parameter number {number}", num_pos)
            st.parameter_numbers.add(number)
            attrs.append(("parameter_number", number))
        elif opcode == "constant":
            if shape is None:
                raise self.error("a constant needs its shape written before 'constant'", op_pos)
            attrs.append(("literal", self.parse_literal(shape)))
        elif not self.at_punct(")"):
            operands.append(self._parse_operand(st))
            while self.accept_punct(","):
                operands.append(self._parse_operand(st))
        self.expect_punct(")", "at the end of the operands")
        if not nested:
            allowed = allowed_attrs(opcode)
            seen: set[str] = set()
            while self.accept_punct(","):
                pos = lx.start
                key = self.parse_ident("an attribute name")
                if key in seen:
                    raise self.error(f"attribute '{key}' already exists", pos)
                if allowed is not None and key not in allowed:
                    raise self.error(f'unexpected attribute "{key}" for {opcode}', pos)
                seen.add(key)
                self.expect_punct("=", f"after '{key}'")
                value = self.parse_attribute_value(key)
                if key == "operand_layout_constraints":
                    if len(value) != len(operands):
                        raise self.error(
                            f"Expected {len(operands)} operand layout constraints, {len(value)} given",
                            pos,
                        )
                    st.constrained.append((len(st.instructions), pos))
                attrs.append((key, value))
        if shape is None:
            operand_shapes = [st.shapes.get(o) for o in operands]
            inferred = None
            if all(s is not None for s in operand_shapes):
                inferred = infer_shape(opcode, operand_shapes, dict(attrs))  # type: ignore[arg-type]
            if inferred is None:
                raise self.error(f"expects a shape for '{name}' (cannot infer the shape of {opcode})", start)
            shape = inferred
        if opcode == "broadcast" and not any(k == "dimensions" for k, _ in attrs):
            operand = st.shapes.get(operands[0]) if len(operands) == 1 else None
            if isinstance(operand, ArrayShape) and operand.rank == 0:
                attrs.insert(0, ("dimensions", ()))
        if self.fill_missing_layouts:
            shape = fill_layouts(shape)
        line, col = lx.line_col(start)
        st.instructions.append(
            Instruction(name, opcode, shape, tuple(operands), tuple(attrs), Span(line, col))
        )
        st.shapes[name] = shape

    def _parse_operand(self, st: _ComputationState) -> str:
        lx = self.lx
        declared = self.parse_optional_shape()
        if declared is not None and self.fill_missing_layouts:
            declared = fill_layouts(declared)
        pos = lx.start
        if lx.kind == "ident" and lx.text.startswith("(", lx.end) and is_opcode(lx.raw):
            name = st.fresh(f"{lx.raw}.anon")
            self._parse_instruction_rhs(st, name, pos, pos, declared, nested=True)
            return name
        name = self.parse_name("an operand")
        if self.at_punct("#"):
            lx.advance()
            index = self.parse_int("a tuple index")
            name = self._compact_gte(st, name, index, pos)
        st.uses.append((name, pos, declared))
        return name

    def _compact_gte(self, st: _ComputationState, name: str, index: int, pos: int) -> str:
        source = st.shapes.get(name)
        if source is None:
            raise self.error(f"instruction does not exist: {name}", pos)
        if not isinstance(source, TupleShape):
            raise self.error(f"GTE operand must be tuple, but {name} has shape {source}", pos)
        if not 0 <= index < len(source.elements):
            raise self.error(f"tuple index {index} is out of range for {name}: {source}", pos)
        gte = re.sub(r"[^\w.\-]", "_", f"{name}#{index}")
        if gte not in st.shapes:
            shape = source.elements[index]
            if self.fill_missing_layouts:
                shape = fill_layouts(shape)
            line, col = self.lx.line_col(pos)
            st.instructions.append(Instruction(
                gte, "get-tuple-element", shape, (name,), (("index", index),), Span(line, col)
            ))
            st.shapes[gte] = shape
        return gte
