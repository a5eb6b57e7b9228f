"""Run the microbenchmarks through the XLA execution path and fit the coefficients.

One :func:`~service.xla.execution.run_modules` call per group (shared inputs, one pinned CPU,
interleaved rounds). On ``cpu`` every module is swapped in as written; on an accelerator
(``gpu``, ...) each goes through XLA's whole pipeline with its entry layouts pinned (its
emitter takes only fused modules, and a one-op module's entry layouts are its op's layouts).
A module's time is its median; its own cost is that minus the fastest ``base`` module's
median (the fixed cost of running a module). Every measurement is kept, also those the fit
does not use, so the target file can list what was measured, and :func:`to_json` /
:func:`from_json` carry a calibration to another machine and fit it again there.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import math
import os
import platform as platform_module
import statistics
from pathlib import Path
from dataclasses import dataclass
from typing import Callable, Sequence

from hlo.printer import print_module
from hlo.target import HostCpu, host_cpu
from service.calibration.fit import Coefficients, DeviceCoefficients, Sample, fit, fit_device
from service.calibration.microbenchmarks import Group, groups
from service.xla.errors import XlaError
from service.xla.execution import Measurement, run_modules


@dataclass(frozen=True, slots=True)
class Measured:
    label: str
    kind: str
    dtype: str
    bytes: int
    median_ms: float
    own_ns: float  # median minus the base module (see :func:`fitted`)
    group: str = ""  # the name of its group
    #: The module measured, a digest of its text ("" in runs recorded before it was kept):
    #: runs merge a label only where they measured the same module.
    module: str = ""


@dataclass(frozen=True, slots=True)
class Calibration:
    platform: str
    machine: str
    date: str
    load_average: tuple[float, float, float]
    reps: int
    coefficients: Coefficients | DeviceCoefficients  # the second for an accelerator
    measured: tuple[Measured, ...]
    note: str = ""  # how the measurements came together, when not from one run
    #: The host's level-1 data cache (sets, ways, line bytes), read from the system.
    cache: tuple[int, int, int] | None = None
    #: The CPU measured (``cpu`` only), as the system names it.
    host: HostCpu | None = None


#: Where Linux describes the host's caches.
CACHES = "/sys/devices/system/cpu/cpu0/cache"


def cache_geometry(root: str = CACHES, level: int = 1) -> tuple[int, int, int] | None:
    """The sets, ways and line bytes of the host's cache at ``level`` (the first ``index*``
    of that level holding data) as the system reports them, or ``None`` where it does not.
    Level 1 by default: the cache whose sets decide whether a standalone transpose's reads
    stream (:class:`hlo.target.CacheGeometry`; measured: 256 reads 1 KiB apart, which fit
    this host's level-2 sets but not its level-1 ones, ran 2.5x XLA's form, as slow as the
    ones that fit neither)."""
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return None
    for name in names:
        folder = Path(root, name)
        try:
            fields = {f: (folder / f).read_text().strip()
                      for f in ("level", "type", "number_of_sets", "ways_of_associativity",
                                "coherency_line_size")}
            found = (int(fields["number_of_sets"]), int(fields["ways_of_associativity"]),
                     int(fields["coherency_line_size"]))
        except (OSError, ValueError):
            continue
        if fields["level"] == str(level) and fields["type"] in ("Data", "Unified"):
            return found if min(found) > 0 else None
    return None


def machine_description() -> str:
    """CPU model, core count and host name, as this machine reports them."""
    model = host_cpu().model or platform_module.processor() or platform_module.machine()
    return f"{model}, {os.cpu_count()} cores, {platform_module.node()}"


def _group(group: Group, reps: int, platform: str) -> tuple[list[Measured], Measurement]:
    labels = [b.label for b in group.benches]
    run = run_modules([(b.label, b.module) for b in group.benches], reps=reps, warmup=1,
                      platform=platform, pinned=labels if platform != "cpu" else (),
                      outputs=False)
    refused = [e for e in run.executions if e.refusal]
    if refused:
        raise XlaError(f"{refused[0].label} did not run: {refused[0].refusal}")
    return [Measured(b.label, b.kind, b.dtype, b.bytes, e.median_ms, 0.0, group.name,
                     digest(b.module)) for b, e in zip(group.benches, run.executions)], run


def measure(*, platform: str = "cpu", reps: int = 7, quick: bool = False,
            only: Callable[[Group], bool] | None = None,
            progress: Callable[[str], None] | None = None,
            each: Callable[[list[Measured], str], None] | None = None
            ) -> tuple[list[Measured], str]:
    """Every group's measurements (``only``: the groups it keeps) and the machine they ran
    on; ``each`` hears the measurements so far and the machine after every group. Raises
    :class:`XlaError` when a microbenchmark cannot run."""
    measured: list[Measured] = []
    machine = machine_description()
    for group in groups(quick, platform):
        if only is not None and not only(group):
            continue
        if progress is not None:
            progress(group.name)
        found, run = _group(group, reps, platform)
        measured.extend(found)
        device = f"{run.device}, " if run.device and platform != "cpu" else ""
        machine = f"{device}{machine_description()} (jax {run.jax_version or '?'})"
        if each is not None:
            each(measured, machine)
    return measured, machine


def calibrate(*, platform: str = "cpu", reps: int = 7, quick: bool = False,
              progress: Callable[[str], None] | None = None) -> Calibration:
    """Run every group and fit; raises :class:`XlaError` when a microbenchmark cannot run."""
    measured, machine = measure(platform=platform, reps=reps, quick=quick, progress=progress)
    return fitted(platform, machine, _now(), _load(), reps, measured,
                  cache_geometry() if platform == "cpu" else None,
                  host_cpu() if platform == "cpu" else None)


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _load() -> tuple[float, float, float]:
    one, five, fifteen = (round(x, 2) for x in os.getloadavg())
    return one, five, fifteen


def fitted(platform: str, machine: str, date: str, load: tuple[float, float, float], reps: int,
           measured: list[Measured], cache: tuple[int, int, int] | None = None,
           host: HostCpu | None = None) -> Calibration:
    """The calibration of these measurements (medians; ``own_ns`` is recomputed).

    The fixed cost of running a module, subtracted from every median: on ``cpu`` the
    fastest base module (one noisy group's base would shift all its samples); on an
    accelerator each group's own base module where it has one (the host's dispatch of a
    module, tens of microseconds, grows with its parameters: 43-66 us with one 16-256 MiB
    parameter, 64-108 us with two, measured on an H200), else the fastest."""
    fastest = min(m.median_ms for m in measured if m.kind == "base")
    bases = ({m.group: m.median_ms for m in measured if m.kind == "base" and m.group}
             if platform != "cpu" else {})
    measured = [Measured(m.label, m.kind, m.dtype, m.bytes, m.median_ms,
                         max(0.0, (m.median_ms - bases.get(m.group, fastest)) * 1e6), m.group,
                         m.module)
                for m in measured]
    samples = [Sample(m.kind, m.bytes, m.own_ns, m.dtype) for m in measured]
    coefficients: Coefficients | DeviceCoefficients
    if platform == "cpu":
        coefficients = fit(samples).rounded()
    else:
        found = fit_device(samples)
        coefficients = dataclasses.replace(found, base=found.base.rounded())
    return Calibration(platform, machine, date, load, reps, coefficients, tuple(measured),
                       cache=cache, host=host)


def digest(module) -> str:
    """A short digest of ``module``'s text: which module a measurement timed."""
    return hashlib.sha256(print_module(module).encode()).hexdigest()[:16]


