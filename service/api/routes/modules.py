"""``/v1/format`` and ``/v1/check``: the HLO text front end."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse

from service.api.deps import ExecutorDep, module_request_reader
from service.api.openapi import module_body
from service.api.routes.errors_doc import error_responses
from service.api.routes.respond import answer
from service.api.schemas import CheckOut, FormatOut
from service.pipeline import ModuleRequest, Operation

router = APIRouter(prefix="/v1", tags=["modules"])
_ERRORS = error_responses(400, 415, 422, 429, 503, 504)


@router.post(
    "/format",
    response_model=FormatOut,
    openapi_extra=module_body(Operation.FORMAT),
    responses=_ERRORS,
    summary="Parse a module and print it in canonical form",
)
async def format_module(
    executor: ExecutorDep,
    request: Annotated[ModuleRequest, Depends(module_request_reader(Operation.FORMAT))],
) -> JSONResponse:
    return await answer(executor, request)


@router.post(
    "/check",
    response_model=CheckOut,
    openapi_extra=module_body(Operation.CHECK),
    responses=_ERRORS,
    summary="Parse and verify a module",
)
async def check(
    executor: ExecutorDep,
    request: Annotated[ModuleRequest, Depends(module_request_reader(Operation.CHECK))],
) -> JSONResponse:
    return await answer(executor, request)
