"""The HTTP API against a real uvicorn server on loopback: every endpoint, every error class."""

from __future__ import annotations

import time
from typing import Iterator

import httpx
import pytest
from conftest import shared_path
from test_api_ops import running_server

from hlo.parser import parse_module
from hlo.printer import print_module
from service.api.schemas import EXAMPLE_HLO
from service.app import create_app
from service.settings import Settings

MAX_BODY = 64 * 1024
BAD_OPCODE = "HloModule m\n\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT x = f32[2] bogus(p)\n}\n"


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    cache = tmp_path_factory.mktemp("api") / "cache.sqlite"
    settings = Settings(workers=2, queue_limit=8, cache_path=cache, max_body_bytes=MAX_BODY)
    with running_server(create_app(settings)) as base:
        with httpx.Client(base_url=base, timeout=60) as c:
            yield c


def corpus_text(name: str) -> str:
    return shared_path("corpus", name).read_text()


def test_health_and_readiness(client: httpx.Client) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz")
    assert ready.status_code == 200 and ready.json()["workers"] == 2


def test_format_returns_the_printed_module_and_it_round_trips(client: httpx.Client) -> None:
    text = corpus_text("attention_fwd.pre_short.hlo")
    r = client.post("/v1/format", json={"hlo": text, "name": "attention_fwd.hlo"})
    assert r.status_code == 200, r.text
    body = r.json()
    module = parse_module(text, "attention_fwd.hlo")
    assert body["hlo"] == print_module(module)
    assert parse_module(body["hlo"], "again") == module
    assert body["instructions"] == sum(len(c.instructions) for c in module.computations)


def test_format_text_plain_with_query_options(client: httpx.Client) -> None:
    text = corpus_text("attention_fwd.pre.hlo")
    r = client.post(
        "/v1/format?short=true", content=text, headers={"content-type": "text/plain"}
    )
    assert r.status_code == 200, r.text
    assert r.json()["hlo"] == print_module(parse_module(text, "x"), short=True)


def test_check_valid_module(client: httpx.Client) -> None:
    r = client.post("/v1/check", json={"hlo": EXAMPLE_HLO})
    assert r.status_code == 200, r.text
    assert r.json() == {
        "operation": "check", "module": "add_one", "computations": 1, "instructions": 4,
        "valid": True,
    }


@pytest.mark.parametrize(
    "route", ["/v1/format", "/v1/check", "/v1/assign", "/v1/score", "/v1/normalize"]
)
def test_parse_error_is_400_with_line_and_column(client: httpx.Client, route: str) -> None:
    body = {"hlo": BAD_OPCODE, "name": "m.hlo"}
    if route in ("/v1/assign", "/v1/score"):
        body["target"] = "tpu"
    r = client.post(route, json=body)
    assert r.status_code == 400, r.text
    error = r.json()
    assert error["type"] == "parse_error"
    assert (error["line"], error["column"]) == (5, 19)  # the 'b' of 'bogus'
    assert "bogus" in error["message"] and error["field"] == "hlo"


def test_parse_error_in_text_plain_body(client: httpx.Client) -> None:
    r = client.post("/v1/check", content=BAD_OPCODE, headers={"content-type": "text/plain"})
    assert r.status_code == 400 and (r.json()["line"], r.json()["column"]) == (5, 19)


def test_verify_equivalent_and_different(client: httpx.Client) -> None:
    same = client.post("/v1/verify", json={"original": EXAMPLE_HLO, "rewritten": EXAMPLE_HLO})
    assert same.status_code == 200, same.text
    assert same.json()["equivalent"] is True
    changed = EXAMPLE_HLO.replace("constant(1)", "constant(2)")
    diff = client.post("/v1/verify", json={"original": EXAMPLE_HLO, "rewritten": changed})
    assert diff.status_code == 200 and diff.json()["equivalent"] is False


