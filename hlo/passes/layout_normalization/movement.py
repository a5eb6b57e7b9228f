"""Normalized forms of the data-movement ops: their dims attributes in physical order.

Each handler gets the original instruction and the :class:`ValueForms` of its
computation; it emits the op over physical-order operands with a
physical-order result (named like the original) and returns True, or returns
False without emitting anything when it does not apply. Notation: ``order``
is the result's physical order (logical dims, major to minor) and
``position[d]`` the physical position of logical dim ``d``, so an attribute
listed per logical dim becomes ``new[i] = old[order[i]]`` and a dim number
``d`` becomes ``position[d]``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from hlo.bitcast import reshape_rule_holds
from hlo.errors import LayoutError
from hlo.ir import Instruction, PaddingConfig, Window
from hlo.passes.layout_normalization.values import Key, ValueForms
from hlo.passes.physical_shapes import (
    inverse_permutation,
    permute_dims,
    physical_order,
    physical_shape,
)
from hlo.shape import ArrayShape


def key(name: str) -> Key:
    return (name, ())


def array(v: ValueForms, name: str) -> ArrayShape:
    shape = v.original[name]
    if not isinstance(shape, ArrayShape):
        raise LayoutError(f"'{name}' is not an array")
    return shape


def result_order(instr: Instruction) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(physical order, position of each logical dim) of the array result."""
    order = physical_order(instr.array_shape)
    return order, inverse_permutation(order)


def replace_attrs(instr: Instruction, **changes: object) -> tuple[tuple[str, object], ...]:
    return tuple((k, changes.get(k, v)) for k, v in instr.attributes)


def emit_normalized(
    v: ValueForms,
    instr: Instruction,
    operands: Sequence[str],
    attributes: tuple[tuple[str, object], ...] | None = None,
    shape: ArrayShape | None = None,
    opcode: str | None = None,
) -> str:
    """Emit ``instr`` with new operands/attributes and its physical-order result shape."""
    new = dataclasses.replace(
        instr,
        name=v.claim(instr.name),
        opcode=opcode or instr.opcode,
        shape=shape or physical_shape(instr.array_shape),
        operands=tuple(operands),
        attributes=instr.attributes if attributes is None else attributes,
    )
    name = v.emit(new)
    v.define(key(instr.name), name)
    return name


def same_rank_views(v: ValueForms, instr: Instruction, order: Sequence[int]) -> list[str]:
    """Operands of the result's rank viewed in ``order``; scalars and others as they are."""
    out = []
    rank = instr.array_shape.rank
    for name in instr.operands:
        shape = v.original[name]
        if isinstance(shape, ArrayShape) and shape.rank == rank and rank > 0:
            out.append(v.view(key(name), order, f"{name}.relayout"))
        else:
            out.append(v.orig(key(name)))
    return out


# ---------------------------------------------------------------------------


def handle_copy(v: ValueForms, instr: Instruction) -> bool:
    """A layout-changing copy is a transpose between physical-order shapes."""
    op = instr.operands[0]
    order, _ = result_order(instr)
    if physical_order(array(v, op)) == order:
        emit_normalized(v, instr, [v.norm(key(op))])
        return True
    shape = array(v, op)
    position = inverse_permutation(physical_order(shape))
    made = v.seq.permute(
        v.norm(key(op)),
        tuple(position[d] for d in order),
        physical_shape(instr.array_shape),
        v.claim(instr.name),
    )
    v.define(key(instr.name), made)
    return True


def handle_transpose(v: ValueForms, instr: Instruction) -> bool:
    """``new[i] = operand position of dims[order[i]]``; the identity disappears."""
    op = instr.operands[0]
    dims = tuple(instr.attr("dimensions"))
    order, _ = result_order(instr)
    op_position = inverse_permutation(physical_order(array(v, op)))
    perm = tuple(op_position[dims[d]] for d in order)
    made = v.seq.permute(
        v.norm(key(op)), perm, physical_shape(instr.array_shape), v.claim(instr.name)
    )
    v.define(key(instr.name), made)
    return True


