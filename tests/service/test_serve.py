"""``hlo-layout serve`` as a real process on loopback: it answers, and it stops cleanly."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import httpx
from conftest import shared_path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def children(pid: int) -> set[int]:
    """Processes whose parent is ``pid`` (the solver workers of the server)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.add(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_serve_subprocess_answers_and_stops_cleanly(tmp_path: Path) -> None:
    executable = shutil.which("hlo-layout")
    assert executable is not None, "the hlo-layout console script is not installed"
    port = free_port()
    env = {**os.environ, "HLO_LAYOUT_CACHE_PATH": str(tmp_path / "cache.sqlite")}
    server = subprocess.Popen(
        [executable, "serve", "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert server.poll() is None, server.communicate()[0]
            try:
                if httpx.get(f"{base}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "server not ready within 60 s"
            time.sleep(0.2)
        with httpx.Client(base_url=base, timeout=120) as c:
            assert c.get("/healthz").json() == {"status": "ok"}
            names = {t["name"] for t in c.get("/v1/targets").json()["targets"]}
            assert {"tpu", "gpu", "cpu", "ascend"} <= names
            text = shared_path("corpus", "mlp_fwd_tiny.pre_short.hlo").read_text()
            r = c.post("/v1/assign", json={"hlo": text, "target": "tpu"})
            assert r.status_code == 200, r.text
            report = r.json()
            assert report["status"] == "OPTIMAL" and report["module"] == "jit_mlp_fwd_tiny"
            assert report["objective"] <= min(report["baselines"].values())
        workers = children(server.pid)
        assert workers, "the server runs its solver in worker processes"
    finally:
        server.send_signal(signal.SIGINT)
        try:
            output = server.communicate(timeout=30)[0]
        except subprocess.TimeoutExpired:
            server.kill()
            raise
    assert server.returncode == 0, output
    assert "Traceback" not in output
    assert "Application shutdown complete" in output
    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(alive(pid) for pid in workers), "worker processes outlived the server"
