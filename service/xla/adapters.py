"""What XLA's own passes would have added to a module so that XLA:CPU runs it as written.

The execution path hands XLA the module at ``PRE_SCHEDULER``, after XLA's fusion and copy
insertion ran on another module, so nothing adapts ours. Three kinds of instruction need what
those passes add (measured, ORACLES §3):

- ``scatter``: XLA:CPU's thunk emitter has no standalone scatter, only a scatter inside a
  fusion, and a scatter updates its operand in place. Each scatter outside a fusion becomes
  a copy of its operand(s) and a ``kLoop`` fusion whose computation holds the scatter alone.
- ``while``: the loop state is updated in place; without the copies copy insertion adds,
  buffer assignment aborts (a constant in the state) or the numbers are wrong. Each loop gets
  a copy of every leaf of its init, of every element its body reads from its parameter, and
  of every element of its body's root.
- an instruction with ``output_to_operand_aliasing`` (LAPACK custom-calls factor in place):
  it writes into its operand's buffer, so copy insertion gives it a copy of that operand;
  without one, another use of the operand reads the factor (measured: wrong numbers in
  ``linalg_custom_calls`` when one copy served two uses).

- the entry's result: XLA:CPU's runtime gives every leaf of the result a buffer of its own
  and aborts on one buffer returned twice ("Unexpected duplicate": ``tuple_outputs_aliasing``
  returns one product at two indices); copy insertion copies a leaf whose buffer an earlier
  leaf already returns, and a parameter or constant returned as a result. So does this. A
  ``get-tuple-element`` of a ``tuple`` in the entry is read as that tuple's element itself,
  as XLA's tuple simplifier leaves it after layout assignment (the tuple then goes): XLA's layout
  assignment writes the result that way when it changes a leaf's layout, and on this path
  that form ran faster than the simplified one it compiles to (``tuple_outputs_aliasing``,
  0.2 ms: XLA's layouts 1.20x faster returned through a tuple than the same module returning
  the values in the root tuple itself), which would credit the form, not the layouts.

- a ``reshape`` or ``transpose`` that moves no bytes: XLA's layout-sensitive algebraic
  simplifier, which runs after layout assignment, replaces it with a ``bitcast``; the swap
  comes after it, so on this path XLA:CPU would emit each as a kernel of its own. Measured
  (XLA:CPU, f32[256,256] to [16,16,16,16]): such a reshape cost about what a copy of the same
  bytes costs, the ``bitcast`` nothing; left in, every layout that keeps a reshape a bitcast
  would be charged for a copy XLA's own pipeline never runs. Each becomes a ``bitcast``.

Every copy keeps its source's layout and the fusion computes exactly the scatter, so the
layouts that run are the ones written; the copies cost the same in two modules that differ
only in layouts, which keeps paired ratios fair (diluted toward 1 by the copies' time).

Example: ``%s = f32[8,4]{1,0} scatter(%x, %i, %u), ...`` becomes
``%x.adapted = f32[8,4]{1,0} copy(%x)`` and
``%s = f32[8,4]{1,0} fusion(%x.adapted, %i, %u), kind=kLoop, calls=%s.fused``.
"""

from __future__ import annotations

import dataclasses

from hlo.bitcast import moves_no_bytes
from hlo.ir import Computation, ComputationRef, Instruction, Module, computation_name
from hlo.passes.instruction_sequence import NameTable
from hlo.shape import ArrayShape, TupleShape

__all__ = ["adapt_for_xla", "adaptable_reason"]


def adaptable_reason(module: Module) -> str | None:
    """Why ``module`` cannot be adapted, or ``None``: a ``while`` whose state holds nested
    tuples, or a ``scatter`` XLA:CPU's scatter emitter does not take (it CHECKs
    ``ScatterSimplifier::IsSimplifiedScatter``; XLA simplifies every scatter before layout
    assignment, so its own modules pass)."""
    for comp in module.computations:
        for instr in comp.instructions:
            if instr.opcode == "while" and not _flat_state(instr.shape):
                return (f"%{instr.name} is a while whose state is {instr.shape}: only a state "
                        "of arrays (or a tuple of arrays) is adapted to run unfused")
            if instr.opcode == "scatter" and not _simplified(comp, instr):
                return (f"%{instr.name} is a scatter not in the simplified form XLA:CPU's "
                        "scatter emitter requires (index vector dim last, at most one scatter "
                        "dim, sorted update window dims after it, no inserted window dims)")
    return None


