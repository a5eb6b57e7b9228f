"""What every inference rule reads: operand shapes, typed attributes, callees.

Rules are pure functions ``rule(ctx) -> Shape | None``; ``None`` means the
result shape is free (set by the producer, e.g. a custom-call's). A rule that
finds an inconsistency raises :class:`~hlo.errors.VerifyError` *without* a
location: the verifier adds the instruction's name and position.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, NoReturn

from hlo.errors import VerifyError
from hlo.ir import Computation, ComputationRef, Instruction
from hlo.shape import ArrayShape, Shape, TupleShape

#: Element types by family; anything else is an integer (``s*``/``u*``) or ``pred``.
COMPLEX_COMPONENT = {"c64": "f32", "c128": "f64"}
FLOAT_TYPES = frozenset(
    {"f16", "bf16", "f32", "f64", "f4e2m1fn", "f8e3m4", "f8e4m3", "f8e4m3fn",
     "f8e4m3b11fnuz", "f8e4m3fnuz", "f8e5m2", "f8e5m2fnuz", "f8e8m0fnu"}
)


def is_float(element_type: str) -> bool:
    return element_type in FLOAT_TYPES


def is_complex(element_type: str) -> bool:
    return element_type in COMPLEX_COMPONENT


def is_integral(element_type: str) -> bool:
    return element_type[0] in "su" and element_type[1:].isdigit()


def fail(message: str) -> NoReturn:
    raise VerifyError(message)


@dataclass(frozen=True, slots=True)
class Context:
    """One instruction, the shapes of its operands and a way to find callees."""

    instr: Instruction
    operands: tuple[Shape, ...]
    lookup: Callable[[str], Computation]

    # -- operands ---------------------------------------------------------
    def array(self, i: int) -> ArrayShape:
        shape = self.operands[i]
        if not isinstance(shape, ArrayShape):
            fail(f"operand {i} of {self.instr.opcode} must be an array, got {shape}")
        return shape

    def arrays(self, start: int = 0, stop: int | None = None) -> tuple[ArrayShape, ...]:
        stop = len(self.operands) if stop is None else stop
        return tuple(self.array(i) for i in range(start, stop))

    def scalar(self, i: int) -> ArrayShape:
        shape = self.array(i)
        if shape.rank != 0:
            fail(f"operand {i} of {self.instr.opcode} must be a scalar, got {shape}")
        return shape

    @property
    def result(self) -> Shape:
        return self.instr.shape

    def result_array(self) -> ArrayShape:
        if not isinstance(self.instr.shape, ArrayShape):
            fail(f"{self.instr.opcode} must produce an array, not {self.instr.shape}")
        return self.instr.shape

    # -- attributes -------------------------------------------------------
    def ints(self, name: str, default: tuple[int, ...] | None = ()) -> tuple[int, ...]:
        """An int-list attribute (``dimensions={1,0}``); a bare int counts as one entry."""
        value = self.instr.attr(name)
        if value is None:
            if default is None:
                fail(f"{self.instr.opcode} needs attribute '{name}'")
            return default
        if isinstance(value, bool):
            fail(f"attribute '{name}' must be integers, got {value!r}")
        if isinstance(value, int):
            return (value,)
        if isinstance(value, tuple) and all(isinstance(v, int) and not isinstance(v, bool)
                                            for v in value):
            return value
        fail(f"attribute '{name}' must be integers, got {value!r}")

    def int(self, name: str, default: int | None = None) -> int:
        value = self.instr.attr(name)
        if value is None:
            if default is None:
                fail(f"{self.instr.opcode} needs attribute '{name}'")
            return default
        if isinstance(value, tuple) and len(value) == 1:
            value = value[0]
        if not isinstance(value, int) or isinstance(value, bool):
            fail(f"attribute '{name}' must be an integer, got {value!r}")
        return value

    def callee(self, name: str) -> Computation:
        value = self.instr.attr(name)
        if isinstance(value, tuple) and len(value) == 1:
            value = value[0]
        if not isinstance(value, ComputationRef):
            fail(f"{self.instr.opcode} needs a computation in attribute '{name}'")
        return self.lookup(value.name)

    def callees(self, name: str) -> tuple[Computation, ...]:
        value = self.instr.attr(name)
        if isinstance(value, ComputationRef):
            value = (value,)
        if not isinstance(value, tuple) or not all(isinstance(v, ComputationRef) for v in value):
            fail(f"{self.instr.opcode} needs computations in attribute '{name}'")
        return tuple(self.lookup(v.name) for v in value)


# ---------------------------------------------------------------------------
# Shape comparison (layout-insensitive)
# ---------------------------------------------------------------------------


def compatible(a: Shape, b: Shape) -> bool:
    """Same element types and dims, recursively; layouts and dynamic flags ignored.

    This is XLA's ``ShapeUtil::Compatible``: ``f32[2,3]{0,1}`` is compatible with
    ``f32[2,3]{1,0}`` and with ``f32[2,<=3]``, not with ``bf16[2,3]``.
    """
    if isinstance(a, ArrayShape) and isinstance(b, ArrayShape):
        return a.element_type == b.element_type and a.dims == b.dims
    if isinstance(a, TupleShape) and isinstance(b, TupleShape):
        return len(a.elements) == len(b.elements) and all(
            compatible(x, y) for x, y in zip(a.elements, b.elements)
        )
    return type(a) is type(b) and not isinstance(a, (ArrayShape, TupleShape))


def array(element_type: str, dims: tuple[int, ...] | list[int]) -> ArrayShape:
    return ArrayShape(element_type, tuple(dims))


def scalar_of(element_type: str) -> ArrayShape:
    return ArrayShape(element_type, ())


def parameter_shapes(comp: Computation) -> tuple[Shape, ...]:
    return tuple(p.shape for p in comp.parameter_instructions())


def root_shape(comp: Computation) -> Shape:
    return comp.root_instruction.shape


def expect_parameter_count(ctx: Context, comp: Computation, count: int) -> tuple[Shape, ...]:
    params = parameter_shapes(comp)
    if len(params) != count:
        fail(
            f"computation '{comp.name}' called by {ctx.instr.opcode} must take {count} "
            f"parameter(s), it takes {len(params)}"
        )
    return params


def check_dims_in_range(dims: tuple[int, ...], rank: int, what: str) -> None:
    for d in dims:
        if not 0 <= d < rank:
            fail(f"{what} {d} is out of range for rank {rank}")
    if len(set(dims)) != len(dims):
        fail(f"{what} {list(dims)} repeats a dimension")
