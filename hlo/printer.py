"""The HLO text printer: the exact inverse of :mod:`hlo.parser`.

Two forms, as XLA prints them:

* **long** (XLA's default): ``%`` before names, operand shapes in operand lists
  (``f32[2]{0} %x``), typed computation signatures, ``/*index=5*/`` on every
  fifth operand;
* **short** (``short=True``, XLA's short-parsable form): bare names, no operand
  shapes, no signatures.

Attributes print in the order the module holds them (the parser keeps text
order), so a module printed by XLA prints back byte for byte.
"""

from __future__ import annotations

import math
from typing import Any

from hlo.ir import (
    AliasEntry,
    BufferDonor,
    Computation,
    ComputationRef,
    ConvDimLabels,
    Instruction,
    Literal,
    Module,
    PaddingConfig,
    ProgramShape,
    Quoted,
    SliceRange,
    Verbatim,
    Window,
)
from hlo.errors import HloError
from hlo.lexer import escape
from hlo.parser.module import FRAME_SECTIONS, strip_layouts
from hlo.parser.numbers import format_element
from hlo.shape import ArrayShape, BufferShape, Layout, OpaqueShape, Shape, TokenShape, TupleShape

_SHAPE_TYPES = (ArrayShape, TupleShape, TokenShape, OpaqueShape, BufferShape)
#: Attributes printed inside the operand parentheses instead of after them.
_IN_PARENS = {"parameter": "parameter_number", "constant": "literal"}


def print_shape(shape: Shape) -> str:
    """``f32[2,3]{0,1}``; scalars without their empty layout; ``/*index=5*/`` in tuples."""
    return str(shape)


def print_layout(layout: Layout) -> str:
    return str(layout)


# ---------------------------------------------------------------------------
# Module, computation, instruction
# ---------------------------------------------------------------------------


def print_module(module: Module, *, short: bool = False) -> str:
    parts = ["HloModule ", module.name]
    for key, value in module.attributes:
        parts.append(f", {key}={print_attribute(key, value, short=short)}")
    parts.append("\n\n")
    if module.frames:
        for i, line in enumerate(module.frames):
            if line in FRAME_SECTIONS and i:
                parts.append("\n")
            parts.append(line + "\n")
        parts.append("\n\n")
    for comp in module.computations:
        parts.append(print_computation(comp, short=short))
        parts.append("\n\n")
    return "".join(parts)


def print_computation(comp: Computation, *, short: bool = False) -> str:
    pct = "" if short else "%"
    head = ("ENTRY " if comp.is_entry else "") + pct + comp.name
    shapes = None if short else {i.name: i.shape for i in comp.instructions}
    if not short:
        params = ", ".join(
            f"{p.name}: {strip_layouts(p.shape)}" for p in comp.parameter_instructions()
        )
        root_shape = strip_layouts(comp.root_instruction.shape)
        head += f" ({params}) -> {root_shape}"
    lines = [head + " {"]
    for instr in comp.instructions:
        lines.append("  " + _instruction(instr, instr.name == comp.root, shapes, short))
    lines.append("}")
    return "\n".join(lines)


def print_instruction(
    instr: Instruction, computation: Computation | None = None, *, short: bool = False
) -> str:
    """One instruction line (without indentation). Long-form operand shapes come from
    ``computation``; without it, operands print as names only."""
    shapes = None
    is_root = False
    if computation is not None:
        shapes = {i.name: i.shape for i in computation.instructions}
        is_root = computation.root == instr.name
    return _instruction(instr, is_root, None if short else shapes, short)


def _instruction(instr: Instruction, is_root: bool, shapes: dict[str, Shape] | None, short: bool) -> str:
    pct = "" if short else "%"
    in_parens = _IN_PARENS.get(instr.opcode)
    if in_parens == "literal":
        body = print_literal(instr.attr("literal"))
    elif in_parens == "parameter_number":
        body = str(instr.attr("parameter_number"))
    else:
        pieces = []
        for i, name in enumerate(instr.operands):
            text = pct + name
            if not short and shapes is not None and name in shapes:
                text = f"{shapes[name]} {text}"
            if i == 0:
                pieces.append(text)
            elif not short and i % 5 == 0:
                pieces.append(f", /*index={i}*/{text}")
            else:
                pieces.append(", " + text)
        body = "".join(pieces)
    attrs = "".join(
        f", {key}={print_attribute(key, value, short=short)}"
        for key, value in instr.attributes
        if key != in_parens
    )
    root = "ROOT " if is_root else ""
    return f"{root}{pct}{instr.name} = {instr.shape} {instr.opcode}({body}){attrs}"


# ---------------------------------------------------------------------------
# Attribute values
# ---------------------------------------------------------------------------


def print_attribute(name: str, value: Any, *, short: bool = False) -> str:
    """The text after ``name=`` (inverse of ``hlo.parser.parse_attribute``)."""
    pct = "" if short else "%"
    if name == "control-predecessors":
        return "{" + ", ".join(pct + n for n in value) + "}"
    if name in ("input_output_alias", "buffer_donor"):
        items = ", ".join(_alias(e) if isinstance(e, AliasEntry) else _donor(e) for e in value)
        return "{ " + items + " }" if items else "{}"
    return _value(value, pct)


