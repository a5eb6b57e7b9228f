"""Dependency graphs of a module: def-use inside computations, calls between them.

networkx lives behind this module only. The façade is read-only and answers in
names, always in a deterministic order: ties are broken by text order, so the
same module gives the same answers on every run.

>>> g = module_graph(module)                       # doctest: +SKIP
>>> g.computation("main").topological_order()      # operands before users
>>> g.calls.post_order()                           # callees before callers

An instruction-graph edge ``a -> b`` means ``b`` reads ``a`` (an operand) or
must run after it (a control predecessor). A call-graph edge ``caller -> callee``
carries the attribute that made it (``to_apply``, ``body``, ``condition``,
``calls``, ``branch_computations``, ``called_computations``, ...).
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Mapping
from dataclasses import dataclass

import networkx as nx

from hlo.errors import VerifyError
from hlo.ir import Computation, ComputationRef, Module
from hlo.verifier import control_predecessors

__all__ = [
    "GRAPH_FORMATS",
    "CallGraph",
    "CallSite",
    "ComputationGraph",
    "ModuleGraph",
    "module_graph",
    "node_id",
    "write_dependency_graph",
]


@dataclass(frozen=True, slots=True)
class CallSite:
    """``caller``'s instruction ``instruction`` calls ``callee`` through ``attribute``."""

    caller: str
    instruction: str
    attribute: str
    callee: str


class ComputationGraph:
    """The def-use graph of one computation (read-only).

    The neighbours of each instruction are plain tuples made once, so the questions asked
    per instruction (operands, users, a topological order) cost a lookup; the networkx
    graph is built only for the path questions (``reaches``, ``ancestors``, ...).
    """

    __slots__ = ("name", "_g", "_index", "_names", "_operands", "_control", "_users",
                 "_successors")

    def __init__(self, comp: Computation) -> None:
        self.name = comp.name
        self._names = tuple(i.name for i in comp.instructions)
        self._index = {n: k for k, n in enumerate(self._names)}
        self._operands = {i.name: self._present(i.operands) for i in comp.instructions}
        self._control = {i.name: self._present(control_predecessors(i))
                         for i in comp.instructions}
        users: dict[str, list[str]] = {n: [] for n in self._names}
        successors: dict[str, list[str]] = {n: [] for n in self._names}
        for name in self._names:  # text order: each list comes out sorted
            for p in self._operands[name]:
                users[p].append(name)
            for p in self._control[name]:
                successors[p].append(name)
        self._users = {n: tuple(v) for n, v in users.items()}
        self._successors = {n: tuple(v) for n, v in successors.items()}
        self._g: nx.DiGraph | None = None

    def _present(self, names) -> tuple[str, ...]:
        """The distinct ``names`` of this computation, in text order."""
        return self._sorted({n for n in names if n in self._index})

    def _graph(self) -> nx.DiGraph:
        if self._g is None:
            g = nx.DiGraph()
            g.add_nodes_from(self._names)
            for name in self._names:
                g.add_edges_from((p, name) for p in self._operands[name])
                g.add_edges_from((p, name) for p in self._control[name])
            self._g = g
        return self._g

    def _sorted(self, names) -> tuple[str, ...]:
        return tuple(sorted(names, key=self._index.__getitem__))

    def _check(self, name: str) -> None:
        if name not in self._index:
            raise KeyError(f"no instruction '{name}' in computation '{self.name}'")

    def instructions(self) -> tuple[str, ...]:
        """All instruction names in text order."""
        return self._names

    def operands(self, name: str) -> tuple[str, ...]:
        """Distinct data operands of ``name``, in text order."""
        self._check(name)
        return self._operands[name]

    def control_predecessors(self, name: str) -> tuple[str, ...]:
        self._check(name)
        return self._control[name]

    def users(self, name: str) -> tuple[str, ...]:
        """Instructions that read ``name`` as an operand, in text order."""
        self._check(name)
        return self._users[name]

    def control_successors(self, name: str) -> tuple[str, ...]:
        self._check(name)
        return self._successors[name]

    def topological_order(self) -> tuple[str, ...]:
        """Every instruction after its operands and control predecessors; ties in text order
        (of the instructions ready at each step, the first in the text comes first).

        Raises :class:`VerifyError` naming the instructions of a cycle.
        """
        index = self._index
        waiting = {n: len(set(self._operands[n]) | set(self._control[n])) for n in self._names}
        ready = [index[n] for n in self._names if not waiting[n]]
        heapq.heapify(ready)
        order: list[str] = []
        while ready:
            name = self._names[heapq.heappop(ready)]
            order.append(name)
            for user in set(self._users[name]) | set(self._successors[name]):
                waiting[user] -= 1
                if not waiting[user]:
                    heapq.heappush(ready, index[user])
        if len(order) < len(self._names):
            cycle = [u for u, _ in nx.find_cycle(self._graph())]
            raise VerifyError(
                f"computation '{self.name}' has a dependency cycle: "
                + " -> ".join(self._sorted(cycle))
            )
        return tuple(order)

    def reaches(self, source: str, target: str) -> bool:
        """True when ``target`` depends (transitively) on ``source``; a node reaches itself."""
        self._check(source)
        self._check(target)
        return nx.has_path(self._graph(), source, target)

    def ancestors(self, name: str) -> tuple[str, ...]:
        """Everything ``name`` depends on, in text order."""
        self._check(name)
        return self._sorted(nx.ancestors(self._graph(), name))

    def descendants(self, name: str) -> tuple[str, ...]:
        """Everything that depends on ``name``, in text order."""
        self._check(name)
        return self._sorted(nx.descendants(self._graph(), name))


