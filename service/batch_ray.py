"""The Ray engine of ``hlo-layout batch``: the same job on a Ray cluster.

``RayEngine(address)`` joins the cluster at ``address`` (``ray://host:10001`` or
``host:6379``) or, without one, starts a small local Ray instance (2 CPUs, no dashboard).
Each module is one Ray task running :func:`service.pipeline.run`; the coordinator (this
process) reads inputs, consults the cache and writes every result, so workers need the
``hlo-layout`` package installed but no shared file system.
"""

from __future__ import annotations

import asyncio
from typing import Any

from service import pipeline
from service.pipeline import Failure, FailureType, ModuleRequest, Outcome

LOCAL_CPUS = 2


def _run(request: ModuleRequest) -> Outcome:
    return pipeline.run(request)


class RayEngine:
    name = "ray"

    def __init__(self, address: str | None = None, *, cpus_per_task: float = 1.0) -> None:
        self.address = address
        self.concurrency = LOCAL_CPUS
        self._cpus = cpus_per_task
        self._remote: Any = None
        self._started_here = False

    async def start(self) -> None:
        # In the calling (main) thread: Ray installs signal handlers there.
        from service.batch import BatchError

        try:
            self._init()
        except Exception as exc:  # Ray reports start-up problems with many exception types
            where = self.address or "a local instance"
            raise BatchError(f"cannot start or reach Ray ({where}): {exc}") from exc

    def _init(self) -> None:
        import ray

        if not ray.is_initialized():
            if self.address is None:
                ray.init(
                    num_cpus=LOCAL_CPUS,
                    include_dashboard=False,
                    log_to_driver=False,
                    configure_logging=False,
                )
            else:
                ray.init(address=self.address, log_to_driver=False, configure_logging=False)
            self._started_here = True
        self.concurrency = max(1, int(ray.cluster_resources().get("CPU", 1) / self._cpus))
        self._remote = ray.remote(num_cpus=self._cpus, max_retries=0)(_run)

    async def submit(self, request: ModuleRequest, timeout_s: float) -> Outcome:
        import ray
        from ray.exceptions import RayError

        ref = self._remote.remote(request)
        try:
            return await asyncio.wait_for(asyncio.wrap_future(ref.future()), timeout_s)
        except TimeoutError:
            ray.cancel(ref, force=True)
            return Failure(FailureType.TIMEOUT, f"stopped after {timeout_s:g} s of wall-clock time")
        except RayError as exc:
            return Failure(FailureType.WORKER_CRASHED, f"Ray task failed: {type(exc).__name__}")

    async def close(self) -> None:
        if self._started_here:
            import ray

            await asyncio.to_thread(ray.shutdown)
