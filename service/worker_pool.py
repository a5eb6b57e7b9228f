"""A pool of solver processes driven from asyncio: bounded queue, time limits, self-healing.

CPU-bound work (parsing, solving) runs in separate processes so the event loop keeps
answering health checks during a long solve. Each worker owns one pipe; the event loop
watches the pipe and the process sentinel with ``add_reader``, so waiting costs no thread.

Why not ``concurrent.futures.ProcessPoolExecutor``: it cannot stop one runaway job (only the
whole pool), and one killed worker breaks every pending future. Here a job past its limit
gets its worker killed and replaced (``timeout``), and a worker that dies mid-job is replaced
and its job answered with ``worker_crashed``; other jobs are not affected.

Example::

    pool = WorkerPool(size=2, queue_limit=8)
    await pool.start()
    outcome = await pool.submit(request, timeout_s=30)   # Success | Failure
    await pool.close()
"""

from __future__ import annotations

import asyncio
import multiprocessing
import multiprocessing.connection
import os
import signal
from dataclasses import dataclass
from typing import Any, Callable

from service import pipeline
from service.pipeline import Failure, FailureType
from solver.progress import Progress, ProgressCallback, throttled

#: The core function a worker calls: ``runner(request, progress)``; ``progress`` receives
#: the :class:`~solver.progress.Progress` events of a long operation.
Runner = Callable[[Any, ProgressCallback], Any]

#: Least seconds between two progress messages of one phase sent back by a worker.
PROGRESS_EVERY_S = 0.25


class QueueFull(Exception):
    """More work is waiting than the pool accepts; the caller should retry later."""


def _worker_main(conn: multiprocessing.connection.Connection, runner: Runner) -> None:
    # Ctrl-C goes to the whole process group; the parent decides when workers stop.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    pipeline.warm_up()
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        try:
            # Progress events travel on the same pipe, ahead of the outcome.
            outcome = runner(job, throttled(conn.send, PROGRESS_EVERY_S))
        except Exception as exc:  # the runner is meant to return failures, not raise them
            outcome = Failure(FailureType.INTERNAL_ERROR, f"{type(exc).__name__}: {exc}")
        conn.send(outcome)


@dataclass(slots=True)
class _Worker:
    process: multiprocessing.process.BaseProcess
    conn: multiprocessing.connection.Connection
    # Its job was abandoned (the caller was cancelled): a late result may still be in the pipe.
    dirty: bool = False

    @property
    def alive(self) -> bool:
        return self.process.exitcode is None


@dataclass(slots=True)
class PoolStats:
    size: int
    busy: int
    waiting: int
    restarts: dict[str, int]


