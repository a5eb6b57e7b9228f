"""Random layouts on a module, to give the normalization passes real work.

The reference interpreter reads layouts only through ``bitcast`` (and
bitcast-convert), so a module with every other array laid out at random still
computes the same values: a free oracle for passes that turn layouts into
shapes. Kept as they are: entry parameters and root (the entry layout),
bitcasts and their operands (their meaning depends on layouts), scalars and
rank-1 arrays (one layout only).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from hlo.ir import Literal, Module
from hlo.shape import ArrayShape, Shape, Tile, TupleShape


def _scramble(shape: Shape, rng: np.random.Generator, tiles: tuple[Tile, ...]) -> Shape:
    if isinstance(shape, TupleShape):
        return TupleShape(tuple(_scramble(e, rng, tiles) for e in shape.elements))
    if isinstance(shape, ArrayShape) and shape.rank >= 2 and shape.layout is not None:
        if shape.layout.dim_levels or shape.layout.split_configs:
            return shape
        mtm = tuple(int(d) for d in rng.permutation(shape.rank))
        return shape.with_layout(
            dataclasses.replace(shape.layout, minor_to_major=mtm, tiles=tiles or shape.layout.tiles)
        )
    return shape


def scramble_layouts(module: Module, seed: int, tiles: tuple[Tile, ...] = ()) -> Module:
    """``module`` with random ``minor_to_major`` (and ``tiles``, when given) on its
    free arrays (see the module docstring)."""
    rng = np.random.default_rng(seed)
    computations = []
    for comp in module.computations:
        pinned = {i.name for i in comp.instructions if i.opcode == "bitcast"}
        pinned |= {
            o
            for i in comp.instructions
            if i.opcode in ("bitcast", "bitcast-convert")
            for o in i.operands
        }
        if comp.is_entry:
            pinned |= {i.name for i in comp.instructions if i.opcode == "parameter"} | {comp.root}
        called_with_signature = comp.parameters is not None or not comp.is_entry
        instructions = []
        for instr in comp.instructions:
            if instr.name in pinned or (
                called_with_signature
                and not comp.is_entry
                and (instr.opcode == "parameter" or instr.name == comp.root)
            ):
                instructions.append(instr)
                continue
            shape = _scramble(instr.shape, rng, tiles)
            attributes = instr.attributes
            literal = instr.attr("literal")
            if isinstance(literal, Literal) and isinstance(shape, ArrayShape):
                attributes = tuple(
                    (k, dataclasses.replace(literal, shape=shape) if k == "literal" else v)
                    for k, v in attributes
                )
            instructions.append(dataclasses.replace(instr, shape=shape, attributes=attributes))
        computations.append(
            dataclasses.replace(comp, instructions=_shared_reduce_layouts(instructions, pinned))
        )
    return dataclasses.replace(module, computations=tuple(computations))


def _shared_reduce_layouts(instructions: list, pinned: set[str]) -> tuple:
    """Give the inputs of each variadic reduce one layout, as layout assignment must."""
    by_name = {i.name: n for n, i in enumerate(instructions)}
    for instr in list(instructions):
        inputs = instr.operands[: len(instr.operands) // 2]
        if instr.opcode != "reduce" or len(inputs) < 2:
            continue
        fixed = [n for n in inputs if n in pinned] or list(inputs)
        layout = instructions[by_name[fixed[0]]].shape.layout
        for n in inputs:
            if n not in pinned:
                old = instructions[by_name[n]]
                instructions[by_name[n]] = dataclasses.replace(
                    old, shape=old.shape.with_layout(layout)
                )
    return tuple(instructions)
