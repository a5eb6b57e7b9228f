"""``normalize-reductions``: every ``reduce`` reads its inputs in physical order.

A reduce is *canonical* when each input has the descending layout: the reduced
and kept dims are then numbered in the order they sit in memory, which is what
a reduction emitter wants (XLA's GPU ``ReductionLayoutNormalizer``). A
non-canonical reduce is rewritten as

    input  f32[4,5,5,16,12,12,3,3]{2,3,5,4,0,7,6,1}
    bitcast -> f32[5,3,3,4,12,12,16,5]{7,6,5,4,3,2,1,0}     (dims listed major to minor)
    reduce, dimensions={0,1,2}  (the reduced dims 1,6,7, renumbered)
           -> f32[4,12,12,16,5]{2,1,3,4,0}                  (kept dims in input order; the
                                                             layout keeps the result's bytes)
    bitcast -> f32[4,5,16,12,12]{4,3,2,1,0}                 (the original result, only if needed)

The result layout keeps the original result's physical order, so the final
bitcast moves no bytes and consumers are untouched. A variadic reduce needs one
dim order on all its inputs (as layout assignment guarantees); otherwise the
pass raises :class:`~hlo.errors.LayoutError`. A tiled input is bitcast to the
untiled physical-order shape when the physical offset maps agree (the tiles are
no-ops there), else to the physical-order shape with its tiles kept (tiles cover
physical positions, which the permutation does not move, so the offsets always
agree; checked all the same). A reduce whose inputs or results cannot be
permuted that way (sparse layouts, split configs) is left as it is and reported
by :func:`normalize_reductions_with_notes`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from hlo.bitcast import transpose_is_bitcast
from hlo.errors import LayoutError, Location
from hlo.ir import Computation, Instruction, Module
from hlo.passes.instruction_sequence import InstructionSequence, Rewrite, rewrite_instructions
from hlo.passes.physical_shapes import (
    inverse_permutation,
    is_descending,
    is_normalizable,
    physical_order,
    physical_shape,
    with_minor_to_major,
)
from hlo.shape import ArrayShape, Shape, TupleShape

NAME = "normalize-reductions"


@dataclasses.dataclass(frozen=True, slots=True)
class SkippedReduce:
    """A non-canonical reduce the pass left as it is, and why."""

    computation: str
    instruction: str
    reason: str

    def __str__(self) -> str:
        return f"{self.computation}/{self.instruction}: {self.reason}"


# ---------------------------------------------------------------------------
# Canonical form
# ---------------------------------------------------------------------------


def reduce_inputs(instr: Instruction) -> tuple[str, ...]:
    """The array inputs of a reduce (the first half of its operands; the rest are inits)."""
    return instr.operands[: len(instr.operands) // 2]


def _computation_of(module: Module, instr: Instruction) -> Computation:
    for comp in module.computations:
        if any(i is instr or i == instr for i in comp.instructions):
            return comp
    raise LayoutError(f"instruction '{instr.name}' is not part of module '{module.name}'")


def is_canonical_reduce(module: Module, instr: Instruction) -> bool:
    """True when every input of the reduce ``instr`` (an instruction of ``module``)
    has the descending layout, i.e. logical dims are physical positions."""
    if instr.opcode != "reduce":
        raise LayoutError(f"'{instr.name}' is a {instr.opcode}, not a reduce")
    comp = _computation_of(module, instr)
    shapes = {i.name: i.shape for i in comp.instructions}
    return all(is_descending(shapes[name]) for name in reduce_inputs(instr))


def non_canonical_reduces(module: Module) -> list[tuple[str, str]]:
    """``(computation, instruction)`` of every reduce that is not canonical, in text order."""
    found = []
    for comp in module.computations:
        shapes = {i.name: i.shape for i in comp.instructions}
        for instr in comp.instructions:
            if instr.opcode == "reduce" and not all(
                is_descending(shapes[name]) for name in reduce_inputs(instr)
            ):
                found.append((comp.name, instr.name))
    return found


# ---------------------------------------------------------------------------
# The rewrite
# ---------------------------------------------------------------------------


def _location(module: Module, instr: Instruction) -> Location | None:
    if instr.span is None:
        return None
    return Location(module.name, instr.span.line, instr.span.column)


def shared_input_order(
    module: Module, instr: Instruction, input_shapes: Sequence[ArrayShape]
) -> tuple[int, ...]:
    """The one physical order of all inputs of ``instr`` (LayoutError when they differ)."""
    orders = {physical_order(s) for s in input_shapes}
    if len(orders) > 1:
        listed = ", ".join(str(s) for s in input_shapes)
        raise LayoutError(
            f"reduce '{instr.name}' has inputs in different layouts ({listed}): "
            "Layout assignment must give all inputs of a variadic reduce one layout",
            _location(module, instr),
        )
    return physical_order(input_shapes[0])


def _results(shape: Shape) -> tuple[ArrayShape, ...]:
    if isinstance(shape, TupleShape):
        return tuple(e for e in shape.elements if isinstance(e, ArrayShape))
    return (shape,) if isinstance(shape, ArrayShape) else ()


def physical_reduce_shapes(
    instr: Instruction, order: Sequence[int]
) -> tuple[tuple[int, ...], tuple[ArrayShape, ...]]:
    """For a reduce whose inputs have physical ``order``: the renumbered reduced
    dims and, per result, the result shape of the reduce over the physical-order
    inputs (kept dims in input physical order, laid out in the original result's
    physical order, original tiles)."""
    reduced = tuple(instr.attr("dimensions", ()))
    position = inverse_permutation(order)
    new_dims = tuple(sorted(position[d] for d in reduced))
    kept = sorted(d for d in range(len(order)) if d not in reduced)
    result_dim = {d: j for j, d in enumerate(kept)}  # input dim -> original result dim
    natural = [result_dim[d] for d in order if d not in reduced]  # new dim i -> original result dim
    new_index = inverse_permutation(natural)  # original result dim -> new dim
    shapes = []
    for result in _results(instr.shape):
        moved = physical_shape(result)  # keeps tiles; dims re-listed below
        dims = tuple(result.dims[o] for o in natural)
        dynamic = tuple(result.dynamic[o] for o in natural) if result.dynamic else ()
        mtm = tuple(new_index[o] for o in result.effective_layout().minor_to_major)
        base = ArrayShape(result.element_type, dims, moved.layout, dynamic)
        shapes.append(with_minor_to_major(base, mtm))
    return new_dims, tuple(shapes)


def reduce_in_physical_order(
    instr: Instruction, order: Sequence[int], physical_inputs: Sequence[str], name: str
) -> Instruction:
    """The reduce ``instr`` rewritten to read ``physical_inputs`` (its inputs
    bitcast to their physical-order shapes, whose order is ``order``)."""
    new_dims, results = physical_reduce_shapes(instr, order)
    shape: Shape = TupleShape(results) if isinstance(instr.shape, TupleShape) else results[0]
    inits = instr.operands[len(instr.operands) // 2 :]
    attributes = tuple((k, new_dims if k == "dimensions" else v) for k, v in instr.attributes)
    return dataclasses.replace(
        instr, name=name, shape=shape, operands=(*physical_inputs, *inits), attributes=attributes
    )


def back_to_original(
    seq: InstructionSequence, source: str, new_shape: ArrayShape, original: ArrayShape, name: str
) -> str:
    """Bitcast a physical reduce result back to the original result shape."""
    if new_shape == original:
        return source
    dims = _transpose_between(new_shape, original)
    if not transpose_is_bitcast(new_shape, original, dims):
        raise LayoutError(f"internal: {new_shape} -> {original} is not a bitcast")
    return seq.emit(Instruction(name, "bitcast", original, (source,)))


def _transpose_between(src: ArrayShape, dst: ArrayShape) -> tuple[int, ...]:
    """The permutation listing ``src``'s dims in ``dst``'s order, matched by physical position."""
    src_pos = inverse_permutation(physical_order(src))
    dst_order = physical_order(dst)
    by_position = {src_pos[d]: d for d in range(src.rank)}
    dst_pos = inverse_permutation(dst_order)
    return tuple(by_position[dst_pos[j]] for j in range(dst.rank))


def physical_input_shape(shape: ArrayShape) -> ArrayShape:
    """The shape a reduce input is bitcast to: its dims major to minor with the
    default layout when that keeps every physical offset (tiles that are no-ops,
    e.g. ``T(8,128)`` on ``f32[16,128]``), else the same with the tiles kept."""
    tiled = physical_shape(shape)
    if tiled.layout is None or not tiled.layout.tiles:
        return tiled
    plain = tiled.with_layout(dataclasses.replace(tiled.layout, tiles=()))
    order = physical_order(shape)
    return plain if transpose_is_bitcast(shape, plain, order) else tiled


def _skip_reason(instr: Instruction, input_shapes: Sequence[Shape]) -> str | None:
    for s in (*input_shapes, *_results(instr.shape)):
        if not is_normalizable(s):
            return f"layout of {s} ties data to dims (sparse or split); left as it is"
    for s in input_shapes:
        if not isinstance(s, ArrayShape):
            return f"input of shape {s} is not an array"
        order = physical_order(s)
        if not transpose_is_bitcast(s, physical_shape(s), order):
            return f"{s} cannot be bitcast to its physical-order shape (physical offsets differ)"
    return None


def _rewrite_reduce(
    module: Module,
    instr: Instruction,
    seq: InstructionSequence,
    cache: dict[tuple[str, ArrayShape], str],
    skipped: list[SkippedReduce],
    comp: Computation,
    rewritten: list[tuple[str, str]],
) -> bool:
    """Emit the canonical form of ``instr`` into ``seq``; False when it does not apply."""
    inputs = reduce_inputs(instr)
    input_shapes = [seq.shapes[n] for n in inputs]
    if all(is_descending(s) for s in input_shapes):
        return False
    reason = _skip_reason(instr, input_shapes)
    if reason is not None:
        skipped.append(SkippedReduce(comp.name, instr.name, reason))
        return False
    order = shared_input_order(module, instr, input_shapes)  # type: ignore[arg-type]
    rewritten.append((comp.name, instr.name))
    physical_inputs = []
    for n, s in zip(inputs, input_shapes):
        target = physical_input_shape(s)  # type: ignore[arg-type]
        key = (n, target)
        if key not in cache:
            cache[key] = seq.bitcast(n, target, f"{n}.physical")
        physical_inputs.append(cache[key])
    originals = _results(instr.shape)
    _, new_results = physical_reduce_shapes(instr, order)
    if new_results == originals:
        seq.emit(reduce_in_physical_order(instr, order, physical_inputs, instr.name))
        return True
    new = seq.emit(
        reduce_in_physical_order(
            instr, order, physical_inputs, seq.names.fresh(f"{instr.name}.canonical")
        )
    )
    if not isinstance(instr.shape, TupleShape):
        back_to_original(seq, new, new_results[0], originals[0], instr.name)
        return True
    elements = []
    for k, (new_shape, original) in enumerate(zip(new_results, originals)):
        element = seq.new(
            f"{instr.name}.canonical.{k}", "get-tuple-element", new_shape, (new,), (("index", k),)
        )
        elements.append(
            back_to_original(
                seq, element, new_shape, original, seq.names.fresh(f"{instr.name}.result.{k}")
            )
        )
    seq.emit(Instruction(instr.name, "tuple", instr.shape, tuple(elements)))
    return True


def normalize_reductions_with_notes(
    module: Module,
) -> tuple[Module, tuple[SkippedReduce, ...], tuple[tuple[str, str], ...]]:
    """:func:`normalize_reductions` plus the reduces it had to leave non-canonical and the
    ``(computation, instruction)`` of those it rewrote, in text order."""
    skipped: list[SkippedReduce] = []
    rewritten: list[tuple[str, str]] = []

    def for_computation(comp: Computation) -> Rewrite:
        cache: dict[tuple[str, ArrayShape], str] = {}
        return lambda instr, seq: _rewrite_reduce(module, instr, seq, cache, skipped, comp,
                                                  rewritten)

    out = rewrite_instructions(module, "reduce", for_computation)
    return out, tuple(skipped), tuple(rewritten)


def normalize_reductions(module: Module) -> Module:
    """Rewrite every reduce so its inputs are in physical order (see the module docstring)."""
    return normalize_reductions_with_notes(module)[0]
