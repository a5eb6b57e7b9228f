"""Every error answer is JSON ``{"type", "message", ["field", "line", "column", "details"]}``.

Pipeline failures map to status codes here, in one table; validation errors name the
offending field (``options.time_limit_s``); unknown routes, wrong methods and oversized bodies
keep their HTTP status but get the same body shape; an unexpected exception is a 500 with a
type and no traceback.
"""

from __future__ import annotations

from typing import Any, Iterable

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from service.pipeline import Failure, FailureType

STATUS_OF: dict[FailureType, int] = {
    FailureType.PARSE_ERROR: 400,
    FailureType.VERIFY_ERROR: 400,
    FailureType.LAYOUT_ERROR: 400,
    FailureType.INVALID_TARGET: 422,
    FailureType.INVALID_OPTION: 422,
    FailureType.LAYOUT_DEPENDENT_BITCAST: 422,
    FailureType.INFEASIBLE: 422,
    FailureType.TOO_LARGE: 413,
    FailureType.QUEUE_FULL: 429,
    FailureType.INTERNAL_ERROR: 500,
    FailureType.NOT_AVAILABLE: 501,
    FailureType.NOT_RUNNABLE: 422,
    FailureType.WORKER_CRASHED: 503,
    FailureType.TIMEOUT: 504,
}

_HTTP_TYPES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
    415: "unsupported_media_type",
}


class ApiError(Exception):
    """An error answer raised from a route or dependency."""

    def __init__(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None):
        super().__init__(body.get("message", ""))
        self.status = status
        self.body = body
        self.headers = headers

    @staticmethod
    def from_failure(failure: Failure, headers: dict[str, str] | None = None) -> ApiError:
        return ApiError(STATUS_OF[failure.type], failure.to_json(), headers)


def error_body(kind: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"type": kind, "message": message, **{k: v for k, v in extra.items() if v is not None}}


_PLAIN_TAGS = {"str", "int", "float", "bool", "dict", "list", "none"}


def _union_tag(part: str) -> bool:
    """Whether a location part names a union member (``str``, ``dict[str,any]``, a model
    class) rather than a field: request fields are snake_case, never these."""
    return (part in _PLAIN_TAGS or "[" in part or part[:1].isupper()
            or part.startswith("function-"))


def validation_body(errors: Iterable[dict[str, Any]], drop: tuple[str, ...] = ("body", "query")) -> dict[str, Any]:
    """422 body from pydantic errors; ``field`` is the dotted location of the first one.

    The members of a union fail one by one (``target`` is a name or an object): their
    errors become one detail on the field itself, the alternatives joined by "or".
    """
    details: list[dict[str, str]] = []
    by_field: dict[str, dict[str, str]] = {}
    for err in errors:
        loc = [str(part) for part in err.get("loc", ())]
        if loc and loc[0] in drop:
            loc = loc[1:]
        field = ".".join(part for part in loc if not _union_tag(part)) or "body"
        message = err.get("msg", "invalid")
        if field in by_field:
            if message not in by_field[field]["message"]:
                by_field[field]["message"] += f", or {message[0].lower()}{message[1:]}"
            continue
        by_field[field] = {"field": field, "message": message}
        details.append(by_field[field])
    if not details:
        details.append({"field": "body", "message": "invalid request"})
    first = details[0]
    return error_body(
        "invalid_request", f"{first['field']}: {first['message']}", field=first["field"],
        details=details,
    )


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse(exc.body, status_code=exc.status, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse(validation_body(exc.errors()), status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        kind = _HTTP_TYPES.get(exc.status_code, "http_error")
        body = error_body(kind, str(exc.detail))
        return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        body = error_body("internal_error", f"unexpected {type(exc).__name__}")
        return JSONResponse(body, status_code=500)