def to_json(calibration: Calibration) -> dict:
    """Everything measured and fitted, as JSON data (:func:`from_json` reads it back)."""
    return {**record(calibration.platform, calibration.machine, calibration.measured,
                     calibration.reps, calibration.date, calibration.load_average,
                     calibration.note),
            "cache": None if calibration.cache is None else list(calibration.cache),
            "host": None if calibration.host is None else calibration.host.model_dump(),
            "coefficients": dataclasses.asdict(calibration.coefficients)}


def record(platform: str, machine: str, measured: Sequence[Measured], reps: int,
           date: str | None = None, load: Sequence[float] | None = None, note: str = "") -> dict:
    """The measurements as :func:`from_json` reads them (``coefficients`` left to the fit;
    the date and load average now unless given)."""
    return {
        "platform": platform, "machine": machine, "date": date or _now(),
        "load_average": list(load if load is not None else _load()), "reps": reps,
        "coefficients": None, "note": note,
        "cache": (None if platform != "cpu" or (geometry := cache_geometry()) is None
                  else list(geometry)),
        "host": None if platform != "cpu" else host_cpu().model_dump(),
        "measured": [{"label": m.label, "kind": m.kind, "dtype": m.dtype, "bytes": m.bytes,
                      "median_ms": m.median_ms, "own_ns": m.own_ns, "group": m.group,
                      **({"module": m.module} if m.module else {})}
                     for m in measured],
    }


