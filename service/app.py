"""The HTTP application factory: ``create_app(settings)``; nothing is created at import.

Everything the routes use (worker pool, cache, metrics, batch jobs) is made in the lifespan
and kept on ``app.state``; routes reach it through the typed dependencies of
:mod:`service.api.deps`. ``runner`` replaces the core function the workers call, which is how
tests add slow or crashing operations without any such thing existing in production.

Run it with ``hlo-layout serve`` or ``uvicorn --factory`` on a callable building Settings.
"""

from __future__ import annotations

import time
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator

from fastapi import Depends, FastAPI
from fastapi.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from service import pipeline
from service.api.batch_jobs import BatchJobs
from service.api.deps import require_token
from service.api.errors import error_body, install_error_handlers
from service.api.execution import Executor
from service.api.openapi import install_openapi
from service.api.routes import (
    batches, explorer, health, layouts, measure, modules, targets, verify,
)
from service.cache import PACKAGE_VERSION, ResultCache
from service.explorer.page import STATIC
from service.metrics import Metrics
from service.settings import Settings
from service.worker_pool import Runner, WorkerPool

DESCRIPTION = """Optimal physical layouts for XLA HLO modules.

Send HLO text (JSON body, or `text/plain` with options as query parameters); errors are JSON
with a `type`, a `message` and, for HLO, the `line` and `column`.
"""


def create_app(settings: Settings, *, runner: Runner = pipeline.run) -> FastAPI:
    metrics = Metrics()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        pool = WorkerPool(
            settings.workers,
            settings.queue_limit,
            runner=runner,
            on_restart=lambda reason: metrics.worker_restarts.labels(reason).inc(),
        )
        await pool.start()
        metrics.watch_pool(lambda: pool.stats.busy, lambda: pool.stats.waiting)
        cache = ResultCache(settings.cache_path) if settings.cache_path is not None else None
        executor = Executor(settings, pool, cache, metrics)
        app.state.executor = executor
        app.state.batch_jobs = BatchJobs(executor, settings.batches_kept)
        try:
            yield
        finally:
            await app.state.batch_jobs.close()
            await pool.close()
            if cache is not None:
                cache.close()

    app = FastAPI(
        title="hlo-layout",
        version=PACKAGE_VERSION,
        description=DESCRIPTION,
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.metrics = metrics

    for module in (layouts, modules, verify, measure, targets, batches, explorer):
        app.include_router(module.router, dependencies=[Depends(require_token)])
    app.include_router(health.router)
    # The explorer page and its scripts hold no data: they load without the token and ask
    # for it when a /v1 call needs one.
    app.include_router(explorer.page_router)
    app.mount("/static", StaticFiles(directory=str(STATIC)), name="static")

    install_error_handlers(app)
    install_openapi(app)
    app.add_middleware(RequestMetrics, metrics=metrics)
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)
    return app


class BodyLimit:
    """413 for a body over ``max_bytes``, by ``Content-Length`` or by counting a streamed body,
    before any route reads it."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_bytes):
            await self._reject(send)
            return
        if declared is not None:
            await self.app(scope, receive, send)
            return
        # No length given: read the body (bounded) and replay it to the app.
        messages: list[Message] = []
        size = 0
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            size += len(message.get("body", b""))
            if size > self.max_bytes:
                await self._reject(send)
                return
            if not message.get("more_body", False):
                break

        async def replay() -> Message:
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)

    async def _reject(self, send: Send) -> None:
        import json

        body = json.dumps(
            error_body("payload_too_large", f"request body over {self.max_bytes} bytes")
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


class RequestMetrics:
    """Counts and times every request by route template, method and status."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status: dict[str, Any] = {"code": 500}

        async def send_wrapper(message: Message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            route = scope.get("route")
            template = getattr(route, "path", None) or "unmatched"
            self.metrics.requests.labels(template, scope["method"], str(status["code"])).inc()
            self.metrics.latency.labels(template).observe(time.perf_counter() - start)
