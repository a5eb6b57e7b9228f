"""The IOPDDL reader on a real contest instance, and the ``solve-problem`` command."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from conftest import shared_path
from typer.testing import CliRunner

from service.cli import build_app
from solver.iopddl import read_instance
from solver.options import SolveOptions
from solver.errors import ProblemError
from solver.problem import FORBIDDEN
from solver.solve import solve

SMALLEST = "asplos-2025-iopddl-B.json.gz"


def raw_instance() -> dict:
    return json.loads(gzip.decompress(shared_path("benchmarks", "iopddl", SMALLEST).read_bytes()))


def contest_cost(spec: dict, labels: list[int]) -> tuple[int, int]:
    """Cost and peak usage computed straight from the JSON, the way the contest defines them."""
    nodes, edges = spec["nodes"], spec["edges"]
    cost = sum(nodes["costs"][i][s] for i, s in enumerate(labels))
    for (u, v), flat in zip(edges["nodes"], edges["costs"]):
        cost += flat[labels[u] * len(nodes["costs"][v]) + labels[v]]
    horizon = max(end for _, end in nodes["intervals"]) + 1
    live = [0] * horizon
    for i, (start, end) in enumerate(nodes["intervals"]):
        for t in range(start, end):
            live[t] += nodes["usages"][i][labels[i]]
    return cost, max(live)


def test_reader_on_smallest_instance() -> None:
    spec = raw_instance()["problem"]
    problem = read_instance(shared_path("benchmarks", "iopddl", SMALLEST))
    assert problem.num_nodes == len(spec["nodes"]["costs"]) == 816
    assert len(problem.edges) == len(spec["edges"]["nodes"])
    assert problem.memory_limit == spec["usage_limit"]
    for k in (0, 7, len(problem.edges) - 1):
        edge = problem.edges[k]
        assert [edge.u, edge.v] == spec["edges"]["nodes"][k]
        v_count = len(spec["nodes"]["costs"][edge.v])
        for a in range(edge.costs.shape[0]):
            for b in range(edge.costs.shape[1]):
                assert edge.costs[a, b] == min(spec["edges"]["costs"][k][a * v_count + b], FORBIDDEN)
    use = problem.memory[5]
    assert [use.start, use.end] == spec["nodes"]["intervals"][5]
    assert use.usage.tolist() == spec["nodes"]["usages"][5]


def test_solve_smallest_instance_checked_by_contest_rules() -> None:
    spec = raw_instance()["problem"]
    problem = read_instance(shared_path("benchmarks", "iopddl", SMALLEST))
    result = solve(problem, SolveOptions(time_limit=8.0))
    cost, peak = contest_cost(spec, list(result.labels))
    assert cost == result.objective
    assert peak == result.peak_memory <= spec["usage_limit"]
    assert result.lower_bound <= result.objective


def tiny(tmp_path: Path) -> Path:
    spec = {"problem": {"name": "tiny", "usage_limit": 10, "nodes": {
        "costs": [[5, 1], [0, 3], [2]], "usages": [[1, 8], [4, 4], [3]],
        "intervals": [[0, 2], [1, 3], [0, 1]]},
        "edges": {"nodes": [[0, 1], [1, 2]], "costs": [[0, 4, 4, 0], [1, 1]]}}}
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(spec))
    return path


def test_cli_solves_and_writes_answer(tmp_path: Path) -> None:
    out = tmp_path / "answer.json"
    result = CliRunner().invoke(build_app(), ["solve-problem", str(tiny(tmp_path)), "--json",
                                              "--time-limit", "5", "--out", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    # Label 1 of node 0 needs 8 + 4 > 10 at time 1, so node 0 takes label 0: 5 + 0 + 0 + 2 + 1.
    assert report["objective"] == 8 and report["status"] == "OPTIMAL"
    assert report["memory_feasible"] is True and report["gap"] == 0.0
    assert json.loads(out.read_text()) == [0, 0, 0]


@pytest.mark.parametrize("content", [None, b"not json", b'{"problem": {"nodes": {}}}',
                                     b'{"problem": {"usage_limit": 1, "nodes": {"costs": [[1]],'
                                     b' "usages": [[1]], "intervals": [[0, 1]]}, "edges":'
                                     b' {"nodes": [[0, 3]], "costs": [[1]]}}}'])
def test_cli_bad_input_exit_2(tmp_path: Path, content: bytes | None) -> None:
    path = tmp_path / "bad.json"
    if content is not None:
        path.write_bytes(content)
    result = CliRunner().invoke(build_app(), ["solve-problem", str(path)])
    assert result.exit_code == 2
    assert "error:" in result.output and "Traceback" not in result.output


def test_reader_error_names_the_edge(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"problem": {"nodes": {"costs": [[1], [1, 2]], "usages": [[1], [1, 1]],
                     "intervals": [[0, 1], [0, 1]]}, "edges": {"nodes": [[0, 1]], "costs": [[1]]}}}))
    with pytest.raises(ProblemError, match=r"edge 0 \(0, 1\): 1 costs for 1x2 strategies"):
        read_instance(path)
