"""Load test of the HTTP server on loopback: throughput and latency, bounded in count and time.

Starts ``hlo-layout serve`` on a free 127.0.0.1 port (own cache file, 2 workers), then runs
concurrent httpx clients against it:

- ``POST /v1/check`` (parse + verify) and ``POST /v1/assign`` (layout assignment on the
  ``tpu`` target, 10 s time limit), each with:
  - small module, cached: the same request again and again (answered from the cache);
  - small module, uncached: every request a different module (the header name varies);
  - medium module, uncached: a ~87 kB corpus module (cnn_train_nhwc.pre.hlo);
- health latency while a long job (``check`` of gpt_train_4l.final, several seconds) runs.

Usage: python3 bench/load.py [--concurrency 16] [--seconds 15] [--only check|assign] [--json OUT]
Every loop stops at its request count or its time budget, whichever comes first; all traffic
goes to 127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import httpx

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("HLO_LAYOUT_SHARED", REPO.parent / "shared"))
SMALL = """HloModule {name}, entry_computation_layout={{(f32[2,3]{{1,0}})->f32[2,3]{{1,0}}}}

ENTRY main {{
  p = f32[2,3]{{1,0}} parameter(0)
  one = f32[] constant(1)
  ones = f32[2,3]{{1,0}} broadcast(one), dimensions={{}}
  ROOT sum = f32[2,3]{{1,0}} add(p, ones)
}}
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def summarize(name: str, latencies: list[float], statuses: dict[int, int], wall: float) -> dict:
    return {
        "scenario": name,
        "requests": len(latencies),
        "statuses": {str(k): v for k, v in sorted(statuses.items())},
        "requests_per_s": round(len(latencies) / wall, 1),
        "p50_ms": round(percentile(latencies, 50) * 1000, 2),
        "p99_ms": round(percentile(latencies, 99) * 1000, 2),
        "max_ms": round(max(latencies) * 1000, 2),
    }


async def load(
    client: httpx.AsyncClient, route: str, name: str, body: Callable[[int], dict], count: int,
    concurrency: int, seconds: float,
) -> dict:
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    next_index = 0
    deadline = time.monotonic() + seconds

    async def worker() -> None:
        nonlocal next_index
        while next_index < count and time.monotonic() < deadline:
            i = next_index
            next_index += 1
            start = time.perf_counter()
            r = await client.post(route, json=body(i))
            latencies.append(time.perf_counter() - start)
            statuses[r.status_code] = statuses.get(r.status_code, 0) + 1

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    result = summarize(name, latencies, statuses, time.perf_counter() - start)
    result["route"] = route
    return result


async def health_during_long_job(client: httpx.AsyncClient, long_text: str) -> dict:
    job = asyncio.create_task(
        client.post("/v1/check", json={"hlo": long_text, "name": "long.hlo"}, timeout=600)
    )
    await asyncio.sleep(0.2)
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    start = time.perf_counter()
    while not job.done() and len(latencies) < 2000:
        t = time.perf_counter()
        r = await client.get("/healthz")
        latencies.append(time.perf_counter() - t)
        statuses[r.status_code] = statuses.get(r.status_code, 0) + 1
        await asyncio.sleep(0.05)
    wall = time.perf_counter() - start
    response = await job
    if not latencies:
        raise RuntimeError(f"the long job ended at once: {response.status_code} {response.text[:300]}")
    result = summarize("healthz during a long check", latencies, statuses, wall)
    result["long_job_s"] = round(wall, 2)
    result["long_job_status"] = response.status_code
    return result


ASSIGN = {"target": "tpu", "options": {"time_limit_s": 10}}


async def run(base: str, concurrency: int, seconds: float, only: str | None) -> list[dict]:
    medium = (SHARED / "corpus" / "cnn_train_nhwc.pre.hlo").read_text()
    long_text = gzip.decompress((SHARED / "corpus" / "gpt_train_4l.final.hlo.gz").read_bytes())
    limits = httpx.Limits(max_connections=concurrency * 2)
    results = []
    async with httpx.AsyncClient(base_url=base, timeout=300, limits=limits) as client:
        for route, extra in (("/v1/check", {}), ("/v1/assign", ASSIGN)):
            if only is not None and not route.endswith(only):
                continue
            op = route.rsplit("/", 1)[1]
            warm = await client.post(route, json={"hlo": SMALL.format(name="warm"), **extra})
            if warm.status_code != 200:
                raise RuntimeError(f"{route}: {warm.status_code} {warm.text[:300]}")
            results += [
                await load(client, route, f"{op}: small, cached",
                           lambda i, extra=extra: {"hlo": SMALL.format(name="cached"), **extra},
                           5000, concurrency, seconds),
                await load(client, route, f"{op}: small, uncached",
                           lambda i, extra=extra: {"hlo": SMALL.format(name=f"m{i}"), **extra},
                           2000, concurrency, seconds),
                await load(
                    client, route, f"{op}: medium (87 kB), uncached",
                    lambda i, extra=extra: {
                        "hlo": medium.replace("HloModule ", f"HloModule v{i}_", 1), **extra
                    },
                    300, concurrency, seconds,
                ),
            ]
        if only is None:
            results.append(await health_during_long_job(client, long_text.decode()))
    return results


def machine() -> str:
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} cores, Python {platform.python_version()}, {platform.system()}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=15.0, help="Budget per scenario.")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--only", choices=("check", "assign"), help="One operation, no health.")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        env = {
            **os.environ,
            "HLO_LAYOUT_CACHE_PATH": str(Path(tmp) / "cache.sqlite"),
            "HLO_LAYOUT_QUEUE_LIMIT": str(args.concurrency * 4),
        }
        server = subprocess.Popen(
            [sys.executable, "-c", "from service.cli import main; main()", "serve",
             "--host", "127.0.0.1", "--port", str(port), "--workers", str(args.workers)],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                try:
                    if httpx.get(f"{base}/readyz", timeout=1).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                time.sleep(0.2)
            results = asyncio.run(run(base, args.concurrency, args.seconds, args.only))
        finally:
            server.terminate()
            server.wait(timeout=30)

    report: dict[str, Any] = {
        "command": " ".join(["python3", "bench/load.py", *sys.argv[1:]]),
        "machine": machine(),
        "date": time.strftime("%Y-%m-%d"),
        "workers": args.workers,
        "concurrency": args.concurrency,
        "results": results,
    }
    print(json.dumps(report, indent=2))
    print()
    print("| scenario | requests | req/s | p50 ms | p99 ms | max ms | statuses |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['scenario']} | {r['requests']} | {r['requests_per_s']} | {r['p50_ms']} | "
              f"{r['p99_ms']} | {r['max_ms']} | {r['statuses']} |")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
