"""How the server runs one request: time limits from settings, the cache, then a worker.

The same :class:`Executor` serves the single-module routes and the batch jobs of
``POST /v1/batches``, so both see the same limits, cache and metrics.
"""

from __future__ import annotations

import asyncio
import dataclasses

from service.cache import ResultCache, cache_key
from service.metrics import Metrics
from service.options import AssignOptions, MeasureOptions, VerifyOptions
from service.pipeline import ModuleRequest, Operation, Outcome, Request, Success
from service.settings import Settings
from service.worker_pool import WorkerPool
from solver.progress import ProgressCallback

#: Untimed rounds a measurement may ask for over HTTP.
MAX_MEASURE_WARMUP = 5


class Executor:
    def __init__(
        self, settings: Settings, pool: WorkerPool, cache: ResultCache | None, metrics: Metrics
    ) -> None:
        self.settings = settings
        self.pool = pool
        self.cache = cache
        self.metrics = metrics

    def limited(self, request: Request) -> tuple[Request, float]:
        """The request with its time limit and memory budget capped by the settings, and its
        wall-clock limit."""
        options = request.options
        if isinstance(request, ModuleRequest) and isinstance(options, AssignOptions):
            capped = self.settings.capped_time_limit(options.time_limit_s)
            request = dataclasses.replace(
                request, options=dataclasses.replace(options, time_limit_s=capped)
            )
            return request, capped + self.settings.time_limit_grace_s
        if isinstance(options, MeasureOptions):
            capped = dataclasses.replace(options, reps=min(options.reps, self.settings.max_measure_reps),
                                         warmup=min(options.warmup, MAX_MEASURE_WARMUP))
            request = dataclasses.replace(request, options=capped)
        if isinstance(options, VerifyOptions):
            budget = min(options.memory_limit_mb, self.settings.max_interpreter_memory_mb)
            request = dataclasses.replace(
                request, options=dataclasses.replace(options, memory_limit_mb=budget)
            )
        return request, self.settings.request_timeout_s

    async def execute(self, request: Request, *, wait: bool = False,
                      progress: ProgressCallback | None = None) -> tuple[Outcome, bool]:
        """The outcome of ``request`` and whether it came from the cache; ``progress`` hears
        the progress events of a layout assignment while a worker runs it.

        Raises :class:`service.worker_pool.QueueFull` when the pool is saturated (unless
        ``wait``).
        """
        request, timeout_s = self.limited(request)
        operation = request.operation.value
        # A measurement is an observation of this machine now, never a cached answer.
        cache = self.cache if request.operation is not Operation.MEASURE else None
        key = cache_key(request) if cache is not None else None
        if cache is not None:
            hit = await asyncio.to_thread(cache.get, key)
            self.metrics.cache_lookups.labels("hit" if hit is not None else "miss").inc()
            if hit is not None:
                self._count(operation, hit)
                return hit, True
        outcome = await self.pool.submit(request, timeout_s, wait=wait, progress=progress)
        if isinstance(outcome, Success):
            self.metrics.operation_time.labels(operation).observe(outcome.elapsed_ms / 1000.0)
        self._count(operation, outcome)
        if cache is not None:
            await asyncio.to_thread(cache.put, key, outcome)
        return outcome, False

    def _count(self, operation: str, outcome: Outcome) -> None:
        label = "ok" if isinstance(outcome, Success) else outcome.type.value
        self.metrics.outcomes.labels(operation, label).inc()
