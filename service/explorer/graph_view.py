"""The module graph as the explorer draws it: nodes placed in layers, coloured by layout family,
with the conversions of an assign report attached to the nodes and edges that carry them.

The placement is computed here, once, so the browser only draws: every computation is laid
out on its own (its panel folds and unfolds), an instruction one layer below its deepest
operand, a parameter or constant one layer above its first user, and each layer ordered by
the mean position of the operands (one barycentric sweep). Linear in the size of the module:
10k instructions take a few tenths of a second.

The same attributes (family, conversions, cost) go into ``hlo-layout graph --layouts``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hlo.graph import module_graph
from hlo.ir import Module
from hlo.shape import ArrayShape

__all__ = ["conversion_index", "graph_view", "layout_family", "term_instruction"]

#: Colours of layout families, in the order families first appear (light, dark text on top).
FAMILY_COLOURS = ("#9ecbff", "#ffc078", "#8ce99a", "#f783ac", "#b197fc", "#ffe066",
                  "#66d9e8", "#ffa8a8", "#c0eb75", "#ced4da", "#e599f7", "#74c0fc")


def layout_family(shape: Any) -> str:
    """``"tuple"``, ``"none"`` (no layout written, or a scalar), else the dim order (``major
    first`` when it is the default descending order, else ``{minor_to_major}``) and the first
    tile: ``f32[8,256]{1,0:T(8,128)}`` -> ``"major-first T(8,128)"``."""
    if not isinstance(shape, ArrayShape):
        return "tuple" if shape is not None and hasattr(shape, "elements") else "none"
    if shape.layout is None or shape.rank == 0:
        return "none"
    mtm = shape.layout.minor_to_major
    order = "major-first" if list(mtm) == sorted(mtm, reverse=True) else \
        "{" + ",".join(map(str, mtm)) + "}"
    tiles = shape.layout.tiles
    return order + (f" T{tiles[0]}" if tiles else "")


def term_instruction(term: Mapping[str, Any]) -> str | None:
    """The instruction a cost term is charged to (``"dot.9 operand 0"`` -> ``"dot.9"``)."""
    name = term.get("instruction")
    return name.split(" ", 1)[0] if isinstance(name, str) and name else None


def conversion_index(module: Module, inserted: Sequence[Mapping[str, Any]]
                     ) -> list[dict[str, Any]]:
    """Each inserted conversion of a report, located in the laid-out ``module``: ``node``
    (``(computation, copy)`` when the operand it feeds is an explicit copy, else None) and
    ``user`` (``(computation, instruction)`` that reads it, None when not found)."""
    located = []
    for k, entry in enumerate(inserted):
        comp_name, user_name = entry.get("computation"), entry.get("for")
        node = user = None
        try:
            comp = module.computation(comp_name)
            instr = comp.instruction(user_name)
        except (KeyError, TypeError):
            comp = instr = None
        if comp is not None and instr is not None:
            user = (comp.name, instr.name)
            position = entry.get("operand")
            if isinstance(position, int) and 0 <= position < len(instr.operands):
                operand = comp.instruction(instr.operands[position])
                if operand.opcode == "copy":
                    node = (comp.name, operand.name)
        located.append({**entry, "index": k, "node": node, "user": user})
    return located


def _layers(order: Sequence[str], operands: Mapping[str, Sequence[str]],
            users: Mapping[str, Sequence[str]]) -> dict[str, int]:
    layer: dict[str, int] = {}
    for name in order:
        layer[name] = 1 + max((layer[p] for p in operands[name]), default=-1)
    for name in order:  # sources sit just above their first user
        if not operands[name] and users[name]:
            layer[name] = max(0, min(layer[u] for u in users[name]) - 1)
    return layer


def _place(order: Sequence[str], operands: Mapping[str, Sequence[str]],
           layer: Mapping[str, int]) -> dict[str, int]:
    """Column of each node: layers in order, each sorted by the mean column of the operands."""
    text_index = {n: k for k, n in enumerate(order)}
    by_layer: dict[int, list[str]] = {}
    for name in order:
        by_layer.setdefault(layer[name], []).append(name)
    column: dict[str, int] = {}
    for depth in sorted(by_layer):
        names = by_layer[depth]
        width = len(names)

        def key(name: str, width: int = width) -> tuple[float, int]:
            placed = [column[p] for p in operands[name] if p in column]
            mean = sum(placed) / len(placed) if placed else text_index[name] * width / len(order)
            return (mean, text_index[name])

        names.sort(key=key)
        # Centre a narrow layer under the columns its operands use.
        start = 0
        if names and operands[names[0]]:
            start = max(0, int(key(names[0])[0]) - (width - 1) // 2)
        for k, name in enumerate(names):
            column[name] = start + k
    return column


def graph_view(module: Module, inserted: Sequence[Mapping[str, Any]] = (),
               terms: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """The drawing data: nodes and edges as column arrays (compact for 10k nodes), node
    positions in layer/column units per computation, families with their colours, and the
    conversions with the node and edge each one marks."""
    graphs = module_graph(module)
    families: dict[str, int] = {}
    cost: dict[str, int] = {}
    for term in terms:
        name = term_instruction(term)
        if name is not None and isinstance(term.get("ns"), (int, float)):
            cost[name] = cost.get(name, 0) + int(term["ns"])
    nodes: dict[str, list[Any]] = {k: [] for k in (
        "computation", "name", "opcode", "shape", "family", "layer", "column", "line",
        "cost_ns", "conversion")}
    edges: dict[str, list[int]] = {"source": [], "target": [], "kind": [], "conversion": []}
    computations = []
    index: dict[tuple[str, str], int] = {}
    entry = module.entry.name
    printed: dict[Any, str] = {}  # equal shapes recur (every layer of a model): print each once

    def shape_text(shape: Any) -> str:
        text = printed.get(shape)
        if text is None:
            text = printed[shape] = str(shape)
        return text

    for c, comp in enumerate(module.computations):
        graph = graphs.computation(comp.name)
        order = graph.topological_order()
        operands = {n: graph.operands(n) + graph.control_predecessors(n) for n in order}
        users = {n: graph.users(n) for n in order}
        layer = _layers(order, operands, users)
        column = _place(order, operands, layer)
        for instr in comp.instructions:
            index[comp.name, instr.name] = len(nodes["name"])
            family = layout_family(instr.shape)
            nodes["computation"].append(c)
            nodes["name"].append(instr.name)
            nodes["opcode"].append(instr.opcode)
            nodes["shape"].append(shape_text(instr.shape))
            nodes["family"].append(families.setdefault(family, len(families)))
            nodes["layer"].append(layer[instr.name])
            nodes["column"].append(column[instr.name])
            nodes["line"].append(instr.span.line if instr.span is not None else None)
            nodes["cost_ns"].append(cost.get(instr.name, 0))
            nodes["conversion"].append(-1)
        for instr in comp.instructions:
            for name in graph.operands(instr.name):
                edges["source"].append(index[comp.name, name])
                edges["target"].append(index[comp.name, instr.name])
                edges["kind"].append(0)
                edges["conversion"].append(-1)
            for name in graph.control_predecessors(instr.name):
                edges["source"].append(index[comp.name, name])
                edges["target"].append(index[comp.name, instr.name])
                edges["kind"].append(1)
                edges["conversion"].append(-1)
        computations.append({
            "name": comp.name, "entry": comp.name == entry,
            "instructions": len(comp.instructions),
            "layers": 1 + max(layer.values(), default=0),
            "columns": 1 + max(column.values(), default=0),
            "callers": len(graphs.calls.callers(comp.name)),
        })
    conversions = _attach(conversion_index(module, inserted), index, nodes, edges)
    return {
        "module": module.name,
        "entry": entry,
        "computations": computations,
        "nodes": nodes,
        "edges": edges,
        "families": [{"name": f, "colour": FAMILY_COLOURS[k % len(FAMILY_COLOURS)]}
                     for f, k in families.items()],
        "conversions": conversions,
    }


def _attach(located: list[dict[str, Any]], index: Mapping[tuple[str, str], int],
            nodes: dict[str, list[Any]], edges: dict[str, list[int]]) -> list[dict[str, Any]]:
    """Mark each conversion's copy node and the edge into its user."""
    edge_of = {(s, t): k for k, (s, t) in enumerate(zip(edges["source"], edges["target"]))}
    out = []
    for conv in located:
        node = index.get(conv["node"]) if conv["node"] is not None else None
        user = index.get(conv["user"]) if conv["user"] is not None else None
        edge = edge_of.get((node, user)) if node is not None and user is not None else None
        if node is not None and nodes["conversion"][node] < 0:
            nodes["conversion"][node] = conv["index"]
        if edge is not None:
            edges["conversion"][edge] = conv["index"]
        out.append({**{k: v for k, v in conv.items() if k not in ("node", "user")},
                    "node": node, "user": user, "edge": edge})
    return out
