"""Structural verification of a module (layout-insensitive).

What a module must satisfy before anything else may trust it, in the spirit of
XLA's ``HloVerifier`` with ``layout_sensitive=false``:

* computation names are unique, at most one is marked ``ENTRY`` (without one the
  last computation is the entry, as XLA's parser decides), and a computation is
  defined (in text order) before any instruction calls it, so calls form a DAG;
* instruction names are unique within their computation (XLA's parser scopes
  names per computation and uniquifies them module-wide afterwards, so valid
  texts such as XLA's own ``while_with_known_trip_count.hlo`` reuse ``p`` in
  several computations); every operand and control predecessor names an
  instruction defined *earlier* in the same computation;
* each computation has a root that exists; parameters are numbered ``0..n-1``
  exactly once and agree with a written signature; the written result type
  agrees with the root;
* operand counts per opcode; called computations exist with the right arity;
* every result shape equals the one :mod:`hlo.shape_inference` derives from
  the operands (element types and dims; layouts ignored);
* ``entry_computation_layout`` agrees with the entry's parameters and root.

Errors name the computation and instruction and carry the instruction's
``line:col``. :func:`collect_errors` returns all of them; :func:`verify_module`
raises the first.
"""

from __future__ import annotations

from hlo.errors import HloError, Location, VerifyError
from hlo.ir import Computation, Instruction, Module, ProgramShape, Span
from hlo.shape import ArrayShape, Shape, TupleShape
from hlo.shape_inference import compatible, infer_shape, operand_count_problem

__all__ = ["collect_errors", "control_predecessors", "plain_shape", "verify_module"]


def plain_shape(shape: Shape) -> str:
    """A shape printed without layouts (``f32[2,3]``, ``(f32[2], s32[])``)."""
    if isinstance(shape, ArrayShape):
        return shape.dims_text()
    if isinstance(shape, TupleShape):
        return "(" + ", ".join(plain_shape(s) for s in shape.elements) + ")"
    return str(shape)


def control_predecessors(instr: Instruction) -> tuple[str, ...]:
    """Names listed in ``control-predecessors={%a, %b}`` (empty when absent)."""
    value = instr.attr("control-predecessors")
    if value is None:
        return ()
    items = value if isinstance(value, tuple) else (value,)
    return tuple(getattr(v, "name", v) for v in items)


class _Collector:
    """Accumulates errors, each located at the construct it is about."""

    def __init__(self, module: Module, source_name: str | None) -> None:
        self.source = source_name or module.name
        self.errors: list[VerifyError] = []

    def location(self, span: Span | None) -> Location | None:
        if span is None:
            return None
        return Location(self.source, span.line, span.column)

    def at_instruction(self, comp: Computation, instr: Instruction, message: str) -> None:
        self.errors.append(VerifyError(
            f"computation '{comp.name}', instruction '{instr.name}': {message}",
            self.location(instr.span or comp.span),
        ))

    def at_computation(self, comp: Computation, message: str) -> None:
        self.errors.append(VerifyError(f"computation '{comp.name}': {message}",
                                       self.location(comp.span)))

    def at_module(self, module: Module, message: str) -> None:
        self.errors.append(VerifyError(f"module '{module.name}': {message}",
                                       self.location(module.span)))


def collect_errors(module: Module, *, source_name: str | None = None) -> list[VerifyError]:
    """Every structural error of ``module``, in text order.

    ``source_name`` names the text in locations (a file path); the module's
    name is used when it is not given.
    """
    out = _Collector(module, source_name)
    comps: dict[str, Computation] = {}
    position: dict[str, int] = {}
    for i, comp in enumerate(module.computations):
        if comp.name in comps:
            out.at_computation(comp, "computation name is defined twice")
            continue
        comps[comp.name] = comp
        position[comp.name] = i
    if not module.computations:
        out.at_module(module, "module has no computations")
        return out.errors
    entries = [c for c in module.computations if c.is_entry]
    for extra in entries[1:]:
        out.at_computation(extra, f"second ENTRY computation (the first is '{entries[0].name}')")

    for i, comp in enumerate(module.computations):
        _verify_computation(out, comp, i, comps, position)
    _verify_entry_layout(out, module)
    return out.errors


def verify_module(module: Module, *, source_name: str | None = None) -> None:
    """Raise the first structural error of ``module`` as a :class:`VerifyError`."""
    errors = collect_errors(module, source_name=source_name)
    if errors:
        raise errors[0]


