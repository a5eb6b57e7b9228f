"""The assignment report (DESIGN §10) as plain JSON-able dicts.

``objective`` is the *true* cost of the returned module (``score`` of the
rewritten module: one copy per value and layout however many uses share it);
``model_objective`` is what the labeling model charged (per use) and
``lower_bound`` is the model's proven bound, so ``gap`` is measured in the
model. ``objective <= model_objective`` always; they differ exactly where
one inserted copy serves several uses.
"""

from __future__ import annotations

from hlo.printer import print_module
from solver.layout_assignment.assign import AssignResult

__all__ = ["to_json", "summary"]


def to_json(result: AssignResult, *, include_hlo: bool = True, include_timings: bool = True) -> dict:
    """The full report; ``include_timings=False`` gives a byte-stable document."""
    report = {
        "module": result.original.name,
        "target": result.target,
        "options": {"entry_layout": result.options.entry_layout,
                    "time_limit": result.options.time_limit,
                    "emit_bitcasts": result.options.emit_bitcasts,
                    "max_candidates": result.options.max_candidates,
                    "normalize": (None if result.options.normalize is None
                                  else list(result.options.normalize))},
        "status": result.status,
        "chosen_by": result.chosen_by,
        "objective": result.objective,
        "model_objective": result.model_objective,
        "lower_bound": result.lower_bound,
        "gap": result.gap,
        "baselines": dict(result.baselines),
        "baselines_model": dict(result.baselines_model),
        "breakdown": result.score.breakdown(),
        "terms": [t.to_json() for t in result.score.terms],
        "layouts": [{"computation": c, "instruction": i, "shape": s} for c, i, s in result.layouts],
        "inserted": [dict(x) for x in result.inserted],
        "entry_layouts": dict(result.entry_layouts),
        "normalization": result.normalization.to_json(),
        "violations": list(result.violations),
        "problem": {"nodes": result.nodes, "relations": result.relations},
    }
    if include_timings:
        report["timings_ms"] = dict(result.timings_ms)
    if include_hlo:
        report["hlo"] = print_module(result.module)
    return report


def summary(result: AssignResult) -> dict:
    """The few numbers a terminal summary shows."""
    copies = sum(1 for x in result.inserted if not x["shared"])
    return {"module": result.original.name, "target": result.target, "status": result.status,
            "objective_ns": result.objective, "lower_bound_ns": result.lower_bound,
            "default_ns": result.baselines.get("default"), "greedy_ns": result.baselines.get("greedy"),
            "copies_inserted": copies,
            "time_ms": round(sum(result.timings_ms.values()), 1)}
