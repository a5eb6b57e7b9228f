"""The shadow of a module: the same computation carried out in f64, optionally with rounding noise.

``promote_floats(module)`` rewrites every real float element type to ``f64`` and ``c64`` to ``c128``
(shapes of instructions, computations and constants alike). Instructions whose meaning depends on
the bits of their element type (``bitcast-convert``, ``custom-call``, ``rng``, ``rng-bit-generator``) and constants run at
their original types: their float operands are
converted down before them and their float results converted up after them.

``Perturbation`` models the rounding of the original module inside the shadow (Monte Carlo
arithmetic): every float result of an instruction is multiplied elementwise by ``1 + u * r`` with
``r`` uniform in ``[-1, 1]`` and ``u`` the unit roundoff of the type the ORIGINAL instruction
produces (2**-24 for f32, 2**-8 for bf16). How far a few perturbed runs land from the unperturbed
shadow estimates, per output element, how much rounding in the original's precision can move that
element: large where values cancel, small where the computation is well conditioned.

``Perturbation.exact_arithmetic`` models instead what may legitimately differ between the f64
shadows of two modules that compute the same function: f64 rounding (``u = 2**-53``) on every
computed float, and the rounding of the original types on what a rewrite may compute at those
types: constants and everything computed from constants alone (a rewrite may fold them), the
instructions that run at their original types and the conversions down to those types before them.
"""

from __future__ import annotations

import dataclasses

import ml_dtypes
import numpy as np

from hlo.graph import CallGraph
from hlo.ir import Computation, Instruction, Module
from hlo.shape import ArrayShape, Layout, Shape, TupleShape

#: Opcodes that run at their original element types inside the shadow (a constant keeps the value
#: its literal has in its own type: ``f32[] constant(0.1)`` is the f32 nearest 0.1).
ORIGINAL_TYPE_OPCODES = frozenset({"bitcast-convert", "constant", "custom-call", "rng", "rng-bit-generator"})

_PROMOTED = {"f16": "f64", "bf16": "f64", "f32": "f64", "c64": "c128"}
_UNIT_ROUNDOFF = {"f64": 2.0**-53, "c128": 2.0**-53, "c64": 2.0**-24, "f32": 2.0**-24}
#: Unit roundoff of f64: the rounding of every computed float inside the shadow itself.
F64_ROUNDOFF = 2.0**-53
#: Opcodes that bring values in from outside: never computed from constants alone.
_SOURCES = frozenset({"parameter", "rng", "rng-bit-generator", "custom-call", "infeed", "recv", "recv-done",
                      "after-all", "partition-id", "replica-id"})


def unit_roundoff(element_type: str) -> float:
    """Half the distance from 1 to the next float: 2**-24 for f32, 2**-8 for bf16; 0 for non-floats."""
    if element_type in _UNIT_ROUNDOFF:
        return _UNIT_ROUNDOFF[element_type]
    from hlo.interpreter.values import FLOAT_TYPES, dtype_of

    if element_type not in FLOAT_TYPES:
        return 0.0
    return float(ml_dtypes.finfo(dtype_of(element_type)).eps) / 2


def promote_shape(shape: Shape) -> Shape:
    if isinstance(shape, ArrayShape):
        promoted = _PROMOTED.get(shape.element_type)
        if promoted is None and shape.element_type.startswith("f") and shape.element_type != "f64":
            promoted = "f64"  # the fp8/fp4 family
        if promoted is None:
            return shape
        # The dimension order stays (a bitcast between layouts means a transpose); tiles and element
        # sizes of the narrow type describe bytes, which f64 elements do not have.
        layout = None if shape.layout is None else Layout(shape.layout.minor_to_major)
        return ArrayShape(promoted, shape.dims, layout, shape.dynamic)
    if isinstance(shape, TupleShape):
        return TupleShape(tuple(promote_shape(s) for s in shape.elements))
    return shape


def promote_floats(module: Module) -> Module:
    """``module`` computing in f64 (see the module docstring); instruction names are kept."""
    return dataclasses.replace(
        module, computations=tuple(_promote_computation(c) for c in module.computations)
    )


