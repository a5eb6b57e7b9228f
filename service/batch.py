"""Batch offline optimization: many module files, one result per module, a summary, resumable.

Inputs are files, directories (searched recursively for ``*.hlo`` and ``*.hlo.gz``) and globs.
Each module gets ``OUT/modules/NAME.json`` (its record: status, report or error, time) and,
when the operation produces a module, ``OUT/modules/NAME.hlo``. Both are written atomically
(temporary file + rename, the ``.hlo`` first), so a record on disk always means a finished
module. A re-run skips every module whose record matches the same input bytes and the same
job (operation, target, options, package version): killing a batch loses only the modules
that were in flight. ``summary.json`` and ``summary.csv`` are rebuilt from the records at the
end of every run: per module its status, and for ``assign`` the proof status, objective,
all-default and greedy baseline costs, lower bound, gap, copies inserted and time. Only the
:data:`TIMING_COLUMNS` differ between two runs of the same job.

The work goes through an :class:`Engine`: the local worker pool by default, or a Ray cluster
(:mod:`service.batch_ray`). Both run :func:`service.pipeline.run`, so their results agree.
"""

from __future__ import annotations

import asyncio
import csv
import glob
import gzip
import hashlib
import io
import json
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

from service.cache import PACKAGE_VERSION, ResultCache, cache_key
from service.options import AssignOptions, Options, options_to_json
from service.pipeline import (
    Failure,
    FailureType,
    ModuleRequest,
    Operation,
    Outcome,
    Success,
    TargetSpec,
    target_identity,
)
from service.worker_pool import WorkerPool

SUFFIXES = (".hlo.gz", ".hlo")
# Failures caused by the run rather than the module: a re-run tries those modules again.
_RETRIED = frozenset({FailureType.WORKER_CRASHED, FailureType.QUEUE_FULL})


class BatchError(Exception):
    """A batch cannot start (no inputs, an input that does not exist)."""


class Engine(Protocol):
    """Runs requests somewhere; at most ``concurrency`` at a time are useful."""

    name: str
    concurrency: int

    async def start(self) -> None: ...

    async def submit(self, request: ModuleRequest, timeout_s: float) -> Outcome: ...

    async def close(self) -> None: ...


class LocalEngine:
    """The process pool of this machine."""

    name = "local"

    def __init__(self, workers: int) -> None:
        self.concurrency = workers
        self._pool = WorkerPool(workers, queue_limit=0)

    async def start(self) -> None:
        await self._pool.start()

    async def submit(self, request: ModuleRequest, timeout_s: float) -> Outcome:
        return await self._pool.submit(request, timeout_s, wait=True)

    async def close(self) -> None:
        await self._pool.close()


@dataclass(frozen=True, slots=True)
class BatchInput:
    """One module file and its unique name within the batch (the output file stem)."""

    name: str
    path: Path


@dataclass(frozen=True, slots=True)
class BatchSpec:
    """What to do with every module, and the limits of one module's work."""

    operation: Operation
    options: Options
    target: TargetSpec | None = None
    timeout_s: float = 60.0  # wall clock per module; assign adds its own time limit

    def __post_init__(self) -> None:
        # The driver's host decides what ``cpu`` means, not each worker's (a Ray cluster
        # may mix CPUs): every module is priced by one target.
        if isinstance(self.target, str):
            object.__setattr__(self, "target", target_identity(self.target))


@dataclass(frozen=True, slots=True)
class BatchProgress:
    total: int
    finished: int
    failed: int
    skipped: int
    last: str | None


@dataclass(frozen=True, slots=True)
class BatchRun:
    """What one run did: ``computed`` modules went to the engine, ``skipped`` were already
    done, ``cached`` came from the result cache."""

    total: int
    computed: int
    skipped: int
    cached: int
    failed: int
    summary_path: Path


# ---------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------


def _is_module_file(path: Path) -> bool:
    return path.is_file() and path.name.endswith(SUFFIXES)


def _stem(path: Path) -> str:
    for suffix in SUFFIXES:
        if path.name.endswith(suffix):
            return path.name[: -len(suffix)]
    return path.name


