"""A computation's instruction list under construction, with fresh names.

Passes build the new instruction list of a computation front to back. New
instructions get names derived from the instruction they serve
(``arg0.physical``, ``reduce0.canonical``) and made unique across the module,
so the result prints and parses without clashes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from hlo.bitcast import transpose_is_bitcast
from hlo.errors import LayoutError
from hlo.ir import Computation, Instruction, Module
from hlo.shape import ArrayShape, Shape


class NameTable:
    """Every instruction and computation name of a module, to hand out fresh ones."""

    def __init__(self, module: Module) -> None:
        self._taken: set[str] = {c.name for c in module.computations}
        for comp in module.computations:
            self._taken.update(i.name for i in comp.instructions)

    def fresh(self, base: str) -> str:
        """``base`` when free, else ``base.1``, ``base.2``, ..."""
        name, n = base, 0
        while name in self._taken:
            n += 1
            name = f"{base}.{n}"
        self._taken.add(name)
        return name


class InstructionSequence:
    """New instructions in order, and the shape of every name emitted so far."""

    def __init__(self, names: NameTable) -> None:
        self.names = names
        self.instructions: list[Instruction] = []
        self.shapes: dict[str, Shape] = {}

    def emit(self, instr: Instruction) -> str:
        self.instructions.append(instr)
        self.shapes[instr.name] = instr.shape
        return instr.name

    def new(
        self,
        base: str,
        opcode: str,
        shape: Shape,
        operands: Sequence[str],
        attributes: Sequence[tuple[str, object]] = (),
    ) -> str:
        """Emit a fresh instruction named after ``base``."""
        return self.emit(
            Instruction(self.names.fresh(base), opcode, shape, tuple(operands), tuple(attributes))
        )

    def bitcast(self, source: str, shape: ArrayShape, base: str) -> str:
        """``source`` viewed as ``shape`` (no instruction when it already has that shape)."""
        if self.shapes[source] == shape:
            return source
        return self.new(base, "bitcast", shape, (source,))

    def permute(self, source: str, dimensions: Sequence[int], shape: ArrayShape, name: str) -> str:
        """``transpose(source), dimensions=...`` with result ``shape``, named ``name``:
        a bitcast when the permutation moves no bytes (size-1 dims only), no
        instruction at all when it is the identity."""
        src = self.shapes[source]
        if not isinstance(src, ArrayShape):
            raise LayoutError(f"cannot transpose '{source}' of shape {src}")
        dimensions = tuple(dimensions)
        if dimensions == tuple(range(len(dimensions))) and src == shape:
            return source
        if transpose_is_bitcast(src, shape, dimensions):
            return self.emit(Instruction(name, "bitcast", shape, (source,)))
        return self.emit(
            Instruction(name, "transpose", shape, (source,), (("dimensions", dimensions),))
        )


#: Given a computation, the rewrite of one of its instructions: it emits the replacement
#: into the sequence and returns True, or returns False to keep the instruction as it is.
Rewrite = Callable[[Instruction, InstructionSequence], bool]


def rewrite_instructions(
    module: Module, opcode: str, make_rewrite: Callable[[Computation], Rewrite]
) -> Module:
    """Offer every ``opcode`` instruction to a rewrite, computation by computation.

    Fresh names come from one table for the whole module; computations without the
    opcode, or where nothing was rewritten, are kept as they are.
    """
    names = NameTable(module)
    computations = []
    for comp in module.computations:
        if not any(i.opcode == opcode for i in comp.instructions):
            computations.append(comp)
            continue
        seq = InstructionSequence(names)
        rewrite = make_rewrite(comp)
        changed = False
        for instr in comp.instructions:
            if instr.opcode == opcode and rewrite(instr, seq):
                changed = True
                continue
            seq.emit(instr)
        computations.append(
            dataclasses.replace(comp, instructions=tuple(seq.instructions)) if changed else comp
        )
    return dataclasses.replace(module, computations=tuple(computations))
