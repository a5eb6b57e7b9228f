"""``/v1/measure``: laid-out modules run and timed in XLA:CPU (the ``measured`` report).

Bounded so one request cannot hold the server: the rounds are capped by the server's
``max_measure_reps``, the work runs on a worker under ``request_timeout_s``, and a measurement
is never served from the cache (it is an observation, not a function of the request). A
module the XLA path cannot run is a 422 ``not_runnable`` naming it and the reason.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from service.api.deps import ExecutorDep, target_spec
from service.api.errors import ApiError, error_body
from service.api.routes.errors_doc import error_responses
from service.api.schemas import MeasureIn, MeasureOut
from service.pipeline import MeasureRequest, Success
from service.worker_pool import QueueFull

router = APIRouter(prefix="/v1", tags=["modules"])


@router.post(
    "/measure",
    response_model=MeasureOut,
    responses=error_responses(400, 422, 429, 501, 503, 504),
    summary="Run laid-out modules in XLA:CPU: outputs compared, paired times, predicted ratios",
)
async def measure(body: MeasureIn, executor: ExecutorDep) -> JSONResponse:
    request = MeasureRequest(tuple((m.label, m.hlo) for m in body.modules),
                             target_spec(body.target) or "cpu", body.options, body.xla_layouts_of)
    try:
        outcome, _ = await executor.execute(request)
    except QueueFull as exc:
        raise ApiError(429, error_body("queue_full", f"server busy: {exc}"),
                       {"Retry-After": str(executor.settings.retry_after_s)}) from exc
    if not isinstance(outcome, Success):
        raise ApiError.from_failure(outcome)
    _refuse_unrun(outcome.data, body.xla_layouts_of is not None)
    return JSONResponse(outcome.to_json())


def _refuse_unrun(report: dict[str, Any], xla_first: bool) -> None:
    """422 naming every module the path could not run (the partial report rides along)."""
    refused = [(k, row) for k, row in enumerate(report["modules"]) if row["refusal"]]
    if not refused:
        return
    details = [{"field": _field(k, xla_first), "message": f"{row['label']}: {row['refusal']}"}
               for k, row in refused]
    raise ApiError(422, error_body(
        "not_runnable", "cannot run on the XLA:CPU path: "
        + "; ".join(d["message"] for d in details),
        field=details[0]["field"], details=details, measured=report))


def _field(row: int, xla_first: bool) -> str:
    if xla_first:
        return "xla_layouts_of" if row == 0 else f"modules.{row - 1}"
    return f"modules.{row}"
