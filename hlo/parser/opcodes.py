"""What the parser knows about opcodes: the names, the attributes each accepts,
and the few result shapes it infers when the text leaves them out."""

from __future__ import annotations

from typing import Final

from hlo import shape_inference
from hlo.errors import HloError, VerifyError
from hlo.ir import Computation, Instruction
from hlo.opcode_facts import ELEMENTWISE_BINARY, ELEMENTWISE_UNARY, OPCODES
from hlo.shape import ArrayShape, Shape, TupleShape
from hlo.shape_inference import operand_count_problem

#: Opcodes that wrap another one asynchronously in XLA's sugar
#: (``custom-call-start`` = ``async-start`` calling a ``custom-call``).
_ASYNC_SUFFIXES: Final[tuple[str, ...]] = ("-start", "-update", "-done")


def is_opcode(word: str) -> bool:
    if word in OPCODES:
        return True
    for suffix in _ASYNC_SUFFIXES:
        if word.endswith(suffix) and word[: -len(suffix)] in OPCODES:
            return True
    return False


#: Attributes any instruction may carry.
GENERIC_ATTRS: Final[frozenset[str]] = frozenset({
    "sharding", "metadata", "backend_config", "frontend_attributes", "control-predecessors",
    "statistics", "origin", "original_value", "result_accuracy", "schedule_config",
})

_CHANNEL = frozenset({"channel_id", "is_host_transfer"})

#: The instruction-specific attributes of opcodes whose set is small and stable; an
#: opcode missing here accepts any attribute (the verifier is the place for the rest).
OPCODE_ATTRS: Final[dict[str, frozenset[str]]] = {
    "send": _CHANNEL,
    "recv": _CHANNEL,
    "send-done": _CHANNEL,
    "recv-done": _CHANNEL,
    "parameter": frozenset({"parameter_replication"}),
    "tuple": frozenset(),
    "get-tuple-element": frozenset({"index"}),
    "broadcast": frozenset({"dimensions"}),
    "transpose": frozenset({"dimensions"}),
    "reshape": frozenset({"inferred_dimension"}),
    "iota": frozenset({"iota_dimension"}),
    "concatenate": frozenset({"dimensions"}),
    "reverse": frozenset({"dimensions"}),
    "slice": frozenset({"slice"}),
    "pad": frozenset({"padding"}),
    "select": frozenset(),
    "clamp": frozenset(),
    "convert": frozenset(),
    "bitcast": frozenset(),
    "bitcast-convert": frozenset(),
    "while": frozenset({"condition", "body"}),
    "after-all": frozenset(),
}


def allowed_attrs(opcode: str) -> frozenset[str] | None:
    """The attributes ``opcode`` accepts, or ``None`` when the parser does not restrict them."""
    if opcode in ELEMENTWISE_UNARY or opcode in ELEMENTWISE_BINARY:
        if opcode == "compare":
            return GENERIC_ATTRS | {"direction", "type"}
        return GENERIC_ATTRS
    specific = OPCODE_ATTRS.get(opcode)
    return None if specific is None else GENERIC_ATTRS | specific


#: Opcodes whose result shape the text may leave out; the parser infers it.
INFERRED: Final[frozenset[str]] = (
    ELEMENTWISE_UNARY | ELEMENTWISE_BINARY | {"tuple", "get-tuple-element", "select", "transpose", "dot"}
)


def infer_shape(opcode: str, operands: list[Shape], attrs: dict[str, object]) -> Shape | None:
    """The result shape XLA would infer for the few ops the text may write without one
    (:data:`INFERRED`), by the one shape inference, :mod:`hlo.shape_inference`.

    A dot's result takes the lhs element type (XLA's default preferred element type).
    Layouts are not inferred; ``None`` means "cannot infer" (the operands do not fit).
    """
    if opcode not in INFERRED or operand_count_problem(opcode, len(operands)):
        return None
    first = operands[0] if operands else None
    assumed = ArrayShape(first.element_type, ()) if isinstance(first, ArrayShape) else TupleShape(())
    instr = Instruction("inferred", opcode, assumed, tuple(f"operand.{k}" for k in range(len(operands))),
                        tuple(attrs.items()))  # type: ignore[arg-type]
    try:
        shape = shape_inference.infer_shape(instr, tuple(operands), _no_callee)
    except HloError:
        return None
    # A tuple or an element of one is its operands' own shape; a computed array has no layout.
    if isinstance(shape, ArrayShape) and opcode != "get-tuple-element":
        return shape.with_layout(None)
    return shape


def _no_callee(name: str) -> Computation:
    raise VerifyError(f"no computation '{name}' while inferring a shape")
