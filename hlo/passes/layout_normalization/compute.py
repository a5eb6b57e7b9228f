"""Normalized forms of the computing ops: elementwise, constants, reductions,
convolutions, dots and sorts (see :mod:`.movement` for the conventions)."""

from __future__ import annotations

import dataclasses

import numpy as np

from hlo.ir import ConvDimLabels, Instruction, Literal
from hlo.passes.layout_normalization.movement import (
    array,
    emit_normalized,
    key,
    permute_window,
    replace_attrs,
    result_order,
    same_rank_views,
)
from hlo.passes.layout_normalization.values import ValueForms
from hlo.passes.normalize_reductions import (
    reduce_in_physical_order,
    reduce_inputs,
    shared_input_order,
)
from hlo.passes.physical_shapes import inverse_permutation, physical_order, physical_shape
from hlo.shape import ArrayShape, TupleShape

def handle_elementwise(v: ValueForms, instr: Instruction) -> bool:
    rank = instr.array_shape.rank
    if instr.opcode == "map" and tuple(instr.attr("dimensions", range(rank))) != tuple(range(rank)):
        return False
    for name in instr.operands:
        shape = v.original[name]
        if not isinstance(shape, ArrayShape) or shape.rank not in (0, rank):
            return False  # e.g. a bitcast-convert that changes the element width
    order, _ = result_order(instr)
    emit_normalized(v, instr, same_rank_views(v, instr, order))
    return True


def handle_constant(v: ValueForms, instr: Instruction) -> bool:
    """Constants are re-laid out for free: the literal's values are permuted."""
    literal = instr.attr("literal")
    if not isinstance(literal, Literal) or literal.values is None:
        return False
    shape = instr.array_shape
    order = physical_order(shape)
    values = np.empty(len(literal.values), dtype=object)
    values[:] = literal.values
    permuted = tuple(values.reshape(shape.dims).transpose(order).ravel().tolist())
    new_shape = physical_shape(shape)
    new_literal = Literal(
        new_shape if literal.shape == shape else physical_shape(literal.shape),  # type: ignore[arg-type]
        permuted,
    )
    emit_normalized(v, instr, [], replace_attrs(instr, literal=new_literal))
    return True


def handle_reduce(v: ValueForms, instr: Instruction) -> bool:
    """The reduce reads the physical-order inputs (as ``normalize-reductions``
    makes it); its results keep their physical order (bitcasts, no copies)."""
    inputs = reduce_inputs(instr)
    shapes = [array(v, n) for n in inputs]
    order = shared_input_order(v.module, instr, shapes)
    physical_inputs = [v.norm(key(n)) for n in inputs]
    new = reduce_in_physical_order(instr, order, physical_inputs, v.claim(instr.name))
    name = v.emit(new)
    if isinstance(instr.shape, TupleShape):
        for k in range(len(instr.shape.elements)):
            v.define_source((instr.name, (k,)), name, k)
    else:
        v.define(key(instr.name), name)
    return True


def handle_reduce_window(v: ValueForms, instr: Instruction) -> bool:
    if len(instr.operands) != 2:
        return False  # variadic: left as it is
    order, _ = result_order(instr)
    views = same_rank_views(v, instr, order)
    emit_normalized(
        v, instr, views, replace_attrs(instr, window=permute_window(instr.attr("window"), order))
    )
    return True


def handle_convolution(v: ValueForms, instr: Instruction) -> bool:
    """Every operand and the result in its own physical order; dim_labels renumbered."""
    labels: ConvDimLabels = instr.attr("dim_labels")
    if labels is None or len(instr.operands) != 2:
        return False
    lhs, rhs = instr.operands
    lp = inverse_permutation(physical_order(array(v, lhs)))
    kp = inverse_permutation(physical_order(array(v, rhs)))
    _, op = result_order(instr)
    new_labels = ConvDimLabels(
        input_batch=lp[labels.input_batch],
        input_feature=lp[labels.input_feature],
        input_spatial=tuple(lp[d] for d in labels.input_spatial),
        kernel_input_feature=kp[labels.kernel_input_feature],
        kernel_output_feature=kp[labels.kernel_output_feature],
        kernel_spatial=tuple(kp[d] for d in labels.kernel_spatial),
        output_batch=op[labels.output_batch],
        output_feature=op[labels.output_feature],
        output_spatial=tuple(op[d] for d in labels.output_spatial),
    )
    emit_normalized(
        v, instr, [v.norm(key(lhs)), v.norm(key(rhs))], replace_attrs(instr, dim_labels=new_labels)
    )
    return True


