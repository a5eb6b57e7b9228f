"""The interpreter's memory budget, checked before anything is allocated.

The interpreter keeps every value of a running computation until the computation returns, so the
bytes it may hold at once are bounded by :func:`buffer_bytes`: the sum over every computation of the
module of the logical bytes of each array an instruction produces (numpy's storage: ``pred`` and
sub-byte types take one byte, ``bf16`` two). Values that only regroup others (``tuple``,
``get-tuple-element``, parameters of called computations) add nothing. Loops reuse their body's
space each iteration, so the bound does not grow with trip counts.

``check_memory(module, limit)`` refuses a module whose bound exceeds ``limit`` bytes with a
:class:`MemoryBudgetError` that names the largest array and the limit.
"""

from __future__ import annotations

from hlo.interpreter.values import InterpretError
from hlo.ir import Instruction, Module
from hlo.shape import ArrayShape, leaf_arrays

#: The budget used when none is given: 4 GiB.
DEFAULT_MEMORY_LIMIT = 4 * 2**30

_NO_STORAGE = frozenset({"tuple", "get-tuple-element"})


class MemoryBudgetError(InterpretError):
    """The module's buffers would exceed the interpreter's memory budget."""

    def __init__(self, message: str, needed: int, limit: int) -> None:
        super().__init__(message)
        self.needed = needed
        self.limit = limit


def array_bytes(shape: ArrayShape) -> int:
    """Bytes of one logical array as the interpreter stores it (``f32[1000,1000]`` -> 4000000)."""
    from hlo.shape import element_bytes

    count = 1
    for d in shape.dims:
        count *= max(d, 0)
    return count * element_bytes(shape.element_type)


def _produced(instr: Instruction, entry: bool) -> list[ArrayShape]:
    if instr.opcode in _NO_STORAGE or (instr.opcode == "parameter" and not entry):
        return []
    return [leaf for _, leaf in leaf_arrays(instr.shape)]


def buffer_bytes(module: Module) -> tuple[int, Instruction | None]:
    """(the bound described in the module docstring, the instruction with the largest array)."""
    total, largest, largest_bytes = 0, None, -1
    for comp in module.computations:
        for instr in comp.instructions:
            size = sum(array_bytes(a) for a in _produced(instr, comp.is_entry))
            total += size
            if size > largest_bytes:
                largest, largest_bytes = instr, size
    return total, largest


def check_memory(module: Module, limit: int) -> None:
    """Raise :class:`MemoryBudgetError` when ``module`` may need more than ``limit`` bytes."""
    needed, largest = buffer_bytes(module)
    if needed <= limit:
        return
    where = ""
    if largest is not None:
        where = f"; the largest is '{largest.name}' {largest.shape} ({_human(sum(array_bytes(a) for a in _produced(largest, True)))})"
    raise MemoryBudgetError(
        f"module '{module.name}' needs up to {_human(needed)} of buffers in the interpreter, over its "
        f"memory budget of {_human(limit)}{where}",
        needed,
        limit,
    )


def _human(n: int) -> str:
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit} ({n} bytes)"
    return f"{n} bytes"