def test_verify_parse_error_names_the_module(client: httpx.Client) -> None:
    r = client.post("/v1/verify", json={"original": EXAMPLE_HLO, "rewritten": BAD_OPCODE})
    assert r.status_code == 400 and r.json()["field"] == "rewritten"
    assert (r.json()["line"], r.json()["column"]) == (5, 19)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"hlo": EXAMPLE_HLO, "target": "tpu", "options": {"time_limit_s": -1}},
         "options.time_limit_s"),
        ({"hlo": EXAMPLE_HLO, "target": "tpu", "options": {"entry_layout": "sideways"}},
         "options.entry_layout"),
        ({"hlo": EXAMPLE_HLO, "target": "tpu", "options": {"bogus": 1}}, "options.bogus"),
        ({"hlo": EXAMPLE_HLO, "target": "tpu", "options": {"max_candidates": 0}},
         "options.max_candidates"),
        ({"hlo": EXAMPLE_HLO, "target": "tpu", "options": {"normalize": ["sideways"]}},
         "options.normalize.0"),
        ({"hlo": EXAMPLE_HLO, "target": "tpu", "options": {"time_limit_s": 1e9}},
         "options.time_limit_s"),
        ({"hlo": EXAMPLE_HLO}, "target"),
        ({"hlo": EXAMPLE_HLO, "target": 7}, "target"),
        ({"target": "tpu"}, "hlo"),
    ],
)
def test_invalid_request_is_422_naming_the_field(
    client: httpx.Client, body: dict, field: str
) -> None:
    r = client.post("/v1/assign", json=body)
    assert r.status_code == 422, r.text
    assert r.json()["type"] == "invalid_request"
    assert r.json()["field"] == field or r.json()["field"].startswith(field + ".")