def _promote_computation(comp: Computation) -> Computation:
    shapes = {i.name: i.shape for i in comp.instructions}
    out: list[Instruction] = []
    for instr in comp.instructions:
        if instr.opcode in ORIGINAL_TYPE_OPCODES:
            out.extend(_at_original_types(instr, shapes))
        else:
            out.append(dataclasses.replace(instr, shape=promote_shape(instr.shape)))
    parameters = comp.parameters
    if parameters is not None:
        parameters = tuple(dataclasses.replace(p, shape=promote_shape(p.shape)) for p in parameters)
    result = None if comp.result_shape is None else promote_shape(comp.result_shape)
    return dataclasses.replace(comp, instructions=tuple(out), parameters=parameters, result_shape=result)


def _at_original_types(instr: Instruction, shapes: dict[str, Shape]) -> list[Instruction]:
    """``instr`` between converts: down to its operands' types, up from its result type."""
    out: list[Instruction] = []
    operands = []
    for number, name in enumerate(instr.operands):
        shape = shapes[name]
        if isinstance(shape, ArrayShape) and promote_shape(shape) != shape:
            low = f"{instr.name}.shadow.in{number}"
            out.append(Instruction(low, "convert", shape, (name,)))
            operands.append(low)
        else:
            operands.append(name)
    if promote_shape(instr.shape) == instr.shape:
        return [*out, dataclasses.replace(instr, operands=tuple(operands))]
    low = f"{instr.name}.shadow"
    out.append(dataclasses.replace(instr, name=low, operands=tuple(operands)))
    if isinstance(instr.shape, ArrayShape):
        out.append(Instruction(instr.name, "convert", promote_shape(instr.shape), (low,)))
        return out
    assert isinstance(instr.shape, TupleShape)  # tuple results: convert each element
    parts = []
    for index, element in enumerate(instr.shape.elements):
        part = f"{instr.name}.shadow.{index}"
        out.append(Instruction(part, "get-tuple-element", element, (low,), (("index", index),)))
        if isinstance(element, ArrayShape) and promote_shape(element) != element:
            out.append(Instruction(f"{part}.up", "convert", promote_shape(element), (part,)))
            part = f"{part}.up"
        parts.append(part)
    out.append(Instruction(instr.name, "tuple", promote_shape(instr.shape), tuple(parts)))
    return out


@dataclasses.dataclass(frozen=True)
class Perturbation:
    """Relative noise of the original's unit roundoff on every float result (see the module docstring).

    ``roundoff`` maps instruction names of the original module to the unit roundoff of their
    element type (tuple results: per leaf, in order).
    """

    roundoff: dict[str, tuple[float, ...]]
    rng: np.random.Generator

    @classmethod
    def of(cls, original: Module, rng: np.random.Generator, scale: float = 1.0) -> Perturbation:
        """``scale`` multiplies every unit roundoff (an implementation that rounds less exactly)."""
        from hlo.shape import leaf_arrays

        roundoff = {
            i.name: tuple(scale * unit_roundoff(a.element_type) for _, a in leaf_arrays(i.shape))
            for c in original.computations for i in c.instructions
        }
        return cls(roundoff, rng)

    @classmethod
    def exact_arithmetic(cls, original: Module, rng: np.random.Generator) -> Perturbation:
        """Noise of the f64 shadow itself, plus the original types' rounding where a rewrite may
        compute at those types (see the module docstring)."""
        from hlo.shape import leaf_arrays

        flow = _control_flow_computations(original)
        roundoff: dict[str, tuple[float, ...]] = {}
        for comp in original.computations:
            if comp.name not in flow:
                continue  # comparators and reducers: noise per call would make a sort inconsistent
            folded = _constant_derived(comp)
            shapes = {i.name: i.shape for i in comp.instructions}
            for instr in comp.instructions:
                own = tuple(unit_roundoff(a.element_type) for _, a in leaf_arrays(instr.shape))
                at_own_type = instr.name in folded or instr.opcode in ORIGINAL_TYPE_OPCODES
                roundoff[instr.name] = own if at_own_type else tuple(F64_ROUNDOFF if u else 0.0 for u in own)
                if instr.opcode in ORIGINAL_TYPE_OPCODES:
                    for number, name in enumerate(instr.operands):
                        low = tuple(unit_roundoff(a.element_type) for _, a in leaf_arrays(shapes[name]))
                        roundoff[f"{instr.name}.shadow.in{number}"] = low
        return cls(roundoff, rng)

    def __call__(self, machine, instr: Instruction, operands: list, value):
        units = self.roundoff.get(instr.name)
        if not units or not any(units):
            return value
        if isinstance(value, tuple):
            leaves = iter(units)
            return self._tuple(value, leaves)
        if _accumulates(machine, instr):
            # A sum rounds at every step: its error scales with the sum of the magnitudes added.
            magnitude = _without_noise(machine, instr, [_abs(o) for o in operands])
            noise = units[0] * magnitude * self.rng.uniform(-1.0, 1.0, value.shape)
            return (value + noise).astype(value.dtype)
        return self._array(value, units[0])

    def _tuple(self, value: tuple, units):
        out = []
        for v in value:
            if isinstance(v, tuple):
                out.append(self._tuple(v, units))
            elif isinstance(v, np.ndarray):
                out.append(self._array(v, next(units, 0.0)))
            else:
                out.append(v)
        return tuple(out)

    def _array(self, value: np.ndarray, unit: float) -> np.ndarray:
        if not unit or value.dtype.kind not in "fc" or value.size == 0:
            return value
        noise = 1.0 + unit * self.rng.uniform(-1.0, 1.0, value.shape)
        return (value * noise).astype(value.dtype)


