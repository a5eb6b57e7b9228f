"""Typed dependencies of the routes: the app's services, authentication, request reading."""

from __future__ import annotations

import dataclasses
import json
import secrets
import types
import typing
from typing import Annotated, Any, Awaitable, Callable

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import ValidationError

from service.api.batch_jobs import BatchJobs
from service.api.errors import ApiError, error_body, validation_body
from service.api.execution import Executor
from service.api.schemas import MODULE_INPUTS
from service.metrics import Metrics
from service.options import AssignOptions
from service.pipeline import InlineTarget, ModuleRequest, Operation
from service.settings import Settings


def get_settings(request: Request) -> Settings:
    return request.app.state.settings


def get_executor(request: Request) -> Executor:
    return request.app.state.executor


def get_metrics(request: Request) -> Metrics:
    return request.app.state.metrics


def get_batch_jobs(request: Request) -> BatchJobs:
    return request.app.state.batch_jobs


SettingsDep = Annotated[Settings, Depends(get_settings)]
ExecutorDep = Annotated[Executor, Depends(get_executor)]
MetricsDep = Annotated[Metrics, Depends(get_metrics)]
BatchJobsDep = Annotated[BatchJobs, Depends(get_batch_jobs)]

_bearer = HTTPBearer(auto_error=False, description="Required when the server has a token set.")


def require_token(
    settings: SettingsDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> None:
    if settings.auth_token is None:
        return
    expected = settings.auth_token.get_secret_value().encode()
    given = credentials.credentials.encode() if credentials is not None else b""
    if not secrets.compare_digest(given, expected):
        raise ApiError(
            401,
            error_body("unauthorized", "a valid bearer token is required"),
            headers={"WWW-Authenticate": "Bearer"},
        )


def target_spec(value: Any) -> str | InlineTarget | None:
    if isinstance(value, dict):
        return InlineTarget.from_data(value)
    return value


async def read_json(request: Request) -> Any:
    body = await request.body()
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ApiError(
            422, error_body("invalid_request", f"body is not JSON: {exc}", field="body")
        ) from None


def module_request_reader(operation: Operation) -> Callable[[Request], Awaitable[ModuleRequest]]:
    """A dependency reading the body of a single-module route: JSON (the schema of the
    operation) or ``text/plain`` HLO with ``name``, ``target`` and the options as query
    parameters (``?target=tpu&time_limit_s=5&normalize=reductions``)."""
    model = MODULE_INPUTS[operation]

    async def read(request: Request) -> ModuleRequest:
        media = request.headers.get("content-type", "application/json").split(";")[0].strip()
        media = media.lower()
        if media == "text/plain":
            raw = await request.body()
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ApiError(
                    400, error_body("bad_request", f"body is not UTF-8: {exc}", field="hlo")
                ) from None
            data: dict[str, Any] = {"hlo": text}
            options: dict[str, Any] = {}
            for key in request.query_params:
                values = request.query_params.getlist(key)
                if key in ("name", "target"):
                    data[key] = values[-1]
                elif _is_list_option(model, key):
                    # ``?normalize=`` (an empty value) is the empty list.
                    options[key] = [v for v in values if v != ""]
                else:
                    options[key] = values[-1]
            data["options"] = options
            try:
                body = model.model_validate(data)
            except ValidationError as exc:
                raise ApiError(422, validation_body(exc.errors(), drop=("options",))) from None
            given = options
        elif media in ("application/json", ""):
            raw = await read_json(request)
            try:
                body = model.model_validate(raw)
            except ValidationError as exc:
                raise ApiError(422, validation_body(exc.errors())) from None
            given = raw.get("options") if isinstance(raw, dict) else None
        else:
            raise ApiError(
                415,
                error_body(
                    "unsupported_media_type",
                    f"send application/json or text/plain, not {media}",
                ),
            )
        return ModuleRequest(
            operation,
            body.hlo,
            name=body.name,
            target=target_spec(getattr(body, "target", None)),
            options=with_server_defaults(body.options, given, request.app.state.settings),
        )

    return read


def with_server_defaults(options: Any, given: Any, settings: Settings) -> Any:
    """``options`` with the server's default time limit where the request did not set one."""
    if isinstance(options, AssignOptions) and not (
        isinstance(given, dict) and "time_limit_s" in given
    ):
        return dataclasses.replace(options, time_limit_s=settings.default_time_limit_s)
    return options


def _is_list_option(model: type, key: str) -> bool:
    """Whether option ``key`` is a tuple (a repeated query parameter)."""
    options_type = model.model_fields["options"].annotation
    hint = typing.get_type_hints(options_type, include_extras=True).get(key)
    if typing.get_origin(hint) in (typing.Union, types.UnionType):  # an optional list
        hint = next(a for a in typing.get_args(hint) if a is not type(None))
    if typing.get_origin(hint) is typing.Annotated:
        hint = typing.get_args(hint)[0]
    return typing.get_origin(hint) is tuple
