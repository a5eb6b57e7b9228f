"""How fast the explorer page draws a large module's graph, measured in headless Chromium.

Starts the app with uvicorn on a free 127.0.0.1 port (no cache), opens the page in headless
Chromium (Debian's ``chromium`` + ``chromium-driver``, as the tests use), pastes a corpus module
(default ``gpt_train_12l.before_layout``: 10.5k instructions in its entry and 12.5k in all) and
then:

1. "Show graph only": ``/v1/graph-view`` lays the graph out on the server, the page draws it;
2. "Run assign" on ``--target`` (default cpu): the same after layout assignment.

For each it prints where the time from the click to the drawn graph went, as the page
records it (``window.hloExplorer.timings``, ms): ``send`` (the request body made and handed
to fetch), ``wait`` (sent -> answer headers: upload, queue and the server's work), the
server's own steps from its ``Server-Timing`` header (``parse``, ``verify``, ``layout``,
``encode``), ``download`` (headers -> JSON parsed), ``render`` (the view in hand -> the second
animation frame after drawing it: indexing, panel layout, legend, lists, the canvas) and
``total`` (the click event -> the drawn graph); then ``text_ms`` (building the annotated text,
after the graph is shown), ``settled_ms`` (the click -> the second frame after the text is in
place: the page answers input again), the wall time Selenium saw from its click to that, and
the time from a zoom, a pan and "unfold all" to the second frame after each.

Usage: python3 bench/explorer_render.py [--module gpt_train_12l] [--target cpu] [--repeat 5]
       [--assign] [--screenshot PNG]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import socket
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("HLO_LAYOUT_SHARED", REPO.parent / "shared"))
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "service"))


def read_module(name: str) -> str:
    for suffix in (".before_layout.hlo.gz", ".before_layout.hlo"):
        path = SHARED / "corpus" / (name + suffix)
        if path.exists():
            return gzip.open(path, "rt").read() if path.suffix == ".gz" else path.read_text()
    raise SystemExit(f"no corpus module {name}")


def serve() -> tuple[str, object, threading.Thread]:
    import uvicorn

    from service.app import create_app
    from service.settings import Settings

    app = create_app(Settings(workers=1, cache_path=None, request_timeout_s=600, time_limit_grace_s=300,
                              max_body_bytes=64 << 20))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    return f"http://127.0.0.1:{sock.getsockname()[1]}", server, thread


def measure(driver, button: str, timeout: float) -> dict[str, float]:
    from browser import wait_for

    driver.execute_script("window.hloExplorer.renderMs = null; window.hloExplorer.timings = null; "
                          "window.hloExplorer.settledMs = null; "
                          "document.getElementById('status').textContent = '';")
    start = time.perf_counter()
    driver.find_element("id", button).click()
    wait_for(driver, "const s = document.getElementById('status'); "
                     "if (s.classList.contains('error')) throw new Error(s.textContent); "
                     "return window.hloExplorer.settledMs !== null",
             timeout)
    wall = time.perf_counter() - start
    parts = driver.execute_script("return window.hloExplorer.timings")
    text_ms = driver.execute_script("return window.hloExplorer.textMs")
    settled = driver.execute_script("return window.hloExplorer.settledMs")
    # Each redraw is timed from the event to the second animation frame after it (the
    # canvas is rasterized when a frame is produced, not when the script draws).
    framed = ("const done = arguments[arguments.length - 1]; const t = performance.now(); {}; "
              "requestAnimationFrame(() => requestAnimationFrame(() => "
              "done(performance.now() - t)));")
    zoom = driver.execute_async_script(framed.format(
        "const c = document.getElementById('graph'); c.focus();"
        "c.dispatchEvent(new KeyboardEvent('keydown', {key: '+'}))"))
    pan = driver.execute_async_script(framed.format(
        "document.getElementById('graph').dispatchEvent("
        "new KeyboardEvent('keydown', {key: 'ArrowDown'}))"))
    unfold = driver.execute_async_script(framed.format(
        "document.getElementById('unfold-all').click()"))
    nodes = driver.execute_script("return window.hloExplorer.view.nodes.name.length")
    server = parts.pop("server")
    return {"nodes": nodes, **{f"{k}_ms": v for k, v in parts.items()},
            **{f"server_{k}_ms": v for k, v in server.items()},
            "text_ms": text_ms, "settled_ms": settled,
            "selenium_click_to_settled_s": round(wall, 2),
            "zoom_ms": round(zoom, 1), "pan_ms": round(pan, 1),
            "unfold_all_ms": round(unfold, 1)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--module", default="gpt_train_12l")
    parser.add_argument("--target", default="cpu")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--assign", action="store_true",
                        help="also time 'Run assign' (dominated by the solve)")
    parser.add_argument("--screenshot", type=Path, help="save the page after the assign run")
    args = parser.parse_args()
    from browser import chromium
    from selenium.webdriver.support.ui import Select

    text = read_module(args.module)
    url, server, thread = serve()
    results: dict[str, list] = {"graph_only": [], "assign": []}
    try:
        with chromium() as driver:
            driver.get(url + "/")
            driver.execute_script("document.getElementById('hlo').value = arguments[0]", text)
            Select(driver.find_element("id", "target")).select_by_visible_text(args.target)
            for _ in range(args.repeat):
                results["graph_only"].append(measure(driver, "graph-only", 300))
            if args.assign:
                results["assign"].append(measure(driver, "run", 600))
            if args.screenshot is not None:
                driver.execute_script("document.getElementById('fold-all').click();"
                                      "document.getElementById('fit').click();"
                                      "document.getElementById('graph').scrollIntoView();")
                driver.save_screenshot(str(args.screenshot))
    finally:
        server.should_exit = True  # type: ignore[attr-defined]
        thread.join(timeout=20)
    print(json.dumps({"module": args.module, "target": args.target,
                      "machine": f"{platform.machine()} {os.cpu_count()} cores",
                      "commit": commit(), "load_average": os.getloadavg(), **results}, indent=1))
    for name, rows in results.items():
        for row in rows:
            print(name, " ".join(f"{k}={v}" for k, v in row.items()), file=sys.stderr)


def commit() -> str:
    import subprocess

    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO,
                          capture_output=True, text=True)
    return done.stdout.strip() or "unknown"


if __name__ == "__main__":
    main()