def collect_inputs(specs: Sequence[str]) -> tuple[BatchInput, ...]:
    """The module files named by ``specs`` (files, directories, globs), in a stable order.

    A name that occurs twice (``a/m.hlo`` and ``b/m.hlo``) gets a short hash of its path so
    output files never collide.
    """
    paths: list[Path] = []
    for spec in specs:
        path = Path(spec)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if _is_module_file(p))
        elif path.is_file():
            found = [path]
        elif glob.has_magic(spec):
            found = sorted(Path(p) for p in glob.glob(spec, recursive=True))
            found = [p for p in found if _is_module_file(p)]
        else:
            raise BatchError(f"{spec}: no such file or directory")
        paths.extend(found)
    unique: dict[Path, Path] = {}
    for path in paths:
        unique.setdefault(path.resolve(), path)
    if not unique:
        raise BatchError("no .hlo or .hlo.gz files in the inputs")
    stems: dict[str, int] = {}
    for path in unique.values():
        stems[_stem(path)] = stems.get(_stem(path), 0) + 1
    inputs = []
    for resolved, path in unique.items():
        name = _stem(path)
        if stems[name] > 1:
            name += "-" + hashlib.sha256(str(resolved).encode()).hexdigest()[:8]
        inputs.append(BatchInput(name, path))
    return tuple(inputs)


def read_module(path: Path) -> bytes:
    if path.name.endswith(".gz"):
        with gzip.open(path, "rb") as f:
            return f.read()
    return path.read_bytes()


# ---------------------------------------------------------------------------
# Records
# ---------------------------------------------------------------------------


def job_key(spec: BatchSpec) -> str:
    """Identity of the job: a record made under another key is not reused."""
    identity = {
        "version": PACKAGE_VERSION,
        "operation": spec.operation.value,
        "target": target_identity(spec.target),
        "options": options_to_json(spec.options),
    }
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()


def write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the whole new one."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _record_of(
    item: BatchInput, digest: str, key: str, operation: Operation, outcome: Outcome,
    cached: bool,
) -> dict[str, Any]:
    record: dict[str, Any] = {
        "module": item.name,
        "input": str(item.path),
        "input_sha256": digest,
        "job": key,
        "operation": operation.value,
        "cached": cached,
    }
    if isinstance(outcome, Success):
        record.update(
            status="ok", result=outcome.data, time_ms=outcome.elapsed_ms,
            timings_ms=dict(outcome.timings_ms),
        )
        record["output"] = f"{item.name}.hlo" if outcome.hlo is not None else None
    else:
        record.update(
            status="failed", error=outcome.to_json(), time_ms=None, timings_ms={}, output=None
        )
    return record


def _finished(record_path: Path, digest: str, key: str) -> bool:
    try:
        record = json.loads(record_path.read_text())
    except (OSError, ValueError):
        return False
    if record.get("job") != key or record.get("input_sha256") != digest:
        return False
    error = record.get("error") or {}
    return error.get("type") not in {t.value for t in _RETRIED}


# ---------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------


async def run_batch(
    inputs: Sequence[BatchInput],
    spec: BatchSpec,
    out: Path,
    engine: Engine,
    *,
    cache: ResultCache | None = None,
    on_progress: Callable[[BatchProgress], None] | None = None,
) -> BatchRun:
    """Run ``spec`` over ``inputs`` into ``out``; see the module docstring for the layout."""
    modules_dir = out / "modules"
    modules_dir.mkdir(parents=True, exist_ok=True)
    key = job_key(spec)
    timeout_s = spec.timeout_s
    if isinstance(spec.options, AssignOptions):
        timeout_s += spec.options.time_limit_s

    counts = {"finished": 0, "failed": 0, "skipped": 0, "cached": 0, "computed": 0}

    def report(last: str | None) -> None:
        if on_progress is not None:
            on_progress(
                BatchProgress(len(inputs), counts["finished"], counts["failed"],
                              counts["skipped"], last)
            )

    limit = asyncio.Semaphore(max(1, engine.concurrency))

    async def one(item: BatchInput) -> None:
        # One slot per module from reading to writing bounds the bytes held in memory.
        async with limit:
            await _one(item)

    async def _one(item: BatchInput) -> None:
        record_path = modules_dir / f"{item.name}.json"
        try:
            raw = await asyncio.to_thread(read_module, item.path)
        except (OSError, EOFError, gzip.BadGzipFile) as exc:
            raw, read_error = b"", f"cannot read {item.path}: {exc}"
        else:
            read_error = None
        digest = hashlib.sha256(raw).hexdigest()
        if read_error is None and _finished(record_path, digest, key):
            counts["skipped"] += 1
            counts["finished"] += 1
            report(item.name)
            return
        outcome, cached = await _outcome(item, raw, read_error, spec, timeout_s, engine, cache)
        counts["cached" if cached else "computed"] += 1
        if isinstance(outcome, Success) and outcome.hlo is not None:
            await asyncio.to_thread(
                write_atomically, modules_dir / f"{item.name}.hlo", outcome.hlo.encode()
            )
        record = _record_of(item, digest, key, spec.operation, outcome, cached)
        text = json.dumps(record, indent=2, sort_keys=True) + "\n"
        await asyncio.to_thread(write_atomically, record_path, text.encode())
        counts["finished"] += 1
        counts["failed"] += record["status"] != "ok"
        report(item.name)

    await engine.start()
    try:
        report(None)
        await asyncio.gather(*(one(item) for item in inputs))
    finally:
        await engine.close()
    summary_path = write_summary(inputs, spec, out, engine.name)
    failed = sum(1 for r in _records(inputs, out) if r.get("status") != "ok")
    return BatchRun(
        len(inputs), counts["computed"], counts["skipped"], counts["cached"], failed, summary_path
    )