def _verify_computation(
    out: _Collector,
    comp: Computation,
    index: int,
    comps: dict[str, Computation],
    position: dict[str, int],
) -> None:
    if not comp.instructions:
        out.at_computation(comp, "computation has no instructions")
        return
    defined: dict[str, Instruction] = {}
    all_names = {instr.name for instr in comp.instructions}
    for instr in comp.instructions:
        if instr.name in defined:
            out.at_instruction(comp, instr, f"name '{instr.name}' is already defined at line "
                                            f"{_line(defined[instr.name])}")
        _verify_instruction(out, comp, instr, index, defined, all_names, comps, position)
        defined.setdefault(instr.name, instr)
    if comp.root not in defined:
        out.at_computation(comp, f"root '{comp.root}' is not an instruction of the computation")
        return
    _verify_parameters(out, comp)
    if comp.result_shape is not None and not compatible(comp.result_shape,
                                                        defined[comp.root].shape):
        out.at_instruction(comp, defined[comp.root],
                           f"root shape {plain_shape(defined[comp.root].shape)} does not match "
                           f"the computation's result type {plain_shape(comp.result_shape)}")


def _verify_instruction(
    out: _Collector,
    comp: Computation,
    instr: Instruction,
    index: int,
    defined: dict[str, Instruction],
    all_names: set[str],
    comps: dict[str, Computation],
    position: dict[str, int],
) -> None:
    ok = True
    for role, names in (("operand", instr.operands),
                        ("control predecessor", control_predecessors(instr))):
        for name in names:
            if name in defined:
                continue
            ok = False
            if name in all_names:
                out.at_instruction(comp, instr, f"{role} '{name}' is used before its definition")
            else:
                out.at_instruction(comp, instr, f"unknown {role} '{name}'")
    problem = operand_count_problem(instr.opcode, len(instr.operands))
    if problem is not None:
        out.at_instruction(comp, instr, problem)
        ok = False
    for callee in instr.called_computations():
        if callee not in comps:
            out.at_instruction(comp, instr, f"calls unknown computation '{callee}'")
            ok = False
        elif position[callee] >= index:
            out.at_instruction(comp, instr, f"calls computation '{callee}' before it is defined")
            ok = False
    if not ok:
        return
    operands = tuple(defined[name].shape for name in instr.operands)
    try:
        expected = infer_shape(instr, operands, comps.__getitem__)
    except HloError as err:
        out.at_instruction(comp, instr, err.message)
        return
    if expected is not None and not compatible(expected, instr.shape):
        out.at_instruction(comp, instr,
                           f"result shape {plain_shape(instr.shape)} does not match the shape "
                           f"{plain_shape(expected)} inferred from its operands")


def _line(instr: Instruction) -> str:
    return str(instr.span.line) if instr.span is not None else "?"


def _verify_parameters(out: _Collector, comp: Computation) -> None:
    params = [i for i in comp.instructions if i.opcode == "parameter"]
    numbers: dict[int, Instruction] = {}
    for p in params:
        n = p.attr("parameter_number")
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            out.at_instruction(comp, p, f"parameter number {n!r} is not a non-negative integer")
            continue
        if n in numbers:
            out.at_instruction(comp, p, f"parameter number {n} is already used by "
                                        f"'{numbers[n].name}'")
            continue
        numbers[n] = p
    for n in range(len(params)):
        if n not in numbers and len(numbers) == len(params):
            out.at_computation(comp, f"parameter numbers must be 0..{len(params) - 1}; "
                                     f"{n} is missing")
            break
    if comp.parameters is None:
        return
    if len(comp.parameters) != len(params):
        out.at_computation(comp, f"signature lists {len(comp.parameters)} parameter(s), the "
                                 f"body defines {len(params)}")
        return
    for n, declared in enumerate(comp.parameters):
        p = numbers.get(n)
        if p is not None and not compatible(declared.shape, p.shape):
            out.at_instruction(comp, p, f"parameter {n} has shape {plain_shape(p.shape)}, the "
                                        f"signature says {plain_shape(declared.shape)}")


def _verify_entry_layout(out: _Collector, module: Module) -> None:
    layout = module.attr("entry_computation_layout")
    if not isinstance(layout, ProgramShape):
        return
    entry = module.entry
    params = entry.parameter_instructions()
    if len(layout.parameters) != len(params):
        out.at_module(module, f"entry_computation_layout lists {len(layout.parameters)} "
                              f"parameter(s), entry '{entry.name}' has {len(params)}")
        return
    for n, (declared, p) in enumerate(zip(layout.parameters, params)):
        if not compatible(declared, p.shape):
            out.at_instruction(entry, p, f"entry parameter {n} has shape {plain_shape(p.shape)}, "
                                         f"entry_computation_layout says "
                                         f"{plain_shape(declared)}")
    root = next((i for i in entry.instructions if i.name == entry.root), None)
    if root is not None and not compatible(layout.result, root.shape):
        out.at_instruction(entry, root, f"entry root has shape {plain_shape(root.shape)}, "
                                        f"entry_computation_layout says "
                                        f"{plain_shape(layout.result)}")
