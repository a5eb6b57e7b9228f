"""Elementwise ops: the result has the operands' dims (no implicit broadcast in HLO).

``add(f32[2,3], f32[2,3]) -> f32[2,3]``; ``compare(..) -> pred[2,3]``;
``convert(s32[4]) -> T[4]`` for any ``T``; ``bitcast-convert(f32[4]) -> s16[4,2]``.
"""

from __future__ import annotations

from hlo.opcode_facts import ELEMENTWISE_BINARY, ELEMENTWISE_UNARY
from hlo.shape import ArrayShape, Shape, element_bits
from hlo.shape_inference.operands import (
    COMPLEX_COMPONENT,
    Context,
    array,
    expect_parameter_count,
    fail,
    is_complex,
    is_float,
    root_shape,
)

def unary_same(ctx: Context) -> Shape:
    return ctx.array(0)


def complex_to_real(ctx: Context) -> Shape:
    """``abs``, ``real``, ``imag``: a complex operand gives its component type."""
    x = ctx.array(0)
    if is_complex(x.element_type):
        return array(COMPLEX_COMPONENT[x.element_type], x.dims)
    if ctx.instr.opcode == "imag" and not is_float(x.element_type):
        fail(f"imag needs a floating-point or complex operand, got {x}")
    return x


def is_finite(ctx: Context) -> Shape:
    x = ctx.array(0)
    if not is_float(x.element_type):
        fail(f"is-finite needs a floating-point operand, got {x}")
    return array("pred", x.dims)


def _same_dims(ctx: Context, shapes: tuple[ArrayShape, ...]) -> None:
    first = shapes[0]
    for i, s in enumerate(shapes[1:], start=1):
        if s.dims != first.dims:
            fail(
                f"{ctx.instr.opcode} operands must have equal dims (no implicit broadcast): "
                f"operand 0 is {first}, operand {i} is {s}"
            )


def _same_types(ctx: Context, shapes: tuple[ArrayShape, ...]) -> None:
    first = shapes[0]
    for i, s in enumerate(shapes[1:], start=1):
        if s.element_type != first.element_type:
            fail(
                f"{ctx.instr.opcode} operands must have one element type: operand 0 is "
                f"{first.element_type}, operand {i} is {s.element_type}"
            )


def binary_same(ctx: Context) -> Shape:
    ops = ctx.arrays()
    _same_dims(ctx, ops)
    _same_types(ctx, ops)
    return ops[0]


def compare(ctx: Context) -> Shape:
    ops = ctx.arrays()
    _same_dims(ctx, ops)
    _same_types(ctx, ops)
    return array("pred", ops[0].dims)


def complex_op(ctx: Context) -> Shape:
    ops = ctx.arrays()
    _same_dims(ctx, ops)
    _same_types(ctx, ops)
    component = ops[0].element_type
    for c, comp in COMPLEX_COMPONENT.items():
        if comp == component:
            return array(c, ops[0].dims)
    fail(f"complex needs f32 or f64 operands, got {component}")


def select(ctx: Context) -> Shape:
    pred, on_true, on_false = ctx.arrays()
    if pred.element_type != "pred":
        fail(f"select predicate must be pred, got {pred}")
    _same_dims(ctx, (pred, on_true, on_false))
    _same_types(ctx, (on_true, on_false))
    return on_true


def clamp(ctx: Context) -> Shape:
    low, x, high = ctx.arrays()
    _same_types(ctx, (low, x, high))
    for name, bound in (("min", low), ("max", high)):
        if bound.rank != 0 and bound.dims != x.dims:
            fail(f"clamp {name} must be a scalar or have the operand's dims: {bound} vs {x}")
    return x


def convert(ctx: Context) -> Shape:
    x = ctx.array(0)
    return array(ctx.result_array().element_type, x.dims)


def stochastic_convert(ctx: Context) -> Shape:
    x, random = ctx.arrays()
    if random.dims != x.dims:
        fail(f"stochastic-convert random bits must have the operand's dims: {random} vs {x}")
    return array(ctx.result_array().element_type, x.dims)


def bitcast_convert(ctx: Context) -> Shape:
    """Same width: same dims. Narrowing adds a minor dim of the ratio; widening removes it.

    ``bitcast-convert(f32[4]) -> s16[4,2]`` and back ``s16[4,2] -> f32[4]``.
    """
    x = ctx.array(0)
    out_type = ctx.result_array().element_type
    in_bits, out_bits = element_bits(x.element_type), element_bits(out_type)
    if in_bits == out_bits:
        return array(out_type, x.dims)
    if in_bits > out_bits:
        if in_bits % out_bits:
            fail(f"bitcast-convert from {x.element_type} to {out_type}: widths do not divide")
        return array(out_type, (*x.dims, in_bits // out_bits))
    if out_bits % in_bits:
        fail(f"bitcast-convert from {x.element_type} to {out_type}: widths do not divide")
    ratio = out_bits // in_bits
    if x.rank == 0 or x.dims[-1] != ratio:
        fail(
            f"bitcast-convert from {x} to {out_type} needs a minor dim of size {ratio}"
        )
    return array(out_type, x.dims[:-1])


def map_op(ctx: Context) -> Shape:
    ops = ctx.arrays()
    _same_dims(ctx, ops)
    comp = ctx.callee("to_apply")
    params = expect_parameter_count(ctx, comp, len(ops))
    for i, (p, x) in enumerate(zip(params, ops)):
        if not isinstance(p, ArrayShape) or p.rank != 0 or p.element_type != x.element_type:
            fail(f"map computation parameter {i} must be {x.element_type}[], got {p}")
    out = root_shape(comp)
    if not isinstance(out, ArrayShape) or out.rank != 0:
        fail(f"map computation '{comp.name}' must return a scalar, got {out}")
    return array(out.element_type, ops[0].dims)


def copy(ctx: Context) -> Shape:
    """A copy of any shape (a tuple is copied deeply) has its operand's shape."""
    return ctx.operands[0]


RULES = {
    # The result of an elementwise op has its operands' shape, except where a rule below
    # says otherwise.
    **{op: unary_same for op in ELEMENTWISE_UNARY},
    "reduce-precision": unary_same,
    "copy": copy,
    **{op: binary_same for op in ELEMENTWISE_BINARY},
    "abs": complex_to_real,
    "real": complex_to_real,
    "imag": complex_to_real,
    "is-finite": is_finite,
    "compare": compare,
    "complex": complex_op,
    "select": select,
    "clamp": clamp,
    "convert": convert,
    "stochastic-convert": stochastic_convert,
    "bitcast-convert": bitcast_convert,
    "map": map_op,
}
