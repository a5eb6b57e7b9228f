"""``time_limit`` is one budget for every solve of an assignment, not one per solve."""

from __future__ import annotations

from conftest import shared_path
from hlo.parser import parse_file
from solver.layout_assignment.assign import assign
from solver.layout_assignment.options import AssignOptions

SOLVE_STAGES = ("solve", "exact", "bound")


def test_all_solves_together_stay_within_the_time_limit() -> None:
    # gpt_train_4l on tpu is not proven within 4 s, so every solve runs to its share;
    # with one limit per solve the stages took up to 2.5x the limit (10 s here).
    module = parse_file(shared_path("corpus", "gpt_train_4l.before_layout.hlo.gz"))
    limit = 4.0
    result = assign(module, AssignOptions(target="tpu", time_limit=limit))
    spent = sum(result.timings_ms.get(stage, 0.0) for stage in SOLVE_STAGES) / 1000
    # Model building and postsolve happen inside each solve's own limit; allow a fixed
    # slack for a loaded machine, still well under the old 2.5x.
    assert spent <= 1.5 * limit + 1.0, result.timings_ms
    assert result.lower_bound is not None and result.lower_bound <= result.objective
    assert (result.status == "OPTIMAL") == (result.lower_bound == result.objective)