async def _outcome(
    item: BatchInput, raw: bytes, read_error: str | None, spec: BatchSpec, timeout_s: float,
    engine: Engine, cache: ResultCache | None,
) -> tuple[Outcome, bool]:
    if read_error is not None:
        return Failure(FailureType.PARSE_ERROR, read_error, field="hlo"), False
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Failure(FailureType.PARSE_ERROR, f"not UTF-8 text: {exc}", field="hlo"), False
    request = ModuleRequest(spec.operation, text, item.path.name, spec.target, spec.options)
    if cache is None:
        return await engine.submit(request, timeout_s), False
    key = cache_key(request)
    hit = await asyncio.to_thread(cache.get, key)
    if hit is not None:
        return hit, True
    outcome = await engine.submit(request, timeout_s)
    await asyncio.to_thread(cache.put, key, outcome)
    return outcome, False


# ---------------------------------------------------------------------------
# Summary
# ---------------------------------------------------------------------------

CSV_COLUMNS = (
    "module", "status", "error_type", "solve_status", "objective", "baseline_default",
    "baseline_greedy", "lower_bound", "gap", "copies_inserted", "time_ms", "cached", "input",
)
# Columns that describe the run rather than the module (they differ between two runs).
TIMING_COLUMNS = ("time_ms", "cached")


def _records(inputs: Sequence[BatchInput], out: Path) -> list[dict[str, Any]]:
    records = []
    for item in inputs:
        path = out / "modules" / f"{item.name}.json"
        try:
            records.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            records.append({"module": item.name, "input": str(item.path), "status": "missing"})
    return records


def _summary_row(record: dict[str, Any]) -> dict[str, Any]:
    result = record.get("result") or {}
    baselines = result.get("baselines") or {}
    error = record.get("error") or {}
    return {
        "module": record["module"],
        "input": record.get("input"),
        "status": record.get("status"),
        "error_type": error.get("type"),
        "message": error.get("message"),
        # assign's proof status (OPTIMAL/FEASIBLE); ``status`` says whether the module failed
        "solve_status": result.get("status"),
        "objective": result.get("objective", result.get("cost")),
        "baseline_default": _baseline_cost(baselines, "default"),
        "baseline_greedy": _baseline_cost(baselines, "greedy"),
        "lower_bound": result.get("lower_bound"),
        "gap": result.get("gap"),
        "copies_inserted": result.get("copies_inserted"),
        "time_ms": record.get("time_ms"),
        "cached": record.get("cached", False),
    }


def _baseline_cost(baselines: Any, name: str) -> Any:
    value = baselines.get(name) if isinstance(baselines, dict) else None
    if isinstance(value, dict):
        return value.get("cost", value.get("objective"))
    return value


def write_summary(inputs: Sequence[BatchInput], spec: BatchSpec, out: Path, engine: str) -> Path:
    """Rebuild ``summary.json`` and ``summary.csv`` from the per-module records."""
    rows = [_summary_row(r) for r in _records(inputs, out)]
    statuses = [row["status"] for row in rows]
    summary = {
        "operation": spec.operation.value,
        "target": target_identity(spec.target),
        "options": options_to_json(spec.options),
        "version": PACKAGE_VERSION,
        "engine": engine,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "total": len(rows),
        "ok": statuses.count("ok"),
        "failed": statuses.count("failed"),
        "missing": statuses.count("missing"),
        "modules": rows,
    }
    path = out / "summary.json"
    write_atomically(path, (json.dumps(summary, indent=2) + "\n").encode())
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_COLUMNS, extrasaction="ignore")
    writer.writeheader()
    for row in rows:
        writer.writerow(row)
    write_atomically(out / "summary.csv", buffer.getvalue().encode())
    return path