#: Attributes naming computations that run as part of the program's flow (not applied per element).
_FLOW_ATTRIBUTES = frozenset({"body", "condition", "branch_computations", "true_computation",
                              "false_computation", "calls"})


def _control_flow_computations(module: Module) -> frozenset[str]:
    """The entry and the computations it reaches through while, conditional, call (``to_apply``
    of a ``call`` is a function of the program, as jax emits for its named functions) and fusion."""
    opcodes = {(c.name, i.name): i.opcode for c in module.computations for i in c.instructions}
    flow: dict[str, list[str]] = {}
    for site in CallGraph(module).call_sites():
        if site.attribute in _FLOW_ATTRIBUTES or (
                site.attribute == "to_apply" and opcodes[(site.caller, site.instruction)] == "call"):
            flow.setdefault(site.caller, []).append(site.callee)
    found, todo = set(), [module.entry.name]
    while todo:
        name = todo.pop()
        if name not in found:
            found.add(name)
            todo.extend(flow.get(name, ()))
    return frozenset(found)


def _constant_derived(comp: Computation) -> frozenset[str]:
    """Names of the instructions of ``comp`` computed from constants alone (a rewrite may fold them)."""
    found: set[str] = set()
    for instr in comp.instructions:
        if instr.opcode in _SOURCES or instr.called_computations():
            continue
        if instr.opcode in ("constant", "iota") or (instr.operands and all(o in found for o in instr.operands)):
            found.add(instr.name)
    return frozenset(found)


def _abs(value):
    if isinstance(value, tuple):
        return tuple(_abs(v) for v in value)
    if isinstance(value, np.ndarray) and value.dtype.kind in "fc":
        return np.abs(value).astype(np.float64 if value.dtype.kind == "c" else value.dtype)
    return value


def _accumulates(machine, instr: Instruction) -> bool:
    """Dots, convolutions and reductions whose combiner is ``add``."""
    if instr.opcode in ("dot", "convolution"):
        return True
    if instr.opcode not in ("reduce", "reduce-window") or len(instr.operands) != 2:
        return False
    reducer = instr.called_computations()
    return bool(reducer) and machine.computation(reducer[0]).root_instruction.opcode == "add"


def _without_noise(machine, instr: Instruction, operands: list):
    from hlo.interpreter.machine import HANDLERS

    previous, machine.perturb = machine.perturb, None
    try:
        return HANDLERS[instr.opcode](machine, instr, operands)
    finally:
        machine.perturb = previous
