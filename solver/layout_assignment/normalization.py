"""Normalization after assignment: the target's canonical forms, run as named passes.

``AssignOptions.normalize`` says which passes (:data:`hlo.passes.PASSES`) run on
the laid-out module: ``None`` asks the target (:func:`hlo.passes.passes_for_target`:
the GPU family wants canonical reductions grouped into rows and columns), ``()``
runs none. The result records the passes run, the reduces the reduction pass
rewrote and the ones it had to leave (with the reason), so the report can say
what changed.

Example (gpu): ``r = f32[64] reduce(f32[64,128]{0,1} x), dimensions={1}`` is
normalized to a bitcast of ``x`` to ``f32[128,64]{1,0}`` reduced over dim 0;
``reductions_normalized`` lists ``("main", "r")``.
"""

from __future__ import annotations

from dataclasses import dataclass

from hlo.ir import Module
from hlo.passes import apply_passes, passes_for_target
from hlo.target import Target
from solver.layout_assignment.options import NormalizePass

__all__ = ["NOTHING_NORMALIZED", "Normalization", "normalization_passes", "normalize"]


@dataclass(frozen=True, slots=True)
class Normalization:
    """What normalization did: passes (full names, in order), reduces rewritten, reduces left."""

    passes: tuple[str, ...] = ()
    reductions_normalized: tuple[tuple[str, str], ...] = ()
    reductions_left: tuple[tuple[str, str, str], ...] = ()

    def to_json(self) -> dict:
        return {
            "passes": list(self.passes),
            "reductions_normalized": [{"computation": c, "instruction": i}
                                      for c, i in self.reductions_normalized],
            "reductions_left": [{"computation": c, "instruction": i, "reason": why}
                                for c, i, why in self.reductions_left],
        }


#: The record of a result no pass ran on.
NOTHING_NORMALIZED = Normalization()


def normalization_passes(requested: tuple[NormalizePass, ...] | None, target: Target
                         ) -> tuple[str, ...]:
    """Full pass names: the target's default for ``None``, else the ones requested."""
    if requested is None:
        return passes_for_target(target)
    return tuple(p.pass_name for p in requested)


def normalize(module: Module, names: tuple[str, ...]) -> tuple[Module, Normalization]:
    """Run ``names`` in order on ``module``; raises :class:`hlo.passes.PassError` for an
    unknown name and :class:`hlo.errors.LayoutError` where a pass rejects the module."""
    normalized: list[tuple[str, str]] = []
    left: list[tuple[str, str, str]] = []
    for run in apply_passes(module, names):
        normalized.extend(run.rewritten)
        left.extend((n.computation, n.instruction, n.reason) for n in run.notes)
        module = run.after
    return module, Normalization(tuple(names), tuple(dict.fromkeys(normalized)),
                                 tuple(dict.fromkeys(left)))
