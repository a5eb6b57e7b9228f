"""``/v1/assign``, ``/v1/score``, ``/v1/normalize``: the layout engine's operations."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse

from service.api.deps import ExecutorDep, module_request_reader
from service.api.openapi import module_body
from service.api.routes.errors_doc import error_responses
from service.api.routes.respond import answer
from service.api.schemas import AssignOut, NormalizeOut, ScoreOut
from service.pipeline import ModuleRequest, Operation

router = APIRouter(prefix="/v1", tags=["layouts"])
_ERRORS = error_responses(400, 415, 422, 429, 503, 504)


@router.post(
    "/assign",
    response_model=AssignOut,
    openapi_extra=module_body(Operation.ASSIGN),
    responses=_ERRORS,
    summary="Assign optimal physical layouts to a module",
)
async def assign(
    executor: ExecutorDep,
    request: Annotated[ModuleRequest, Depends(module_request_reader(Operation.ASSIGN))],
) -> JSONResponse:
    """The module with a layout on every array and the report (cost, proof or gap, inserted
    conversions, baselines). A ``bitcast`` in a module without layouts is a 422
    ``layout_dependent_bitcast``; hard rules no layout meets are a 422 ``infeasible``."""
    return await answer(executor, request)


@router.post(
    "/score",
    response_model=ScoreOut,
    openapi_extra=module_body(Operation.SCORE),
    responses=_ERRORS,
    summary="Cost of the layouts already written in a module",
)
async def score(
    executor: ExecutorDep,
    request: Annotated[ModuleRequest, Depends(module_request_reader(Operation.SCORE))],
) -> JSONResponse:
    return await answer(executor, request)


@router.post(
    "/normalize",
    response_model=NormalizeOut,
    openapi_extra=module_body(Operation.NORMALIZE),
    responses=_ERRORS,
    summary="Rewrite reductions (and optionally all layouts) into canonical form",
)
async def normalize(
    executor: ExecutorDep,
    request: Annotated[ModuleRequest, Depends(module_request_reader(Operation.NORMALIZE))],
) -> JSONResponse:
    return await answer(executor, request)


