"""Shapes too large to exist, and modules too large to interpret, are refused up front.

Every command answers a shape whose byte size overflows int64 with a located error and exit 2 (XLA's
own shape validation is the oracle for the boundary); ``verify`` refuses a module whose buffers
exceed the interpreter's memory budget before allocating anything, in the CLI (exit 2) and over HTTP
(413 naming the limit); huge but valid shapes are assigned without listing their elements.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Iterator

import httpx
import pytest
from test_api_ops import running_server
from typer.testing import CliRunner

from hlo.errors import HloError
from hlo.interpreter import MemoryBudgetError, evaluate
from hlo.interpreter.budget import buffer_bytes
from hlo.parser import parse_module, parse_shape
from service.app import create_app
from service.cli import build_app
from service.settings import Settings

RUNNER = CliRunner()


def negate(shape: str) -> str:
    return f"HloModule m\n\nENTRY e {{\n  a = {shape} parameter(0)\n  ROOT n = {shape} negate(a)\n}}\n"


OVERFLOWING = negate("f32[99999999999,99999999999]")


@pytest.mark.parametrize(
    "command",
    [["check"], ["fmt"], ["assign", "-t", "tpu"], ["score", "-t", "gpu"], ["normalize"], ["verify", "SAME"]],
)
def test_every_command_refuses_a_shape_whose_size_overflows_int64(tmp_path, command):
    path = tmp_path / "big.hlo"
    path.write_text(OVERFLOWING)
    args = [a if a != "SAME" else str(path) for a in command]
    result = RUNNER.invoke(build_app(), [args[0], str(path), *args[1:]])
    assert result.exit_code == 2, result.output
    assert f"{path}:4:7: error: shape f32[99999999999,99999999999] size may overflow int64" in result.output
    assert "Traceback" not in result.output and "OverflowError" not in result.output


XLA_VALIDATES = textwrap.dedent("""
    import sys
    from jaxlib import _hlo
    from jax._src.lib import _jax, xla_client
    for text in sys.stdin.read().split("\\n====\\n"):
        module = _hlo.hlo_module_from_text(text)
        computation = xla_client.XlaComputation(module.as_serialized_hlo_module_proto())
        try:
            _jax.mlir.xla_computation_to_mlir_module(computation)
            print("accepted")
        except Exception as exc:
            print("rejected" if "size may overflow" in str(exc) else f"other: {exc}")
""")


@pytest.mark.xla
def test_the_size_rule_is_xlas():
    """At the boundary 2**63 bytes, for several element widths, we agree with XLA's validation."""
    shapes = ["f32[2305843009213693951]", "f32[2305843009213693952]", "f32[4611686018427387904]",
              "s8[9223372036854775807]", "f64[1073741824,1073741824]", "bf16[4294967296,1073741824]",
              "pred[3037000499,3037000499]", "f32[1048576,1048576]"]
    texts = [negate(s) for s in shapes]
    done = subprocess.run([sys.executable, "-c", XLA_VALIDATES], input="\n====\n".join(texts),
                          capture_output=True, text=True, timeout=120)
    xla = done.stdout.split()
    assert len(xla) == len(shapes), done.stderr
    ours = []
    for shape in shapes:
        try:
            parse_shape(shape)
            ours.append("accepted")
        except HloError as err:
            assert "size may overflow int64" in err.message
            ours.append("rejected")
    assert ours == xla
    assert "accepted" in ours and "rejected" in ours


def test_huge_valid_shapes_are_assigned_without_listing_their_elements(tmp_path):
    path = tmp_path / "tb.hlo"
    path.write_text(
        "HloModule tb\n\nENTRY e {\n  a = f32[1048576,1048576] parameter(0)\n"
        "  t = f32[1048576,1048576] transpose(a), dimensions={1,0}\n"
        "  ROOT n = f32[1048576,1048576] negate(t)\n}\n"
    )
    result = RUNNER.invoke(build_app(), ["assign", str(path), "-t", "tpu", "--time-limit", "5"])
    assert result.exit_code == 0, result.output


def test_the_interpreter_refuses_before_allocating():
    module = parse_module(
        "HloModule m\n\nENTRY e {\n  a = f32[1000,1000] parameter(0)\n  t = (f32[1000,1000]) tuple(a)\n"
        "  g = f32[1000,1000] get-tuple-element(t), index=0\n  ROOT n = bf16[1000,1000] convert(g)\n}\n",
        "m.hlo",
    )
    needed, _ = buffer_bytes(module)
    assert needed == 4_000_000 + 2_000_000  # the parameter and the convert; tuples hold no storage
    with pytest.raises(MemoryBudgetError, match="memory budget of 5.7 MiB"):
        evaluate(module, [None], memory_limit=needed - 1)  # refused before the argument is read


def test_cli_verify_refuses_a_module_over_the_budget(tmp_path):
    path = tmp_path / "mem.hlo"
    path.write_text(negate("f32[100000,100000]"))
    result = RUNNER.invoke(build_app(), ["verify", str(path), str(path)])
    assert result.exit_code == 2
    assert "needs up to 74.5 GiB" in result.output and "memory budget of 4.0 GiB" in result.output
    small = RUNNER.invoke(build_app(), ["verify", str(path), str(path), "--memory-limit-mb", "1"])
    assert small.exit_code == 2 and "memory budget of 1.0 MiB" in small.output


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    settings = Settings(workers=1, queue_limit=4, cache_path=None, max_interpreter_memory_mb=64)
    with running_server(create_app(settings)) as base:
        with httpx.Client(base_url=base, timeout=60) as c:
            yield c


def test_http_verify_refuses_a_module_over_the_budget_with_413(client):
    text = negate("f32[100000,100000]")
    r = client.post("/v1/verify", json={"original": text, "rewritten": text})
    assert r.status_code == 413, r.text
    body = r.json()
    assert body["type"] == "too_large" and "memory budget of 64.0 MiB" in body["message"]
    # A client may ask for more than the server allows: the server's cap still holds.
    r = client.post("/v1/verify", json={"original": text, "rewritten": text,
                                        "options": {"memory_limit_mb": 1 << 20}})
    assert r.status_code == 413 and "64.0 MiB" in r.json()["message"]


@pytest.mark.parametrize("route", ["assign", "score", "check", "format", "normalize"])
def test_http_refuses_an_overflowing_shape_with_400(client, route):
    body = {"hlo": OVERFLOWING, **({"target": "tpu"} if route in ("assign", "score") else {})}
    r = client.post(f"/v1/{route}", json=body)
    assert r.status_code == 400, r.text
    assert r.json()["line"] == 4 and "size may overflow int64" in r.json()["message"]


def test_http_verify_refuses_an_overflowing_shape_with_400(client):
    r = client.post("/v1/verify", json={"original": OVERFLOWING, "rewritten": OVERFLOWING})
    assert r.status_code == 400, r.text
