"""Measured time in XLA:CPU next to the cost model's prediction: the ``measured`` report.

``measure_report([("xla", theirs), ("ours", ours)], target)`` runs the modules on the XLA path
(:func:`service.xla.execution.run_modules`: same inputs, one pinned CPU, interleaved rounds,
the reference twice per round) and prices each with the target's cost model
(:func:`service.layout_operations.model_cost`). The first module is the reference.

The model prices only what layouts change (data movement); the rest of a module's time is the
same for every layout. So the predicted ratio puts the model's difference on top of the
reference's measured time: ``predicted = 1 + (cost - cost_ref) / measured_ref``, and compares
with the measured paired ratio. Both are printed; neither is hidden when they disagree.

Report (JSON), one row per module (``runs_per_sample``: one timed sample is that many executions
back to back; ``sessions``: the XLA processes whose rounds are pooled; see
:func:`~service.xla.execution.run_modules`)::

    {"platform": "cpu", "target": "cpu", "reference": "xla", "seed": 0, "reps": 10,
     "sessions": 1, "pinned_cpu": 1, "runs_per_sample": 12, "load_average": [0.9, 0.8, 0.7],
     "noise": {"median": 1.003, "p25": .., "p75": .., "rounds": 10},      # reference / reference
     "modules": [{"label": "xla", "refusal": null, "median_ms": 5.1, "min_ms": 4.9,
                  "temp_bytes": 393216, "outputs_match": true, "exact": true, "max_error": 0.0, "difference": null,
                  "ratio": {...}, "predicted_ns": 120000, "predicted_ratio": 1.0,
                  "verdict": "reference"}, ...]}

``temp_bytes``: XLA's temporary buffers for one execution (its buffer assignment, which follows
its schedule; ``null`` where the backend does not say).

``verdict``: ``faster``/``slower`` when the paired median differs from 1 by more than 3 % and
by more than twice the A/A noise, else ``same``; ``refused`` or ``wrong outputs`` otherwise.
"""

from __future__ import annotations

import os
from typing import Any, Sequence

from hlo.ir import Module
from service.xla.execution import Measurement, run_modules

#: A paired ratio further than this from 1 (and beyond the noise) counts as a difference.
SIGNIFICANT = 0.03


def measure_report(modules: Sequence[tuple[str, Module]], target: Any, *, seed: int = 0,
                   reps: int = 10, warmup: int = 2, sessions: int = 1) -> dict[str, Any]:
    """Run, time and price ``modules`` (the first is the reference); see the module doc.
    ``sessions``: the rounds are shared out among that many XLA processes (``run_modules``)."""
    from service.layout_operations import model_cost

    measurement = run_modules(modules, seed=seed, reps=reps, warmup=warmup, sessions=sessions)
    costs = [model_cost(module, target) for _, module in modules]
    noise = measurement.noise()
    return {
        "platform": "cpu",
        "target": getattr(target, "name", str(target)),
        "reference": modules[0][0] if modules else None,
        "seed": seed,
        "reps": reps,
        "sessions": measurement.sessions,
        "pinned_cpu": measurement.cpu,
        "runs_per_sample": measurement.runs_per_sample,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "noise": noise.to_json() if noise else None,
        "modules": [_row(measurement, i, costs) for i in range(len(modules))],
    }


def _row(measurement: Measurement, index: int, costs: list[int | None]) -> dict[str, Any]:
    run = measurement.executions[index]
    row: dict[str, Any] = {"label": run.label, "refusal": run.refusal,
                           "median_ms": _round(run.median_ms), "min_ms": _round(run.min_ms),
                           "temp_bytes": run.temp_bytes, "predicted_ns": costs[index]}
    reference = measurement.executions[0]
    compared = measurement.matches(index)
    if compared is not None:
        row.update(outputs_match=compared.ok, exact=compared.exact,
                   max_error=float(f"{compared.max_error:.3g}"),
                   difference=compared.message or (str(compared.difference)
                                                   if compared.difference else None))
    ratio = measurement.ratio(index) if run.ran and reference.ran else None
    row["ratio"] = ratio.to_json() if ratio else None
    row["predicted_ratio"] = _predicted_ratio(reference.median_ms, costs[0], costs[index])
    row["verdict"] = _verdict(index, row, measurement)
    return row


def _predicted_ratio(reference_ms: float | None, ref_ns: int | None, ns: int | None) -> float | None:
    if reference_ms is None or ref_ns is None or ns is None or reference_ms <= 0:
        return None
    return round(1.0 + (ns - ref_ns) / (reference_ms * 1e6), 4)


def _verdict(index: int, row: dict[str, Any], measurement: Measurement) -> str:
    if row["refusal"] is not None:
        return "refused"
    if row.get("outputs_match") is False:
        return "wrong outputs"
    if index == 0:
        return "reference"
    ratio = row["ratio"]
    if ratio is None:
        return "not timed"
    noise = measurement.noise()
    floor = max(SIGNIFICANT, 2 * abs(noise.median - 1.0)) if noise else SIGNIFICANT
    if ratio["median"] < 1 - floor:
        return "faster"
    if ratio["median"] > 1 + floor:
        return "slower"
    return "same"


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def exit_code(report: dict[str, Any]) -> int:
    """0 all ran with matching outputs; 1 an output differs; 2 a module could not run."""
    rows = report["modules"]
    if any(row["refusal"] is not None for row in rows):
        return 2
    if any(row.get("outputs_match") is False for row in rows):
        return 1
    return 0


def xla_check(original: Module, rewritten: Module, *, seed: int = 0) -> dict[str, Any]:
    """XLA as a second execution oracle: ``rewritten`` run with exactly its layouts against
    ``original`` compiled by XLA's whole pipeline, on the same seeded inputs.

    ``{"ran": bool, "refusal": str|None, "outputs_match": bool|None, "exact", "max_error",
    "difference"}``.
    """
    measurement = run_modules([("original", original), ("rewritten", rewritten)], seed=seed,
                              plain={"original"})
    refusals = [e.refusal for e in measurement.executions if e.refusal]
    out: dict[str, Any] = {"ran": not refusals, "refusal": "; ".join(refusals) or None,
                           "outputs_match": None}
    compared = measurement.matches(1)
    if compared is not None:
        out.update(outputs_match=compared.ok, exact=compared.exact,
                   max_error=float(f"{compared.max_error:.3g}"),
                   difference=compared.message or (str(compared.difference)
                                                   if compared.difference else None))
    return out
