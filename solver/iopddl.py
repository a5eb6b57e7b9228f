"""Reader and writer for the IOPDDL contest format (github.com/google/iopddl).

An instance is JSON (optionally gzip): ``problem.nodes.costs[i][s]``,
``problem.nodes.usages[i][s]``, ``problem.nodes.intervals[i] = [start, end)``,
``problem.edges.nodes[k] = [u, v]``, ``problem.edges.costs[k]`` (the matrix
flattened row-major: index ``s_u * len(costs[v]) + s_v``) and
``problem.usage_limit``. Costs of 10**18 and above mean "not allowed" and
become :data:`~solver.problem.FORBIDDEN`. An answer is one strategy index per node.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import orjson

from solver.errors import ProblemError
from solver.problem import FORBIDDEN, Problem, make_problem


def _load_json(path: Path) -> dict:
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise ProblemError(f"cannot read ({err.strerror})") from None
    try:
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        return orjson.loads(raw)
    except (OSError, EOFError, ValueError) as err:
        raise ProblemError(f"not a JSON instance ({err})") from None


def read_instance(path: str | Path) -> Problem:
    """Read an IOPDDL instance; raises :class:`ProblemError` naming what is wrong."""
    path = Path(path)
    data = _load_json(path)
    try:
        spec = data["problem"]
        nodes, edges = spec["nodes"], spec["edges"]
        costs, usages, intervals = nodes["costs"], nodes["usages"], nodes["intervals"]
        edge_nodes, edge_costs = edges["nodes"], edges["costs"]
        limit = spec.get("usage_limit")
    except (KeyError, TypeError) as err:
        raise ProblemError(f"missing field {err}") from None
    if not (len(costs) == len(usages) == len(intervals)):
        raise ProblemError("nodes.costs, nodes.usages and nodes.intervals differ in length")
    if len(edge_nodes) != len(edge_costs):
        raise ProblemError("edges.nodes and edges.costs differ in length")
    unary = [np.minimum(np.array(c, dtype=np.int64), FORBIDDEN) for c in costs]
    tables = []
    for k, ((u, v), flat) in enumerate(zip(edge_nodes, edge_costs)):
        if not (0 <= u < len(unary) and 0 <= v < len(unary)):
            raise ProblemError(f"edge {k} ({u}, {v}): node out of range")
        table = np.minimum(np.array(flat, dtype=np.int64), FORBIDDEN)
        if table.size != len(unary[u]) * len(unary[v]):
            raise ProblemError(f"edge {k} ({u}, {v}): {table.size} costs for "
                               f"{len(unary[u])}x{len(unary[v])} strategies")
        tables.append((u, v, table.reshape(len(unary[u]), len(unary[v]))))
    memory = [(i, int(s), int(e), usage) for i, ((s, e), usage) in
              enumerate(zip(intervals, usages))]
    return make_problem(unary, tables, memory=memory,
                        memory_limit=None if limit is None else int(limit))


def write_answer(path: str | Path, labels: tuple[int, ...]) -> None:
    """One strategy index per node, as the contest's JSON list."""
    Path(path).write_text(json.dumps(list(labels)) + "\n")
