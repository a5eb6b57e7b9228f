"""Batch jobs of ``POST /v1/batches``: many modules, one job, progress by polling.

Each module's latest progress event (phase, seconds, best cost so far, bound, gap: see
:mod:`solver.progress`) is kept on its item while a worker runs it, and the last one stays
after it finishes.

A job runs as an asyncio task on the server's own worker pool, at most ``pool.size`` modules
at a time, so single requests still find room in the queue while a batch runs. Jobs live in
memory; the oldest finished jobs are dropped beyond ``keep``. (For batches that must survive a
restart, use ``hlo-layout batch``, which writes every result to disk.)
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from service.api.execution import Executor
from service.pipeline import Operation, Request, Success
from solver.progress import Progress


@dataclass(slots=True)
class BatchItem:
    name: str
    status: str = "pending"  # pending | ok | failed
    cached: bool = False
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    progress: dict[str, Any] | None = None


@dataclass(slots=True)
class BatchJob:
    id: str
    operation: Operation
    items: list[BatchItem]
    created: float = field(default_factory=time.time)
    task: asyncio.Task[None] | None = None

    @property
    def finished(self) -> int:
        return sum(item.status != "pending" for item in self.items)

    @property
    def done(self) -> bool:
        return self.finished == len(self.items)


class BatchJobs:
    def __init__(self, executor: Executor, keep: int) -> None:
        self._executor = executor
        self._keep = keep
        self._jobs: dict[str, BatchJob] = {}

    def start(self, operation: Operation, requests: list[tuple[str, Request]]) -> BatchJob:
        job = BatchJob(uuid.uuid4().hex, operation, [BatchItem(name) for name, _ in requests])
        self._jobs[job.id] = job
        job.task = asyncio.create_task(self._run(job, [r for _, r in requests]))
        self._evict()
        return job

    def get(self, job_id: str) -> BatchJob | None:
        return self._jobs.get(job_id)

    async def _run(self, job: BatchJob, requests: list[Request]) -> None:
        limit = asyncio.Semaphore(self._executor.pool.size)

        async def one(item: BatchItem, request: Request) -> None:
            def heard(event: Progress) -> None:
                item.progress = event.to_json()

            async with limit:
                outcome, cached = await self._executor.execute(request, wait=True,
                                                               progress=heard)
            item.cached = cached
            if isinstance(outcome, Success):
                item.status, item.result = "ok", outcome.to_json()
            else:
                item.status, item.error = "failed", outcome.to_json()

        await asyncio.gather(*(one(i, r) for i, r in zip(job.items, requests)))

    def _evict(self) -> None:
        finished = [j for j in self._jobs.values() if j.done]
        finished.sort(key=lambda j: j.created)
        while len(self._jobs) > self._keep and finished:
            del self._jobs[finished.pop(0).id]

    async def close(self) -> None:
        for job in self._jobs.values():
            if job.task is not None and not job.task.done():
                job.task.cancel()
        tasks = [j.task for j in self._jobs.values() if j.task is not None]
        await asyncio.gather(*tasks, return_exceptions=True)
