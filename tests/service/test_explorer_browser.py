"""The explorer page in a real browser (headless Chromium) against a real server on loopback
with bearer auth on: the page loads without the token and asks for it; a pasted module is
laid out and every number shown equals the JSON report fetched separately; the graph, the
conversions, the annotated text and the memory-order pictures are in the DOM; the batch view
ranks modules by gain; ``assign --html`` shows the same numbers offline; and the basics of
accessibility hold (labels, keyboard, contrast). One server and one browser for the module.

Screenshots go to ``$HLO_LAYOUT_SCREENSHOTS`` (default: the test's temporary folder).
"""

from __future__ import annotations

import json
import math
import re
from decimal import Decimal
import os
import time
from pathlib import Path
from typing import Any, Iterator

import httpx
import pytest
from browser import chromium, wait_for
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select
from test_api_ops import running_server
from typer.testing import CliRunner

from hlo.parser import parse_module
from service.app import create_app
from service.cli import build_app
from service.explorer.answers import view_answer
from service.explorer.examples import example
from service.explorer.page import assign_report_html
from service.settings import Settings

TOKEN = "explorer-test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "attention_fwd.hlo"
OPTIONS = {"time_limit_s": 10, "entry_layout": "fixed", "max_candidates": 6, "seed": 0,
           "emit_bitcasts": False}

BROKEN = "HloModule m\nENTRY e {\n  ROOT p = f32[2] paramter(0)\n}"
MAX_REPS = 4  # the server's cap on a measurement's timed rounds
# No layout written: the XLA path runs exactly the layouts written, so it refuses this.
BARE = "HloModule bare\nENTRY e {\n  p = f32[2,3] parameter(0)\n  ROOT n = f32[2,3] negate(p)\n}\n"

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    settings = Settings(workers=1, queue_limit=16, cache_path=None, auth_token=TOKEN,
                        request_timeout_s=60, max_measure_reps=MAX_REPS)
    with running_server(create_app(settings)) as url:
        yield url


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    with chromium() as browser:
        yield browser


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = os.environ.get("HLO_LAYOUT_SCREENSHOTS")
    path = Path(folder) if folder else tmp_path_factory.mktemp("screenshots")
    path.mkdir(parents=True, exist_ok=True)
    return path


def open_page(driver: Any, base_url: str) -> None:
    """Load the page and give it the token when it asks."""
    driver.get(base_url + "/")
    ready = ("return !document.getElementById('token-form').hidden || "
             "document.getElementById('example').options.length > 1")
    wait_for(driver, ready, 20)
    if driver.find_element(By.ID, "token-form").is_displayed():
        driver.find_element(By.ID, "token").send_keys(TOKEN)
        driver.find_element(By.CSS_SELECTOR, "#token-form button").click()
        wait_for(driver, "return document.getElementById('example').options.length > 1", 20)
    wait_for(driver, "return document.getElementById('target').dataset.loaded", 20)


def paste(driver: Any, element_id: str, text: str) -> None:
    driver.execute_script("const t = document.getElementById(arguments[0]); t.value = arguments[1];"
                          "t.dispatchEvent(new Event('input'));", element_id, text)


def fields(driver: Any, selector: str) -> dict[str, str]:
    return driver.execute_script(
        "const out = {}; for (const tr of document.querySelectorAll(arguments[0])) "
        "out[tr.dataset.field] = tr.querySelector('td').textContent; return out;", selector)


def gap_text(gap: float | None) -> str:
    return "n/a" if gap is None else f"{100 * gap:.2f} %"


def expected_numbers(report: dict, xla: int | None) -> dict[str, str]:
    out = {"status": report["status"], "chosen_by": report["chosen_by"],
           "objective": str(report["objective"]), "lower_bound": str(report["lower_bound"]),
           "gap": gap_text(report["gap"]), "inserted": str(len(report["inserted"])),
           "problem.nodes": str(report["problem"]["nodes"]),
           "problem.relations": str(report["problem"]["relations"])}
    out |= {f"baselines.{k}": str(v) for k, v in report["baselines"].items()}
    out |= {f"breakdown.{k}": str(v) for k, v in report["breakdown"].items()}
    if xla is not None:
        out["xla"] = str(xla)
    return out


