"""The content-addressed result cache: keys, what is stored, persistence across instances."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from service.api.schemas import EXAMPLE_HLO
from service.cache import ResultCache, cache_key
from service.options import AssignOptions, FormatOptions
from service.pipeline import (
    Failure, FailureType, InlineTarget, ModuleRequest, Operation, Success, run,
)


def request(**changes: object) -> ModuleRequest:
    base = ModuleRequest(Operation.FORMAT, EXAMPLE_HLO, "m.hlo", None, FormatOptions())
    return dataclasses.replace(base, **changes)


def test_key_depends_on_text_target_options_and_operation_only() -> None:
    key = cache_key(request())
    assert key == cache_key(request(name="other-name.hlo"))  # diagnostics name is not content
    assert key != cache_key(request(hlo=EXAMPLE_HLO + "\n"))
    assert key != cache_key(request(options=FormatOptions(short=True)))
    assert key != cache_key(request(operation=Operation.CHECK, options=None))
    assign = ModuleRequest(Operation.ASSIGN, EXAMPLE_HLO, target="tpu", options=AssignOptions())
    assert cache_key(assign) != cache_key(dataclasses.replace(assign, target="gpu"))
    assert cache_key(assign) != cache_key(
        dataclasses.replace(assign, options=AssignOptions(time_limit_s=3))
    )
    # Inline targets are canonical JSON: key order does not matter.
    a = InlineTarget.from_data({"name": "x", "tiles": [1, 2]})
    b = InlineTarget.from_data({"tiles": [1, 2], "name": "x"})
    assert cache_key(dataclasses.replace(assign, target=a)) == cache_key(
        dataclasses.replace(assign, target=b)
    )


def test_the_host_cpu_target_is_keyed_by_the_calibration_it_means_here(monkeypatch) -> None:
    """``cpu`` means another calibration on another CPU: a cache shared between hosts (or a
    batch driven from one) never hands one host's answer to the other; ``cpu`` and the name
    it means here are one key."""
    from service.batch import BatchSpec, job_key
    from service.pipeline import target_identity

    assign = ModuleRequest(Operation.ASSIGN, EXAMPLE_HLO, target="cpu", options=AssignOptions())
    here = cache_key(assign)
    assert here == cache_key(dataclasses.replace(assign, target="cpu-epyc"))
    spec = BatchSpec(Operation.ASSIGN, AssignOptions(), "cpu")
    assert spec.target == "cpu-epyc" and job_key(spec) == job_key(dataclasses.replace(spec, target="cpu-epyc"))
    monkeypatch.setenv("HLO_LAYOUT_CPU_TARGET", "cpu-xeon")
    assert cache_key(assign) != here
    assert cache_key(assign) == cache_key(dataclasses.replace(assign, target="cpu-xeon"))
    assert BatchSpec(Operation.ASSIGN, AssignOptions(), "cpu").target == "cpu-xeon"
    monkeypatch.setenv("HLO_LAYOUT_CPU_TARGET", "tpu")  # not a CPU target: the operation says so
    assert target_identity("cpu") == "cpu"
    outcome = run(assign)
    assert isinstance(outcome, Failure) and outcome.type is FailureType.INVALID_TARGET
    assert "HLO_LAYOUT_CPU_TARGET=tpu is not a CPU target" in outcome.message


def test_outcomes_round_trip_and_persist(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    cache = ResultCache(path)
    outcome = run(request())
    assert isinstance(outcome, Success)
    assert cache.get(cache_key(request())) is None
    assert cache.put(cache_key(request()), outcome)
    bad = run(request(hlo="HloModule m\n\nENTRY e {\n  ROOT x = f32[] bogus()\n}\n"))
    assert isinstance(bad, Failure) and cache.put("bad", bad)
    cache.close()
    reopened = ResultCache(path)
    assert reopened.get(cache_key(request())) == outcome
    assert reopened.get("bad") == bad
    assert len(reopened) == 2


def test_transient_failures_are_not_stored(tmp_path: Path) -> None:
    cache = ResultCache(tmp_path / "c.sqlite")
    for kind in (FailureType.TIMEOUT, FailureType.WORKER_CRASHED, FailureType.NOT_AVAILABLE,
                 FailureType.INTERNAL_ERROR, FailureType.QUEUE_FULL):
        assert not cache.put(kind.value, Failure(kind, "transient"))
        assert cache.get(kind.value) is None
    assert len(cache) == 0


def test_assign_report_depends_on_the_request_only(tmp_path: Path) -> None:
    from conftest import shared_path

    text = shared_path("corpus", "attention_fwd.pre_short.hlo").read_text()
    req = ModuleRequest(Operation.ASSIGN, text, "a.hlo", "tpu", AssignOptions(time_limit_s=10))
    first, second = run(req), run(dataclasses.replace(req, name="b.hlo"))
    assert isinstance(first, Success) and isinstance(second, Success)
    # Two computations: the same report and module; only the timings may differ.
    assert first.data == second.data and first.hlo == second.hlo
    assert "timings_ms" not in first.data and dict(first.timings_ms)["total"] > 0
    a, b = first.to_json(), second.to_json()
    assert set(a) == set(b) and a.pop("timings_ms") and b.pop("timings_ms") and a == b
    # The cache keeps the timings beside the report and gives both back.
    cache = ResultCache(tmp_path / "c.sqlite")
    key = cache_key(req)
    assert key == cache_key(dataclasses.replace(req, name="b.hlo"))
    cache.put(key, first)
    assert cache.get(key) == first
