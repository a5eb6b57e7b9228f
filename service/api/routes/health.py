"""``/healthz`` (the process answers), ``/readyz`` (workers are up), ``/metrics``."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response

from service.api.deps import ExecutorDep, MetricsDep
from service.api.schemas import HealthOut

router = APIRouter(tags=["health"])


@router.get(
    "/healthz", response_model=HealthOut, response_model_exclude_none=True, summary="Liveness"
)
async def healthz() -> HealthOut:
    """Answered by the event loop itself, so it stays fast during long solves."""
    return HealthOut(status="ok")


@router.get(
    "/readyz",
    response_model=HealthOut,
    responses={503: {"model": HealthOut, "description": "Not ready."}},
    summary="Readiness",
)
async def readyz(executor: ExecutorDep) -> JSONResponse:
    stats = executor.pool.stats
    ready = executor.pool.alive_workers() > 0
    body = HealthOut(
        status="ready" if ready else "starting",
        workers=stats.size,
        busy=stats.busy,
        waiting=stats.waiting,
    )
    return JSONResponse(body.model_dump(), status_code=200 if ready else 503)


@router.get("/metrics", summary="Prometheus metrics", response_class=Response)
async def metrics(metrics: MetricsDep) -> Response:
    return Response(metrics.render(), media_type=metrics.content_type)