class WorkerPool:
    """``size`` worker processes; at most ``queue_limit`` jobs wait for a free worker."""

    def __init__(
        self,
        size: int,
        queue_limit: int,
        runner: Runner = pipeline.run,
        on_restart: Callable[[str], None] | None = None,
    ) -> None:
        self.size = size
        self.queue_limit = queue_limit
        self._runner = runner
        self._on_restart = on_restart
        # spawn, not fork: the server process runs threads (uvicorn, sqlite) that fork would copy.
        self._context = multiprocessing.get_context("spawn")
        self._idle: asyncio.Queue[_Worker] = asyncio.Queue()
        self._workers: list[_Worker] = []
        self._pending = 0
        self._busy = 0
        self._restarts = {"crash": 0, "timeout": 0, "cancelled": 0}
        self._closed = False

    # -- lifecycle -----------------------------------------------------------

    async def start(self) -> None:
        for _ in range(self.size):
            self._idle.put_nowait(self._spawn())

    def _spawn(self) -> _Worker:
        parent, child = self._context.Pipe(duplex=True)
        process = self._context.Process(
            target=_worker_main, args=(child, self._runner), daemon=True, name="hlo-layout-worker"
        )
        process.start()
        child.close()
        worker = _Worker(process, parent)
        self._workers.append(worker)
        return worker

    def _discard(self, worker: _Worker, reason: str) -> _Worker:
        """Kill ``worker`` and start its replacement."""
        if worker.alive:
            worker.process.kill()
        worker.process.join(timeout=5)
        worker.conn.close()
        self._workers.remove(worker)
        self._restarts[reason] = self._restarts.get(reason, 0) + 1
        if self._on_restart is not None:
            self._on_restart(reason)
        return self._spawn()

    async def close(self) -> None:
        self._closed = True
        for worker in list(self._workers):
            try:
                worker.conn.send(None)
            except OSError:
                pass
        for worker in list(self._workers):
            await asyncio.to_thread(worker.process.join, 2.0)
            if worker.alive:
                worker.process.kill()
                worker.process.join(timeout=2)
            worker.conn.close()
        self._workers.clear()

    # -- work ------------------------------------------------------------------

    @property
    def stats(self) -> PoolStats:
        return PoolStats(self.size, self._busy, self._pending - self._busy, dict(self._restarts))

    def alive_workers(self) -> int:
        return sum(w.alive for w in self._workers)

    def worker_pids(self) -> list[int]:
        return [w.process.pid for w in self._workers if w.process.pid is not None]

    async def submit(self, request: Any, timeout_s: float, *, wait: bool = False,
                     progress: ProgressCallback | None = None) -> Any:
        """Run ``request`` on a worker; its outcome, or a ``Failure`` for timeout and crash.

        Raises :class:`QueueFull` when ``queue_limit`` jobs already wait, unless ``wait``
        (batch jobs, which bound their own concurrency, wait instead). ``progress`` hears
        the operation's progress events (on the event loop) while it runs.
        """
        if self._closed:
            return Failure(FailureType.WORKER_CRASHED, "the worker pool is shut down")
        if not wait and self._pending >= self.size + self.queue_limit:
            raise QueueFull(f"{self._pending} jobs in progress or waiting")
        self._pending += 1
        try:
            worker = await self._idle.get()
            self._busy += 1
            try:
                worker, outcome = await self._run_on(worker, request, timeout_s, progress)
            except asyncio.CancelledError:
                worker.dirty = True
                raise
            finally:
                self._busy -= 1
                if worker.dirty and not self._closed:
                    worker = self._discard(worker, "cancelled")
                if not self._closed:
                    self._idle.put_nowait(worker)
            return outcome
        finally:
            self._pending -= 1

    @staticmethod
    async def _wait(worker: _Worker, timeout_s: float) -> str:
        """Until the worker's pipe has something (``result``), it exits (``exit``), or
        ``timeout_s`` passes (``timeout``)."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[str] = loop.create_future()

        def wake(what: str) -> None:
            if not done.done():
                done.set_result(what)

        conn_fd = worker.conn.fileno()
        sentinel = worker.process.sentinel
        # Some event loops (uvloop) make a watched descriptor non-blocking; the pipe must be
        # blocking again before it is read, so it is watched only while waiting.
        loop.add_reader(conn_fd, wake, "result")
        loop.add_reader(sentinel, wake, "exit")
        try:
            return await asyncio.wait_for(done, max(0.0, timeout_s))
        except TimeoutError:
            return "timeout"
        finally:
            loop.remove_reader(conn_fd)
            loop.remove_reader(sentinel)
            os.set_blocking(conn_fd, True)

    async def _run_on(self, worker: _Worker, request: Any, timeout_s: float,
                      progress: ProgressCallback | None = None) -> tuple[_Worker, Any]:
        if not worker.alive:  # died while idle (e.g. killed from outside): heal first
            worker = self._discard(worker, "crash")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        try:
            # A big request fills the pipe: send from a thread so the loop never waits on it.
            await asyncio.to_thread(worker.conn.send, request)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the worker is gone; the sentinel below says so at once
        while True:
            what = await self._wait(worker, deadline - loop.time())
            if what == "timeout":
                message = f"stopped after {timeout_s:g} s of wall-clock time"
                return self._discard(worker, "timeout"), Failure(FailureType.TIMEOUT, message)
            if what != "result" and not worker.conn.poll():
                break
            try:
                received = await asyncio.to_thread(worker.conn.recv)
            except (EOFError, OSError):
                break
            if not isinstance(received, Progress):
                return worker, received
            if progress is not None:
                progress(received)
        worker.process.join(timeout=1)
        code = worker.process.exitcode
        message = "the worker process died while running this request"
        if code is not None and code < 0:
            message += f" (signal {-code})"
        return self._discard(worker, "crash"), Failure(FailureType.WORKER_CRASHED, message)
