"""Mutated modules through every front door that takes a module: never a traceback, never a 5xx.

Real modules of the shared corpus are mutated token by token (numbers in shapes and attributes
changed, operand names swapped, tokens dropped or repeated), which keeps many of them parseable
and reaches the verifier, the layout engine and the interpreter with modules nobody wrote. Each
mutant goes through every CLI command that reads a module and every HTTP route that takes one:

- the CLI exits 0, 1 (a finding, e.g. not equivalent) or 2 (bad input) with no Python exception
  escaping and no traceback in its output; an exit 2 names the file and says ``error:``;
- HTTP answers below 500, and every 4xx is the JSON error body ``{type, message, ...}``.
"""

from __future__ import annotations

import random
import re
import time
from pathlib import Path
from typing import Iterator

import httpx
import pytest
from conftest import shared_path
from test_api_ops import running_server
from typer.testing import CliRunner

from service.app import create_app
from service.cli import build_app
from service.settings import Settings

SOURCES = ("mlp_fwd_tiny", "transpose_reshape_chain", "reduce_2d", "tuple_outputs_aliasing", "cond_branches",
           "einsum_zoo")
TOKEN = re.compile(r"\s+|[\w.%\-]+|.", re.DOTALL)
NUMBERS = ("0", "1", "2", "3", "5", "64", "-1", "1000000")
MUTANTS_PER_SOURCE = 4


def _mutate(rng: random.Random, text: str) -> str:
    tokens = TOKEN.findall(text)
    for _ in range(rng.randint(1, 2)):
        kind = rng.choice(("number", "number", "number", "name", "name", "drop", "repeat"))
        if kind == "number":
            spots = [k for k, t in enumerate(tokens) if t.isdigit()]
            tokens[rng.choice(spots)] = rng.choice(NUMBERS)
        elif kind == "name":
            spots = [k for k, t in enumerate(tokens) if re.fullmatch(r"%?[a-z][\w.\-]*\.\d+", t)]
            tokens[rng.choice(spots)] = tokens[rng.choice(spots)]
        elif kind == "drop":
            del tokens[rng.randrange(len(tokens))]
        else:
            k = rng.randrange(len(tokens))
            tokens.insert(k, tokens[k])
    return "".join(tokens)


def _source(name: str) -> str:
    return shared_path("corpus", f"{name}.pre.hlo").read_text()


def _cases() -> list[tuple[str, str]]:
    """(original, mutant) pairs, the same every run."""
    rng = random.Random(13)
    return [(_source(name), _mutate(rng, _source(name))) for name in SOURCES for _ in range(MUTANTS_PER_SOURCE)]


CASES = _cases()
RUNNER = CliRunner()
PYTHON_EXCEPTION = re.compile(r"\b[A-Z]\w*(Error|Exception)\b: ")

COMMANDS = {
    "check": [], "fmt": [], "normalize": [], "graph": ["-f", "json"],
    "score": ["-t", "tpu"], "assign": ["-t", "cpu", "--time-limit", "1"],
}


def _cli(args: list[str]) -> None:
    result = RUNNER.invoke(build_app(), args)
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"{args[0]}: {type(result.exception).__name__}: {result.exception}")
    assert result.exit_code in (0, 1, 2), (args[0], result.exit_code, result.output[-500:])
    assert "Traceback" not in result.output, result.output[-2000:]
    # An internal failure would print as 'error: TypeError: ...' with exit 2: none may occur.
    assert not PYTHON_EXCEPTION.search(result.output), result.output[-2000:]
    if result.exit_code == 2:
        assert "error:" in result.output, (args[0], result.output[-500:])


@pytest.mark.parametrize("number", range(len(CASES)))
def test_cli_commands_answer_mutated_modules_without_a_traceback(tmp_path: Path, number: int) -> None:
    original, mutant = CASES[number]
    first, second = tmp_path / "original.hlo", tmp_path / "mutant.hlo"
    first.write_text(original)
    second.write_text(mutant)
    for command, extra in COMMANDS.items():
        _cli([command, str(second), *extra])
    _cli(["verify", str(first), str(second)])
    _cli(["verify", str(second), str(second)])


@pytest.fixture(scope="module")
def client() -> Iterator[httpx.Client]:
    settings = Settings(workers=1, queue_limit=8, cache_path=None, max_interpreter_memory_mb=256)
    with running_server(create_app(settings)) as base:
        with httpx.Client(base_url=base, timeout=120) as c:
            yield c


def _answered(response: httpx.Response) -> None:
    assert response.status_code < 500, response.text[-2000:]
    if response.status_code >= 400:
        body = response.json()
        assert isinstance(body.get("type"), str) and isinstance(body.get("message"), str), body
        assert "Traceback" not in body["message"] and not PYTHON_EXCEPTION.search(body["message"]), body


