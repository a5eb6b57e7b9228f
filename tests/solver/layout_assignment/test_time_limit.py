"""``time_limit`` is one budget for the whole assignment, not one per solve; progress events."""

from __future__ import annotations

import time

from conftest import shared_path
from hlo.parser import parse_file
from solver.layout_assignment.assign import assign
from solver.layout_assignment.options import AssignOptions
from solver.layout_assignment.report import summary, to_json
from solver.progress import Progress

SOLVE_STAGES = ("relaxed", "solve", "exact")


def test_all_solves_together_stay_within_the_time_limit() -> None:
    # gpt_train_4l on tpu is not proven within 4 s, so every solve runs to its share;
    # with one limit per solve the stages took up to 2.5x the limit (10 s here).
    module = parse_file(shared_path("corpus", "gpt_train_4l.before_layout.hlo.gz"))
    limit = 4.0
    result = assign(module, "tpu", AssignOptions(time_limit_s=limit))
    spent = sum(result.timings_ms.get(stage, 0.0) for stage in SOLVE_STAGES) / 1000
    # Model building and postsolve happen inside each solve's own limit; allow a fixed
    # slack for a loaded machine, still well under the old 2.5x.
    assert spent <= 1.5 * limit + 1.0, result.timings_ms
    assert result.lower_bound is not None and result.lower_bound <= result.objective
    assert (result.status == "OPTIMAL") == (result.lower_bound == result.objective)


def test_time_limit_bounds_the_wall_clock_of_the_whole_assignment() -> None:
    # gpt_train_4l on tpu is not proven in 1 s: the solves share what the graph and the
    # candidates left, a reserve is kept for the rewrite, and the steps that need time
    # (the per-use model, the exact problem) are skipped when none is left; the bound is the
    # relaxed problem's (solved first, in parts, as far as its share allows).
    # Before the limit covered the whole call, this took 4-6 s here.
    module = parse_file(shared_path("corpus", "gpt_train_4l.before_layout.hlo.gz"))
    limit = 1.0
    began = time.perf_counter()
    result = assign(module, "tpu", AssignOptions(time_limit_s=limit))
    wall = time.perf_counter() - began
    assert result.status == "FEASIBLE"
    # No time is left to state the exact problem (or, on a fast machine, to prove it).
    assert result.bound_status.startswith(("exact not solved (time limit), relaxed ",
                                           "exact FEASIBLE, relaxed "))
    assert result.lower_bound is not None and result.lower_bound < result.objective
    # Graph, candidates and stating the exact problem cannot be cut short (about 1.5 s here
    # on a quiet machine, 8.7 s under the full suite on a shared one): a generous bound.
    assert wall <= limit + 12.0, result.timings_ms
    # The reported time is this wall clock, not the sum of overlapping steps: it lies inside the
    # time measured around the call, and misses only the call's own overhead.
    assert 0.9 * wall <= result.wall_ms / 1000 <= wall, (result.wall_ms, wall)
    assert summary(to_json(result))["time_ms"] == round(result.wall_ms, 1)


def test_progress_events_come_in_order_with_sane_values() -> None:
    module = parse_file(shared_path("corpus", "transformer_block_train.before_layout.hlo"))
    events: list[Progress] = []
    result = assign(module, "tpu", AssignOptions(time_limit_s=20.0), progress=events.append)
    phases = [e.phase for e in events]
    order = ["candidates", "baselines", "relaxed problem", "per-use model", "exact problem",
             "local search", "rewrite", "done"]
    assert phases[0] == "candidates" and phases[-1] == "done" and phases.count("done") == 1
    assert [order.index(p) for p in phases] == sorted(order.index(p) for p in phases)
    assert {"baselines", "relaxed problem", "per-use model", "exact problem", "rewrite"} <= set(
        phases)
    assert all(a.elapsed_s <= b.elapsed_s for a, b in zip(events, events[1:]))
    bests = [e.best for e in events if e.best is not None]
    bounds = [e.bound for e in events if e.bound is not None]
    assert bests == sorted(bests, reverse=True) and bounds == sorted(bounds)
    # The first cost heard is the better baseline's; none is below the answer proven optimal,
    # no bound above it.
    assert bests[0] == min(result.baselines.values())
    assert result.status == "OPTIMAL"
    assert min(bests) == result.objective and max(bounds) == result.lower_bound
    last = events[-1]
    assert (last.best, last.bound, last.gap) == (result.objective, result.lower_bound, 0.0)
    assert last.elapsed_s <= result.wall_ms / 1000