def handle_dot(v: ValueForms, instr: Instruction) -> bool:
    """Renumber the dims of a dot whose result order then comes out physical.

    A dot's result lists batch dims (in the order of ``lhs_batch_dims``), then
    the lhs's free dims, then the rhs's, each in operand dim order. Over
    physical-order operands that is the physical order of the free dims; the
    batch pairs may be listed in any order. When the result's physical order is
    not of that form the dot is left as it is (bitcasts around it cost nothing).
    """
    if len(instr.operands) != 2:
        return False  # sparse dots carry metadata operands
    lhs, rhs = instr.operands
    ls, rs = array(v, lhs), array(v, rhs)
    lb, rb = tuple(instr.attr("lhs_batch_dims", ())), tuple(instr.attr("rhs_batch_dims", ()))
    lc, rc = (
        tuple(instr.attr("lhs_contracting_dims", ())),
        tuple(instr.attr("rhs_contracting_dims", ())),
    )
    lpos, rpos = inverse_permutation(physical_order(ls)), inverse_permutation(physical_order(rs))
    lfree = [d for d in range(ls.rank) if d not in lb and d not in lc]
    rfree = [d for d in range(rs.rank) if d not in rb and d not in rc]
    # original result dim of each batch pair / free dim
    order, _ = result_order(instr)
    nb = len(lb)
    batch_first = [o for o in order[:nb]]
    if sorted(batch_first) != list(range(nb)):
        return False
    lfree_phys = sorted(lfree, key=lambda d: lpos[d])
    rfree_phys = sorted(rfree, key=lambda d: rpos[d])
    want = [nb + lfree.index(d) for d in lfree_phys] + [
        nb + len(lfree) + rfree.index(d) for d in rfree_phys
    ]
    if list(order[nb:]) != want:
        return False
    new_lb = tuple(lpos[lb[o]] for o in batch_first)
    new_rb = tuple(rpos[rb[o]] for o in batch_first)
    attrs = replace_attrs(
        instr,
        lhs_batch_dims=new_lb,
        rhs_batch_dims=new_rb,
        lhs_contracting_dims=tuple(lpos[d] for d in lc),
        rhs_contracting_dims=tuple(rpos[d] for d in rc),
    )
    emit_normalized(v, instr, [v.norm(key(lhs)), v.norm(key(rhs))], attrs)
    return True


def handle_sort(v: ValueForms, instr: Instruction) -> bool:
    shapes = [array(v, n) for n in instr.operands]
    orders = {physical_order(s) for s in shapes}
    results = instr.shape.elements if isinstance(instr.shape, TupleShape) else (instr.shape,)
    orders |= {physical_order(r) for r in results if isinstance(r, ArrayShape)}
    if len(orders) != 1:
        return False
    order = orders.pop()
    position = inverse_permutation(order)
    (dim,) = tuple(instr.attr("dimensions"))
    attrs = replace_attrs(instr, dimensions=(position[dim],))
    operands = [v.norm(key(n)) for n in instr.operands]
    if not isinstance(instr.shape, TupleShape):
        emit_normalized(v, instr, operands, attrs)
        return True
    shape = TupleShape(tuple(physical_shape(r) for r in results))  # type: ignore[arg-type]
    name = v.emit(
        dataclasses.replace(
            instr, name=v.claim(instr.name), shape=shape, operands=tuple(operands), attributes=attrs
        )
    )
    for k in range(len(results)):
        v.define_source((instr.name, (k,)), name, k)
    return True
