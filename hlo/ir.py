"""The HLO IR: modules, computations and instructions as immutable values.

Everything here is a frozen, slotted dataclass holding tuples. An edit is
``dataclasses.replace(...)`` producing a new value. Source spans ride along for
diagnostics but stay out of equality, so parse -> print -> parse compares equal.

Instructions refer to their operands and called computations *by name*; a
computation's instructions are in text order (definition before use is checked
by the verifier, not assumed by the IR).

Attribute values are typed (see the value classes below) and kept in text order
as ``(name, value)`` pairs, so the printer can reproduce the input faithfully.
Attribute names are the text's own (``dimensions``, ``to_apply``, ``window``,
``lhs_contracting_dims``, ``slice``, ``padding``, ``dim_labels``, ``direction``,
``custom_call_target``, ``operand_layout_constraints``, ``metadata`` ...).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

from hlo.errors import VerifyError
from hlo.shape import ArrayShape, Shape

# ---------------------------------------------------------------------------
# Source locations
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Span:
    """Where a construct starts in its source text (1-based)."""

    line: int
    column: int


# ---------------------------------------------------------------------------
# Attribute values
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ComputationRef:
    """A reference to a computation by name: ``to_apply=%add`` -> ``ComputationRef("add")``."""

    name: str


@dataclass(frozen=True, slots=True)
class Quoted:
    """A quoted string attribute value: ``custom_call_target="lapack_sgetrf"``.

    ``text`` is the unescaped content.
    """

    text: str


@dataclass(frozen=True, slots=True)
class Verbatim:
    """An attribute kept as its exact text (e.g. a sharding or backend_config dict)."""

    text: str


@dataclass(frozen=True, slots=True)
class SliceRange:
    """One dim of ``slice={[start:limit:stride], ...}``."""

    start: int
    limit: int
    stride: int = 1
    #: Whether the text wrote the stride. XLA omits ``:1`` strides when every range of a
    #: slice has stride 1; older printers always wrote them. Only the printer looks at it.
    explicit_stride: bool = field(default=False, compare=False)


@dataclass(frozen=True, slots=True)
class WindowDim:
    """One dim of ``window={size=3x3 stride=2x2 pad=1_1x1_1 lhs_dilate=.. rhs_dilate=.. rhs_reversal=..}``."""

    size: int
    stride: int = 1
    padding_low: int = 0
    padding_high: int = 0
    base_dilation: int = 1
    window_dilation: int = 1
    window_reversal: bool = False


@dataclass(frozen=True, slots=True)
class Window:
    dims: tuple[WindowDim, ...]


@dataclass(frozen=True, slots=True)
class PaddingDim:
    """One dim of ``padding=low_high[_interior]x...``."""

    low: int
    high: int
    interior: int = 0


@dataclass(frozen=True, slots=True)
class PaddingConfig:
    dims: tuple[PaddingDim, ...]


@dataclass(frozen=True, slots=True)
class ConvDimLabels:
    """``dim_labels=b01f_01io->b01f`` as dimension numbers.

    ``input_spatial[i]`` is the logical dim of the lhs holding spatial dim ``i``
    (labels ``0``, ``1``, ...); likewise for the kernel and the output.
    """

    input_batch: int
    input_feature: int
    input_spatial: tuple[int, ...]
    kernel_input_feature: int
    kernel_output_feature: int
    kernel_spatial: tuple[int, ...]
    output_batch: int
    output_feature: int
    output_spatial: tuple[int, ...]
    text: str = field(default="", compare=False)


@dataclass(frozen=True, slots=True)
class Literal:
    """A constant's value.

    ``shape`` is the literal's shape; for arrays ``values`` holds the elements in
    row-major (logical) order as Python numbers (``bool``, ``int``, ``float`` incl.
    ``nan``/``inf``, or ``complex``); ``None`` means the text elided them
    (``{...}``). For tuples ``elements`` holds one literal per tuple element.
    """

    shape: Shape
    values: tuple[Any, ...] | None = None
    elements: tuple[Literal, ...] = ()


@dataclass(frozen=True, slots=True)
class AliasEntry:
    """One aliasing entry: ``{1}: (0, {0}, must-alias)``.

    Used by ``output_to_operand_aliasing`` (``operand`` is an operand number) and by the
    module's ``input_output_alias`` (``operand`` is a parameter number). ``kind`` is
    ``"must-alias"`` or ``None`` (the default, may-alias).
    """

    output_index: tuple[int, ...]
    operand: int
    operand_index: tuple[int, ...]
    kind: str | None = None


@dataclass(frozen=True, slots=True)
class BufferDonor:
    """One ``buffer_donor`` entry: ``(0, {1})`` = parameter 0 at tuple index {1}."""

    parameter: int
    index: tuple[int, ...]


#: The value of an attribute: one of the classes above, a Python scalar
#: (``int``, ``float``, ``bool``, bare identifier ``str`` such as ``LT``), a
#: tuple of ints (``{1,0}``), a tuple of int tuples (``{{0,1},{2,3}}``), a tuple
#: of ``ComputationRef``/``SliceRange``/``Shape``, or a ``Shape``.
AttrValue = Any


# ---------------------------------------------------------------------------
# Instructions, computations, modules
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Instruction:
    """``%name = shape opcode(operands), attr=value, ...``.

    ``operands`` are instruction names in the same computation. ``attributes``
    keeps ``(name, value)`` pairs in text order; use :meth:`attr` to read one.
    """

    name: str
    opcode: str
    shape: Shape
    operands: tuple[str, ...] = ()
    attributes: tuple[tuple[str, AttrValue], ...] = ()
    span: Span | None = field(default=None, compare=False)

    def attr(self, name: str, default: AttrValue = None) -> AttrValue:
        for key, value in self.attributes:
            if key == name:
                return value
        return default

    def has_attr(self, name: str) -> bool:
        return any(key == name for key, _ in self.attributes)

    @property
    def array_shape(self) -> ArrayShape:
        """The result shape when it is an array (raises :class:`VerifyError` otherwise)."""
        if not isinstance(self.shape, ArrayShape):
            raise VerifyError(f"{self.name} has shape {self.shape}, not an array")
        return self.shape

    def called_computations(self) -> tuple[str, ...]:
        """Names of every computation this instruction calls, in attribute order."""
        names: list[str] = []
        for _, value in self.attributes:
            if isinstance(value, ComputationRef):
                names.append(value.name)
            elif isinstance(value, tuple):
                names.extend(v.name for v in value if isinstance(v, ComputationRef))
        return tuple(names)


def computation_name(value: AttrValue) -> str | None:
    """The computation an attribute value names (``body=%b``, or a one-element list
    ``calls={%f}``), else ``None``."""
    if isinstance(value, tuple) and len(value) == 1:
        value = value[0]
    return value.name if isinstance(value, ComputationRef) else None


@dataclass(frozen=True, slots=True)
class Parameter:
    """One entry of a computation signature ``(p0: f32[2], p1: s32[])``."""

    name: str
    shape: Shape


@dataclass(frozen=True, slots=True)
class Computation:
    """A named list of instructions with one root.

    ``parameters``/``result_shape`` are the signature ``(p: shape, ...) -> shape``
    without layouts (as XLA prints it). The parser always fills them from the
    parameter and root instructions (after checking a written signature against
    them), so a module compares equal whether its text had signatures or not; the
    printer derives the signature from the instructions. ``root`` names the root
    instruction (the one marked ``ROOT``, else the last).
    """

    name: str
    instructions: tuple[Instruction, ...]
    root: str
    is_entry: bool = False
    parameters: tuple[Parameter, ...] | None = None
    result_shape: Shape | None = None
    span: Span | None = field(default=None, compare=False)

    def __iter__(self) -> Iterator[Instruction]:
        return iter(self.instructions)

    def instruction(self, name: str) -> Instruction:
        for instr in self.instructions:
            if instr.name == name:
                return instr
        raise KeyError(f"no instruction '{name}' in computation '{self.name}'")

    @property
    def root_instruction(self) -> Instruction:
        return self.instruction(self.root)

    def parameter_instructions(self) -> tuple[Instruction, ...]:
        """The ``parameter`` instructions ordered by parameter number."""
        params = [i for i in self.instructions if i.opcode == "parameter"]
        return tuple(sorted(params, key=lambda i: i.attr("parameter_number", 0)))


@dataclass(frozen=True, slots=True)
class Module:
    """An HLO module: header attributes plus computations in text order.

    ``attributes`` holds the header's ``(name, value)`` pairs in text order
    (``entry_computation_layout`` as a :class:`ProgramShape`, others typed or
    :class:`Verbatim`). ``frames`` keeps the stack-frame tables of dumped
    modules verbatim, one text line each.
    """

    name: str
    computations: tuple[Computation, ...]
    attributes: tuple[tuple[str, AttrValue], ...] = ()
    frames: tuple[str, ...] = ()
    span: Span | None = field(default=None, compare=False)

    def attr(self, name: str, default: AttrValue = None) -> AttrValue:
        for key, value in self.attributes:
            if key == name:
                return value
        return default

    @property
    def entry(self) -> Computation:
        for comp in self.computations:
            if comp.is_entry:
                return comp
        return self.computations[-1]

    def computation(self, name: str) -> Computation:
        for comp in self.computations:
            if comp.name == name:
                return comp
        raise KeyError(f"no computation '{name}' in module '{self.name}'")


@dataclass(frozen=True, slots=True)
class ProgramShape:
    """``entry_computation_layout={(f32[2]{0}, s32[])->f32[2]{0}}``.

    A parameter or result array without a layout is an AUTO entry: the caller
    lets the compiler choose.
    """

    parameters: tuple[Shape, ...]
    result: Shape