def _simplified(comp: Computation, instr: Instruction) -> bool:
    """XLA's ``ScatterSimplifier::IsSimplifiedScatter`` on ``instr``."""
    count = (len(instr.operands) - 1) // 2
    shapes = {i.name: i.shape for i in comp.instructions}
    indices = shapes.get(instr.operands[count])
    updates = shapes.get(instr.operands[count + 1])
    if not isinstance(indices, ArrayShape) or not isinstance(updates, ArrayShape):
        return False
    window = _ints(instr.attr("update_window_dims"))
    return (instr.attr("index_vector_dim") == indices.rank - 1
            and updates.rank - len(window) <= 1 and 0 not in window
            and list(window) == sorted(window)
            and not _ints(instr.attr("inserted_window_dims")))


def _ints(value) -> tuple[int, ...]:
    if value is None:
        return ()
    return (value,) if isinstance(value, int) else tuple(value)


def _flat_state(shape) -> bool:
    return isinstance(shape, ArrayShape) or isinstance(shape, TupleShape) and all(
        isinstance(e, ArrayShape) for e in shape.elements)


def adapt_for_xla(module: Module) -> Module:
    """``module`` with its reshapes and transposes that move no bytes written as bitcasts, its
    unfused scatters fused, its loops and in-place custom-calls given their copies, and every
    leaf of its result a buffer of its own."""
    return _distinct_results(_adapted(_bitcasts(module)))


def _bitcasts(module: Module) -> Module:
    """``module`` with every ``reshape`` and ``transpose`` outside a fusion whose operand and
    result hold every element at the same offset written as a ``bitcast`` (what XLA's
    layout-sensitive simplifier does after layout assignment)."""
    fused = _fused(module)
    comps, changed = [], False
    for comp in module.computations:
        shapes = {i.name: i.shape for i in comp.instructions}
        body = []
        for instr in comp.instructions:
            if comp.name not in fused and instr.operands \
                    and moves_no_bytes(instr, shapes.get(instr.operands[0])):
                instr = dataclasses.replace(instr, opcode="bitcast", attributes=tuple(
                    (k, v) for k, v in instr.attributes if k == "metadata"))
                changed = True
            body.append(instr)
        comps.append(dataclasses.replace(comp, instructions=tuple(body)))
    return dataclasses.replace(module, computations=tuple(comps)) if changed else module


def _fused(module: Module) -> set[str]:
    """The computations that fusions call."""
    return {name for comp in module.computations for instr in comp.instructions
            if instr.opcode == "fusion" for name in instr.called_computations()}


def _adapted(module: Module) -> Module:
    fused = _fused(module)
    bodies = {computation_name(instr.attr("body")) for comp in module.computations
              for instr in comp.instructions if instr.opcode == "while"}
    if not bodies and not any(i.opcode == "scatter" or i.attr("output_to_operand_aliasing")
                              for c in module.computations if c.name not in fused
                              for i in c.instructions):
        return module
    adapter = _Adapter(NameTable(module))
    comps = []
    for comp in module.computations:
        if comp.name in fused:
            comps.append(comp)
            continue
        comps.extend(adapter.computation(comp, comp.name in bodies))
    return dataclasses.replace(module, computations=tuple(comps))


def _distinct_results(module: Module) -> Module:
    """``module`` with every get-tuple-element of a tuple in its entry read as that tuple's
    element (the tuple and get-tuple-elements then unused, dropped), and each leaf of the
    entry's root tuple that returns a buffer an earlier leaf returns, or a parameter's or a
    constant's, read through a copy of its own."""
    entry = module.entry
    original = {i.name: i for i in entry.instructions}

    def forwarded(name: str) -> str:  # a get-tuple-element of a tuple: that element
        instr = original[name]
        while (instr.opcode == "get-tuple-element"
               and original[instr.operands[0]].opcode == "tuple"):
            instr = original[original[instr.operands[0]].operands[int(instr.attr("index"))]]
        return instr.name

    body = {i.name: dataclasses.replace(i, operands=tuple(map(forwarded, i.operands)))
            for i in entry.instructions}
    root = body[entry.root]
    copies: list[Instruction] = []
    if root.opcode == "tuple":
        names, seen, operands = NameTable(module), set(), []
        for name in root.operands:
            found = body[name]
            while found.opcode == "bitcast":  # the instruction whose buffer ``name`` returns
                found = body[found.operands[0]]
            if (found.name in seen or found.opcode in ("parameter", "constant")) \
                    and isinstance(body[name].shape, ArrayShape):
                copies.append(Instruction(names.fresh(f"{name}.adapted"), "copy",
                                          body[name].shape, (name,)))
                name = copies[-1].name
            seen.add(found.name)
            operands.append(name)
        root = dataclasses.replace(root, operands=tuple(operands))
    if not copies and all(body[n] == original[n] for n in body):
        return module
    kept = [i for name, i in body.items() if name != root.name] + [*copies, root]
    entry = dataclasses.replace(entry, instructions=_live(kept, root.name))
    return dataclasses.replace(module, computations=tuple(
        entry if c.name == entry.name else c for c in module.computations))


