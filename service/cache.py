"""Content-addressed result cache in one embedded SQLite file.

Key: sha256 of the canonical JSON of the request (operation, module text, target, options)
plus the package version, so a new release never serves an old answer. Values are the
outcome's JSON: the report, the output module and, in a field of their own, the timings of the
run that computed it (a hit answers with the same report and those timings). Only successes and failures that depend on the request alone (parse errors,
invalid targets...) are stored; timeouts, crashes and ``not_available`` are not.

The file survives restarts and is shared by the server and batch runs; WAL mode lets several
processes read while one writes. Example::

    cache = ResultCache(Path("results.sqlite"))
    key = cache_key(request)
    cache.get(key)            # None on a miss
    cache.put(key, outcome)
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any

from service.pipeline import (
    DETERMINISTIC_FAILURES,
    Failure,
    Operation,
    Outcome,
    Request,
    Success,
    request_to_json,
)

PACKAGE_VERSION = version("hlo-layout")


def cache_key(request: Request) -> str:
    """sha256 over the canonical request JSON and the package version."""
    identity = {"version": PACKAGE_VERSION, "request": request_to_json(request)}
    canonical = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def is_cacheable(outcome: Outcome) -> bool:
    return isinstance(outcome, Success) or outcome.type in DETERMINISTIC_FAILURES


def outcome_to_record(outcome: Outcome) -> dict[str, Any]:
    if isinstance(outcome, Success):
        return {
            "ok": True,
            "operation": outcome.operation.value,
            "data": outcome.data,
            "hlo": outcome.hlo,
            "elapsed_ms": outcome.elapsed_ms,
            "timings_ms": [list(step) for step in outcome.timings_ms],
        }
    return {"ok": False, **outcome.to_json()}


def outcome_from_record(record: dict[str, Any]) -> Outcome:
    if record["ok"]:
        return Success(
            Operation(record["operation"]),
            record["data"],
            record["hlo"],
            record["elapsed_ms"],
            tuple((str(name), float(ms)) for name, ms in record.get("timings_ms", ())),
        )
    return Failure.from_json(record)


class ResultCache:
    """A key -> outcome table in SQLite; safe to share between threads of one process."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS results ("
            " key TEXT PRIMARY KEY, operation TEXT NOT NULL,"
            " created REAL NOT NULL, outcome TEXT NOT NULL)"
        )
        self._db.commit()

    def get(self, key: str) -> Outcome | None:
        with self._lock:
            row = self._db.execute("SELECT outcome FROM results WHERE key = ?", (key,)).fetchone()
        return None if row is None else outcome_from_record(json.loads(row[0]))

    def put(self, key: str, outcome: Outcome) -> bool:
        """Store ``outcome`` if it may be cached; whether it was stored."""
        if not is_cacheable(outcome):
            return False
        operation = outcome.operation.value if isinstance(outcome, Success) else "failure"
        text = json.dumps(outcome_to_record(outcome), sort_keys=True)
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO results (key, operation, created, outcome)"
                " VALUES (?, ?, ?, ?)",
                (key, operation, time.time(), text),
            )
            self._db.commit()
        return True

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM results").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._db.close()