def test_invalid_json_and_media_type(client: httpx.Client) -> None:
    r = client.post("/v1/check", content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 422 and r.json()["field"] == "body"
    r = client.post("/v1/check", content=b"x", headers={"content-type": "image/png"})
    assert r.status_code == 415 and r.json()["type"] == "unsupported_media_type"


def test_body_over_the_limit_is_413(client: httpx.Client) -> None:
    big = "x" * (MAX_BODY + 1)
    r = client.post("/v1/check", content=big, headers={"content-type": "text/plain"})
    assert r.status_code == 413 and r.json()["type"] == "payload_too_large"

    def chunks() -> Iterator[bytes]:  # no Content-Length: the server must count
        for _ in range(MAX_BODY // 1024 + 2):
            yield b"y" * 1024

    r = client.post("/v1/check", content=chunks(), headers={"content-type": "text/plain"})
    assert r.status_code == 413 and r.json()["type"] == "payload_too_large"


def test_unknown_route_and_method(client: httpx.Client) -> None:
    r = client.get("/v1/nothing-here")
    assert r.status_code == 404 and r.json()["type"] == "not_found"
    r = client.get("/v1/format")
    assert r.status_code == 405 and r.json()["type"] == "method_not_allowed"


def test_targets(client: httpx.Client) -> None:
    r = client.get("/v1/targets")
    assert r.status_code == 200, r.text
    listed = {t["name"]: t for t in r.json()["targets"]}
    assert {"tpu", "gpu", "cpu", "cpu-epyc", "cpu-xeon", "ascend"} <= set(listed)
    assert listed["cpu"]["this_host"] == "cpu-epyc" and "this_host" not in listed["cpu-xeon"]


@pytest.mark.parametrize("target", ["no-such-target", "/etc/hostname", "../targets/tpu.toml",
                                    {"name": "half-described"}])
def test_invalid_target_is_422_naming_target(client: httpx.Client, target: object) -> None:
    # A path is never read: only built-in names and inline objects are targets over HTTP.
    r = client.post("/v1/assign", json={"hlo": EXAMPLE_HLO, "target": target})
    assert r.status_code == 422, r.text
    assert r.json()["type"] == "invalid_target" and r.json()["field"] == "target"


@pytest.mark.parametrize("target", [123, [1], None])
def test_wrong_typed_target_is_one_error_on_target(client: httpx.Client, target: object) -> None:
    # The union's members (a name, an object) fail together: one detail, on ``target``.
    r = client.post("/v1/assign", json={"hlo": EXAMPLE_HLO, "target": target})
    assert r.status_code == 422, r.text
    body = r.json()
    assert body["type"] == "invalid_request" and body["field"] == "target"
    assert [d["field"] for d in body["details"]] == ["target"]
    assert "string" in body["message"] and "dictionary" in body["message"]


def test_inline_target_is_validated_by_the_target_loader(client: httpx.Client) -> None:
    import tomllib
    from importlib import resources

    tpu = tomllib.loads((resources.files("hlo") / "targets" / "tpu.toml").read_text())
    mine = client.post("/v1/assign", json={"hlo": EXAMPLE_HLO, "target": {**tpu, "name": "mine"}})
    builtin = client.post("/v1/assign", json={"hlo": EXAMPLE_HLO, "target": "tpu"})
    assert mine.status_code == builtin.status_code == 200, mine.text
    assert mine.json()["target"] == "mine"
    # The same rules as data give the same answer as the built-in target.
    assert mine.json()["hlo"] == builtin.json()["hlo"]
    assert mine.json()["objective"] == builtin.json()["objective"]
    broken = {**tpu, "memory_bandwidth_gb_per_s": "fast"}
    r = client.post("/v1/assign", json={"hlo": EXAMPLE_HLO, "target": broken})
    assert r.status_code == 422 and r.json()["field"] == "target", r.text


def test_repeated_request_comes_from_the_cache(client: httpx.Client) -> None:
    body = {"hlo": EXAMPLE_HLO.replace("add_one", "cache_me")}
    first = client.post("/v1/check", json=body)
    second = client.post("/v1/check", json=body)
    assert first.status_code == second.status_code == 200
    assert (first.headers["x-cache"], second.headers["x-cache"]) == ("miss", "hit")
    assert first.json() == second.json()


def test_batch_job_reports_progress_and_per_module_results(client: httpx.Client) -> None:
    modules = [
        {"name": "good", "hlo": EXAMPLE_HLO},
        {"name": "bad", "hlo": BAD_OPCODE},
        {"name": "attention", "hlo": corpus_text("attention_fwd.pre_short.hlo")},
    ]
    r = client.post("/v1/batches", json={"operation": "check", "modules": modules})
    assert r.status_code == 202, r.text
    job = r.json()
    assert job["total"] == 3 and job["status"] in ("running", "done")
    deadline = time.monotonic() + 60
    while job["status"] != "done" and time.monotonic() < deadline:
        time.sleep(0.1)
        job = client.get(f"/v1/batches/{job['id']}").json()
    assert job["status"] == "done" and (job["succeeded"], job["failed"]) == (2, 1)
    by_name = {item["name"]: item for item in job["results"]}
    assert by_name["good"]["result"]["valid"] is True
    assert by_name["bad"]["error"]["type"] == "parse_error"
    assert (by_name["bad"]["error"]["line"], by_name["bad"]["error"]["column"]) == (5, 19)


def test_batch_job_carries_the_solver_progress(client: httpx.Client) -> None:
    """Progress events travel from the worker process to the job: each item shows its last
    one (phase, seconds, best cost so far, bound, gap), which agrees with its report."""
    modules = [{"name": "block", "hlo": corpus_text("transformer_block_train.before_layout.hlo")}]
    r = client.post("/v1/batches", json={"operation": "assign", "modules": modules,
                                         "target": "tpu", "options": {"seed": 7}})
    assert r.status_code == 202, r.text
    job = r.json()
    deadline = time.monotonic() + 120
    while job["status"] != "done" and time.monotonic() < deadline:
        time.sleep(0.1)
        job = client.get(f"/v1/batches/{job['id']}").json()
    assert job["status"] == "done" and job["succeeded"] == 1, job
    item = job["results"][0]
    progress, report = item["progress"], item["result"]
    assert progress["phase"] == "done" and progress["elapsed_s"] > 0
    assert progress["best"] == report["objective"] and progress["bound"] == report["lower_bound"]
    assert progress["gap"] == 0.0 and report["status"] == "OPTIMAL"


def test_batch_errors(client: httpx.Client) -> None:
    assert client.get("/v1/batches/0123").status_code == 404
    dup = [{"name": "a", "hlo": EXAMPLE_HLO}, {"name": "a", "hlo": EXAMPLE_HLO}]
    r = client.post("/v1/batches", json={"operation": "check", "modules": dup})
    assert r.status_code == 422 and r.json()["field"] == "modules"
    r = client.post("/v1/batches", json={"operation": "format", "modules": dup[:1],
                                         "options": {"short": "maybe"}})
    assert r.status_code == 422 and r.json()["field"] == "options.short"


def test_metrics_count_requests_by_route(client: httpx.Client) -> None:
    assert client.post("/v1/check", json={"hlo": EXAMPLE_HLO}).status_code == 200
    assert client.post("/v1/check", json={"hlo": BAD_OPCODE}).status_code == 400
    text = client.get("/metrics").text
    assert 'hlo_layout_http_requests_total{method="POST",route="/v1/check",status="200"}' in text
    assert "hlo_layout_operation_seconds_bucket" in text
    assert 'hlo_layout_outcomes_total{operation="check",outcome="parse_error"}' in text


def test_openapi_documents_every_route_with_examples(client: httpx.Client) -> None:
    spec = client.get("/openapi.json").json()
    for path in ("/v1/assign", "/v1/score", "/v1/verify", "/v1/normalize", "/v1/format",
                 "/v1/check", "/v1/targets", "/v1/batches", "/v1/batches/{batch_id}",
                 "/healthz", "/readyz", "/metrics"):
        assert path in spec["paths"], path
    content = spec["paths"]["/v1/assign"]["post"]["requestBody"]["content"]
    assert {"application/json", "text/plain"} <= set(content)
    assert "hlo" in content["application/json"]["example"]
    assert client.get("/docs").status_code == 200
