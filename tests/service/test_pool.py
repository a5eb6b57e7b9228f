"""The worker pool on its own: healing after an idle worker is killed, cancellation."""

from __future__ import annotations

import asyncio
import os
import signal

from test_api_ops import slow_or_crashing_run

from service.api.schemas import EXAMPLE_HLO
from service.pipeline import Failure, FailureType, ModuleRequest, Operation, Success
from service.worker_pool import QueueFull, WorkerPool

CHECK = ModuleRequest(Operation.CHECK, EXAMPLE_HLO)


def sleep(seconds: float) -> ModuleRequest:
    return ModuleRequest(Operation.CHECK, str(seconds), name="test-sleep")


def test_pool_heals_and_survives_cancellation() -> None:
    async def scenario() -> None:
        pool = WorkerPool(1, queue_limit=0, runner=slow_or_crashing_run)
        await pool.start()
        try:
            assert isinstance(await pool.submit(CHECK, 30), Success)
            # A worker killed while idle is replaced before it is given work.
            (pid,) = pool.worker_pids()
            os.kill(pid, signal.SIGKILL)
            await asyncio.sleep(0.2)
            assert isinstance(await pool.submit(CHECK, 30), Success)
            assert pool.worker_pids() != [pid]
            # A cancelled caller must not leave its late result for the next job.
            task = asyncio.create_task(pool.submit(sleep(0.5), 30))
            await asyncio.sleep(0.2)
            try:
                await pool.submit(CHECK, 30)
                raise AssertionError("expected QueueFull")
            except QueueFull:
                pass
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            outcome = await pool.submit(CHECK, 30)
            assert isinstance(outcome, Success) and outcome.data["valid"] is True
            assert pool.stats.restarts["cancelled"] == 1
            crashed = await pool.submit(ModuleRequest(Operation.CHECK, "", name="test-crash"), 30)
            assert isinstance(crashed, Failure) and crashed.type is FailureType.WORKER_CRASHED
            assert isinstance(await pool.submit(CHECK, 30), Success)
        finally:
            await pool.close()
        assert pool.worker_pids() == []

    asyncio.run(scenario())
