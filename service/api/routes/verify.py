"""``/v1/verify``: do two modules compute the same function (reference interpreter)?"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from service.api.deps import ExecutorDep
from service.api.routes.errors_doc import error_responses
from service.api.routes.respond import answer
from service.api.schemas import VerifyIn, VerifyOut
from service.pipeline import VerifyRequest

router = APIRouter(prefix="/v1", tags=["modules"])


@router.post(
    "/verify",
    response_model=VerifyOut,
    responses=error_responses(400, 422, 429, 503, 504),
    summary="Check that a rewritten module is equivalent to the original",
)
async def verify(body: VerifyIn, executor: ExecutorDep) -> JSONResponse:
    """Runs both modules on the same random inputs; ``equivalent`` is the verdict."""
    request = VerifyRequest(body.original, body.rewritten, body.options)
    return await answer(executor, request)
