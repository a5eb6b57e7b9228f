"""``assign``, ``score`` and ``normalize`` of the pipeline: where the service meets the engine.

Each function takes a parsed, structurally verified module, a loaded target (or ``None``) and
the operation's options from :mod:`service.options`, and returns a
:class:`service.pipeline.Produced`: the report (JSON data that depends only on the request),
the output module text and the wall-clock timings, which travel beside the report.

The engine reads the request's own ``AssignOptions`` (one schema for every door); the target
arrives loaded, as a value, so the engine never resolves a name or a path that came from a
request.

Example: ``assign(module, load_target("tpu"), AssignOptions(time_limit_s=5))`` gives the
report of DESIGN §10 (status, objective, lower bound, gap, baselines, breakdown, per-instruction
layouts, inserted conversions, entry layouts) and the laid-out module.
"""

from __future__ import annotations

from typing import Any, Callable

from hlo.errors import HloError
from hlo.ir import Module
from hlo.printer import print_module
from service.options import AssignOptions, NormalizeOptions, NormalizePass, Options
from solver.progress import ProgressCallback
from service.pipeline import (
    Failure,
    FailureType,
    Operation,
    OperationFailed,
    Produced,
    failure_type_of,
    hlo_failure,
)
from solver.errors import AssignmentError
from solver.layout_assignment.assign import assign as assign_layouts
from solver.layout_assignment.assign import score as score_layouts
from solver.layout_assignment.report import summary, to_json


def _fail(exc: HloError) -> OperationFailed:
    return OperationFailed(hlo_failure(exc, failure_type_of(exc), "hlo"))


def _run_passes(
    module: Module, passes: tuple[NormalizePass, ...]
) -> tuple[Module, list[str], list[str], list[tuple[str, float]]]:
    """``normalize``: apply the passes in order; the module, the passes' full names, notes
    about reduces left as they were, and the time of each pass."""
    from hlo.passes import apply_passes

    names: list[str] = []
    notes: list[str] = []
    timings: list[tuple[str, float]] = []
    try:
        for run in apply_passes(module, [p.value for p in passes]):
            names.append(run.name)
            notes.extend(str(note) for note in run.notes)
            timings.append((run.name, run.ms))
            module = run.after
    except HloError as exc:
        raise _fail(exc) from exc
    return module, names, notes, timings


def assign(module: Module, target: Any, options: Options,
           progress: ProgressCallback | None = None) -> Produced:
    """``progress``: hears the solver's progress events while it runs."""
    assert isinstance(options, AssignOptions)  # the pipeline checked the options' type
    try:
        result = assign_layouts(module, target, options, progress=progress)  # normalizes too
    except AssignmentError as exc:
        raise OperationFailed(Failure(FailureType.INFEASIBLE, str(exc), field="target")) from exc
    except HloError as exc:
        raise _fail(exc) from exc
    report = to_json(result, include_hlo=False, include_timings=False)
    report["copies_inserted"] = summary(result)["copies_inserted"]
    return Produced(report, print_module(result.module), tuple(result.timings_ms.items()))


def score(module: Module, target: Any, options: Options) -> Produced:
    try:
        result = score_layouts(module, target)
    except HloError as exc:
        raise _fail(exc) from exc
    return Produced(result.to_json())


def model_cost(module: Module, target: Any) -> int | None:
    """The cost model's price of ``module``'s own layouts (ns), ``None`` if it cannot price it."""
    try:
        return score_layouts(module, target).total
    except HloError:
        return None


def normalize(module: Module, target: Any, options: Options) -> Produced:
    assert isinstance(options, NormalizeOptions)
    rewritten, passes, notes, timings = _run_passes(module, options.passes)
    data = {
        "module": rewritten.name,
        "passes": passes,
        "notes": notes,
        "instructions": sum(len(c.instructions) for c in rewritten.computations),
    }
    return Produced(data, print_module(rewritten), tuple(timings))


OPERATIONS: dict[Operation, Callable[[Module, Any, Options], Produced]] = {
    Operation.ASSIGN: assign,
    Operation.SCORE: score,
    Operation.NORMALIZE: normalize,
}
