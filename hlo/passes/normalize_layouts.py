"""``normalize-layouts``: every array in descending layout, bitcasts at the edges.

After layout assignment the dim order of an array lives in its layout. This
pass moves it into the shape: each array becomes its *physical-order shape*
(dims listed major to minor, descending layout, same tiles; see
:mod:`hlo.passes.physical_shapes`), and every op is rewritten to work on those
shapes, as XLA's ``LayoutNormalization`` does:

* ``copy`` that changes layout -> ``transpose`` between physical-order shapes;
  a ``transpose`` that moves no bytes disappears;
* ``broadcast``, ``iota``, ``concatenate``, ``pad``, ``slice``, ``reverse``,
  ``dynamic-slice``, ``dynamic-update-slice``, ``reduce-window``, ``sort``,
  ``convolution`` (dim_labels), ``dot`` (when its result order comes out
  physical) and elementwise ops get their dim attributes permuted;
* ``reshape`` stays a reshape when it keeps row-major order under both physical
  orders, else it goes through logical order (transpose, reshape, transpose);
* constants are re-laid out (literal values permuted);
* ``reduce`` reads physical-order inputs as ``normalize-reductions`` makes it.
  Its results keep their physical order, so a reduce that reorders the kept
  dims has a non-descending result, bitcast to the descending one: XLA's
  convention (the reduction emitter writes the result in place).

Edges keep their layouts: parameters and roots of every computation (so entry,
while, call and fusion signatures do not change), and tuples, which are passed
through as they are. Ops that are left as they are, with bitcasts from and to
physical order around them: parameter, bitcast, get-tuple-element (of a tuple
not rewritten here), tuple, while, conditional, call, fusion, custom-call,
gather, scatter, select-and-scatter, fft, triangular-solve, cholesky, rng,
rng-bit-generator, topk, collectives, infeed/outfeed, send/recv, variadic
reduce-window, dynamic-slice with a vector of start indices, a dot whose
result order does not come out physical (or with sparsity metadata), a sort
whose operands and results are not all in one order, a map over a subset of
dims, a constant whose values the text elided, an elementwise op that changes
rank (bitcast-convert between widths), anything with a non-trivial
``sharding``, any array with dynamic (bounded) dims, and any array whose
layout ties data to dims (sparse, split). Such an op reads its operands in
their original shapes (one bitcast each from the physical-order value) and
its result is bitcast to physical order where a rewritten op needs it: never
a silent relayout.

A variadic ``reduce`` whose inputs disagree in layout raises
:class:`~hlo.errors.LayoutError`, as in ``normalize-reductions``.

A module whose arrays are all descending comes back unchanged, and normalizing
twice changes nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from hlo.ir import Instruction, Module
from hlo.opcode_facts import ELEMENTWISE
from hlo.passes.instruction_sequence import NameTable
from hlo.passes.layout_normalization import compute, movement
from hlo.passes.layout_normalization.values import ValueForms
from hlo.passes.physical_shapes import is_descending, is_normalizable
from hlo.shape import ArrayShape, TupleShape
from hlo.verifier import control_predecessors

NAME = "normalize-layouts"

Handler = Callable[[ValueForms, Instruction], bool]

HANDLERS: dict[str, Handler] = {
    "copy": movement.handle_copy,
    "transpose": movement.handle_transpose,
    "reshape": movement.handle_reshape,
    "broadcast": movement.handle_broadcast,
    "iota": movement.handle_iota,
    "slice": movement.handle_slice,
    "pad": movement.handle_pad,
    "reverse": movement.handle_reverse,
    "concatenate": movement.handle_concatenate,
    "dynamic-slice": movement.handle_dynamic_slice,
    "dynamic-update-slice": movement.handle_dynamic_update_slice,
    "constant": compute.handle_constant,
    "reduce": compute.handle_reduce,
    "reduce-window": compute.handle_reduce_window,
    "convolution": compute.handle_convolution,
    "dot": compute.handle_dot,
    "sort": compute.handle_sort,
    **{op: compute.handle_elementwise for op in ELEMENTWISE},
}

#: Opcodes whose result is a tuple the handler itself splits into elements.
_TUPLE_RESULTS = frozenset({"reduce", "sort"})


def _sharding_is_trivial(instr: Instruction) -> bool:
    sharding = instr.attr("sharding")
    if sharding is None:
        return True
    text = getattr(sharding, "text", str(sharding))
    return "devices=" not in text and "last_tile" not in text


def _arrays(shape: object) -> list[ArrayShape]:
    if isinstance(shape, ArrayShape):
        return [shape]
    if isinstance(shape, TupleShape):
        return [a for e in shape.elements for a in _arrays(e)]
    return []


def _handler_applies(v: ValueForms, instr: Instruction) -> bool:
    if instr.opcode not in HANDLERS or not _sharding_is_trivial(instr):
        return False
    if isinstance(instr.shape, TupleShape):
        if instr.opcode not in _TUPLE_RESULTS:
            return False
    elif not isinstance(instr.shape, ArrayShape):
        return False
    shapes = _arrays(instr.shape) + [a for n in instr.operands for a in _arrays(v.original[n])]
    if not all(is_normalizable(s) for s in shapes):
        return False
    return not any(s.dynamic and any(s.dynamic) for s in shapes)


def _as_is(v: ValueForms, instr: Instruction) -> None:
    """Emit ``instr`` unchanged, reading its operands in their original shapes."""
    operands = tuple(v.orig((n, ())) for n in instr.operands)
    name = v.emit(dataclasses.replace(instr, name=v.claim(instr.name), operands=operands))
    v.define((instr.name, ()), name)


def _get_tuple_element(v: ValueForms, instr: Instruction) -> None:
    """Forward the element when its shape is the tuple's element shape (as laid-out
    modules guarantee); a mismatch is a relayout, so then the op stays as it is."""
    element = (instr.operands[0], (instr.attr("index"),))
    same = v.original_shape(element) == instr.shape
    if same and v.has_forms(element):
        v.materialize(
            element, v.claim(instr.name)
        )  # a rewritten tuple's element: fetch it under this name
        v.alias((instr.name, ()), element)
        return
    _as_is(v, instr)
    if same:
        v.alias(element, (instr.name, ()))


def _tuple(v: ValueForms, instr: Instruction) -> None:
    _as_is(v, instr)
    for i, operand in enumerate(instr.operands):
        if v.original_shape((instr.name, (i,))) == v.original[operand]:
            v.alias((instr.name, (i,)), (operand, ()))


def _normalize_instruction(v: ValueForms, instr: Instruction) -> None:
    if instr.opcode == "get-tuple-element":
        _get_tuple_element(v, instr)
        return
    if instr.opcode == "tuple":
        _tuple(v, instr)
        return
    if is_descending(instr.shape) and all(is_descending(v.original[n]) for n in instr.operands):
        _as_is(v, instr)  # already normalized: keep it exactly (names and attributes too)
        return
    if _handler_applies(v, instr) and HANDLERS[instr.opcode](v, instr):
        return
    _as_is(v, instr)


def _with_control_edges(instr: Instruction, carrier: dict[str, str]) -> Instruction:
    preds = control_predecessors(instr)
    if not preds:
        return instr
    mapped = tuple(carrier.get(p, p) for p in preds)
    attrs = tuple(
        (k, mapped if k == "control-predecessors" else val) for k, val in instr.attributes
    )
    return dataclasses.replace(instr, attributes=attrs)


def normalize_layouts(module: Module) -> Module:
    """Rewrite every computation over physical-order shapes (see the module docstring)."""
    names = NameTable(module)
    computations = []
    for comp in module.computations:
        if all(is_descending(i.shape) for i in comp.instructions):
            computations.append(comp)
            continue
        v = ValueForms(module, comp, names)
        for instr in comp.instructions:
            _normalize_instruction(v, instr)
        root = v.orig((comp.root, ()))
        instructions = tuple(_with_control_edges(i, v.carrier) for i in v.seq.instructions)
        computations.append(dataclasses.replace(comp, instructions=instructions, root=root))
    return dataclasses.replace(module, computations=tuple(computations))