def test_http_routes_answer_mutated_modules_below_500(client: httpx.Client) -> None:
    for original, mutant in CASES:
        for route, extra in (("check", {}), ("format", {}), ("normalize", {}), ("score", {"target": "tpu"}),
                             ("assign", {"target": "cpu", "options": {"time_limit_s": 1}})):
            _answered(client.post(f"/v1/{route}", json={"hlo": mutant, **extra}))
        _answered(client.post("/v1/assign?target=tpu&time_limit_s=1", content=mutant,
                              headers={"content-type": "text/plain"}))
        _answered(client.post("/v1/verify", json={"original": original, "rewritten": mutant}))
        _answered(client.post("/v1/graph-view", json={"hlo": mutant}))
    # A batch answers per module: a failed module carries a typed error, never an internal one.
    modules = [{"name": f"m{k}", "hlo": mutant} for k, (_, mutant) in enumerate(CASES)]
    for operation in ("check", "normalize"):
        created = client.post("/v1/batches", json={"operation": operation, "modules": modules})
        _answered(created)
        job = created.json()
        deadline = time.monotonic() + 120
        while job["status"] != "done" and time.monotonic() < deadline:
            time.sleep(0.2)
            job = client.get(f"/v1/batches/{job['id']}").json()
        assert job["status"] == "done" and job["finished"] == len(CASES), job
        for item in job["results"]:
            assert item["error"] is None or item["error"]["type"] != "internal_error", item


# Generated modules (the interpreter fuzzer's: chains of instructions over random small shapes,
# some broken on purpose) through the pipeline that both the CLI and HTTP call.
from hypothesis import HealthCheck, given, settings  # noqa: E402

from service import pipeline  # noqa: E402
from solver.layout_assignment.options import AssignOptions  # noqa: E402


def _generated_modules():
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "hlo"))
    from test_interpreter_fuzz import modules

    return modules()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_generated_modules())
def test_generated_modules_through_every_operation_fail_only_with_typed_errors(case) -> None:
    text, _ = case
    requests = [pipeline.ModuleRequest(op, text) for op in (
        pipeline.Operation.CHECK, pipeline.Operation.FORMAT, pipeline.Operation.NORMALIZE)]
    requests += [pipeline.ModuleRequest(pipeline.Operation.SCORE, text, target="tpu"),
                 pipeline.ModuleRequest(pipeline.Operation.ASSIGN, text, target="cpu",
                                        options=AssignOptions(time_limit_s=1.0)),
                 pipeline.VerifyRequest(text, text)]
    for request in requests:
        outcome = pipeline.run(request)
        assert not (isinstance(outcome, pipeline.Failure) and outcome.type is pipeline.FailureType.INTERNAL_ERROR), (
            request.operation, outcome.message)


def _picture_requests(count: int) -> list[dict]:
    """Random shapes (zero-sized dims, tiles with '*', element sizes, narrow types) with and
    without an Ascend format or a GF(2) blocked layout."""
    rng = random.Random(5)
    out = []
    for _ in range(count):
        rank = rng.randint(0, 4)
        dims = [rng.choice((0, 1, 2, 3, 5, 8, 16, 128, 1000)) for _ in range(rank)]
        order = list(range(rank))
        rng.shuffle(order)
        shape = f"{rng.choice(('f32', 'bf16', 's8', 'pred', 's4', 'c64'))}[{','.join(map(str, dims))}]"
        if rng.random() < 0.8:
            tiles = "".join("(" + ",".join(rng.choice(("1", "2", "8", "128", "*", "3")) for _ in range(rng.randint(1, 2)))
                            + ")" for _ in range(rng.randint(0, 2)))
            shape += "{" + ",".join(map(str, order)) + (f":T{tiles}" if tiles else "") + "}"
        request: dict = {"shape": shape}
        kind = rng.random()
        if kind < 0.3:
            request["format"] = rng.choice(("FRACTAL_NZ", "FRACTAL_Z", "NC1HWC0"))
        elif kind < 0.5:
            request["blocked"] = rng.choice(("1,4:8,4:2,1", "1:32:4", "0:1:1", "2,2:4,8:1,1", "x"))
        out.append(request)
    return out


def test_layout_pictures_of_random_shapes_answer_below_500(client: httpx.Client) -> None:
    """Zero-sized dims once ended in an IndexError or a ZeroDivisionError (500)."""
    empty = client.post("/v1/layout-picture", json={"shape": "pred[1,0]{1,0}"})
    assert empty.status_code == 422 and "no elements" in empty.json()["message"], empty.text
    for request in _picture_requests(150):
        _answered(client.post("/v1/layout-picture", json=request))
