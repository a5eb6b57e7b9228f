"""Modules the XLA:CPU execution path cannot run as given, and why (checked before running).

The path compiles the module we hand XLA at ``PRE_SCHEDULER``, after XLA's fusion and copy
insertion have already run on another module; :mod:`.adapters` adds what those passes would
have added for scatters and loops. What is still ruled out (ORACLES §3):

- a ``while`` whose state holds nested tuples: :mod:`.adapters` gives a loop the copies
  copy insertion would add (and fuses each ``scatter``, which XLA:CPU runs only inside a
  fusion) only for a state of arrays;
- arrays without a layout: the point of the path is to run exactly the layouts written;
- entry parameters that are tuples or tokens, or element types numpy cannot hold: the inputs
  are made on the host, one array per parameter;
- a ``dot`` outside a fusion with a bf16 operand or result, or f16 operands and an f32 result:
  XLA:CPU's unfused dot has none of them (measured: bf16 x bf16 = f32 and f16 x f16 = f32
  "Unsupported element type for DotThunk::Execute", bf16 x bf16 = bf16 a RET_CHECK in its dot
  emitter; for XLA's own layouts of the corpus's ``bf16_mixed_precision`` and of 5 of 30
  random programs too); f16 x f16 = f16 and f32 run.

A module that passes these checks may still be refused by XLA's compiler (e.g. a ``TopK``
custom-call operand that is not dim-0-major); that refusal carries XLA's own message.
"""

from __future__ import annotations

from collections.abc import Iterator

from hlo.ir import Computation, Instruction, Module
from hlo.shape import ArrayShape, TupleShape, leaf_arrays
from service.xla.adapters import adaptable_reason

#: element types the child process feeds and reads back (numpy + ml_dtypes)
FED_TYPES = frozenset({
    "pred", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64",
    "f16", "f32", "f64", "bf16", "c64", "c128", "f8e4m3fn", "f8e5m2",
})

#: opcode -> why a module holding it outside a fusion cannot run on this path (none left:
#: scatter and while are adapted, :mod:`.adapters`)
UNSUPPORTED_OPCODES: dict[str, str] = {}


def refusal_reason(module: Module) -> str | None:
    """Why ``module`` cannot run on the path, or ``None`` when it can be tried."""
    return (_opcode_reason(module) or _dot_reason(module) or adaptable_reason(module)
            or _layout_reason(module) or parameter_reason(module))


def _fused_computations(module: Module) -> set[str]:
    return {
        name
        for comp in module.computations
        for instr in comp.instructions
        if instr.opcode == "fusion"
        for name in instr.called_computations()
    }


def _unfused(module: Module) -> Iterator[tuple[Computation, Instruction]]:
    """Every instruction outside a fusion, with its computation."""
    fused = _fused_computations(module)
    for comp in module.computations:
        if comp.name not in fused:
            for instr in comp.instructions:
                yield comp, instr


def _opcode_reason(module: Module) -> str | None:
    for _, instr in _unfused(module):
        why = UNSUPPORTED_OPCODES.get(instr.opcode)
        if why is not None:
            return f"%{instr.name} is a {instr.opcode}: {why}"
    return None


def _dot_reason(module: Module) -> str | None:
    """A ``dot`` outside a fusion in element types XLA:CPU's unfused dot lacks (module
    docstring)."""
    for comp, instr in _unfused(module):
        if instr.opcode != "dot" or not isinstance(instr.shape, ArrayShape):
            continue
        shapes = {i.name: i.shape for i in comp.instructions}
        types = [getattr(shapes.get(o), "element_type", None) for o in instr.operands[:2]]
        result = instr.shape.element_type
        if "bf16" in (*types, result) or (set(types) == {"f16"} and result != "f16"):
            return (f"%{instr.name} in {comp.name} is a {' x '.join(map(str, types))} = "
                    f"{result} dot: XLA:CPU's unfused dot has none (it refuses XLA's own "
                    "layouts too)")
    return None


def _layout_reason(module: Module) -> str | None:
    for comp in module.computations:
        for instr in comp.instructions:
            for _, array in leaf_arrays(instr.shape):
                if array.layout is None and array.rank > 0:  # scalars print no layout
                    return (
                        f"%{instr.name} in {comp.name} has no layout: the module is not laid "
                        "out (run `hlo-layout assign` first)"
                    )
    entry = module.attr("entry_computation_layout")
    if entry is not None:
        shapes = (*entry.parameters, entry.result)
        for shape in shapes:
            if any(a.layout is None and a.rank > 0 for _, a in leaf_arrays(shape)):
                return "the entry_computation_layout leaves a layout AUTO: fix it first"
    return None


def parameter_reason(module: Module) -> str | None:
    """Why the entry parameters cannot be fed from the host (the only check for a module that
    XLA compiles through its whole pipeline), or ``None``."""
    for param in module.entry.parameter_instructions():
        if isinstance(param.shape, TupleShape) or not isinstance(param.shape, ArrayShape):
            return f"entry parameter %{param.name} is a {param.shape}: only arrays are fed"
        if param.shape.element_type not in FED_TYPES:
            return f"entry parameter %{param.name} has element type {param.shape.element_type}"
        if param.shape.dynamic and any(param.shape.dynamic):
            return f"entry parameter %{param.name} has dynamic dimensions"
    return None


def pinned_reason(module: Module) -> str | None:
    """Why ``module`` cannot go through XLA's whole pipeline with its entry layouts pinned,
    or ``None``: its parameters (:func:`parameter_reason`), a ``bitcast`` (XLA's layout
    assignment takes none in its input, and one cannot be read as a reshape in general) or a
    tiled entry layout (jax asks for entry layouts as ``minor_to_major`` alone)."""
    found = parameter_reason(module)
    if found is not None:
        return found
    for comp in module.computations:
        for instr in comp.instructions:
            if instr.opcode == "bitcast":
                return (f"%{instr.name} is a bitcast: XLA's layout assignment, which this "
                        "path runs, takes none")
    entry = [p.shape for p in module.entry.parameter_instructions()]
    for shape in [*entry, module.entry.root_instruction.shape]:
        for _, array in leaf_arrays(shape):
            if array.effective_layout().tiles:
                return f"entry layout {array} is tiled: the path pins minor_to_major alone"
    return None
