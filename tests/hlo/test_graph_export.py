"""``write_dependency_graph``: every format loads back with a reader we did not write (networkx
for GraphML and node-link JSON, pydot for DOT) and holds exactly the instructions and operand
edges of the module, read off the IR independently."""

from __future__ import annotations

import io
import json

import networkx as nx
import pydot
import pytest

from hlo.graph import write_dependency_graph
from hlo.parser import parse_module

TEXT = """HloModule m

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY main {
  p = f32[4,8]{1,0} parameter(0)
  t = f32[8,4]{0,1} transpose(p), dimensions={1,0}
  sq = f32[8,4]{0,1} multiply(t, t)
  z = f32[] constant(0)
  ROOT r = f32[8]{0} reduce(sq, z), dimensions={1}, to_apply=add
}
"""


def expected_edges(module) -> set[tuple[str, str, str]]:
    edges = set()
    for comp in module.computations:
        for instr in comp.instructions:
            for operand in instr.operands:
                edges.add((f"{comp.name}/{operand}", f"{comp.name}/{instr.name}", "data"))
            for callee in instr.called_computations():
                root = module.computation(callee).root
                edges.add((f"{comp.name}/{instr.name}", f"{callee}/{root}", "call"))
    return edges


@pytest.fixture(scope="module")
def module():
    return parse_module(TEXT)


def test_graphml_loads_back_with_networkx(module) -> None:
    text = write_dependency_graph(module, "graphml")
    g = nx.read_graphml(io.BytesIO(text.encode()))
    names = {f"{c.name}/{i.name}" for c in module.computations for i in c.instructions}
    assert set(g.nodes) == names
    assert {(u, v, d["kind"]) for u, v, d in g.edges(data=True)} == expected_edges(module)
    assert g.nodes["main/t"]["layout"] == "{0,1}"
    assert g.nodes["main/t"]["opcode"] == "transpose"
    assert g.nodes["main/r"]["root"] is True
    # multiply(t, t): one edge carrying both operand positions
    assert g.edges["main/t", "main/sq"]["operands"] == "0,1"


def test_json_is_node_link_data(module) -> None:
    data = json.loads(write_dependency_graph(module, "json"))
    g = nx.node_link_graph(data, edges="edges")
    assert {(u, v, d["kind"]) for u, v, d in g.edges(data=True)} == expected_edges(module)
    assert g.graph["entry"] == "main"


def test_dot_parses_with_pydot(module) -> None:
    (graph,) = pydot.graph_from_dot_data(write_dependency_graph(module, "dot"))
    nodes = {n.get_name().strip('"') for sub in graph.get_subgraphs() for n in sub.get_nodes()}
    assert nodes == {f"{c.name}/{i.name}" for c in module.computations for i in c.instructions}
    edges = {(e.get_source().strip('"'), e.get_destination().strip('"'),
              e.get("kind").strip('"')) for e in graph.get_edges()}
    assert edges == expected_edges(module)


def test_extra_attributes_and_determinism(module) -> None:
    extra = {"main/t": {"family": "x", "layout": None}}
    edge = {("main/p", "main/t"): {"conversion": 3}}
    text = write_dependency_graph(module, "graphml", node_attributes=extra, edge_attributes=edge)
    g = nx.read_graphml(io.BytesIO(text.encode()))
    assert g.nodes["main/t"]["family"] == "x"
    assert "layout" not in g.nodes["main/t"]  # None removes an attribute
    assert g.edges["main/p", "main/t"]["conversion"] == 3
    assert text == write_dependency_graph(module, "graphml", node_attributes=extra,
                                          edge_attributes=edge)


def test_unknown_format(module) -> None:
    with pytest.raises(ValueError, match="graphml"):
        write_dependency_graph(module, "svg")