def merged(runs: Sequence[dict]) -> dict:
    """Several ``calibrate --json`` runs as one: each microbenchmark's median over the runs
    that measured it (a later version may measure more than an earlier one: the note lists
    those measured by fewer runs), the machine and cache of the first, the dates from the
    first to the last, the highest load average. ``ValueError`` when the runs are of
    different platforms or machines, or measured different modules under one label.

    Example: three runs whose ``base`` medians are 7, 9 and 8 us -> one run at 8 us."""
    if not runs:
        raise ValueError("no runs to merge")
    try:
        first = runs[0]
        for run in runs[1:]:
            for key in ("platform", "machine", "cache", "host"):
                if run.get(key) != first.get(key):
                    raise ValueError(f"the runs differ in {key}: {first.get(key)!r} and "
                                     f"{run.get(key)!r}")
        by_label = [{str(m["label"]): m for m in run["measured"]} for run in runs]
        # Each label's record as the first run that measured it wrote it (its median aside).
        every = {str(m["label"]): m for run in reversed(runs) for m in run["measured"]}
        order = list(dict.fromkeys(str(m["label"]) for run in runs for m in run["measured"]))
        measured = [{**every[label], "median_ms": statistics.median(
                        [float(b[label]["median_ms"]) for b in by_label if label in b])}
                    for label in order]
        for label in order:
            modules = {str(b[label].get("module", "")) for b in by_label if label in b}
            if len(modules) > 1:
                raise ValueError(f"the runs measured different modules as {label} (a run "
                                 "from another version of the microbenchmarks)")
        fewer = [label for label in order if sum(label in b for b in by_label) < len(runs)]
        loads = [[float(x) for x in run["load_average"]] for run in runs]
        dates = sorted({str(run["date"]) for run in runs})
        note = (f"each microbenchmark's median over {len(runs)} runs "
                f"({', '.join(str(run['reps']) for run in runs)} rounds)")
        if fewer:
            note += f"; {len(fewer)} over the runs that measured them ({_by_count(fewer, by_label)})"
        return {**first, "measured": measured, "coefficients": None,
                "date": dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}",
                "load_average": [max(column) for column in zip(*loads)],
                "reps": min(int(run["reps"]) for run in runs),
                "note": note if len(runs) > 1 else first.get("note", "")}
    except (KeyError, TypeError) as err:
        raise ValueError(f"not a calibration written by calibrate --json: {err!r}") from None


#: At most this many labels are named per run count in a merged run's note.
NAMED_LABELS = 12


def _by_count(labels: list[str], by_label: list[dict]) -> str:
    """``labels`` grouped by how many runs measured them, most runs first: each label with
    its count where a count has few (``fresh_select 3, inplace_select 3``), else how many
    labels had that count (``374 by 4 runs``)."""
    count = {label: sum(label in b for b in by_label) for label in labels}
    parts = []
    for n in sorted(set(count.values()), reverse=True):
        these = [label for label in labels if count[label] == n]
        parts.append(", ".join(f"{label} {n}" for label in these) if len(these) <= NAMED_LABELS
                     else f"{len(these)} by {n} run{'s' if n > 1 else ''}")
    return ", ".join(parts)


def from_json(data: dict) -> Calibration:
    """A calibration fitted again from the measurements that :func:`to_json` wrote (the fit
    of this version, not the one that wrote them); ``ValueError`` when they are incomplete
    (:class:`~service.calibration.fit.FitError` when a kind the fit needs is missing)."""
    try:
        cache = data.get("cache")
        geometry = (None if cache is None else tuple(int(x) for x in cache))
        if geometry is not None and (len(geometry) != 3 or min(geometry) <= 0):
            raise ValueError(f"a cache of {cache} is not sets, ways and line bytes")
        # Written without group names (before they were recorded): this version's groups
        # of the platform, by label.
        known = {b.label: g.name for g in groups(False, str(data["platform"])) for b in g.benches}
        measured = [Measured(str(m["label"]), str(m["kind"]), str(m["dtype"]), int(m["bytes"]),
                             float(m["median_ms"]), 0.0,
                             str(m.get("group") or known.get(str(m["label"]), "")),
                             str(m.get("module", "")))
                    for m in data["measured"]]
        for m in measured:
            if not (math.isfinite(m.median_ms) and m.median_ms > 0 and m.bytes > 0):
                raise ValueError(f"{m.label}: a median of {m.median_ms} ms over {m.bytes} "
                                 "bytes is not a measurement")
        host = None if data.get("host") is None else HostCpu.model_validate(data["host"])
        load = tuple(float(x) for x in data["load_average"])
        if len(load) != 3 or not any(m.kind == "base" for m in measured):
            raise ValueError("three load averages and at least one base module are needed")
        return dataclasses.replace(
            fitted(str(data["platform"]), str(data["machine"]), str(data["date"]), load,  # type: ignore[arg-type]
                   int(data["reps"]), measured, geometry, host),  # type: ignore[arg-type]
            note=str(data.get("note") or ""))
    except (KeyError, TypeError) as err:
        raise ValueError(f"not a calibration written by calibrate --json: {err!r}") from None
