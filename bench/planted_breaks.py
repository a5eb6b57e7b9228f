"""Layout and rewrite mistakes planted into real modules: each must make verification fail.

Each planter takes a module and returns a broken copy (or ``None`` when the module has no place for
that mistake): values moved by a wrong transpose permutation, a layout-changing ``copy`` replaced by
a ``bitcast`` (the copy is missing), the operands of a non-commutative op swapped, and an
elementwise result given a layout other than its operand's (a broken tie).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable

from hlo.ir import Instruction, Module
from hlo.shape import ArrayShape

NON_COMMUTATIVE = ("subtract", "divide", "power", "atan2", "remainder")


def _replace(module: Module, old: Instruction, new: Instruction) -> Module:
    comps = []
    for comp in module.computations:
        if old in comp.instructions:
            comp = dataclasses.replace(
                comp, instructions=tuple(new if i is old else i for i in comp.instructions)
            )
        comps.append(comp)
    return dataclasses.replace(module, computations=tuple(comps))


def _instructions(module: Module):
    for comp in module.computations:
        shapes = {i.name: i.shape for i in comp.instructions}
        for instr in comp.instructions:
            yield instr, shapes


def wrong_transpose(module: Module) -> Module | None:
    for instr, shapes in _instructions(module):
        if instr.opcode != "transpose" or not isinstance(instr.shape, ArrayShape):
            continue
        dims = shapes[instr.operands[0]].dims
        perm = tuple(instr.attr("dimensions"))
        for other in itertools.permutations(range(len(dims))):
            if other != perm and tuple(dims[p] for p in other) == instr.shape.dims:
                moved = tuple(k for k in range(len(dims)) if other[k] != perm[k])
                if all(dims[perm[k]] > 1 for k in moved):
                    attrs = tuple((k, other if k == "dimensions" else v) for k, v in instr.attributes)
                    return _replace(module, instr, dataclasses.replace(instr, attributes=attrs))
    return None


def missing_copy(module: Module) -> Module | None:
    for instr, shapes in _instructions(module):
        if instr.opcode != "copy" or not isinstance(instr.shape, ArrayShape):
            continue
        source = shapes[instr.operands[0]]
        if not isinstance(source, ArrayShape) or source.layout is None or instr.shape.layout is None:
            continue
        nontrivial = [d for d in range(len(source.dims)) if source.dims[d] > 1]
        order = [d for d in source.layout.minor_to_major if d in nontrivial]
        if order != [d for d in instr.shape.layout.minor_to_major if d in nontrivial]:
            return _replace(module, instr, dataclasses.replace(instr, opcode="bitcast"))
    return None


def swapped_operands(module: Module) -> Module | None:
    for instr, shapes in _instructions(module):
        if instr.opcode in NON_COMMUTATIVE and len(instr.operands) == 2:
            a, b = instr.operands
            if a != b and shapes[a] == shapes[b] and isinstance(shapes[a], ArrayShape) and shapes[a].dims:
                return _replace(module, instr, dataclasses.replace(instr, operands=(b, a)))
    return None


def broken_tie(module: Module) -> Module | None:
    for instr, _ in _instructions(module):
        shape = instr.shape
        if instr.opcode not in ("add", "multiply", "subtract", "negate", "exponential", "tanh"):
            continue
        if not isinstance(shape, ArrayShape) or shape.layout is None or len(shape.dims) < 2:
            continue
        if sum(d > 1 for d in shape.dims) < 2 or shape.layout.tiles:
            continue
        mtm = tuple(shape.layout.minor_to_major)
        flipped = (mtm[1], mtm[0], *mtm[2:])
        layout = dataclasses.replace(shape.layout, minor_to_major=flipped)
        return _replace(module, instr, dataclasses.replace(instr, shape=dataclasses.replace(shape, layout=layout)))
    return None


#: Planters whose change may leave every output the same, depending on the data (a transpose, or a
#: bitcast in place of a transposing copy, of a symmetric matrix changes nothing): see
#: :func:`observable`. A broken tie always breaks a layout rule.
VALUE_PLANTERS = ("wrong-transpose", "swapped-operands", "missing-copy")


#: A change counts when it moves some output by more than this fraction of the output's largest
#: magnitude (in f64): far above the rounding noise of f32 programs, so that a change no f32
#: execution could reveal (a transposed copy of a matrix symmetric up to rounding) is not counted.
OBSERVABLE = 1e-3
#: The smallest output scale :func:`observable` measures against.
SCALE_FLOOR = 1e-3
#: ... and by more than this many times what f64 rounding alone moves that element of the original.
ROUNDING_FACTOR = 8.0
#: f64-rounding runs of the original: more than verify's three, so that an element whose value a
#: tie decides is recognised as such (any one run that flips the tie shows it).
ROUNDING_RUNS = 12


def change(original: Module, broken: Module, seed: int = 0, threshold: float = OBSERVABLE) -> str:
    """What planting did to the function, evaluated in f64 on the planting inputs:

    - ``"changed"``: some output element moves by more than ``threshold`` (:data:`OBSERVABLE`) of its output's
      largest magnitude (at least :data:`SCALE_FLOOR`) and by more than :data:`ROUNDING_FACTOR`
      times what f64 rounding alone moves it in ``original`` (:data:`ROUNDING_RUNS` runs with
      :meth:`hlo.shadow.Perturbation.exact_arithmetic`), or the outputs are NaN in different places;
    - ``"decided by rounding"``: some element moves by more than the first threshold but every
      such element of ``original`` is moved as far by f64 rounding alone (the original is evaluated
      at a discontinuity, e.g. an argmax over two rows equal in exact arithmetic): no evaluation
      at any precision fixes that element, so no verifier can be asked to see the change there;
    - ``"no change"``: otherwise (e.g. a transpose of a symmetric matrix, or a change that feeds a
      function that is identically zero).
    """
    import numpy as np

    from hlo.interpreter import evaluate
    from hlo.random_inputs import random_arguments
    from hlo.shadow import Perturbation, promote_floats

    args = random_arguments(original, np.random.default_rng([seed, 0]))
    wide = [a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)
            if getattr(a, "dtype", None) is not None and a.dtype.kind in "fcV" and a.dtype != np.bool_ else a
            for a in args]
    shadow = promote_floats(original)
    one, two = evaluate(shadow, wide), evaluate(promote_floats(broken), wide)
    noisy = [evaluate(shadow, wide, perturb=Perturbation.exact_arithmetic(original, np.random.default_rng([seed, 7, j])))
             for j in range(ROUNDING_RUNS)]
    verdict = "no change"
    for k, (x, y) in enumerate(zip(_leaves(one), _leaves(two))):
        x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
        if (np.isnan(x) != np.isnan(y)).any():
            return "changed"
        finite = np.isfinite(x) & np.isfinite(y)
        # An output that is zero in exact arithmetic (1e-17 in f64, rounding noise in f32) has no scale
        # of its own: measure against 1e-3 at least (the programs' values are of order one).
        scale = max(float(np.abs(x[finite]).max(initial=0.0)), SCALE_FLOOR)
        moved = finite & (np.abs(x - y) > threshold * scale)
        if not moved.any():
            continue
        spread = np.zeros(x.shape)
        for n in noisy:
            with np.errstate(invalid="ignore"):
                spread = np.fmax(spread, np.abs(np.asarray(_leaves(n)[k], np.float64) - x))
        if (moved & (np.abs(x - y) > ROUNDING_FACTOR * spread)).any():
            return "changed"
        verdict = "decided by rounding"
    return verdict


def observable(original: Module, broken: Module, seed: int = 0) -> bool:
    """Whether ``broken`` computes something else than ``original`` (:func:`change`)."""
    return change(original, broken, seed) == "changed"


def _leaves(value) -> list:
    return [leaf for v in value for leaf in _leaves(v)] if isinstance(value, tuple) else [value]


PLANTERS: dict[str, Callable[[Module], Module | None]] = {
    "wrong-transpose": wrong_transpose,
    "missing-copy": missing_copy,
    "swapped-operands": swapped_operands,
    "broken-tie": broken_tie,
}
