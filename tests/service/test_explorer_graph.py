"""The explorer's graph: the drawing respects every dependency, and each conversion of an
assign report is found on the copy that performs it (checked against the laid-out module's
text: the copy reads a value of the ``from`` layout and writes the ``to`` layout);
``hlo-layout graph --layouts`` carries the same conversions as attributes, loaded back with
networkx."""

from __future__ import annotations

import io
import json
from pathlib import Path

import networkx as nx
import pytest
from typer.testing import CliRunner

from hlo.parser import parse_module
from service.cli import build_app
from service.explorer.graph_view import graph_view

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "attention_fwd.hlo"


@pytest.fixture(scope="module")
def assigned(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, Path]:
    folder = tmp_path_factory.mktemp("assign")
    report = folder / "r.json"
    result = CliRunner().invoke(build_app(), [
        "assign", str(EXAMPLE), "-t", "tpu", "-o", str(folder / "out.hlo"),
        "--report", str(report), "--html", str(folder / "r.html")])
    assert result.exit_code == 0, result.output
    return json.loads(report.read_text()), folder


def test_layers_follow_dependencies(assigned) -> None:
    report, _ = assigned
    module = parse_module(report["hlo"])
    view = graph_view(module, report["inserted"], report["terms"])
    nodes, edges = view["nodes"], view["edges"]
    assert len(nodes["name"]) == sum(len(c.instructions) for c in module.computations)
    for s, t in zip(edges["source"], edges["target"]):
        assert nodes["computation"][s] == nodes["computation"][t]
        assert nodes["layer"][s] < nodes["layer"][t]
    cells = {(nodes["computation"][i], nodes["layer"][i], nodes["column"][i])
             for i in range(len(nodes["name"]))}
    assert len(cells) == len(nodes["name"])  # no two nodes drawn on one spot


def test_conversions_sit_on_their_copies(assigned) -> None:
    report, _ = assigned
    module = parse_module(report["hlo"])
    view = graph_view(module, report["inserted"], report["terms"])
    assert len(view["conversions"]) == len(report["inserted"]) > 0
    shapes = {i.name: str(i.shape) for c in module.computations for i in c.instructions}
    operands = {i.name: i.operands for c in module.computations for i in c.instructions}
    for conversion, inserted in zip(view["conversions"], report["inserted"]):
        i = conversion["node"]
        assert i is not None
        name = view["nodes"]["name"][i]
        assert view["nodes"]["opcode"][i] == "copy"
        assert shapes[name] == inserted["to"]
        assert shapes[operands[name][0]] == inserted["from"]
        user = view["nodes"]["name"][conversion["user"]]
        assert operands[user][inserted["operand"]] == name
        assert view["edges"]["conversion"][conversion["edge"]] == conversion["index"]


def test_graph_command_with_layouts(assigned, tmp_path: Path) -> None:
    report, _ = assigned
    out = tmp_path / "g.graphml"
    result = CliRunner().invoke(build_app(), ["graph", str(EXAMPLE), "--layouts", "-t", "tpu",
                                              "--format", "graphml", "-o", str(out)])
    assert result.exit_code == 0, result.output
    g = nx.read_graphml(io.BytesIO(out.read_bytes()))
    module = parse_module(report["hlo"])
    assert g.number_of_nodes() == sum(len(c.instructions) for c in module.computations)
    copies = sorted((d for _, d in g.nodes(data=True) if "conversion" in d),
                    key=lambda d: d["conversion"])
    assert [(d["conversion_from"], d["conversion_to"], d["conversion_bytes"],
             d["conversion_cost_ns"], d["conversion_why"]) for d in copies] == [
        (x["from"], x["to"], x["bytes"], x["cost_ns"], x["why"]) for x in report["inserted"]]
    marked = [d for _, _, d in g.edges(data=True) if "conversion" in d]
    assert len(marked) == len(report["inserted"])
    assert sum(d["cost_ns"] for _, d in g.nodes(data=True)) == sum(
        t["ns"] for t in report["terms"])


def test_graph_command_json_and_errors(tmp_path: Path) -> None:
    result = CliRunner().invoke(build_app(), ["graph", str(EXAMPLE), "--format", "json"])
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert {"nodes", "edges", "graph"} <= set(data)
    assert all("family" in n for n in data["nodes"])
    bad = CliRunner().invoke(build_app(), ["graph", str(EXAMPLE), "--format", "png"])
    assert bad.exit_code == 2
    broken = tmp_path / "bad.hlo"
    broken.write_text("HloModule m\nENTRY e {\n  ROOT p = f32[2] paramter(0)\n}\n")
    bad = CliRunner().invoke(build_app(), ["graph", str(broken), "--layouts"])
    assert bad.exit_code == 2 and f"{broken}:3:" in bad.output
    assert "Traceback" not in bad.output
