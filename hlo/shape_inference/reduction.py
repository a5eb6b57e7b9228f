"""Reductions and other ops driven by a scalar computation (reduce, reduce-window,
select-and-scatter, sort, all-reduce) plus top-k.

``reduce(f32[4,5] x, f32[] 0), dimensions={1}, to_apply=add -> f32[4]``; variadic forms
reduce N inputs with N inits into an N-tuple.
"""

from __future__ import annotations

from hlo.ir import Computation
from hlo.shape import ArrayShape, Shape, TupleShape
from hlo.shape_inference.contraction import window_of, window_output_size
from hlo.shape_inference.operands import (
    Context,
    array,
    check_dims_in_range,
    expect_parameter_count,
    fail,
    root_shape,
)


def _split_inputs_inits(ctx: Context) -> tuple[tuple[ArrayShape, ...], tuple[ArrayShape, ...]]:
    n = len(ctx.operands)
    if n < 2 or n % 2:
        fail(f"{ctx.instr.opcode} needs N inputs and N init values, got {n} operands")
    inputs, inits = ctx.arrays(0, n // 2), ctx.arrays(n // 2)
    for i, init in enumerate(inits):
        if init.rank != 0:
            fail(f"{ctx.instr.opcode} init value {i} must be a scalar, got {init}")
    for i, x in enumerate(inputs):
        if x.dims != inputs[0].dims:
            fail(f"{ctx.instr.opcode} inputs must share dims: input 0 is {inputs[0]}, "
                 f"input {i} is {x}")
    return inputs, inits


def _reducer_types(ctx: Context, comp: Computation, inits: tuple[ArrayShape, ...]) -> list[str]:
    """Check a reducer ``(acc..., x...) -> acc...`` and return the accumulator types."""
    n = len(inits)
    params = expect_parameter_count(ctx, comp, 2 * n)
    out = root_shape(comp)
    outs = out.elements if isinstance(out, TupleShape) else (out,)
    if len(outs) != n:
        fail(f"reducer '{comp.name}' must return {n} value(s), returns {out}")
    for i, o in enumerate(outs):
        if not isinstance(o, ArrayShape) or o.rank != 0:
            fail(f"reducer '{comp.name}' result {i} must be a scalar, got {o}")
        if o.element_type != inits[i].element_type:
            fail(f"reducer '{comp.name}' result {i} is {o.element_type}, its init value is "
                 f"{inits[i].element_type}")
    for i, p in enumerate(params):
        if not isinstance(p, ArrayShape) or p.rank != 0:
            fail(f"reducer '{comp.name}' parameter {i} must be a scalar, got {p}")
    return [o.element_type for o in outs]


def _pack(shapes: list[ArrayShape]) -> Shape:
    return shapes[0] if len(shapes) == 1 else TupleShape(tuple(shapes))


def reduce(ctx: Context) -> Shape:
    inputs, inits = _split_inputs_inits(ctx)
    dims = ctx.ints("dimensions")
    check_dims_in_range(dims, inputs[0].rank, "reduce dimension")
    types = _reducer_types(ctx, ctx.callee("to_apply"), inits)
    kept = [s for d, s in enumerate(inputs[0].dims) if d not in dims]
    return _pack([array(t, kept) for t in types])


def reduce_window(ctx: Context) -> Shape:
    inputs, inits = _split_inputs_inits(ctx)
    window = window_of(ctx, inputs[0].rank)
    types = _reducer_types(ctx, ctx.callee("to_apply"), inits)
    dims = [window_output_size(s, w) for s, w in zip(inputs[0].dims, window.dims)]
    return _pack([array(t, dims) for t in types])


def select_and_scatter(ctx: Context) -> Shape:
    x, source, init = ctx.array(0), ctx.array(1), ctx.scalar(2)
    window = window_of(ctx, x.rank)
    expected = [window_output_size(s, w) for s, w in zip(x.dims, window.dims)]
    if list(source.dims) != expected:
        fail(f"select-and-scatter source {source} must have the window output dims {expected}")
    if source.element_type != x.element_type or init.element_type != x.element_type:
        fail("select-and-scatter operand, source and init must share one element type")
    select = ctx.callee("select")
    expect_parameter_count(ctx, select, 2)
    out = root_shape(select)
    if not (isinstance(out, ArrayShape) and out.rank == 0 and out.element_type == "pred"):
        fail(f"select computation '{select.name}' must return pred[], returns {out}")
    expect_parameter_count(ctx, ctx.callee("scatter"), 2)
    return x


def sort(ctx: Context) -> Shape:
    ops = ctx.arrays()
    for i, x in enumerate(ops):
        if x.dims != ops[0].dims:
            fail(f"sort operands must share dims: operand 0 is {ops[0]}, operand {i} is {x}")
    dims = ctx.ints("dimensions", None)
    if len(dims) != 1 or not 0 <= dims[0] < ops[0].rank:
        fail(f"sort dimension {list(dims)} is invalid for rank {ops[0].rank}")
    comp = ctx.callee("to_apply")
    params = expect_parameter_count(ctx, comp, 2 * len(ops))
    for i, p in enumerate(params):
        if not isinstance(p, ArrayShape) or p.rank != 0:
            fail(f"sort comparator parameter {i} must be a scalar, got {p}")
    out = root_shape(comp)
    if not (isinstance(out, ArrayShape) and out.rank == 0 and out.element_type == "pred"):
        fail(f"sort comparator '{comp.name}' must return pred[], returns {out}")
    return _pack(list(ops))


def topk(ctx: Context) -> Shape:
    x = ctx.array(0)
    k = ctx.int("k")
    if x.rank == 0 or not 0 <= k <= x.dims[-1]:
        fail(f"topk k={k} is invalid for {x}")
    dims = (*x.dims[:-1], k)
    return TupleShape((array(x.element_type, dims), array("s32", dims)))


def all_reduce(ctx: Context) -> Shape:
    ops = ctx.arrays()
    comp = ctx.callee("to_apply")
    expect_parameter_count(ctx, comp, 2)
    return _pack(list(ops))


RULES = {
    "reduce": reduce,
    "reduce-window": reduce_window,
    "select-and-scatter": select_and_scatter,
    "sort": sort,
    "topk": topk,
    "all-reduce": all_reduce,
}
