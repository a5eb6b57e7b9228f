"""What the parser knows about opcodes: the names, the attributes each accepts,
and the few result shapes it infers when the text leaves them out."""

from __future__ import annotations

from typing import Final

from hlo.opcode_facts import ELEMENTWISE_BINARY, ELEMENTWISE_UNARY, OPCODES
from hlo.shape import ArrayShape, Shape, TupleShape

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


def infer_shape(opcode: str, operands: list[Shape], attrs: dict[str, object]) -> Shape | None:
    """The result shape XLA would infer for the few ops the text may write without one.

    Layouts are not inferred (the result has none); ``None`` means "cannot infer".
    """
    if opcode == "tuple":
        return TupleShape(tuple(operands))
    if opcode == "get-tuple-element" and len(operands) == 1 and isinstance(operands[0], TupleShape):
        index = attrs.get("index")
        if isinstance(index, int) and 0 <= index < len(operands[0].elements):
            return operands[0].elements[index]
        return None
    arrays = [s for s in operands if isinstance(s, ArrayShape)]
    if len(arrays) != len(operands) or not arrays:
        return None
    first = arrays[0]
    if opcode in ELEMENTWISE_UNARY or opcode in ELEMENTWISE_BINARY:
        etype = "pred" if opcode in ("compare", "is-finite") else first.element_type
        return ArrayShape(etype, first.dims, None, first.dynamic)
    if opcode == "select" and len(arrays) == 3:
        return ArrayShape(arrays[1].element_type, arrays[1].dims, None, arrays[1].dynamic)
    if opcode == "transpose" and len(arrays) == 1:
        perm = _dim_list(attrs, "dimensions", first.rank)
        if perm is None or sorted(perm) != list(range(first.rank)):
            return None
        return ArrayShape(first.element_type, tuple(first.dims[d] for d in perm))
    if opcode == "dot" and len(arrays) == 2:
        lhs, rhs = arrays
        lb = _dim_list(attrs, "lhs_batch_dims", lhs.rank)
        lc = _dim_list(attrs, "lhs_contracting_dims", lhs.rank)
        rb = _dim_list(attrs, "rhs_batch_dims", rhs.rank)
        rc = _dim_list(attrs, "rhs_contracting_dims", rhs.rank)
        if lb is None or lc is None or rb is None or rc is None:
            return None
        dims = [lhs.dims[d] for d in lb]
        dims += [n for d, n in enumerate(lhs.dims) if d not in lb and d not in lc]
        dims += [n for d, n in enumerate(rhs.dims) if d not in rb and d not in rc]
        return ArrayShape(lhs.element_type, tuple(dims))
    return None


def _dim_list(attrs: dict[str, object], key: str, rank: int) -> tuple[int, ...] | None:
    """``attrs[key]`` as dims of a rank-``rank`` array (absent: none); ``None`` when malformed."""
    value = attrs.get(key, ())
    if not isinstance(value, tuple) or not all(
        isinstance(d, int) and not isinstance(d, bool) and 0 <= d < rank for d in value
    ):
        return None
    return value
