"""The assignment report (DESIGN §10) as plain JSON-able dicts.

Every headline number is about the *true* cost, the ``score`` of the returned
module (one copy per value and layout however many uses share it):

* ``objective``: the true cost of the returned module;
* ``lower_bound``: a proven lower bound on the true cost of every assignment
  over the candidate layouts (the relaxed problem of :mod:`.compile`, solved);
  ``lower_bound <= objective`` always;
* ``status``: ``OPTIMAL`` only when ``objective == lower_bound`` (the answer is
  proven optimal for the true cost), else ``FEASIBLE``;
* ``gap``: ``(objective - lower_bound) / objective`` (0 when the objective is 0);
* ``in_place_ns``: what the returned module's elementwise ops are predicted to pay for
  writing over their operands' buffers (XLA:CPU, :mod:`.in_place`; the ``in_place``
  terms of ``breakdown`` and ``terms``), outside ``objective``: the solves do not see
  it (the in-place descent below does); ``predicted_ns`` = ``objective`` +
  ``in_place_ns``, the price the predicted ratios of ``measure`` use.

The per-use labeling model's own numbers stay under ``model`` (``objective``:
what it charges the returned labeling; ``lower_bound`` and ``status``: its
solve, a proof about the model only), and ``model_objective`` is
``model.objective``. ``objective <= model_objective``; they differ where one
inserted copy serves several uses (and in loops, where a copy's padding write
is charged once). ``chosen_by`` names the answer returned: ``exact`` (the exact
shared-copy problem's CP-SAT answer), ``cp-sat`` (the per-use model's optimum),
``bound`` (the relaxed problem's labels),
``local-search`` (single-node moves on the true cost), ``in-place``, ``greedy`` or
``default``. Where the cheapest answer's elementwise ops are predicted to write over their
operands (``in_place_ns``), the all-default and greedy answers are priced too and the least
``predicted_ns`` is returned, although its ``objective`` may then be above the bound; where
that one still has such writes, the in-place descent relabels the ops and their operands
(single moves, each rewritten and scored whole) and returns its answer, ``in-place``, where
it lowers ``predicted_ns``.
"""

from __future__ import annotations

from hlo.printer import print_module
from solver.layout_assignment.assign import AssignResult
from solver.layout_assignment.options import options_to_json

__all__ = ["to_json", "summary"]


def to_json(result: AssignResult, *, include_hlo: bool = True, include_timings: bool = True) -> dict:
    """The full report; ``include_timings=False`` gives a byte-stable document."""
    report = {
        "module": result.original.name,
        "target": result.target,
        "options": options_to_json(result.options),
        "status": result.status,
        "chosen_by": result.chosen_by,
        "objective": result.objective,
        "model_objective": result.model_objective,
        "lower_bound": result.lower_bound,
        "gap": result.gap,
        "in_place_ns": result.score.in_place,
        "predicted_ns": result.score.predicted,
        "optimality_scope": dict(result.scope),
        "baselines": dict(result.baselines),
        "baselines_model": dict(result.baselines_model),
        "model": {"objective": result.model_objective,
                  "lower_bound": result.model_lower_bound,
                  "status": result.model_status},
        "bound_status": result.bound_status,
        "local_search_moves": result.local_search_moves,
        "breakdown": result.score.breakdown(),
        "terms": [t.to_json() for t in result.score.terms],
        "layouts": [{"computation": c, "instruction": i, "shape": s} for c, i, s in result.layouts],
        "inserted": [x.to_json() for x in result.inserted],
        # One copy per distinct value and layout: the entries that are not shared uses.
        "copies_inserted": sum(1 for x in result.inserted if not x.shared),
        "entry_layouts": dict(result.entry_layouts),
        "normalization": result.normalization.to_json(),
        "violations": list(result.violations),
        "problem": {"nodes": result.nodes, "relations": result.relations},
    }
    if include_timings:
        report["timings_ms"] = {**result.timings_ms, "wall": result.wall_ms}
    if include_hlo:
        report["hlo"] = print_module(result.module)
    return report


def summary(report: dict) -> dict:
    """The few numbers of a report (:func:`to_json`) a terminal summary shows."""
    gap = report["gap"]
    # Wall clock: the step timings overlap, their sum is no time anyone waited.
    wall = report.get("timings_ms", {}).get("wall")
    return {"module": report["module"], "target": report["target"], "status": report["status"],
            "objective_ns": report["objective"], "lower_bound_ns": report["lower_bound"],
            "gap": None if gap is None else round(gap, 6),
            "default_ns": report["baselines"].get("default"),
            "greedy_ns": report["baselines"].get("greedy"),
            "copies_inserted": report["copies_inserted"],
            "time_ms": None if wall is None else round(wall, 1)}