def _live(instructions: list[Instruction], root: str) -> tuple[Instruction, ...]:
    """``instructions`` without those the root no longer reaches (a tuple whose elements the
    root now returns itself, and its get-tuple-elements); parameters always stay."""
    by_name = {i.name: i for i in instructions}
    reached, stack = set(), [root]
    while stack:
        name = stack.pop()
        if name not in reached:
            reached.add(name)
            stack.extend(by_name[name].operands)
    return tuple(i for i in instructions if i.name in reached or i.opcode == "parameter")


class _Adapter:
    """Rewrites one computation at a time; fresh names come from one table."""

    def __init__(self, names: NameTable) -> None:
        self.names = names

    def copy(self, out: list[Instruction], source: str, shape) -> str:
        name = self.names.fresh(f"{source}.adapted")
        out.append(Instruction(name, "copy", shape, (source,)))
        return name

    def leaves_copied(self, out: list[Instruction], source: str, shape) -> str:
        """A copy of ``source``; a tuple is rebuilt from copies of its elements."""
        if isinstance(shape, ArrayShape):
            return self.copy(out, source, shape)
        parts = []
        for i, element in enumerate(shape.elements):
            gte = self.names.fresh(f"{source}.element")
            out.append(Instruction(gte, "get-tuple-element", element, (source,),
                                   (("index", i),)))
            parts.append(self.copy(out, gte, element))
        name = self.names.fresh(f"{source}.adapted")
        out.append(Instruction(name, "tuple", shape, tuple(parts)))
        return name

    def computation(self, comp: Computation, is_body: bool) -> list[Computation]:
        out: list[Instruction] = []
        extra: list[Computation] = []
        shapes = {i.name: i.shape for i in comp.instructions}
        renamed: dict[str, str] = {}
        params = {i.name for i in comp.instructions if i.opcode == "parameter"}
        for instr in comp.instructions:
            instr = dataclasses.replace(
                instr, operands=tuple(renamed.get(o, o) for o in instr.operands))
            if instr.opcode == "scatter":
                fusion, called = self.scatter(out, instr, shapes)
                out.append(fusion)
                extra.append(called)
            elif instr.attr("output_to_operand_aliasing"):
                out.append(self.aliased(out, instr, shapes))
            elif instr.opcode == "while":
                init = self.leaves_copied(out, instr.operands[0], shapes[instr.operands[0]])
                out.append(dataclasses.replace(instr, operands=(init,)))
            else:
                out.append(instr)
            if is_body and instr.opcode == "get-tuple-element" and instr.operands[0] in params:
                renamed[instr.name] = self.copy(out, instr.name, instr.shape)
        root = renamed.get(comp.root, comp.root)
        if is_body:
            root = self.leaves_copied(out, root, shapes[comp.root])
        return [*extra, dataclasses.replace(comp, instructions=tuple(out), root=root)]

    def aliased(self, out: list[Instruction], instr: Instruction, shapes: dict) -> Instruction:
        """``instr`` (a custom-call writing an output into an operand's buffer) reading a copy
        of each aliased operand: another use of that operand keeps its own value."""
        operands = list(instr.operands)
        aliases = instr.attr("output_to_operand_aliasing")
        for k in sorted({a.operand for a in aliases if a.operand < len(operands)}):
            operands[k] = self.leaves_copied(out, operands[k], shapes[operands[k]])
        return dataclasses.replace(instr, operands=tuple(operands))

    def scatter(self, out: list[Instruction], instr: Instruction, shapes: dict
                ) -> tuple[Instruction, Computation]:
        """The fusion that replaces scatter ``instr`` (its operands copied first) and the
        computation it calls."""
        count = (len(instr.operands) - 1) // 2  # operands..., indices, updates...
        operands = [self.copy(out, name, shapes[name]) if k < count else name
                    for k, name in enumerate(instr.operands)]
        called = self.names.fresh(f"{instr.name}.fused")
        body = [Instruction(self.names.fresh(f"{called}.param_{k}"), "parameter", shapes[name],
                            (), (("parameter_number", k),))
                for k, name in enumerate(instr.operands)]
        root = dataclasses.replace(instr, name=self.names.fresh(f"{called}.scatter"),
                                   operands=tuple(p.name for p in body), span=None)
        computation = Computation(called, (*body, root), root.name)
        fusion = Instruction(instr.name, "fusion", instr.shape, tuple(operands),
                             (("kind", "kLoop"), ("calls", ComputationRef(called))), instr.span)
        return fusion, computation
