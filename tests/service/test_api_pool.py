"""Solves never block the server: queue limit, time limit, worker crash, health during a job.

The server runs test-only operations (see test_api_ops.py) through ``create_app(runner=...)``.
"""

from __future__ import annotations

import concurrent.futures
import time
from typing import Iterator

import httpx
import pytest
from test_api_ops import running_server, slow_or_crashing_run

from service.api.schemas import EXAMPLE_HLO
from service.app import create_app
from service.settings import Settings


def sleep_body(seconds: float) -> dict:
    return {"hlo": str(seconds), "name": "test-sleep"}


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    # The limit leaves the 5 s job room for the worker's start on a loaded machine (with
    # 8 s, three busy processes beside it made that job a 504 every time).
    settings = Settings(
        workers=1, queue_limit=1, cache_path=None, request_timeout_s=15.0, retry_after_s=3
    )
    with running_server(create_app(settings, runner=slow_or_crashing_run)) as url:
        yield url


def test_health_answers_during_a_long_job(base: str) -> None:
    # Behaviour, not speed (timings are measured in bench/load.py): every health check is
    # answered while the only worker is still busy with the job.
    with httpx.Client(base_url=base, timeout=30) as c, concurrent.futures.ThreadPoolExecutor(
        1
    ) as ex:
        job = ex.submit(c.post, "/v1/check", json=sleep_body(5.0))
        # Wait until the job is on the only worker (a fixed half second was not always
        # enough on a loaded machine).
        deadline = time.monotonic() + 4.0
        while c.get("/readyz").json().get("busy") != 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        for _ in range(5):
            assert c.get("/healthz").status_code == 200
            assert not job.done()
        ready = c.get("/readyz")
        assert ready.status_code == 200 and ready.json()["busy"] == 1
        assert not job.done()
        done = job.result()
        assert done.status_code == 200 and done.json()["slept"] == 5.0, done.text


def test_full_queue_is_429_with_retry_after(base: str) -> None:
    with httpx.Client(base_url=base, timeout=30) as c, concurrent.futures.ThreadPoolExecutor(
        2
    ) as ex:
        running = ex.submit(c.post, "/v1/check", json=sleep_body(1.5))
        time.sleep(0.3)
        waiting = ex.submit(c.post, "/v1/check", json=sleep_body(0.1))
        time.sleep(0.3)
        r = c.post("/v1/check", json={"hlo": EXAMPLE_HLO})
        assert r.status_code == 429, r.text
        assert r.headers["retry-after"] == "3" and r.json()["type"] == "queue_full"
        assert running.result().status_code == 200 and waiting.result().status_code == 200
        assert c.post("/v1/check", json={"hlo": EXAMPLE_HLO}).status_code == 200


def test_killed_worker_is_a_clean_503_and_the_pool_heals(base: str) -> None:
    with httpx.Client(base_url=base, timeout=30) as c:
        r = c.post("/v1/check", json={"hlo": "x", "name": "test-crash"})
        assert r.status_code == 503, r.text
        assert r.json()["type"] == "worker_crashed" and "signal 9" in r.json()["message"]
        assert "Traceback" not in r.text
        after = c.post("/v1/check", json={"hlo": EXAMPLE_HLO})
        assert after.status_code == 200 and after.json()["valid"] is True
        metrics = c.get("/metrics").text
        assert 'hlo_layout_worker_restarts_total{reason="crash"} 1.0' in metrics


def test_job_past_its_wall_clock_limit_is_stopped_with_504(base: str) -> None:
    with httpx.Client(base_url=base, timeout=30) as c:
        start = time.monotonic()
        r = c.post("/v1/check", json=sleep_body(30))
        assert r.status_code == 504 and r.json()["type"] == "timeout"
        assert time.monotonic() - start < 25
        assert c.post("/v1/check", json={"hlo": EXAMPLE_HLO}).status_code == 200


def test_requests_and_results_larger_than_a_pipe_buffer(base: str) -> None:
    # 87 kB of HLO in and out: more than a pipe holds, so sending and receiving must wait.
    from conftest import shared_path

    from hlo.parser import parse_module
    from hlo.printer import print_module

    text = shared_path("corpus", "cnn_train_nhwc.pre.hlo").read_text()
    assert len(text) > 65536
    with httpx.Client(base_url=base, timeout=60) as c:
        r = c.post("/v1/format", json={"hlo": text})
        assert r.status_code == 200, r.text
        assert r.json()["hlo"] == print_module(parse_module(text, "cnn"))
