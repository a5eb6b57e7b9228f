"""``/v1/assign``, ``/v1/score`` and ``/v1/normalize`` against a real server on loopback.

Oracles: the solver called directly (the service adds nothing to its answer), the
``hlo-layout score`` and ``hlo-layout normalize`` commands in a subprocess, the reference
interpreter behind ``/v1/verify`` (the laid-out and the normalized modules compute the same
function as their input), and XLA's own golden facts for the reduction normalizer.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Iterator

import httpx
import pytest
from conftest import shared_path
from test_api_ops import running_server

from hlo.parser import parse_module
from hlo.printer import print_module
from service.app import create_app
from service.settings import Settings
from solver.layout_assignment.assign import assign
from hlo.bitcast import fully_laid_out
from solver.layout_assignment.options import AssignOptions
from solver.layout_assignment.report import to_json

CLI = [sys.executable, "-c", "from service.cli import main; main()"]
SMALL = "attention_fwd.pre_short.hlo"  # 56 instructions; tpu needs copies and padding
NO_LAYOUT_BITCAST = (
    "HloModule b\n\nENTRY e {\n  p = f32[2,3] parameter(0)\n  n = f32[2,3] negate(p)\n"
    "  ROOT b = f32[3,2] bitcast(n)\n}\n"
)


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    cache = tmp_path_factory.mktemp("layouts") / "cache.sqlite"
    settings = Settings(workers=2, queue_limit=8, cache_path=cache, max_time_limit_s=20,
                        default_time_limit_s=7)
    with running_server(create_app(settings)) as base:
        with httpx.Client(base_url=base, timeout=120) as c:
            yield c


def corpus_text(name: str) -> str:
    return shared_path("corpus", name).read_text()


def equivalent(client: httpx.Client, original: str, rewritten: str) -> bool:
    r = client.post("/v1/verify", json={"original": original, "rewritten": rewritten,
                                        "options": {"trials": 1}})
    assert r.status_code == 200, r.text
    return r.json()["equivalent"]


@pytest.fixture(scope="module")
def assigned(client: httpx.Client) -> dict:
    r = client.post("/v1/assign", json={"hlo": corpus_text(SMALL), "name": SMALL, "target": "tpu",
                                        "options": {"time_limit_s": 10}})
    assert r.status_code == 200, r.text
    assert r.headers["x-cache"] == "miss"
    return r.json()


def test_assign_report_is_the_solvers_report(assigned: dict) -> None:
    direct = assign(parse_module(corpus_text(SMALL), SMALL),
                    "tpu", AssignOptions(time_limit_s=10))
    expected = to_json(direct, include_timings=False)
    for key in ("module", "target", "status", "objective", "model_objective", "lower_bound",
                "gap", "baselines", "breakdown", "terms", "layouts", "inserted", "entry_layouts",
                "normalization", "violations", "hlo"):
        assert assigned[key] == expected[key], key
    assert assigned["operation"] == "assign"
    assert assigned["copies_inserted"] == sum(not x["shared"] for x in expected["inserted"]) > 0


def test_assign_report_contents_hold_together(client: httpx.Client, assigned: dict) -> None:
    # Never worse than what a user gets without us; the proof bounds the model's objective.
    assert assigned["status"] in ("OPTIMAL", "FEASIBLE")
    assert assigned["objective"] <= min(assigned["baselines"].values())
    assert assigned["lower_bound"] <= assigned["model_objective"]
    assert sum(assigned["breakdown"].values()) == assigned["objective"]
    for conversion in assigned["inserted"]:
        assert {"from", "to", "bytes", "cost_ns", "why"} <= set(conversion)
        assert conversion["from"] != conversion["to"] and conversion["bytes"] > 0
    module = parse_module(assigned["hlo"], "assigned")
    assert fully_laid_out(module)
    shapes = {(c.name, i.name): str(i.shape) for c in module.computations for i in c.instructions}
    assert {(x["computation"], x["instruction"]): x["shape"] for x in assigned["layouts"]} == shapes
    assert set(assigned["timings_ms"]) >= {"parse", "solve", "total"}
    # The objective is the cost of the returned module: /v1/score says so independently.
    scored = client.post("/v1/score", json={"hlo": assigned["hlo"], "target": "tpu"})
    assert scored.status_code == 200 and scored.json()["cost"] == assigned["objective"]
    # And the returned module computes what the input computed.
    assert equivalent(client, corpus_text(SMALL), assigned["hlo"])


def test_repeated_assign_is_the_same_body_from_the_cache(client: httpx.Client,
                                                         assigned: dict) -> None:
    again = client.post("/v1/assign", json={"hlo": corpus_text(SMALL), "name": "other-name",
                                            "target": "tpu", "options": {"time_limit_s": 10}})
    assert again.status_code == 200 and again.headers["x-cache"] == "hit"
    assert again.json() == assigned


def test_assign_text_plain_with_query_options(client: httpx.Client) -> None:
    text = corpus_text("mlp_fwd_tiny.pre_short.hlo")
    r = client.post(
        "/v1/assign?target=tpu&time_limit_s=5&entry_layout=auto&normalize=reductions"
        "&emit_bitcasts=true&max_candidates=4&name=tiny.hlo",
        content=text, headers={"content-type": "text/plain"},
    )
    assert r.status_code == 200, r.text
    report = r.json()
    assert report["options"]["entry_layout"] == "auto" and report["options"]["time_limit_s"] == 5
    assert report["options"]["emit_bitcasts"] is True and report["options"]["max_candidates"] == 4
    assert report["normalization"]["passes"] == ["normalize-reductions"]
    # AUTO: the report says which layouts to feed, and they are the module's own.
    module = parse_module(report["hlo"], "tiny")
    params = [str(p.shape) for p in module.entry.parameter_instructions()]
    assert report["entry_layouts"]["parameters"] == params and len(params) == 3
    assert equivalent(client, text, report["hlo"])


def test_normalization_default_is_the_targets_and_an_empty_list_is_none(
        client: httpx.Client) -> None:
    from hlo.passes import passes_for_target
    from hlo.target import load_target

    text = corpus_text("reduce_2d.pre_short.hlo")
    expected = list(passes_for_target(load_target("gpu")))
    assert expected  # the GPU family asks for canonical, grouped reductions
    default = client.post("/v1/assign", json={"hlo": text, "target": "gpu"})
    assert default.status_code == 200, default.text
    assert default.json()["normalization"]["passes"] == expected
    none = client.post("/v1/assign?target=gpu&normalize=", content=text,
                       headers={"content-type": "text/plain"})
    assert none.status_code == 200 and none.json()["normalization"]["passes"] == []
    assert equivalent(client, text, default.json()["hlo"])


def test_time_limit_is_capped_and_defaulted_by_the_server_settings(client: httpx.Client) -> None:
    text = corpus_text("mlp_fwd_tiny.pre_short.hlo")
    r = client.post("/v1/assign", json={"hlo": text, "target": "cpu",
                                        "options": {"time_limit_s": 600}})
    assert r.status_code == 200 and r.json()["options"]["time_limit_s"] == 20
    r = client.post("/v1/assign", json={"hlo": text, "target": "cpu"})
    assert r.status_code == 200 and r.json()["options"]["time_limit_s"] == 7
    r = client.post("/v1/assign?target=cpu", content=text, headers={"content-type": "text/plain"})
    assert r.status_code == 200 and r.json()["options"]["time_limit_s"] == 7


@pytest.mark.parametrize(
    ("query", "field"),
    [("target=tpu&time_limit_s=abc", "time_limit_s"), ("target=tpu&max_candidates=0",
     "max_candidates"), ("target=tpu&normalize=sideways", "normalize.0"),
     ("target=tpu&seed=-1", "seed")],
)
def test_text_plain_invalid_option_is_422_naming_it(client: httpx.Client, query: str,
                                                    field: str) -> None:
    r = client.post(f"/v1/assign?{query}", content=corpus_text("mlp_fwd_tiny.pre_short.hlo"),
                    headers={"content-type": "text/plain"})
    assert r.status_code == 422, r.text
    assert r.json()["field"] == field


def test_text_plain_unknown_target_is_422(client: httpx.Client) -> None:
    r = client.post("/v1/score?target=/etc/passwd", content=corpus_text(
        "mlp_fwd_tiny.after_layout.hlo"), headers={"content-type": "text/plain"})
    assert r.status_code == 422 and r.json()["type"] == "invalid_target"


def test_bitcast_before_assignment_is_422_with_its_place(client: httpx.Client) -> None:
    r = client.post("/v1/assign", json={"hlo": NO_LAYOUT_BITCAST, "target": "cpu"})
    assert r.status_code == 422, r.text
    error = r.json()
    assert error["type"] == "layout_dependent_bitcast" and "'b'" in error["message"]
    assert (error["line"], error["column"]) == (6, 3)
    # With a layout on every array the bitcast means something, and the module is accepted.
    laid_out = NO_LAYOUT_BITCAST.replace("f32[2,3]", "f32[2,3]{1,0}").replace(
        "f32[3,2]", "f32[3,2]{1,0}")
    ok = client.post("/v1/assign", json={"hlo": laid_out, "target": "cpu"})
    assert ok.status_code == 200 and ok.json()["objective"] == 0, ok.text


def test_score_of_xla_after_layout_equals_the_score_command(client: httpx.Client) -> None:
    path = shared_path("corpus", "attention_fwd.after_layout.hlo")
    cli = subprocess.run([*CLI, "score", str(path), "-t", "cpu", "--json"], capture_output=True,
                         text=True, timeout=120)
    assert cli.returncode == 0, cli.stderr
    expected = json.loads(cli.stdout)
    r = client.post("/v1/score", json={"hlo": path.read_text(), "target": "cpu"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["cost"] == expected["cost"] > 0
    assert {k: v for k, v in body.items() if k not in ("operation", "timings_ms")} == expected


def test_normalize_matches_xla_and_the_command(client: httpx.Client) -> None:
    path = shared_path("xla-cases", "reduction_layout_normalizer_test", "LayoutCanonicalizerTest.hlo")
    text = path.read_text()
    r = client.post("/v1/normalize", json={"hlo": text, "options": {"passes": ["reductions"]}})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["passes"] == ["normalize-reductions"] and body["notes"] == []
    cli = subprocess.run([*CLI, "normalize", str(path)], capture_output=True, text=True,
                         timeout=120)
    assert cli.returncode == 0, cli.stderr
    assert body["hlo"] == cli.stdout
    # XLA's golden answer (reduction_layout_normalizer_test.cc): the reduce reads the bitcast
    # to physical order and reduces its dims {0,1,2}.
    reduce = next(i for c in parse_module(body["hlo"], "n").computations for i in c.instructions
                  if i.opcode == "reduce")
    assert str(reduce.shape) == "f32[4,12,12,16,5]{2,1,3,4,0}"
    assert "dimensions={0,1,2}" in print_module(parse_module(body["hlo"], "n"))
    assert equivalent(client, text, body["hlo"])


def test_normalize_variadic_reduce_in_two_layouts_is_a_located_400(client: httpx.Client) -> None:
    text = shared_path("xla-cases", "reduction_layout_normalizer_test",
                       "LayoutCanonicalizerTestVariadicDifferentLayouts.hlo").read_text()
    r = client.post("/v1/normalize", content=text, headers={"content-type": "text/plain"})
    assert r.status_code == 400, r.text
    assert r.json()["type"] == "layout_error" and (r.json()["line"], r.json()["column"]) == (26, 3)


def test_batch_job_defaults_to_assign_and_agrees_with_the_route(client: httpx.Client,
                                                                assigned: dict) -> None:
    import time

    modules = [{"name": "small", "hlo": corpus_text(SMALL)},
               {"name": "bitcast", "hlo": NO_LAYOUT_BITCAST}]
    r = client.post("/v1/batches", json={"modules": modules, "target": "tpu",
                                         "options": {"time_limit_s": 10}})
    assert r.status_code == 202, r.text
    job = r.json()
    assert job["operation"] == "assign"
    deadline = time.monotonic() + 120
    while job["status"] != "done" and time.monotonic() < deadline:
        time.sleep(0.1)
        job = client.get(f"/v1/batches/{job['id']}").json()
    by_name = {item["name"]: item for item in job["results"]}
    assert by_name["small"]["result"] == assigned  # the same request as the route's
    assert by_name["bitcast"]["error"]["type"] == "layout_dependent_bitcast"
