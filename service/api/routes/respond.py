"""Turning an outcome into an HTTP answer, shared by the single-module routes."""

from __future__ import annotations

from fastapi.responses import JSONResponse

from service.api.errors import ApiError, error_body
from service.api.execution import Executor
from service.pipeline import Request, Success
from service.worker_pool import QueueFull


async def answer(executor: Executor, request: Request) -> JSONResponse:
    """Run ``request``; 200 with the result, or the error its failure maps to."""
    retry_after = {"Retry-After": str(executor.settings.retry_after_s)}
    try:
        outcome, cached = await executor.execute(request)
    except QueueFull as exc:
        raise ApiError(429, error_body("queue_full", f"server busy: {exc}"), retry_after) from exc
    if not isinstance(outcome, Success):
        transient = outcome.type.value in ("worker_crashed",)
        raise ApiError.from_failure(outcome, retry_after if transient else None)
    return JSONResponse(outcome.to_json(), headers={"X-Cache": "hit" if cached else "miss"})
