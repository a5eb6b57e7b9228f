"""Structure and control flow: tuples, calls, loops, conditionals, constants.

``while(init)`` has the shape of ``init``; its body maps that shape to itself and
its condition maps it to ``pred[]``. A call's result is its callee's root shape.
"""

from __future__ import annotations

from hlo.ir import Computation, Literal
from hlo.shape import ArrayShape, Shape, TokenShape, TupleShape
from hlo.shape_inference.operands import (
    Context,
    array,
    compatible,
    expect_parameter_count,
    fail,
    parameter_shapes,
    root_shape,
)


def tuple_op(ctx: Context) -> Shape:
    return TupleShape(ctx.operands)


def get_tuple_element(ctx: Context) -> Shape:
    t = ctx.operands[0]
    if not isinstance(t, TupleShape):
        fail(f"get-tuple-element needs a tuple operand, got {t}")
    i = ctx.int("index")
    if not 0 <= i < len(t.elements):
        fail(f"tuple index {i} is out of range for {t}")
    return t.elements[i]


def _operands_match_parameters(ctx: Context, comp: Computation, first: int = 0) -> None:
    params = expect_parameter_count(ctx, comp, len(ctx.operands) - first)
    for i, p in enumerate(params):
        if not compatible(p, ctx.operands[first + i]):
            fail(f"operand {first + i} {ctx.operands[first + i]} does not match parameter {i} "
                 f"{p} of '{comp.name}'")


def while_op(ctx: Context) -> Shape:
    init = ctx.operands[0]
    body, cond = ctx.callee("body"), ctx.callee("condition")
    for role, comp in (("body", body), ("condition", cond)):
        (param,) = expect_parameter_count(ctx, comp, 1)
        if not compatible(param, init):
            fail(f"while {role} '{comp.name}' parameter {param} does not match the init {init}")
    out = root_shape(cond)
    if not (isinstance(out, ArrayShape) and out.rank == 0 and out.element_type == "pred"):
        fail(f"while condition '{cond.name}' must return pred[], returns {out}")
    if not compatible(root_shape(body), init):
        fail(f"while body '{body.name}' returns {root_shape(body)}, the loop carries {init}")
    return init


def branches(ctx: Context) -> tuple[Computation, ...]:
    if ctx.instr.attr("branch_computations") is not None:
        return ctx.callees("branch_computations")
    return (ctx.callee("true_computation"), ctx.callee("false_computation"))


def conditional(ctx: Context) -> Shape:
    selector = ctx.scalar(0)
    comps = branches(ctx)
    if selector.element_type == "pred":
        if len(comps) != 2:
            fail(f"a pred-selected conditional needs 2 branches, has {len(comps)}")
    elif selector.element_type != "s32":
        fail(f"conditional selector must be pred[] or s32[], got {selector}")
    if len(ctx.operands) != len(comps) + 1:
        fail(f"conditional with {len(comps)} branches needs {len(comps) + 1} operands, "
             f"got {len(ctx.operands)}")
    result = root_shape(comps[0])
    for j, comp in enumerate(comps):
        (param,) = expect_parameter_count(ctx, comp, 1)
        if not compatible(param, ctx.operands[j + 1]):
            fail(f"branch {j} '{comp.name}' parameter {param} does not match operand {j + 1} "
                 f"{ctx.operands[j + 1]}")
        if not compatible(root_shape(comp), result):
            fail(f"branch {j} '{comp.name}' returns {root_shape(comp)}, branch 0 returns {result}")
    return result


def call(ctx: Context) -> Shape:
    comp = ctx.callee("to_apply")
    _operands_match_parameters(ctx, comp)
    return root_shape(comp)


def fusion(ctx: Context) -> Shape:
    comp = ctx.callee("calls")
    params = parameter_shapes(comp)
    if len(params) > len(ctx.operands):
        fail(f"fused computation '{comp.name}' takes {len(params)} parameters, the fusion has "
             f"{len(ctx.operands)} operands")
    for i, p in enumerate(params):
        if not compatible(p, ctx.operands[i]):
            fail(f"fusion operand {i} {ctx.operands[i]} does not match parameter {i} {p} of "
                 f"'{comp.name}'")
    return root_shape(comp)


def constant(ctx: Context) -> Shape | None:
    literal = ctx.instr.attr("literal")
    if isinstance(literal, Literal):
        if isinstance(literal.shape, ArrayShape) and literal.values is not None:
            if len(literal.values) != literal.shape.element_count:
                fail(f"constant has {len(literal.values)} values for {literal.shape}")
        return literal.shape
    return None


def same_as_operand(ctx: Context) -> Shape:
    return ctx.operands[0]


def add_dependency(ctx: Context) -> Shape:
    if not isinstance(ctx.operands[1], TokenShape):
        fail(f"add-dependency operand 1 must be a token, got {ctx.operands[1]}")
    return ctx.operands[0]


def token(ctx: Context) -> Shape:
    for i, s in enumerate(ctx.operands):
        if not isinstance(s, TokenShape):
            fail(f"after-all operand {i} must be a token, got {s}")
    return TokenShape()


def copy_start(ctx: Context) -> Shape:
    x = ctx.operands[0]
    out = ctx.result
    extra = out.elements[2:] if isinstance(out, TupleShape) and len(out.elements) > 2 else ()
    return TupleShape((x, x, *extra)) if extra else TupleShape((x, x, array("u32", ())))


def copy_done(ctx: Context) -> Shape:
    t = ctx.operands[0]
    if not isinstance(t, TupleShape) or len(t.elements) < 2:
        fail(f"copy-done needs a copy-start tuple operand, got {t}")
    return t.elements[0]


RULES = {
    "tuple": tuple_op,
    "get-tuple-element": get_tuple_element,
    "while": while_op,
    "conditional": conditional,
    "call": call,
    "fusion": fusion,
    "constant": constant,
    "opt-barrier": same_as_operand,
    "domain": same_as_operand,
    "add-dependency": add_dependency,
    "after-all": token,
    "copy-start": copy_start,
    "copy-done": copy_done,
}
