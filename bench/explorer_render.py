"""How fast the explorer page draws a large module's graph, measured in headless Chromium.

Starts the app with uvicorn on a free 127.0.0.1 port (no cache), opens the page in headless
Chromium (Debian's ``chromium`` + ``chromium-driver``, as the tests use), pastes a corpus module
(default ``gpt_train_12l.before_layout``: 10.5k instructions in its entry and 12.5k in all) and
then:

1. "Show graph only": ``/v1/graph-view`` lays the graph out on the server, the page draws it;
2. "Run assign" on ``--target`` (default cpu): the same after layout assignment.

For each it prints the page's own ``renderMs`` (from the view's JSON in hand to the first
frame after the one that paints it: indexing, panel layout, legend, lists, the canvas),
``textMs`` (building the annotated text, after the graph is shown), the wall time from the
click to the drawn graph (server work and transfer included), then the time from a zoom, a
pan and "unfold all" to the second frame after it.

Usage: python3 bench/explorer_render.py [--module gpt_train_12l] [--target cpu] [--repeat 3]
       [--screenshot PNG]
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

    app = create_app(Settings(workers=1, cache_path=None, request_timeout_s=600,
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

    driver.execute_script("window.hloExplorer.renderMs = null; "
                          "document.getElementById('status').textContent = '';")
    start = time.perf_counter()
    driver.find_element("id", button).click()
    wait_for(driver, "const s = document.getElementById('status'); "
                     "if (s.classList.contains('error')) throw new Error(s.textContent); "
                     "return window.hloExplorer.renderMs !== null",
             timeout)
    wall = time.perf_counter() - start
    render = driver.execute_script("return window.hloExplorer.renderMs")
    text_ms = driver.execute_script("return window.hloExplorer.textMs")
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
    return {"nodes": nodes, "render_ms": render, "text_ms": text_ms,
            "click_to_drawn_s": round(wall, 2),
            "zoom_ms": round(zoom, 1), "pan_ms": round(pan, 1),
            "unfold_all_ms": round(unfold, 1)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--module", default="gpt_train_12l")
    parser.add_argument("--target", default="cpu")
    parser.add_argument("--repeat", type=int, default=3)
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
                      "load_average": os.getloadavg(), **results}, indent=1))


if __name__ == "__main__":
    main()