class CallGraph:
    """Which computation calls which (read-only)."""

    __slots__ = ("_g", "_index", "_names", "_sites", "_entry")

    def __init__(self, module: Module) -> None:
        self._names = tuple(c.name for c in module.computations)
        self._index = {n: k for k, n in enumerate(self._names)}
        self._entry = module.entry.name
        sites: list[CallSite] = []
        g = nx.DiGraph()
        g.add_nodes_from(self._names)
        for comp in module.computations:
            for instr in comp.instructions:
                for attribute, value in instr.attributes:
                    refs = value if isinstance(value, tuple) else (value,)
                    for ref in refs:
                        if isinstance(ref, ComputationRef) and ref.name in self._index:
                            sites.append(CallSite(comp.name, instr.name, attribute, ref.name))
                            g.add_edge(comp.name, ref.name)
        self._sites = tuple(sites)
        self._g = g

    def _sorted(self, names) -> tuple[str, ...]:
        return tuple(sorted(names, key=self._index.__getitem__))

    def computations(self) -> tuple[str, ...]:
        return self._names

    @property
    def entry(self) -> str:
        return self._entry

    def callees(self, name: str) -> tuple[str, ...]:
        """Computations ``name`` calls directly, in text order."""
        return self._sorted(self._g.successors(name))

    def callers(self, name: str) -> tuple[str, ...]:
        return self._sorted(self._g.predecessors(name))

    def call_sites(self, callee: str | None = None) -> tuple[CallSite, ...]:
        """Every call site (of ``callee`` when given), in text order of the callers."""
        return tuple(s for s in self._sites if callee is None or s.callee == callee)

    def post_order(self) -> tuple[str, ...]:
        """All computations, callees before callers; ties in text order."""
        try:
            order = nx.lexicographical_topological_sort(self._g.reverse(copy=False),
                                                        key=self._index.__getitem__)
            return tuple(order)
        except nx.NetworkXUnfeasible:
            cycle = [u for u, _ in nx.find_cycle(self._g)]
            raise VerifyError("computations call each other in a cycle: "
                              + " -> ".join(cycle)) from None

    def reachable_from(self, name: str) -> tuple[str, ...]:
        """Computations called from ``name`` directly or indirectly (not itself), text order."""
        return self._sorted(nx.descendants(self._g, name))

    def calls_transitively(self, caller: str, callee: str) -> bool:
        return caller != callee and nx.has_path(self._g, caller, callee)

    def unreachable(self) -> tuple[str, ...]:
        """Computations the entry never calls (dead code), in text order."""
        live = set(nx.descendants(self._g, self._entry)) | {self._entry}
        return tuple(n for n in self._names if n not in live)


class ModuleGraph:
    """The call graph plus one def-use graph per computation (each built on first use)."""

    __slots__ = ("calls", "_module", "_comps")

    def __init__(self, module: Module) -> None:
        self.calls = CallGraph(module)
        self._module = module
        self._comps: dict[str, ComputationGraph] = {}

    def computation(self, name: str) -> ComputationGraph:
        graph = self._comps.get(name)
        if graph is None:
            try:
                graph = ComputationGraph(self._module.computation(name))
            except KeyError:
                raise KeyError(f"no computation '{name}'") from None
            self._comps[name] = graph
        return graph


def module_graph(module: Module) -> ModuleGraph:
    """Build the dependency graphs of ``module``."""
    return ModuleGraph(module)


# ---------------------------------------------------------------------------
# Export: the whole module as one attributed graph, written by networkx
# ---------------------------------------------------------------------------

#: Formats :func:`write_dependency_graph` writes.
GRAPH_FORMATS = ("graphml", "dot", "json")

#: An attribute value every format can carry (GraphML has no null: ``None`` is left out).
Scalar = str | int | float | bool | None


def node_id(computation: str, instruction: str) -> str:
    """The id of an instruction in the exported graph: ``computation/instruction`` (HLO names
    never contain ``/``)."""
    return f"{computation}/{instruction}"