def handle_reshape(v: ValueForms, instr: Instruction) -> bool:
    """A reshape that keeps row-major order under both physical orders is the same
    reshape between physical-order shapes; any other goes through logical order."""
    op = instr.operands[0]
    src, dst = array(v, op), instr.array_shape
    if reshape_rule_holds(
        src.dims,
        src.effective_layout().minor_to_major,
        dst.dims,
        dst.effective_layout().minor_to_major,
    ):
        emit_normalized(v, instr, [v.norm(key(op))])
        return True
    logical_in = v.view(key(op), tuple(range(src.rank)), f"{op}.logical")
    logical_out = permute_dims(dst, tuple(range(dst.rank)))
    reshaped = v.seq.new(f"{instr.name}.logical", "reshape", logical_out, (logical_in,))
    made = v.seq.permute(reshaped, physical_order(dst), physical_shape(dst), v.claim(instr.name))
    v.define(key(instr.name), made)
    return True


def handle_broadcast(v: ValueForms, instr: Instruction) -> bool:
    op = instr.operands[0]
    dims = tuple(instr.attr("dimensions", ()))
    _, position = result_order(instr)
    operand_order = tuple(sorted(range(len(dims)), key=lambda k: position[dims[k]]))
    source = v.view(key(op), operand_order, f"{op}.relayout") if dims else v.orig(key(op))
    new_dims = tuple(sorted(position[d] for d in dims))
    emit_normalized(v, instr, [source], replace_attrs(instr, dimensions=new_dims))
    return True


def handle_iota(v: ValueForms, instr: Instruction) -> bool:
    _, position = result_order(instr)
    emit_normalized(
        v, instr, [], replace_attrs(instr, iota_dimension=position[instr.attr("iota_dimension")])
    )
    return True


def handle_slice(v: ValueForms, instr: Instruction) -> bool:
    order, _ = result_order(instr)
    ranges = instr.attr("slice")
    views = same_rank_views(v, instr, order)
    emit_normalized(v, instr, views, replace_attrs(instr, slice=tuple(ranges[d] for d in order)))
    return True


def handle_pad(v: ValueForms, instr: Instruction) -> bool:
    order, _ = result_order(instr)
    padding: PaddingConfig = instr.attr("padding")
    views = same_rank_views(v, instr, order)
    new = PaddingConfig(tuple(padding.dims[d] for d in order))
    emit_normalized(v, instr, views, replace_attrs(instr, padding=new))
    return True


def handle_reverse(v: ValueForms, instr: Instruction) -> bool:
    order, position = result_order(instr)
    dims = tuple(sorted(position[d] for d in instr.attr("dimensions", ())))
    emit_normalized(
        v, instr, same_rank_views(v, instr, order), replace_attrs(instr, dimensions=dims)
    )
    return True


def handle_concatenate(v: ValueForms, instr: Instruction) -> bool:
    order, position = result_order(instr)
    (dim,) = tuple(instr.attr("dimensions"))
    emit_normalized(
        v,
        instr,
        same_rank_views(v, instr, order),
        replace_attrs(instr, dimensions=(position[dim],)),
    )
    return True


def _start_indices_scalar(v: ValueForms, instr: Instruction, first: int) -> bool:
    starts = instr.operands[first:]
    return len(starts) == instr.array_shape.rank and all(
        isinstance(v.original[s], ArrayShape) and v.original[s].rank == 0 for s in starts
    )  # type: ignore[union-attr]


def handle_dynamic_slice(v: ValueForms, instr: Instruction) -> bool:
    if not _start_indices_scalar(v, instr, 1):
        return False
    order, _ = result_order(instr)
    operand = v.view(key(instr.operands[0]), order, f"{instr.operands[0]}.relayout")
    starts = [v.orig(key(instr.operands[1 + d])) for d in order]
    sizes = tuple(instr.attr("dynamic_slice_sizes"))
    emit_normalized(
        v,
        instr,
        [operand, *starts],
        replace_attrs(instr, dynamic_slice_sizes=tuple(sizes[d] for d in order)),
    )
    return True


def handle_dynamic_update_slice(v: ValueForms, instr: Instruction) -> bool:
    if not _start_indices_scalar(v, instr, 2):
        return False
    order, _ = result_order(instr)
    operand = v.view(key(instr.operands[0]), order, f"{instr.operands[0]}.relayout")
    update = v.view(key(instr.operands[1]), order, f"{instr.operands[1]}.relayout")
    starts = [v.orig(key(instr.operands[2 + d])) for d in order]
    emit_normalized(v, instr, [operand, update, *starts])
    return True


def permute_window(window: Window, order: Sequence[int]) -> Window:
    return Window(tuple(window.dims[d] for d in order))
