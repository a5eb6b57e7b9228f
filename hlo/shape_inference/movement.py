"""Data movement: ops that rearrange, select or replicate elements without arithmetic.

``broadcast(f32[3]), dimensions={1} -> f32[2,3]``; ``slice(f32[10]), slice={[2:8:3]} -> f32[2]``;
``pad(f32[4], pad=1_2_1) -> f32[10]``; ``gather``/``scatter`` follow XLA's dimension numbers.
"""

from __future__ import annotations

from hlo.ir import PaddingConfig, SliceRange
from hlo.shape import UNBOUNDED, ArrayShape, Shape, TupleShape
from hlo.shape_inference.operands import (
    Context,
    array,
    check_dims_in_range,
    expect_parameter_count,
    fail,
    is_integral,
    scalar_of,
)


def broadcast(ctx: Context) -> Shape:
    x = ctx.array(0)
    out = ctx.result_array()
    dims = ctx.ints("dimensions")
    if len(dims) != x.rank:
        fail(f"broadcast dimensions {list(dims)} must list one output dim per operand dim "
             f"(operand {x})")
    check_dims_in_range(dims, out.rank, "broadcast dimension")
    for operand_dim, out_dim in enumerate(dims):
        if out.dims[out_dim] != x.dims[operand_dim]:
            fail(f"broadcast maps operand dim {operand_dim} (size {x.dims[operand_dim]}) to "
                 f"output dim {out_dim} of size {out.dims[out_dim]}")
    return array(x.element_type, out.dims)


def _count(shape: ArrayShape) -> int | None:
    if any(d == UNBOUNDED for d in shape.dims):
        return None
    return shape.element_count


def reshape(ctx: Context) -> Shape:
    x = ctx.array(0)
    out = ctx.result_array()
    n_in, n_out = _count(x), _count(out)
    if n_in is not None and n_out is not None and n_in != n_out:
        fail(f"reshape must keep the element count: {x} has {n_in}, {out.dims_text()} has {n_out}")
    return array(x.element_type, out.dims)


def transpose(ctx: Context) -> Shape:
    x = ctx.array(0)
    perm = ctx.ints("dimensions")
    if sorted(perm) != list(range(x.rank)):
        fail(f"transpose dimensions {list(perm)} are not a permutation of 0..{x.rank - 1}")
    return array(x.element_type, [x.dims[d] for d in perm])