def write_dependency_graph(
    module: Module,
    fmt: str,
    *,
    node_attributes: Mapping[str, Mapping[str, Scalar]] | None = None,
    edge_attributes: Mapping[tuple[str, str], Mapping[str, Scalar]] | None = None,
) -> str:
    """``module`` as one directed graph in ``fmt`` (``graphml``, ``dot`` or ``json``, the
    node-link form of networkx).

    One node per instruction (id :func:`node_id`), with ``computation``, ``instruction``,
    ``opcode``, ``shape`` (as printed, layout included), ``layout`` (``""`` when none is
    written) and ``root``. An edge ``a -> b`` has ``kind`` ``data`` (``operands``: the
    operand positions of ``a`` in ``b``, e.g. ``"0,1"`` for ``add(a, a)``), ``control`` or
    ``call`` (from the calling instruction to the callee's root; ``attribute``: ``to_apply``,
    ``body``, ...). ``node_attributes`` / ``edge_attributes`` (keyed by node ids) add to or
    override these; ``None`` values are left out. Nodes and edges come in text order, so the
    same module gives the same bytes.
    """
    if fmt not in GRAPH_FORMATS:
        raise ValueError(f"unknown graph format {fmt!r} (one of {', '.join(GRAPH_FORMATS)})")
    g = _export_graph(module)
    for node, extra in (node_attributes or {}).items():
        if node in g:
            _set_attributes(g.nodes[node], extra)
    for (u, v), extra in (edge_attributes or {}).items():
        if g.has_edge(u, v):
            _set_attributes(g.edges[u, v], extra)
    if fmt == "graphml":
        return "\n".join(nx.generate_graphml(g, named_key_ids=True)) + "\n"
    if fmt == "json":
        data = nx.node_link_data(g, edges="edges")
        return json.dumps(data, indent=1) + "\n"
    return _dot_text(g)


def _export_graph(module: Module) -> nx.DiGraph:
    g = nx.DiGraph(name=module.name, entry=module.entry.name)
    for comp in module.computations:
        for instr in comp.instructions:
            layout = getattr(instr.shape, "layout", None)
            g.add_node(
                node_id(comp.name, instr.name),
                computation=comp.name,
                instruction=instr.name,
                opcode=instr.opcode,
                shape=str(instr.shape),
                layout="" if layout is None else str(layout),
                root=instr.name == comp.root,
            )
    for comp in module.computations:
        names = {i.name for i in comp.instructions}
        for instr in comp.instructions:
            here = node_id(comp.name, instr.name)
            positions: dict[str, list[str]] = {}
            for k, name in enumerate(instr.operands):
                if name in names:
                    positions.setdefault(name, []).append(str(k))
            for name, ks in positions.items():
                g.add_edge(node_id(comp.name, name), here, kind="data", operands=",".join(ks))
            for name in control_predecessors(instr):
                if name in names and not g.has_edge(node_id(comp.name, name), here):
                    g.add_edge(node_id(comp.name, name), here, kind="control")
            for attribute, value in instr.attributes:
                refs = value if isinstance(value, tuple) else (value,)
                for ref in refs:
                    if isinstance(ref, ComputationRef):
                        callee = module.computation(ref.name)
                        g.add_edge(here, node_id(callee.name, callee.root), kind="call",
                                   attribute=attribute)
    return g


def _set_attributes(target: dict, extra: Mapping[str, Scalar]) -> None:
    for key, value in extra.items():
        if value is None:
            target.pop(key, None)
        else:
            target[key] = value


def _dot_text(g: nx.DiGraph) -> str:
    """DOT through pydot (networkx's own bridge), one ``subgraph cluster_*`` per computation."""
    import pydot

    dot = pydot.Dot(graph_name=_dot_quote(g.graph["name"]), graph_type="digraph", strict=False)
    clusters: dict[str, pydot.Cluster] = {}
    for node, data in g.nodes(data=True):
        comp = data["computation"]
        cluster = clusters.get(comp)
        if cluster is None:
            cluster = pydot.Cluster(f"c{len(clusters)}", label=_dot_quote(comp))
            clusters[comp] = cluster
            dot.add_subgraph(cluster)
        item = pydot.Node(_dot_quote(node), label=_dot_quote(data["instruction"]))
        for key, value in data.items():
            item.set(key, _dot_quote(value))
        cluster.add_node(item)
    for u, v, data in g.edges(data=True):
        edge = pydot.Edge(_dot_quote(u), _dot_quote(v))
        for key, value in data.items():
            edge.set(key, _dot_quote(value))
        dot.add_edge(edge)
    return dot.to_string()


def _dot_quote(value: Scalar) -> str:
    text = str(value).lower() if isinstance(value, bool) else str(value)
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
