"""``group-reductions``: canonical reduces become row or column reductions.

After ``normalize-reductions`` a reduce reads its inputs in physical order. This
pass merges runs of adjacent dims of the same kind (reduced with reduced, kept
with kept) with reshape-bitcasts and drops size-1 dims, so the emitter sees the
fewest dims possible, as XLA's GPU ``ReductionDegenerateDimRemover`` and
``ReductionDimensionGrouper`` do:

    f32[5,3,3,4,12,12,16,5]{7,...,0} reduce dims={0,1,2} -> f32[4,12,12,16,5]{4,3,2,1,0}
    becomes
    f32[45,46080]{1,0} reduce dims={0} -> f32[46080]{0}     (a column reduction)

Two kept dims merge only when they are also adjacent, in the same order, in the
result's physical order (else the result could not be bitcast back). Every
inserted bitcast is checked against the physical offset maps, so tiled arrays
are grouped only where the tiles allow it; otherwise the reduce stays as it is.
Non-canonical reduces are left alone (run ``normalize-reductions`` first).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from hlo.bitcast import is_bitcast
from hlo.ir import Instruction, Module
from hlo.passes.instruction_sequence import InstructionSequence, rewrite_instructions
from hlo.passes.normalize_reductions import reduce_inputs
from hlo.passes.physical_shapes import (
    inverse_permutation,
    is_descending,
    is_normalizable,
    physical_order,
)
from hlo.shape import ArrayShape, Shape, TupleShape, default_layout

NAME = "group-reductions"


def _results(shape: Shape) -> tuple[ArrayShape, ...]:
    if isinstance(shape, TupleShape):
        return tuple(e for e in shape.elements if isinstance(e, ArrayShape))
    return (shape,) if isinstance(shape, ArrayShape) else ()


def dim_groups(
    dims: Sequence[int], reduced: Sequence[int], result_order: Sequence[int] | None
) -> list[tuple[bool, tuple[int, ...]]] | None:
    """Runs of input dims to merge: ``(is_reduced, dims)`` in order, size-1 dims left out.

    ``result_order`` is the results' physical order (result dims, major to minor),
    or None when the results disagree (then kept dims are not merged). None when
    nothing would be reduced any more.
    """
    reduced_set = set(reduced)
    kept = [d for d in range(len(dims)) if d not in reduced_set]
    result_dim = {d: j for j, d in enumerate(kept)}
    follows: dict[int, int] = {}  # result dim -> the next non-trivial result dim in physical order
    if result_order is not None:
        nontrivial = [j for j in result_order if dims[kept[j]] != 1]
        follows = {a: b for a, b in zip(nontrivial, nontrivial[1:])}
    runs: list[tuple[bool, list[int]]] = []
    for d in range(len(dims)):
        if dims[d] == 1:
            continue
        is_reduced = d in reduced_set
        if runs and runs[-1][0] == is_reduced:
            last = runs[-1][1][-1]
            if is_reduced or follows.get(result_dim[last]) == result_dim[d]:
                runs[-1][1].append(d)
                continue
        runs.append((is_reduced, [d]))
    if not any(r for r, _ in runs):
        return None
    return [(r, tuple(ds)) for r, ds in runs]


def _grouped_input(shape: ArrayShape, runs: list[tuple[bool, tuple[int, ...]]]) -> ArrayShape:
    dims = tuple(math.prod(shape.dims[d] for d in ds) for _, ds in runs)
    layout = shape.layout
    if layout is not None:
        layout = dataclasses.replace(
            layout, minor_to_major=default_layout(len(dims)).minor_to_major
        )
    return ArrayShape(shape.element_type, dims, layout)


def _grouped_result(
    result: ArrayShape, runs: list[tuple[bool, tuple[int, ...]]], kept: list[int]
) -> ArrayShape:
    """The result of the grouped reduce: one dim per kept run, in the result's physical order."""
    result_dim = {d: j for j, d in enumerate(kept)}
    kept_runs = [ds for r, ds in runs if not r]
    dims = tuple(math.prod(result.dims[result_dim[d]] for d in ds) for ds in kept_runs)
    position = inverse_permutation(physical_order(result))
    order = sorted(range(len(kept_runs)), key=lambda g: position[result_dim[kept_runs[g][0]]])
    layout = dataclasses.replace(result.effective_layout(), minor_to_major=tuple(reversed(order)))
    return ArrayShape(result.element_type, dims, layout)


def _group(instr: Instruction, seq: InstructionSequence) -> bool:
    inputs = reduce_inputs(instr)
    shapes = [seq.shapes[n] for n in inputs]
    results = _results(instr.shape)
    if not all(is_normalizable(s) and is_descending(s) for s in shapes):
        return False
    if not all(is_normalizable(r) for r in results):
        return False
    first = shapes[0]
    if not isinstance(first, ArrayShape):
        return False
    reduced = tuple(instr.attr("dimensions", ()))
    orders = {physical_order(r) for r in results}
    runs = dim_groups(first.dims, reduced, next(iter(orders)) if len(orders) == 1 else None)
    if runs is None:
        return False
    if len(runs) == first.rank:  # nothing merged, nothing dropped
        return False
    kept = [d for d in range(first.rank) if d not in set(reduced)]
    grouped_inputs = [_grouped_input(s, runs) for s in shapes]  # type: ignore[arg-type]
    grouped_results = [_grouped_result(r, runs, kept) for r in results]
    if not all(is_bitcast(s, g) for s, g in zip(shapes, grouped_inputs)):  # type: ignore[arg-type]
        return False
    if not all(is_bitcast(g, r) for g, r in zip(grouped_results, results)):
        return False
    new_inputs = [seq.bitcast(n, g, f"{n}.grouped") for n, g in zip(inputs, grouped_inputs)]
    new_dims = tuple(i for i, (r, _) in enumerate(runs) if r)
    tuple_result = isinstance(instr.shape, TupleShape)
    shape: Shape = TupleShape(tuple(grouped_results)) if tuple_result else grouped_results[0]
    inits = instr.operands[len(instr.operands) // 2 :]
    attributes = tuple((k, new_dims if k == "dimensions" else v) for k, v in instr.attributes)
    new = seq.emit(
        dataclasses.replace(
            instr,
            name=seq.names.fresh(f"{instr.name}.grouped"),
            shape=shape,
            operands=(*new_inputs, *inits),
            attributes=attributes,
        )
    )
    if not tuple_result:
        seq.emit(Instruction(instr.name, "bitcast", instr.shape, (new,)))
        return True
    elements = []
    for k, (g, r) in enumerate(zip(grouped_results, results)):
        element = seq.new(
            f"{instr.name}.grouped.{k}", "get-tuple-element", g, (new,), (("index", k),)
        )
        elements.append(seq.new(f"{instr.name}.result.{k}", "bitcast", r, (element,)))
    seq.emit(Instruction(instr.name, "tuple", instr.shape, tuple(elements)))
    return True


def group_reductions(module: Module) -> Module:
    """Merge adjacent same-kind dims of every canonical reduce (see the module docstring)."""
    return rewrite_instructions(module, "reduce", lambda comp: _group)