def tiled_2d(i: int, j: int, cols: int, tile: tuple[int, int]) -> int:
    th, tw = tile
    return ((i // th) * math.ceil(cols / tw) + j // tw) * th * tw + (i % th) * tw + j % tw


def test_page_and_scripts_load_without_the_token(base_url: str) -> None:
    assert httpx.get(base_url + "/").status_code == 200
    assert httpx.get(base_url + "/static/explorer.js").status_code == 200
    assert httpx.get(base_url + "/v1/examples").status_code == 401
    assert httpx.get(base_url + "/v1/examples", headers=AUTH).json()


def test_explorer_routes_answer_bad_input_with_4xx(base_url: str) -> None:
    bad = httpx.post(base_url + "/v1/graph-view", headers=AUTH, json={"hlo": BROKEN})
    assert bad.status_code == 400 and (bad.json()["line"], bad.json()["column"]) == (3, 19)
    bad = httpx.post(base_url + "/v1/layout-picture", headers=AUTH, json={"shape": "f32[3,5]{1,"})
    assert bad.status_code == 400 and bad.json()["field"] == "shape"
    bad = httpx.post(base_url + "/v1/layout-picture", headers=AUTH,
                     json={"shape": "f32[3,5]", "blocked": "1,1:2,2:1,1"})
    assert bad.status_code == 422 and bad.json()["field"] == "blocked"
    assert httpx.get(base_url + "/v1/examples/nope", headers=AUTH).status_code == 404


def js_text(value: Any) -> str:
    """``value`` as the page writes a JSON value into a cell (JavaScript's ``String``)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e21:
            return str(int(value))
        text = repr(value)
        if "e" in text and abs(value) >= 1e-6:  # JavaScript writes these without an exponent
            return format(Decimal(text), "f")
        return text.replace("e-0", "e-").replace("e+0", "e+")
    return str(value)


def flat(value: Any, prefix: str) -> dict[str, str]:
    """Every leaf of a JSON value by its dotted path, as the page writes it."""
    if isinstance(value, dict):
        return {k: v for key, item in value.items() for k, v in flat(item, f"{prefix}.{key}").items()}
    if isinstance(value, list):
        return {k: v for n, item in enumerate(value) for k, v in flat(item, f"{prefix}.{n}").items()}
    return {prefix: js_text(value)}


def shown_measured(driver: Any) -> dict[str, str]:
    shown = fields(driver, "#measured-table tr")
    return shown | driver.execute_script(
        "const out = {}; for (const td of document.querySelectorAll('#measured-modules td')) "
        "out[td.dataset.field] = td.textContent; return out;")


def test_measure_over_http(base_url: str) -> None:
    """Ours against XLA's own layouts in XLA:CPU; refusals and bad input are 4xx JSON."""
    hlo = EXAMPLE.read_text()
    ours = httpx.post(base_url + "/v1/assign", headers=AUTH, timeout=120,
                      json={"hlo": hlo, "target": "cpu", "options": OPTIONS}).json()["hlo"]
    measure = base_url + "/v1/measure"
    answer = httpx.post(measure, headers=AUTH, timeout=120, json={
        "modules": [{"label": "ours", "hlo": ours}], "xla_layouts_of": hlo,
        "options": {"reps": 50}})
    assert answer.status_code == 200, answer.text
    data = answer.json()
    assert [row["label"] for row in data["modules"]] == ["xla", "ours"]
    assert data["reps"] == MAX_REPS and data["noise"]["rounds"] == MAX_REPS  # capped
    assert data["modules"][1]["ratio"]["rounds"] == MAX_REPS
    # XLA's own execution of its own layouts is the oracle the outputs are compared with.
    assert [row["outputs_match"] for row in data["modules"]] == [True, True]
    assert all(row["median_ms"] > 0 and row["refusal"] is None for row in data["modules"])

    # A module the path cannot run: its reason, as a 422, with what did run.
    refused = httpx.post(measure, headers=AUTH, timeout=120, json={"modules": [
        {"label": "ours", "hlo": ours}, {"label": "bare", "hlo": BARE}], "options": {"reps": 1}})
    assert refused.status_code == 422
    body = refused.json()
    assert (body["type"], body["field"]) == ("not_runnable", "modules.1")
    assert "has no layout" in body["message"] and body["message"].count("bare: ") == 1
    assert [row["refusal"] is None for row in body["measured"]["modules"]] == [True, False]

    bad = httpx.post(measure, headers=AUTH, json={"modules": [{"label": "a", "hlo": BROKEN}]})
    assert bad.status_code == 400
    assert (bad.json()["field"], bad.json()["line"], bad.json()["column"]) == ("modules.0", 3, 19)
    bad = httpx.post(measure, headers=AUTH, json={"modules": [{"label": "a", "hlo": ours}],
                                                  "xla_layouts_of": BROKEN})
    assert bad.status_code == 400 and bad.json()["field"] == "xla_layouts_of"
    bad = httpx.post(measure, headers=AUTH, json={"modules": [{"label": "xla", "hlo": ours}],
                                                  "xla_layouts_of": hlo})
    assert bad.status_code == 422 and bad.json()["field"] == "modules"  # two named xla
    for body in ({"modules": []}, {"modules": [{"label": "a b", "hlo": ours}]},
                 {"modules": [{"label": "a", "hlo": ours}], "options": {"reps": -1}},
                 {"modules": [{"label": "a", "hlo": ours}], "target": "nope"}):
        assert httpx.post(measure, headers=AUTH, json=body).status_code == 422, body
    assert httpx.post(measure, json={"modules": [{"label": "a", "hlo": ours}]}).status_code == 401


CAPTURE = """
window.capturedAnswers = [];
window.originalFetch = window.originalFetch || window.fetch;
const original = window.originalFetch;
window.fetch = async (...args) => {
  const response = await original(...args);
  if (String(args[0]).includes(arguments[0])) {
    window.capturedAnswers.push({status: response.status, text: await response.clone().text()});
  }
  return response;
};
"""


def run_example(driver: Any, name: str, target: str) -> None:
    Select(driver.find_element(By.ID, "example")).select_by_value(name)
    wait_for(driver, "return document.getElementById('status').textContent.startsWith("
                     "'example')", 20)
    Select(driver.find_element(By.ID, "target")).select_by_visible_text(target)
    driver.find_element(By.ID, "run").click()
    wait_for(driver, "const s = document.getElementById('status'); return "
                     "s.classList.contains('error') ? s.textContent : "
                     "s.textContent.includes('conversions')", 120)


def test_measure_in_the_browser(driver: Any, base_url: str, shots: Path) -> None:
    open_page(driver, base_url)
    run_example(driver, "attention_fwd", "cpu")
    driver.execute_script(CAPTURE, "/v1/measure")
    reps = driver.find_element(By.ID, "reps")
    reps.clear()
    reps.send_keys("3")
    driver.find_element(By.ID, "measure").click()
    wait_for(driver, "const s = document.getElementById('status'); return "
                     "s.classList.contains('error') ? s.textContent : "
                     "s.textContent.startsWith('measured')", 120)
    assert "error" not in driver.find_element(By.ID, "status").get_attribute("class")
    captured = driver.execute_script("return window.capturedAnswers")
    assert [a["status"] for a in captured] == [200]
    answer = json.loads(captured[0]["text"])
    # XLA's layouts: the example's own laid-out module, given in the form.
    assert [row["label"] for row in answer["modules"]] == ["xla", "ours"]
    assert answer["reps"] == 3
    assert shown_measured(driver) == flat(answer, "measured")
    driver.find_element(By.ID, "result-section").screenshot(str(shots / "measured.png"))

    # A module the path cannot run (XLA's layouts given without any): the server's reason.
    driver.execute_script("document.querySelector('details').open = true")
    paste(driver, "xla-hlo", BARE)
    driver.execute_script(CAPTURE, "/v1/measure")
    driver.find_element(By.ID, "measure").click()
    wait_for(driver, "return document.getElementById('measure-error')", 60)
    captured = driver.execute_script("return window.capturedAnswers")
    assert [a["status"] for a in captured] == [422]
    body = json.loads(captured[0]["text"])
    assert driver.find_element(By.ID, "measure-error").text == f"{body['type']}: {body['message']}"
    assert driver.find_element(By.ID, "measure-error").get_attribute("role") == "alert"
    assert shown_measured(driver) == flat(body["measured"], "measured")


def wide_module(chains: int, length: int) -> str:
    """``chains`` independent chains of ``length`` adds, joined by the root tuple."""
    lines = ["HloModule wide", "", "ENTRY main {", "  p = f32[8]{0} parameter(0)"]
    for c in range(chains):
        previous = "p"
        for k in range(length):
            lines.append(f"  a{c}_{k} = f32[8]{{0}} add({previous}, p)")
            previous = f"a{c}_{k}"
    ends = ", ".join(f"a{c}_{length - 1}" for c in range(chains))
    lines += [f"  ROOT t = ({', '.join(['f32[8]{0}'] * chains)}) tuple({ends})", "}"]
    return "\n".join(lines) + "\n"


def test_a_10k_instruction_graph_draws_and_answers(driver: Any, base_url: str) -> None:
    """Large modules stay usable: 10,002 instructions drawn, then zoom and search work.
    (How fast is measured by bench/explorer_render.py, not asserted here.)"""
    open_page(driver, base_url)
    paste(driver, "hlo", wide_module(100, 100))
    driver.find_element(By.ID, "graph-only").click()
    wait_for(driver, "const s = document.getElementById('status'); return "
                     "s.classList.contains('error') ? s.textContent : "
                     "s.textContent.startsWith('graph of')", 120)
    view = driver.execute_script("return {n: window.hloExplorer.view.nodes.name.length, "
                                 "layers: window.hloExplorer.view.computations[0].layers, "
                                 "columns: window.hloExplorer.view.computations[0].columns}")
    assert view == {"n": 10002, "layers": 102, "columns": 100}
    assert set(driver.execute_script("return window.hloExplorer.timings.server")) == {
        "parse", "verify", "layout", "encode", "cpu"}
    scale = driver.execute_script("return window.hloExplorer.scale")
    canvas = driver.find_element(By.ID, "graph")
    canvas.send_keys("+")
    assert driver.execute_script("return window.hloExplorer.scale") > scale
    driver.find_element(By.ID, "find").send_keys("a57_99" + Keys.ENTER)
    selected = driver.execute_script("return window.hloExplorer.selected")
    assert driver.execute_script("return window.hloExplorer.view.nodes.name[arguments[0]]",
                                 selected) == "a57_99"
    assert driver.find_element(By.CSS_SELECTOR, "#module-text .ln.selected").text.strip() \
        .startswith("a57_99 = f32[8]{0} add(a57_98, p)")


def test_explain_layout_svg_is_the_page_picture(base_url: str, tmp_path: Path) -> None:
    out = tmp_path / "p.svg"
    for shape, extra, body in (
            ("f32[3,5]{1,0:T(2,2)}", [], {}),
            ("f16[20,20]", ["--format", "FRACTAL_NZ"], {"format": "FRACTAL_NZ"}),
            ("f32[16,16]", ["--blocked", "1,4:8,4:2,1"], {"blocked": "1,4:8,4:2,1"})):
        result = CliRunner().invoke(build_app(), ["explain-layout", shape, *extra, "--svg",
                                                  str(out)])
        assert result.exit_code == 0, result.output
        answer = httpx.post(base_url + "/v1/layout-picture", headers=AUTH,
                            json={"shape": shape, **body})
        assert answer.status_code == 200
        assert out.read_text().strip() == answer.json()["svg"].strip()


def test_graph_view_is_the_view_and_names_its_steps(base_url: str) -> None:
    hlo = EXAMPLE.read_text()
    answer = httpx.post(base_url + "/v1/graph-view", headers=AUTH, json={"hlo": hlo})
    assert answer.status_code == 200
    assert answer.json() == json.loads(json.dumps(view_answer(hlo)))
    again = httpx.post(base_url + "/v1/graph-view", headers=AUTH, json={"hlo": hlo})
    assert again.content == answer.content  # same module, same bytes
    steps = dict(part.strip().split(";dur=") for part in answer.headers["server-timing"].split(","))
    assert list(steps) == ["parse", "verify", "layout", "encode", "cpu"]
    assert all(float(ms) >= 0 for ms in steps.values())


def test_assign_in_the_browser_matches_the_json_report(driver: Any, base_url: str,
                                                       shots: Path) -> None:
    open_page(driver, base_url)
    hlo = EXAMPLE.read_text()
    xla_hlo = example("attention_fwd")[1]
    paste(driver, "hlo", hlo)
    driver.execute_script("document.querySelector('details').open = true")
    paste(driver, "xla-hlo", xla_hlo)
    Select(driver.find_element(By.ID, "target")).select_by_visible_text("tpu")
    driver.find_element(By.ID, "run").click()
    wait_for(driver, "const s = document.getElementById('status'); return "
                     "s.classList.contains('error') ? s.textContent : "
                     "(s.textContent.includes('conversions') && "
                     "window.hloExplorer.renderMs !== null)",
             120)
    assert "error" not in driver.find_element(By.ID, "status").get_attribute("class")

    # The same request, answered as JSON outside the browser.
    report = httpx.post(base_url + "/v1/assign", headers=AUTH, timeout=120,
                        json={"hlo": hlo, "target": "tpu", "options": OPTIONS}).json()
    xla = httpx.post(base_url + "/v1/score", headers=AUTH, timeout=60,
                     json={"hlo": xla_hlo, "target": "tpu"}).json()["cost"]
    assert fields(driver, "#numbers tr") == expected_numbers(report, xla)

    # The graph: every instruction of the laid-out module, the conversions marked.
    module = parse_module(report["hlo"])
    view = driver.execute_script("return window.hloExplorer.view")
    assert view["nodes"]["name"] == [i.name for c in module.computations for i in c.instructions]
    assert len(view["conversions"]) == len(report["inserted"]) > 0
    marked = driver.execute_script("return window.hloExplorer.view.nodes.conversion"
                                   ".filter((c) => c >= 0).length")
    assert marked == len(report["inserted"])
    rows = driver.find_elements(By.CSS_SELECTOR, "#conversions tbody tr")
    assert [(r.find_element(By.CSS_SELECTOR, "[data-field=bytes]").text,
             r.find_element(By.CSS_SELECTOR, "[data-field=cost_ns]").text) for r in rows] == [
        (str(x["bytes"]), str(x["cost_ns"])) for x in report["inserted"]]

    # Clicking a conversion shows its from/to layouts, bytes, cost and why.
    rows[1].find_element(By.TAG_NAME, "button").click()
    details = {dd.get_attribute("data-field"): dd.text
               for dd in driver.find_elements(By.CSS_SELECTOR, "#details dd")}
    second = report["inserted"][1]
    assert {k: details[k] for k in ("from", "to", "bytes", "cost_ns", "runs", "shared", "why",
                                    "for")} == {
        "from": second["from"], "to": second["to"], "bytes": str(second["bytes"]),
        "cost_ns": str(second["cost_ns"]), "runs": str(second["runs"]),
        "shared": js_text(second["shared"]), "why": second["why"],
        "for": f"{second['for']} operand {second['operand']}"}
    assert driver.execute_script("return window.hloExplorer.selected") == \
        view["conversions"][1]["node"]

    # The annotated text: the inserted copies are highlighted and link to the graph.
    assert len(driver.find_elements(By.CSS_SELECTOR, "#module-text .ln.conv")) == len(
        report["inserted"])
    driver.execute_script("document.querySelector('#module-text a[data-conversion=\"2\"]').click()")
    assert driver.execute_script("return window.hloExplorer.selectedConversion") == 2
    rows[0].find_element(By.TAG_NAME, "button").click()

    # The memory order of the conversion's two layouts.
    driver.find_element(By.CSS_SELECTOR, "#details button").click()
    wait_for(driver, "return document.querySelectorAll('#pictures svg.memory-picture').length == 2",
             30)
    first = report["inserted"][0]
    assert first["from"] == "f32[256,256]{1,0:T(8,128)}"  # the corner drawn is 32x32
    positions = driver.execute_script(
        "return [...document.querySelectorAll('#pictures svg')[0].querySelectorAll('g.e')]"
        ".map((g) => Number(g.dataset.position))")
    assert positions == [tiled_2d(i, j, 256, (8, 128)) for i in range(32) for j in range(32)]
    _ = driver.find_element(By.ID, "graph").location_once_scrolled_into_view  # scrolls it into view
    driver.save_screenshot(str(shots / "explorer-assign.png"))


def test_memory_order_pictures(driver: Any, base_url: str, shots: Path) -> None:
    open_page(driver, base_url)
    shape = driver.find_element(By.ID, "shape")
    shape.clear()
    shape.send_keys("f32[3,5]{1,0:T(2,2)}")
    driver.find_element(By.CSS_SELECTOR, "#picture-form button").click()
    wait_for(driver, "return document.querySelector('#pictures svg')", 20)
    cells = driver.execute_script(
        "return [...document.querySelectorAll('#pictures g.e')]"
        ".map((g) => Number(g.dataset.position))")
    assert cells == [tiled_2d(i, j, 5, (2, 2)) for i in range(3) for j in range(5)]
    assert len(driver.find_elements(By.CSS_SELECTOR, "#pictures g.pad")) == 24 - 15
    driver.find_element(By.ID, "picture-section").screenshot(str(shots / "memory-order.png"))

    shape.clear()
    shape.send_keys("f32[16,16]")
    Select(driver.find_element(By.ID, "picture-kind")).select_by_value("blocked")
    driver.find_element(By.CSS_SELECTOR, "#picture-form button").click()
    wait_for(driver, "return document.querySelector('#pictures svg') && "
                     "document.querySelector('#pictures g.e text').textContent == 'r0l0w0'", 20)
    labels = driver.execute_script(
        "return [...document.querySelectorAll('#pictures g.e text')].map((t) => t.textContent)")
    assert labels[16 * 9 + 5] == "r1l5w1"  # (9, 5): register 5 % 4, lane (9 % 8)*4 + 5 // 4
    Select(driver.find_element(By.ID, "picture-kind")).select_by_visible_text("FRACTAL_NZ")
    shape.clear()
    shape.send_keys("f16[20,20]")
    driver.find_element(By.CSS_SELECTOR, "#picture-form button").click()
    wait_for(driver, "return document.querySelectorAll('#pictures g.pad').length > 0", 20)
    assert len(driver.find_elements(By.CSS_SELECTOR, "#pictures g.pad")) == 32 * 32 - 20 * 20


def test_batch_summary_view(driver: Any, base_url: str, tmp_path: Path) -> None:
    rows = [
        {"module": "a", "status": "ok", "solve_status": "OPTIMAL", "objective": 90,
         "baseline_default": 100, "baseline_greedy": 95, "gap": 0.0},
        {"module": "b", "status": "ok", "solve_status": "FEASIBLE", "objective": 10,
         "baseline_default": 500, "baseline_greedy": 20, "gap": 0.25},
        {"module": "c", "status": "failed", "solve_status": None, "objective": None,
         "baseline_default": None, "baseline_greedy": None, "gap": None},
        {"module": "d", "status": "ok", "solve_status": "OPTIMAL", "objective": 7,
         "baseline_default": 7, "baseline_greedy": 7, "gap": 0.0},
    ]
    summary = tmp_path / "summary.json"
    summary.write_text(json.dumps({"total": 4, "modules": rows}))
    open_page(driver, base_url)
    driver.find_element(By.ID, "summary-file").send_keys(str(summary))
    driver.find_element(By.CSS_SELECTOR, "#batch-form button").click()
    wait_for(driver, "return document.querySelector('#batch-table')", 20)
    order = [tr.get_attribute("data-module")
             for tr in driver.find_elements(By.CSS_SELECTOR, "#batch-table tr[data-module]")]
    assert order == ["b", "a", "d", "c"]  # saved 490, 10, 0, unknown
    counts = {li.get_attribute("data-status"): li.text
              for li in driver.find_elements(By.CSS_SELECTOR, "#batch-counts li")}
    assert counts == {"ok / OPTIMAL": "ok / OPTIMAL: 2", "ok / FEASIBLE": "ok / FEASIBLE: 1",
                      "failed": "failed: 1"}

    # A batch run on the server, by its id.
    modules = [{"name": "conv", "hlo": example("conv2d_nchw")[0]},
               {"name": "attention", "hlo": EXAMPLE.read_text()},
               {"name": "broken", "hlo": BROKEN}]
    job = httpx.post(base_url + "/v1/batches", headers=AUTH, timeout=60,
                     json={"modules": modules, "target": "tpu"}).json()
    while (done := httpx.get(f"{base_url}/v1/batches/{job['id']}", headers=AUTH,
                             timeout=60).json())["status"] != "done":
        time.sleep(0.2)
    gains = {r["name"]: r["result"]["baselines"]["default"] - r["result"]["objective"]
             for r in done["results"] if r["status"] == "ok"}
    driver.find_element(By.ID, "summary-file").clear()
    driver.find_element(By.ID, "batch-id").send_keys(job["id"])
    driver.find_element(By.CSS_SELECTOR, "#batch-form button").click()
    wait_for(driver, "return document.querySelectorAll('#batch-table tr[data-module]').length == 3",
             20)
    shown = {tr.get_attribute("data-module"): tr.find_element(By.CSS_SELECTOR, ".gain").text
             for tr in driver.find_elements(By.CSS_SELECTOR, "#batch-table tr[data-module]")}
    assert shown == {**{k: str(v) for k, v in gains.items()}, "broken": ""}
    order = [tr.get_attribute("data-module")
             for tr in driver.find_elements(By.CSS_SELECTOR, "#batch-table tr[data-module]")]
    assert order == sorted(gains, key=lambda k: -gains[k]) + ["broken"]
    # Every cell of every row is the batch's JSON (gain = default - cost, as labelled).
    cells = {tr.get_attribute("data-module"): [td.text for td in tr.find_elements(By.TAG_NAME, "td")]
             for tr in driver.find_elements(By.CSS_SELECTOR, "#batch-table tr[data-module]")}
    for item in done["results"]:
        r = item.get("result") or {}
        solve = r.get("status")
        assert cells[item["name"]] == [
            item["name"], item["status"] + (f" {solve}" if solve else ""),
            js_text(r.get("objective")), js_text((r.get("baselines") or {}).get("default")),
            js_text((r.get("baselines") or {}).get("greedy")),
            js_text(gains.get(item["name"])), "" if r.get("gap") is None else gap_text(r["gap"])]
    counts = {li.get_attribute("data-status"): li.text
              for li in driver.find_elements(By.CSS_SELECTOR, "#batch-counts li")}
    statuses = [item["status"] + (f" / {item['result']['status']}" if item.get("result") else "")
                for item in done["results"]]
    assert counts == {k: f"{k}: {statuses.count(k)}" for k in statuses}


def test_html_report_shows_the_same_numbers_offline(driver: Any, tmp_path: Path,
                                                    shots: Path) -> None:
    page, report_path = tmp_path / "r.html", tmp_path / "r.json"
    result = CliRunner().invoke(build_app(), [
        "assign", str(EXAMPLE), "-t", "tpu", "-o", str(tmp_path / "o.hlo"),
        "--report", str(report_path), "--html", str(page)])
    assert result.exit_code == 0, result.output
    html = page.read_text()
    assert "/static/" not in html and "http://" not in html.replace(
        "http://www.w3.org/2000/svg", "")  # self-contained: nothing fetched
    report = json.loads(report_path.read_text())
    driver.get(page.as_uri())
    wait_for(driver, "return window.hloExplorer && window.hloExplorer.renderMs !== null", 30)
    assert fields(driver, "#numbers tr") == expected_numbers(report, None)
    assert len(driver.find_elements(By.CSS_SELECTOR, "#conversions tbody tr")) == len(
        report["inserted"])
    assert driver.find_elements(By.CSS_SELECTOR, "#pictures svg.memory-picture")
    # Offline: nothing to ask a server for (a measured section is shown from the report).
    assert not driver.find_element(By.ID, "measure-form").is_displayed()
    assert not driver.find_element(By.ID, "input-section").is_displayed()
    module = parse_module(report["hlo"])
    assert driver.execute_script("return window.hloExplorer.view.nodes.name.length") == sum(
        len(c.instructions) for c in module.computations)
    assert len(driver.find_elements(By.CSS_SELECTOR, "#module-text .ln.conv")) == len(
        report["inserted"])
    driver.find_elements(By.CSS_SELECTOR, "#conversions tbody button")[0].click()
    details = {dd.get_attribute("data-field"): dd.text
               for dd in driver.find_elements(By.CSS_SELECTOR, "#details dd")}
    first = report["inserted"][0]
    assert (details["from"], details["to"], details["bytes"], details["cost_ns"]) == (
        first["from"], first["to"], str(first["bytes"]), str(first["cost_ns"]))
    driver.save_screenshot(str(shots / "report-html.png"))

    # A report with a `measured` section (as `assign --measure` writes it) shows its numbers.
    report["measured"] = MEASURED
    page.write_text(assign_report_html(report))
    driver.get(page.as_uri())
    wait_for(driver, "return window.hloExplorer && window.hloExplorer.renderMs !== null", 30)
    shown = fields(driver, "#measured-table tr")
    shown |= driver.execute_script(
        "const out = {}; for (const td of document.querySelectorAll('#measured-modules td')) "
        "out[td.dataset.field] = td.textContent; return out;")
    expected = {"measured.platform": "cpu", "measured.reference": "xla", "measured.reps": "10",
                "measured.load_average.0": "1.5", "measured.noise.median": "1.004"}
    for k, row in enumerate(MEASURED["modules"]):
        for key, value in row.items():
            if isinstance(value, dict):
                expected |= {f"measured.modules.{k}.{key}.{n}": str(v) for n, v in value.items()}
            else:
                expected[f"measured.modules.{k}.{key}"] = "" if value is None else str(value)
    # (a column one row lacks is an empty cell in the others)
    assert {k: v for k, v in shown.items() if v} == {k: v for k, v in expected.items() if v}


MEASURED = {
    "platform": "cpu", "reference": "xla", "reps": 10, "load_average": [1.5],
    "noise": {"median": 1.004},
    "modules": [
        {"label": "xla", "median_ms": 1.25, "predicted_ns": 150045, "ratio": None,
         "verdict": "reference"},
        {"label": "ours", "median_ms": 0.875, "predicted_ns": 21365,
         "ratio": {"median": 0.7, "low": 0.65}, "verdict": "faster"},
    ],
}


SCREEN_POINT = """
const s = window.hloExplorer, g = s.geometry, i = arguments[0];
const panel = s.panelOf[s.view.nodes.computation[i]];
const x = panel.x + g.PAD + s.view.nodes.column[i] * g.COL_W + g.NODE_W / 2;
const y = panel.y + g.HEAD_H + s.view.nodes.layer[i] * g.LAYER_H + 8 + g.NODE_H / 2;
return [(x - s.ox) * s.scale, (y - s.oy) * s.scale];
"""


def test_examples_folding_and_links(driver: Any, base_url: str) -> None:
    open_page(driver, base_url)
    listed = httpx.get(base_url + "/v1/targets", headers=AUTH).json()["targets"]
    targets = [t["name"] for t in listed]
    assert [o.text for o in Select(driver.find_element(By.ID, "target")).options] == targets
    Select(driver.find_element(By.ID, "example")).select_by_value("rnn_scan_fwd")
    text, xla_text = example("rnn_scan_fwd")
    wait_for(driver, "return document.getElementById('hlo').value.length > 0", 20)
    assert driver.execute_script("return document.getElementById('hlo').value") == text
    assert driver.execute_script("return document.getElementById('xla-hlo').value") == xla_text
    driver.find_element(By.ID, "graph-only").click()
    wait_for(driver, "return document.getElementById('status').textContent.startsWith('graph of')",
             60)
    # Where the time from the click went: the request, the server's steps, the drawing.
    timings = driver.execute_script("return window.hloExplorer.timings")
    assert set(timings["server"]) == {"parse", "verify", "layout", "encode", "cpu"}
    steps = sum(v for k, v in timings["server"].items() if k != "cpu")
    parts = timings["send"] + timings["wait"] + timings["download"] + timings["render"]
    assert timings["wait"] >= steps - 1  # (rounded to 0.1 ms each)
    assert timings["total"] >= parts - 1
    module = parse_module(text)
    count = sum(len(c.instructions) for c in module.computations)
    shown = driver.find_element(By.ID, "render-time").text
    assert shown.startswith(f"{count} instructions drawn {timings['total'] / 1000:.2f} s after")
    names = [c.name for c in module.computations]
    comps = driver.execute_script("return window.hloExplorer.view.computations.map((c) => c.name)")
    assert comps == names and len(names) > 2
    folded = "return [...window.hloExplorer.folded].sort((a, b) => a - b)"
    others = [k for k, c in enumerate(module.computations) if c.name != module.entry.name]
    assert driver.execute_script(folded) == others  # only the entry starts unfolded
    driver.find_element(By.ID, "computations-box").click()
    driver.find_element(By.CSS_SELECTOR, f"label[for='comp-{others[0]}']").click()
    assert driver.execute_script(folded) == others[1:]
    driver.find_element(By.ID, "unfold-all").click()
    assert driver.execute_script(folded) == []
    driver.find_element(By.ID, "fold-all").click()
    assert driver.execute_script(folded) == others

    # A line of the text selects its instruction in the graph (unfolding its computation).
    inner = others[-1]
    line = driver.execute_script(
        "return [...document.querySelectorAll('#module-text .ln[data-node]')].find((l) => "
        "window.hloExplorer.view.nodes.computation[Number(l.dataset.node)] === arguments[0])"
        ".id", inner)
    driver.find_element(By.ID, line).click()
    node = int(driver.find_element(By.ID, line).get_attribute("data-node"))
    assert driver.execute_script("return window.hloExplorer.selected") == node
    assert inner not in driver.execute_script(folded)
    name = driver.execute_script("return window.hloExplorer.view.nodes.name[arguments[0]]", node)
    assert driver.find_element(By.CSS_SELECTOR, "#details h3").text == name

    # A click on the canvas selects the node drawn there.
    entry_nodes = driver.execute_script(
        "const v = window.hloExplorer.view; return v.nodes.name.map((_, i) => i)"
        ".filter((i) => v.computations[v.nodes.computation[i]].entry)")
    target = entry_nodes[len(entry_nodes) // 2]
    canvas = driver.find_element(By.ID, "graph")
    driver.find_element(By.ID, "find").send_keys(
        driver.execute_script("return window.hloExplorer.view.nodes.name[arguments[0]]", target)
        + Keys.ENTER)
    assert driver.execute_script("return window.hloExplorer.selected") == target  # by name
    x, y = driver.execute_script(SCREEN_POINT, target)
    # (the whole canvas in view: Selenium aims at the centre of the element's visible part)
    driver.execute_script("window.hloExplorer.selected = -1;"
                          "arguments[0].scrollIntoView({block: 'center'})", canvas)
    ActionChains(driver).move_to_element_with_offset(
        canvas, int(x - canvas.size["width"] / 2), int(y - canvas.size["height"] / 2)).click(
    ).perform()
    assert driver.execute_script("return window.hloExplorer.selected") == target


def family_of(shape: str) -> str:
    """The layout family of a shape, read from its text: ``tuple``, ``none`` (a scalar or no
    layout written), ``major-first`` (minor_to_major descending) or ``{m,t,m}``, then the
    first tile (``f32[8,256]{1,0:T(8,128)}`` -> ``major-first T(8,128)``)."""
    if shape.startswith("("):
        return "tuple"
    match = re.fullmatch(r"[a-z0-9]+\[([^\]]*)\](?:\{([^}]*)\})?", shape)
    assert match is not None, shape
    dims, layout = match.groups()
    if not dims or layout is None:
        return "none"
    mtm, _, rest = layout.partition(":")
    order = [int(x) for x in mtm.split(",")]
    name = "major-first" if order == sorted(order, reverse=True) else "{" + mtm + "}"
    tile = re.match(r"T\(([\d,]+)\)", rest)
    return name + (f" T({tile.group(1)})" if tile else "")


PIXEL = """
const s = window.hloExplorer, g = s.geometry, i = arguments[0];
const panel = s.panelOf[s.view.nodes.computation[i]];
const x = panel.x + g.PAD + s.view.nodes.column[i] * g.COL_W + g.NODE_W - 4;
const y = panel.y + g.HEAD_H + s.view.nodes.layer[i] * g.LAYER_H + 8 + 3;
const px = Math.round((x - s.ox) * s.scale), py = Math.round((y - s.oy) * s.scale);
const d = document.getElementById('graph').getContext('2d').getImageData(px, py, 1, 1).data;
return '#' + [d[0], d[1], d[2]].map((v) => v.toString(16).padStart(2, '0')).join('');
"""


def test_upload_options_and_families(driver: Any, base_url: str, tmp_path: Path) -> None:
    open_page(driver, base_url)
    upload = tmp_path / "uploaded.hlo"
    upload.write_text(EXAMPLE.read_text())
    driver.find_element(By.ID, "file").send_keys(str(upload))
    wait_for(driver, "return document.getElementById('status').textContent == "
                     "'uploaded.hlo loaded'", 20)
    assert driver.execute_script("return document.getElementById('hlo').value") == \
        upload.read_text()
    # Every option the form offers reaches the request (the report echoes its options).
    for element_id, value in (("time-limit", "7"), ("max-candidates", "3"), ("seed", "2")):
        box = driver.find_element(By.ID, element_id)
        box.clear()
        box.send_keys(value)
    Select(driver.find_element(By.ID, "entry-layout")).select_by_visible_text("auto")
    Select(driver.find_element(By.ID, "normalize")).select_by_value("reductions,grouping")
    Select(driver.find_element(By.ID, "target")).select_by_visible_text("gpu")
    driver.find_element(By.ID, "emit-bitcasts").click()
    driver.find_element(By.ID, "verify-layouts").click()
    driver.execute_script(CAPTURE, "/v1/assign")
    driver.find_element(By.ID, "run").click()
    wait_for(driver, "const s = document.getElementById('status'); return "
                     "s.classList.contains('error') ? s.textContent : "
                     "s.textContent.includes('conversions')", 120)
    captured = driver.execute_script("return window.capturedAnswers")
    assert [a["status"] for a in captured] == [200]
    report = json.loads(captured[0]["text"])
    assert (report["target"], report["options"]) == ("gpu", {
        "time_limit_s": 7.0, "entry_layout": "auto", "normalize": ["reductions", "grouping"],
        "seed": 2, "emit_bitcasts": True, "max_candidates": 3, "verify": False})
    assert fields(driver, "#numbers tr") == expected_numbers(report, None)

    # Nodes are coloured by layout family: each family as the shape's text says, and the
    # node drawn on the canvas in its family's colour.
    view = driver.execute_script("return window.hloExplorer.view")
    families = [f["name"] for f in view["families"]]
    assert [families[k] for k in view["nodes"]["family"]] == [
        family_of(shape) for shape in view["nodes"]["shape"]]
    legend = driver.find_element(By.ID, "legend").text
    assert all(name in legend for name in families)
    picked: dict[int, int] = {}
    for i, family in enumerate(view["nodes"]["family"]):
        if view["nodes"]["conversion"][i] < 0 and view["computations"][
                view["nodes"]["computation"][i]]["entry"]:
            picked.setdefault(family, i)
    assert len(picked) >= 2
    for family, i in picked.items():
        driver.find_element(By.ID, "find").clear()
        driver.find_element(By.ID, "find").send_keys(view["nodes"]["name"][i] + Keys.ENTER)
        assert driver.execute_script(PIXEL, i) == view["families"][family]["colour"]
        # The node's cost is the sum of the report's terms charged to it.
        shown = driver.find_element(By.CSS_SELECTOR, "#details dd[data-field='cost terms (ns)']")
        name = view["nodes"]["name"][i]
        assert shown.text == str(sum(int(t["ns"]) for t in report["terms"]
                                     if str(t.get("instruction", "")).split(" ")[0] == name))


CONTRAST = """
function lum(c) {
  const v = c.match(/[\\d.]+/g).slice(0, 3).map(Number).map((x) => {
    x /= 255; return x <= 0.03928 ? x / 12.92 : Math.pow((x + 0.055) / 1.055, 2.4); });
  return 0.2126 * v[0] + 0.7152 * v[1] + 0.0722 * v[2];
}
function background(el) {
  for (; el; el = el.parentElement) {
    const c = getComputedStyle(el).backgroundColor;
    if (c && c !== 'transparent' && !c.startsWith('rgba(0, 0, 0, 0)')) return c;
  }
  return 'rgb(255, 255, 255)';
}
const bad = [];
const text = 'h1,h2,h3,label,th,td,button,p,summary,legend,li,a,dt,dd,span,option';
for (const el of document.querySelectorAll(text)) {
  if (!el.offsetParent || !el.textContent.trim()) continue;
  const a = lum(getComputedStyle(el).color), b = lum(background(el));
  const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
  if (ratio < 4.5) bad.push([el.tagName, el.textContent.slice(0, 30), ratio]);
}
return bad;
"""

UNLABELLED = """
return [...document.querySelectorAll('input, select, textarea, button')].filter((el) => {
  if (el.type === 'hidden') return false;
  if (el.tagName === 'BUTTON') return !(el.textContent.trim() || el.getAttribute('aria-label'));
  return !(el.labels && el.labels.length) && !el.getAttribute('aria-label');
}).map((el) => el.id || el.outerHTML.slice(0, 60));
"""


def test_accessibility_basics(driver: Any, base_url: str, shots: Path) -> None:
    open_page(driver, base_url)
    paste(driver, "hlo", EXAMPLE.read_text())
    Select(driver.find_element(By.ID, "target")).select_by_visible_text("tpu")
    driver.find_element(By.ID, "run").click()
    wait_for(driver, "return document.getElementById('status').textContent.includes('conversions')",
             120)
    driver.execute_script("window.scrollTo(0, 0)")
    driver.save_screenshot(str(shots / "page-top.png"))
    assert driver.execute_script(UNLABELLED) == []
    assert driver.execute_script(CONTRAST) == []
    assert driver.find_element(By.ID, "status").get_attribute("role") == "status"
    # Keyboard only: Tab reaches the graph, n steps to the first conversion, + zooms in.
    driver.execute_script("document.activeElement.blur(); window.scrollTo(0, 0)")
    reached = False
    for _ in range(80):  # (key presses, not typed into the element: a file input takes a path)
        ActionChains(driver).send_keys(Keys.TAB).perform()
        if driver.switch_to.active_element.get_attribute("id") == "graph":
            reached = True
            break
    assert reached, "the graph cannot be reached with Tab"
    scale = driver.execute_script("return window.hloExplorer.scale")
    driver.switch_to.active_element.send_keys("n")
    assert driver.execute_script("return window.hloExplorer.selectedConversion") == 0
    assert driver.find_element(By.CSS_SELECTOR, "#details h3").text.startswith("conversion #0")
    driver.switch_to.active_element.send_keys("+")
    assert driver.execute_script("return window.hloExplorer.scale") > scale