def slice_op(ctx: Context) -> Shape:
    x = ctx.array(0)
    ranges = ctx.instr.attr("slice")
    if not isinstance(ranges, tuple) or not all(isinstance(r, SliceRange) for r in ranges):
        fail("slice needs a 'slice' attribute")
    if len(ranges) != x.rank:
        fail(f"slice has {len(ranges)} ranges for a rank-{x.rank} operand")
    out = []
    for d, (r, size) in enumerate(zip(ranges, x.dims)):
        if r.stride < 1 or not 0 <= r.start <= r.limit <= size:
            fail(f"slice range [{r.start}:{r.limit}:{r.stride}] is invalid for dim {d} "
                 f"of size {size}")
        out.append(-(-(r.limit - r.start) // r.stride))
    return array(x.element_type, out)


def _index_operands(ctx: Context, start: int, rank: int) -> None:
    indices = ctx.arrays(start)
    if len(indices) == 1 and indices[0].rank == 1 and rank != 1:
        # The legacy form: one index vector instead of one scalar per dim.
        if indices[0].dims[0] != rank:
            fail(f"index vector {indices[0]} must have {rank} elements")
        return
    if len(indices) != rank:
        fail(f"{ctx.instr.opcode} needs {rank} start indices, got {len(indices)}")
    for i, s in enumerate(indices):
        if s.rank != 0 or not is_integral(s.element_type):
            fail(f"start index {i} of {ctx.instr.opcode} must be an integer scalar, got {s}")
    if len({s.element_type for s in indices}) > 1:
        fail(f"start indices of {ctx.instr.opcode} must share one element type")


def dynamic_slice(ctx: Context) -> Shape:
    x = ctx.array(0)
    _index_operands(ctx, 1, x.rank)
    sizes = ctx.ints("dynamic_slice_sizes", None)
    if len(sizes) != x.rank:
        fail(f"dynamic_slice_sizes {list(sizes)} must have {x.rank} entries")
    for d, (s, size) in enumerate(zip(sizes, x.dims)):
        if not 0 <= s <= size:
            fail(f"dynamic slice size {s} is out of bounds for dim {d} of size {size}")
    return array(x.element_type, sizes)


def dynamic_update_slice(ctx: Context) -> Shape:
    x, update = ctx.array(0), ctx.array(1)
    _index_operands(ctx, 2, x.rank)
    if update.rank != x.rank or update.element_type != x.element_type:
        fail(f"dynamic-update-slice update {update} must match the operand {x} in rank and type")
    for d, (u, size) in enumerate(zip(update.dims, x.dims)):
        if u > size:
            fail(f"update dim {d} of size {u} exceeds operand dim of size {size}")
    return x


def concatenate(ctx: Context) -> Shape:
    ops = ctx.arrays()
    dims_attr = ctx.ints("dimensions", None)
    first = ops[0]
    dim = dims_attr[0] if len(dims_attr) == 1 else -1
    if not 0 <= dim < first.rank:
        fail(f"concatenate dimension {dim} is out of range for rank {first.rank}")
    total = 0
    for i, s in enumerate(ops):
        if s.rank != first.rank or s.element_type != first.element_type:
            fail(f"concatenate operand {i} is {s}, operand 0 is {first}")
        for d in range(first.rank):
            if d != dim and s.dims[d] != first.dims[d]:
                fail(f"concatenate operands differ in dim {d} (not the concatenated dim {dim}): "
                     f"operand 0 is {first}, operand {i} is {s}")
        total += s.dims[dim]
    dims = list(first.dims)
    dims[dim] = total
    return array(first.element_type, dims)


def pad(ctx: Context) -> Shape:
    x, value = ctx.array(0), ctx.scalar(1)
    if value.element_type != x.element_type:
        fail(f"pad value {value} must have the operand's element type {x.element_type}")
    config = ctx.instr.attr("padding")
    if not isinstance(config, PaddingConfig):
        fail("pad needs a 'padding' attribute")
    if len(config.dims) != x.rank:
        fail(f"padding has {len(config.dims)} dims for a rank-{x.rank} operand")
    out = []
    for d, (p, size) in enumerate(zip(config.dims, x.dims)):
        if p.interior < 0:
            fail(f"interior padding of dim {d} is negative")
        n = p.low + p.high + size + max(size - 1, 0) * p.interior
        if n < 0:
            fail(f"padding makes dim {d} negative ({n})")
        out.append(n)
    return array(x.element_type, out)


def reverse(ctx: Context) -> Shape:
    x = ctx.array(0)
    check_dims_in_range(ctx.ints("dimensions"), x.rank, "reverse dimension")
    return x


def iota(ctx: Context) -> Shape:
    out = ctx.result_array()
    if out.rank == 0:
        fail("iota needs a result of rank at least 1")
    d = ctx.int("iota_dimension")
    if not 0 <= d < out.rank:
        fail(f"iota_dimension {d} is out of range for rank {out.rank}")
    return out


def _batch_dims(indices: ArrayShape, index_vector_dim: int) -> list[int]:
    return [s for d, s in enumerate(indices.dims) if d != index_vector_dim]


def gather(ctx: Context) -> Shape:
    """Output = offset dims (slice sizes minus collapsed/batching dims) placed at
    ``offset_dims``, the rest filled with the index batch dims in order."""
    x, indices = ctx.array(0), ctx.array(1)
    offset_dims = ctx.ints("offset_dims")
    collapsed = ctx.ints("collapsed_slice_dims")
    operand_batching = ctx.ints("operand_batching_dims")
    start_index_map = ctx.ints("start_index_map")
    index_vector_dim = ctx.int("index_vector_dim", indices.rank)
    slice_sizes = ctx.ints("slice_sizes", None)
    if not is_integral(indices.element_type):
        fail(f"gather indices must be integers, got {indices}")
    if len(slice_sizes) != x.rank:
        fail(f"gather slice_sizes {list(slice_sizes)} must have {x.rank} entries")
    for d, (s, size) in enumerate(zip(slice_sizes, x.dims)):
        if not 0 <= s <= size:
            fail(f"gather slice size {s} is out of bounds for operand dim {d} of size {size}")
    for d in (*collapsed, *operand_batching):
        if not 0 <= d < x.rank or slice_sizes[d] > 1:
            fail(f"gather collapsed/batching dim {d} must exist and have slice size <= 1")
    vector = indices.dims[index_vector_dim] if index_vector_dim < indices.rank else 1
    if vector != len(start_index_map):
        fail(f"gather start_index_map {list(start_index_map)} must have {vector} entries")
    dropped = set(collapsed) | set(operand_batching)
    offsets = [s for d, s in enumerate(slice_sizes) if d not in dropped]
    if len(offsets) != len(offset_dims):
        fail(f"gather offset_dims {list(offset_dims)} must have {len(offsets)} entries")
    batch = _batch_dims(indices, index_vector_dim)
    rank = len(batch) + len(offsets)
    check_dims_in_range(offset_dims, rank, "gather offset dim")
    out, b, o = [], iter(batch), iter(offsets)
    offset_set = set(offset_dims)
    for d in range(rank):
        out.append(next(o) if d in offset_set else next(b))
    return array(x.element_type, out)


def scatter(ctx: Context) -> Shape:
    n = len(ctx.operands)
    if n < 3 or n % 2 == 0:
        fail(f"scatter needs N operands, the indices and N updates; got {n} operands")
    count = (n - 1) // 2
    operands = ctx.arrays(0, count)
    indices = ctx.array(count)
    updates = ctx.arrays(count + 1)
    window_dims = ctx.ints("update_window_dims")
    inserted = ctx.ints("inserted_window_dims")
    input_batching = ctx.ints("input_batching_dims")
    to_operand = ctx.ints("scatter_dims_to_operand_dims")
    index_vector_dim = ctx.int("index_vector_dim", indices.rank)
    if not is_integral(indices.element_type):
        fail(f"scatter indices must be integers, got {indices}")
    first = operands[0]
    for i, x in enumerate(operands):
        if x.dims != first.dims:
            fail(f"scatter operand {i} is {x}, operand 0 is {first}")
    batch = _batch_dims(indices, index_vector_dim)
    vector = indices.dims[index_vector_dim] if index_vector_dim < indices.rank else 1
    if vector != len(to_operand):
        fail(f"scatter_dims_to_operand_dims {list(to_operand)} must have {vector} entries")
    check_dims_in_range(to_operand, first.rank, "scatter_dims_to_operand_dims entry")
    window_operand_dims = [d for d in range(first.rank)
                           if d not in set(inserted) | set(input_batching)]
    for i, (u, x) in enumerate(zip(updates, operands)):
        if u.element_type != x.element_type:
            fail(f"scatter update {i} {u} must have the element type of {x}")
        if u.rank != len(window_dims) + len(batch):
            fail(f"scatter update {i} {u} must have rank {len(window_dims) + len(batch)}")
        check_dims_in_range(window_dims, u.rank, "update_window_dims entry")
        if len(window_dims) != len(window_operand_dims):
            fail(f"update_window_dims {list(window_dims)} must have "
                 f"{len(window_operand_dims)} entries")
        for wd, od in zip(window_dims, window_operand_dims):
            if u.dims[wd] > x.dims[od]:
                fail(f"scatter update dim {wd} ({u.dims[wd]}) exceeds operand dim {od} "
                     f"({x.dims[od]})")
        scatter_dims = [d for d in range(u.rank) if d not in set(window_dims)]
        if [u.dims[d] for d in scatter_dims] != batch:
            fail(f"scatter update {i} {u} scatter dims must match the index batch dims {batch}")
    comp = ctx.callee("to_apply")
    params = expect_parameter_count(ctx, comp, 2 * count)
    for i, p in enumerate(params):
        want = operands[i % count].element_type
        if not isinstance(p, ArrayShape) or p.rank != 0 or p.element_type != want:
            fail(f"scatter computation parameter {i} must be {want}[], got {p}")
    return operands[0] if count == 1 else TupleShape(tuple(operands))


def get_dimension_size(ctx: Context) -> Shape:
    x = ctx.array(0)
    d = ctx.int("dimensions")
    if not 0 <= d < x.rank:
        fail(f"dimension {d} is out of range for {x}")
    return scalar_of("s32")


def set_dimension_size(ctx: Context) -> Shape:
    x = ctx.array(0)
    size = ctx.scalar(1)
    if size.element_type != "s32":
        fail(f"set-dimension-size size must be s32[], got {size}")
    d = ctx.int("dimensions")
    if not 0 <= d < x.rank:
        fail(f"dimension {d} is out of range for {x}")
    return x


RULES = {
    "broadcast": broadcast,
    "reshape": reshape,
    "dynamic-reshape": reshape,
    "transpose": transpose,
    "slice": slice_op,
    "dynamic-slice": dynamic_slice,
    "dynamic-update-slice": dynamic_update_slice,
    "concatenate": concatenate,
    "pad": pad,
    "reverse": reverse,
    "iota": iota,
    "gather": gather,
    "scatter": scatter,
    "get-dimension-size": get_dimension_size,
    "set-dimension-size": set_dimension_size,
}
