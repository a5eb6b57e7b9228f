"""Cross-device ops. Group sizes depend on the run configuration (replica and
partition counts), which the module text does not always state, so gathered and
scattered dims are checked for divisibility rather than an exact factor."""

from __future__ import annotations

from hlo.shape import ArrayShape, Shape, TupleShape
from hlo.shape_inference.operands import Context, array, fail


def _results(ctx: Context, count: int) -> tuple[ArrayShape, ...]:
    out = ctx.result
    shapes = out.elements if isinstance(out, TupleShape) and count > 1 else (out,)
    if len(shapes) != count or not all(isinstance(s, ArrayShape) for s in shapes):
        fail(f"{ctx.instr.opcode} with {count} operand(s) cannot produce {out}")
    return shapes  # type: ignore[return-value]


def _pack(shapes: list[ArrayShape]) -> Shape:
    return shapes[0] if len(shapes) == 1 else TupleShape(tuple(shapes))


def _resized(ctx: Context, grows: bool) -> Shape:
    ops = ctx.arrays()
    d = ctx.int("dimensions")
    outs = _results(ctx, len(ops))
    expected = []
    for x, y in zip(ops, outs):
        if not 0 <= d < x.rank or y.rank != x.rank:
            fail(f"{ctx.instr.opcode} dimension {d} is invalid for {x} -> {y}")
        small, big = (x, y) if grows else (y, x)
        if small.dims[d] == 0 or big.dims[d] % small.dims[d]:
            fail(f"{ctx.instr.opcode} dim {d}: {big.dims[d]} is not a multiple of {small.dims[d]}")
        dims = list(x.dims)
        dims[d] = y.dims[d]
        expected.append(array(x.element_type, dims))
    return _pack(expected)


def all_gather(ctx: Context) -> Shape:
    return _resized(ctx, grows=True)


def reduce_scatter(ctx: Context) -> Shape:
    return _resized(ctx, grows=False)


def passthrough(ctx: Context) -> Shape:
    ops = ctx.arrays()
    return _pack(list(ops))


def collective_permute(ctx: Context) -> Shape:
    """One operand: its shape. The in-place form (input, output, input offsets,
    output offsets) produces the output buffer's shape."""
    if len(ctx.operands) == 4:
        return ctx.operands[1]
    return passthrough(ctx)


def device_id(ctx: Context) -> Shape:
    return array("u32", ())


RULES = {
    "all-gather": all_gather,
    "reduce-scatter": reduce_scatter,
    "all-to-all": passthrough,
    "collective-permute": collective_permute,
    "collective-broadcast": passthrough,
    "partition-id": device_id,
    "replica-id": device_id,
}
