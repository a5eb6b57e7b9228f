"""``hlo-layout graph``: the dependency graph of a module for other tools, with the layout
family of every instruction and, after an assign, the conversions with their cost and why.

The graph itself and its writers live in :mod:`hlo.graph` (networkx); this module only says
which attributes to attach, from the same :func:`conversion_index` the explorer draws with.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hlo.graph import node_id, write_dependency_graph
from hlo.ir import Module
from service.explorer.graph_view import conversion_index, layout_family, term_instruction

__all__ = ["export_graph"]

#: Fields of an inserted conversion carried onto the exported graph (prefixed ``conversion_``).
CONVERSION_FIELDS = ("value", "from", "to", "bytes", "cost_ns", "runs", "shared", "why")


def export_graph(module: Module, fmt: str, report: Mapping[str, Any] | None = None) -> str:
    """``module`` (the laid-out one when ``report`` is its assign report) in ``fmt``.

    Every node gets ``family`` (see :func:`layout_family`); with a report, also ``cost_ns`` (the
    sum of its cost terms) and, on the copy that performs a conversion, ``conversion`` (its
    index in the report's ``inserted``) and ``conversion_from``, ``_to``, ``_bytes``,
    ``_cost_ns``, ``_runs``, ``_shared``, ``_why``; the edge from that copy to the user it feeds
    carries the same attributes.
    """
    nodes: dict[str, dict[str, Any]] = {}
    for comp in module.computations:
        for instr in comp.instructions:
            nodes[node_id(comp.name, instr.name)] = {"family": layout_family(instr.shape)}
    edges: dict[tuple[str, str], dict[str, Any]] = {}
    if report is not None:
        _attach_costs(module, nodes, report.get("terms") or ())
        inserted = [e for e in report.get("inserted") or () if isinstance(e, Mapping)]
        for conversion in conversion_index(module, inserted):
            fields = {"conversion": conversion["index"],
                      **{f"conversion_{k}": _scalar(conversion.get(k)) for k in CONVERSION_FIELDS}}
            if conversion["node"] is not None:
                copy = node_id(*conversion["node"])
                nodes[copy].update(fields)
                if conversion["user"] is not None:
                    edges[copy, node_id(*conversion["user"])] = fields
    return write_dependency_graph(module, fmt, node_attributes=nodes, edge_attributes=edges)


def _attach_costs(module: Module, nodes: dict[str, dict[str, Any]],
                  terms: Sequence[Mapping[str, Any]]) -> None:
    where = {instr.name: node_id(comp.name, instr.name)
             for comp in module.computations for instr in comp.instructions}
    for node in nodes.values():
        node["cost_ns"] = 0
    for term in terms:
        node = where.get(term_instruction(term) or "")
        if node is not None and isinstance(term.get("ns"), int):
            nodes[node]["cost_ns"] += term["ns"]


def _scalar(value: Any) -> str | int | float | bool | None:
    return value if value is None or isinstance(value, (str, int, float, bool)) else str(value)
