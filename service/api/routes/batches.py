"""``/v1/batches``: many modules in one job; poll ``GET /v1/batches/{id}`` for progress."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import TypeAdapter, ValidationError

from service.api.batch_jobs import BatchJob
from service.api.deps import BatchJobsDep, SettingsDep, target_spec, with_server_defaults
from service.api.errors import ApiError, error_body, validation_body
from service.api.routes.errors_doc import error_responses
from service.api.schemas import BatchIn, BatchItemOut, BatchOut
from service.pipeline import NEEDS_TARGET, OPTIONS_OF, ModuleRequest, Request

router = APIRouter(prefix="/v1/batches", tags=["batches"])


def _out(job: BatchJob, with_results: bool) -> BatchOut:
    failed = sum(item.status == "failed" for item in job.items)
    succeeded = sum(item.status == "ok" for item in job.items)
    results = None
    if with_results:
        results = [
            BatchItemOut(
                name=i.name, status=i.status, cached=i.cached, result=i.result, error=i.error,  # type: ignore[arg-type]
                progress=i.progress,  # type: ignore[arg-type]
            )
            for i in job.items
        ]
    return BatchOut(
        id=job.id,
        operation=job.operation,
        status="done" if job.done else "running",
        total=len(job.items),
        finished=succeeded + failed,
        succeeded=succeeded,
        failed=failed,
        results=results,
    )


@router.post(
    "",
    status_code=202,
    response_model=BatchOut,
    responses=error_responses(422),
    summary="Start a batch job over many modules",
)
async def create_batch(body: BatchIn, jobs: BatchJobsDep, settings: SettingsDep) -> BatchOut:
    if len(body.modules) > settings.max_batch_modules:
        raise ApiError(
            422,
            error_body(
                "invalid_request",
                f"at most {settings.max_batch_modules} modules per batch",
                field="modules",
            ),
        )
    names = [m.name for m in body.modules]
    if len(set(names)) != len(names):
        raise ApiError(
            422, error_body("invalid_request", "module names must be unique", field="modules")
        )
    if body.operation in NEEDS_TARGET and body.target is None:
        raise ApiError(
            422, error_body("invalid_request", "this operation needs a target", field="target")
        )
    try:
        options = TypeAdapter(OPTIONS_OF[body.operation]).validate_python(body.options)
    except ValidationError as exc:
        errors = [{**e, "loc": ("options", *e["loc"])} for e in exc.errors()]
        raise ApiError(422, validation_body(errors)) from exc
    options = with_server_defaults(options, body.options, settings)
    target = target_spec(body.target) if body.operation in NEEDS_TARGET else None
    requests: list[tuple[str, Request]] = [
        (m.name, ModuleRequest(body.operation, m.hlo, m.name, target, options))
        for m in body.modules
    ]
    job = jobs.start(body.operation, requests)
    return _out(job, with_results=False)


@router.get(
    "/{batch_id}",
    response_model=BatchOut,
    responses=error_responses(404),
    summary="Progress and per-module results of a batch job",
)
async def get_batch(
    batch_id: str,
    jobs: BatchJobsDep,
    results: Annotated[bool, Query(description="Include per-module results.")] = True,
) -> BatchOut:
    job = jobs.get(batch_id)
    if job is None:
        raise ApiError(404, error_body("not_found", f"no batch '{batch_id}'"))
    return _out(job, with_results=results)
