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
from service.options import AssignOptions, NormalizeOptions, Options
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
from solver.layout_assignment.report import to_json


def _fail(exc: HloError) -> OperationFailed:
    return OperationFailed(hlo_failure(exc, failure_type_of(exc), "hlo"))


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
    timings = (*result.timings_ms.items(), ("wall", result.wall_ms))
    return Produced(report, print_module(result.module), timings)


def score(module: Module, target: Any, options: Options) -> Produced:
    try:
        result = score_layouts(module, target)
    except HloError as exc:
        raise _fail(exc) from exc
    return Produced(result.to_json())


def model_cost(module: Module, target: Any) -> int | None:
    """The cost model's price of ``module``'s own layouts (ns), with what its elementwise ops
    pay for overwriting their operands' buffers; ``None`` if it cannot price it."""
    try:
        return score_layouts(module, target).predicted
    except HloError:
        return None


def normalize(module: Module, target: Any, options: Options) -> Produced:
    """The passes in order, through the one pass loop (:func:`hlo.passes.apply_passes`).

    ``data``: the passes run (full names), the notes of each (reduces left as they were),
    the instruction count; with ``options.verify``, ``verified`` and, where a pass's output
    fails the verifiers, ``failed_pass`` and its ``findings`` (no module is returned then).
    """
    from hlo.passes import apply_passes, findings

    assert isinstance(options, NormalizeOptions)
    data: dict[str, Any] = {"module": module.name, "passes": [], "notes": []}
    timings: list[tuple[str, float]] = []
    try:
        for run in apply_passes(module, [p.value for p in options.passes]):
            data["passes"].append(run.name)
            data["notes"].extend(str(note) for note in run.notes)
            timings.append((run.name, run.ms))
            module = run.after
            found = findings(module) if options.verify else ()
            if found:
                data.update(verified=False, failed_pass=run.name, findings=list(found))
                return Produced(data, None, tuple(timings))
    except HloError as exc:
        raise _fail(exc) from exc
    data["instructions"] = sum(len(c.instructions) for c in module.computations)
    if options.verify:
        data["verified"] = True
    return Produced(data, print_module(module, short=options.short), tuple(timings))


OPERATIONS: dict[Operation, Callable[[Module, Any, Options], Produced]] = {
    Operation.ASSIGN: assign,
    Operation.SCORE: score,
    Operation.NORMALIZE: normalize,
}
