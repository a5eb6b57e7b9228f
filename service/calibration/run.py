"""Run the microbenchmarks through the XLA execution path and fit the coefficients.

One :func:`~service.xla.execution.run_modules` call per group (shared inputs, one pinned CPU,
interleaved rounds). A module's time is its median; its own cost is that minus the fastest
``base`` module's median (the fixed cost of running a module). Every measurement is kept, also those the fit does not use, so
the target file can list what was measured.
"""

from __future__ import annotations

import datetime
import os
import platform as platform_module
from dataclasses import dataclass
from typing import Callable

from service.calibration.fit import Coefficients, Sample, fit
from service.calibration.microbenchmarks import Group, groups
from service.xla.availability import JAX_VERSION
from service.xla.errors import XlaError
from service.xla.execution import run_modules


@dataclass(frozen=True, slots=True)
class Measured:
    label: str
    kind: str
    dtype: str
    bytes: int
    median_ms: float
    own_ns: float  # median minus the group's base module


@dataclass(frozen=True, slots=True)
class Calibration:
    platform: str
    machine: str
    date: str
    load_average: tuple[float, float, float]
    reps: int
    coefficients: Coefficients
    measured: tuple[Measured, ...]


def machine_description() -> str:
    """CPU model, core count and host name, as this machine reports them."""
    model = platform_module.processor() or platform_module.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} cores, {platform_module.node()}"


def _group(group: Group, reps: int, platform: str) -> list[Measured]:
    run = run_modules([(b.label, b.module) for b in group.benches], reps=reps, warmup=1,
                      platform=platform)
    refused = [e for e in run.executions if e.refusal]
    if refused:
        raise XlaError(f"{refused[0].label} did not run: {refused[0].refusal}")
    return [Measured(b.label, b.kind, b.dtype, b.bytes, e.median_ms, 0.0)
            for b, e in zip(group.benches, run.executions)]


def calibrate(*, platform: str = "cpu", reps: int = 7, quick: bool = False,
              progress: Callable[[str], None] | None = None) -> Calibration:
    """Run every group and fit; raises :class:`XlaError` when a microbenchmark cannot run."""
    measured: list[Measured] = []
    for group in groups(quick):
        if progress is not None:
            progress(group.name)
        measured.extend(_group(group, reps, platform))
    # The fixed cost of running a module: the fastest base module (one noisy group's base
    # would shift all its samples).
    base = min(m.median_ms for m in measured if m.kind == "base")
    measured = [Measured(m.label, m.kind, m.dtype, m.bytes, m.median_ms,
                         max(0.0, (m.median_ms - base) * 1e6)) for m in measured]
    samples = [Sample(m.kind, m.bytes, m.own_ns) for m in measured]
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load = tuple(round(x, 2) for x in os.getloadavg())
    return Calibration(platform, f"{machine_description()} (jax {JAX_VERSION})", date,
                       load, reps, fit(samples).rounded(), tuple(measured))  # type: ignore[arg-type]