def _value(value: Any, pct: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, str):
        return value
    if isinstance(value, Verbatim):
        return value.text
    if isinstance(value, Quoted):
        return '"' + escape(value.text) + '"'
    if isinstance(value, ComputationRef):
        return pct + value.name
    if isinstance(value, _SHAPE_TYPES):
        return str(value)
    if isinstance(value, Window):
        return "{" + print_window(value) + "}"
    if isinstance(value, PaddingConfig):
        return print_padding(value)
    if isinstance(value, ConvDimLabels):
        return print_dim_labels(value)
    if isinstance(value, ProgramShape):
        return "{" + str(TupleShape(value.parameters)) + "->" + str(value.result) + "}"
    if isinstance(value, Literal):
        return print_literal(value)
    if isinstance(value, tuple):
        return _tuple(value, pct)
    raise HloError(f"cannot print attribute value {value!r}")


def _tuple(value: tuple[Any, ...], pct: str) -> str:
    if not value:
        return "{}"
    first = value[0]
    if isinstance(first, ComputationRef) or isinstance(first, _SHAPE_TYPES):
        return "{" + ", ".join(_value(v, pct) for v in value) + "}"
    if isinstance(first, SliceRange):
        if any(s.stride != 1 or s.explicit_stride for s in value):
            return "{" + ", ".join(f"[{s.start}:{s.limit}:{s.stride}]" for s in value) + "}"
        return "{" + ", ".join(f"[{s.start}:{s.limit}]" for s in value) + "}"
    if isinstance(first, AliasEntry):
        return "{" + ", ".join(_alias(e) for e in value) + "}"
    if isinstance(first, BufferDonor):
        return "{" + ", ".join(_donor(e) for e in value) + "}"
    return "{" + ",".join(_value(v, pct) for v in value) + "}"


def _float(value: float) -> str:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return "%g" % value


def _index(index: tuple[int, ...]) -> str:
    return "{" + ",".join(map(str, index)) + "}"


def _alias(e: AliasEntry) -> str:
    kind = f", {e.kind}" if e.kind else ""
    return f"{_index(e.output_index)}: ({e.operand}, {_index(e.operand_index)}{kind})"


def _donor(e: BufferDonor) -> str:
    return f"({e.parameter}, {_index(e.index)})"


def print_window(window: Window) -> str:
    """``size=3x3 stride=2x2 pad=1_1x1_1``: properties at their defaults are left out."""
    dims = window.dims
    if not dims:
        return ""

    def join(values: Any) -> str:
        return "x".join(str(v) for v in values)

    parts = ["size=" + join(d.size for d in dims)]
    if any(d.stride != 1 for d in dims):
        parts.append("stride=" + join(d.stride for d in dims))
    if any(d.padding_low or d.padding_high for d in dims):
        parts.append("pad=" + "x".join(f"{d.padding_low}_{d.padding_high}" for d in dims))
    if any(d.base_dilation != 1 for d in dims):
        parts.append("lhs_dilate=" + join(d.base_dilation for d in dims))
    if any(d.window_dilation != 1 for d in dims):
        parts.append("rhs_dilate=" + join(d.window_dilation for d in dims))
    if any(d.window_reversal for d in dims):
        parts.append("rhs_reversal=" + join(int(d.window_reversal) for d in dims))
    return " ".join(parts)


def print_padding(padding: PaddingConfig) -> str:
    """``0_1x2_3``; with interior padding anywhere, every dim shows three numbers."""
    if any(d.interior for d in padding.dims):
        return "x".join(f"{d.low}_{d.high}_{d.interior}" for d in padding.dims)
    return "x".join(f"{d.low}_{d.high}" for d in padding.dims)


def print_dim_labels(labels: ConvDimLabels) -> str:
    if labels.text:
        return labels.text

    def part(rank: int, named: dict[int, str], spatial: tuple[int, ...]) -> str:
        chars = ["?"] * rank
        for dim, ch in named.items():
            chars[dim] = ch
        for i, dim in enumerate(spatial):
            chars[dim] = str(i)
        return "".join(chars)

    n = len(labels.input_spatial) + 2
    lhs = part(n, {labels.input_batch: "b", labels.input_feature: "f"}, labels.input_spatial)
    rhs = part(n, {labels.kernel_input_feature: "i", labels.kernel_output_feature: "o"}, labels.kernel_spatial)
    out = part(n, {labels.output_batch: "b", labels.output_feature: "f"}, labels.output_spatial)
    return f"{lhs}_{rhs}->{out}"


# ---------------------------------------------------------------------------
# Literals
# ---------------------------------------------------------------------------


def print_literal(literal: Literal) -> str:
    """A constant's value as XLA prints it inside ``constant(...)``."""
    shape = literal.shape
    if isinstance(shape, TupleShape):
        return "( " + ", ".join(print_literal(e) for e in literal.elements) + " )"
    assert isinstance(shape, ArrayShape)
    if literal.values is None:
        return "{...}"
    etype = shape.element_type
    if shape.rank == 0:
        return format_element(literal.values[0], etype)
    return _nested(literal.values, shape.dims, etype, 0, 0, 0)


def _nested(values: tuple[Any, ...], dims: tuple[int, ...], etype: str, depth: int, offset: int, idx: int) -> str:
    n = dims[depth]
    if depth == len(dims) - 1:
        return "{" + ", ".join(format_element(values[offset + i], etype) for i in range(n)) + "}"
    stride = 1
    for d in dims[depth + 1 :]:
        stride *= d
    children = [_nested(values, dims, etype, depth + 1, offset + i * stride, i) for i in range(n)]
    comment = f" /*i{depth - 1}={idx}*/" if depth else ""
    body = " " + ", ".join(children) if children else ""
    return "{" + comment + body + " }"
