"""The labeling problem: values, validation, evaluation.

Each node picks one label (an index into its candidates). The cost of an
assignment is the sum of the chosen labels' unary costs plus, for every edge
``(u, v)``, the table entry ``costs[label[u], label[v]]``. Hard rules:

* a *forbidden* label (unary cost :data:`FORBIDDEN`) and a forbidden label pair
  (table entry :data:`FORBIDDEN`) may not be chosen;
* a *tie* ``(u, v, mapping)`` forces ``label[v] == mapping[label[u]]``
  (``mapping=None`` means the same index; a ``None`` entry forbids that label of ``u``);
* optionally, memory: each :class:`MemoryUse` occupies ``usage[label[node]]``
  bytes over the half-open time interval ``[start, end)``, each :class:`FixedUse`
  a constant amount, and the total live at any time must not exceed
  ``memory_limit``.

Example: two nodes with labels ``{0, 1}``, unary ``[0, 5]`` and ``[3, 0]``, one
edge with table ``[[0, 9], [9, 0]]``: labels ``(0, 0)`` cost 3, ``(1, 1)`` cost 5,
``(0, 1)`` cost 9, so the optimum is ``(0, 0)``.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from solver.errors import ProblemError

#: Cost sentinel for a label or label pair that may not be chosen. Real costs
#: stay below it; sums are clamped to it, so three of them still fit in int64.
FORBIDDEN = 10**18


def _frozen_array(values: object, what: str, ndim: int) -> np.ndarray:
    try:
        array = np.array(values, dtype=np.int64, copy=True)
    except (TypeError, ValueError, OverflowError) as err:
        raise ProblemError(f"{what}: costs must be integers ({err})") from None
    if array.ndim != ndim:
        raise ProblemError(f"{what}: expected a {ndim}-d table, got shape {array.shape}")
    array.flags.writeable = False
    return array


@dataclass(frozen=True, slots=True, eq=False)
class Edge:
    """A pairwise cost table between two distinct nodes, shape ``(k_u, k_v)``."""

    u: int
    v: int
    costs: np.ndarray


@dataclass(frozen=True, slots=True)
class Tie:
    """``label[v] == mapping[label[u]]``; ``mapping=None`` means equal indices."""

    u: int
    v: int
    mapping: tuple[int | None, ...] | None = None


@dataclass(frozen=True, slots=True, eq=False)
class MemoryUse:
    """``usage[label[node]]`` bytes live over the time interval ``[start, end)``."""

    node: int
    start: int
    end: int
    usage: np.ndarray


@dataclass(frozen=True, slots=True)
class FixedUse:
    """A constant amount live over ``[start, end)``, whatever the labels."""

    start: int
    end: int
    amount: int


@dataclass(frozen=True, slots=True, eq=False)
class Problem:
    """A validated labeling problem. Build it with :func:`make_problem`."""

    unary: tuple[np.ndarray, ...]
    edges: tuple[Edge, ...] = ()
    ties: tuple[Tie, ...] = ()
    memory: tuple[MemoryUse, ...] = ()
    fixed_memory: tuple[FixedUse, ...] = ()
    memory_limit: int | None = None
    names: tuple[str, ...] | None = None

    @property
    def num_nodes(self) -> int:
        return len(self.unary)

    def label_count(self, node: int) -> int:
        return len(self.unary[node])

    def node_name(self, node: int) -> str:
        if self.names is not None:
            return f"node {node} ({self.names[node]})"
        return f"node {node}"


def make_problem(
    unary: Sequence[Sequence[int] | np.ndarray],
    edges: Iterable[tuple[int, int, object] | Edge] = (),
    *,
    ties: Iterable[tuple[int, int] | tuple[int, int, Sequence[int | None] | None] | Tie] = (),
    forbidden: Iterable[tuple[int, int]] = (),
    memory: Iterable[tuple[int, int, int, Sequence[int]] | MemoryUse] = (),
    fixed_memory: Iterable[tuple[int, int, int] | FixedUse] = (),
    memory_limit: int | None = None,
    names: Sequence[str] | None = None,
) -> Problem:
    """Validate the parts and build a frozen :class:`Problem`.

    ``edges`` are ``(u, v, table)``; ``memory`` entries are ``(node, start, end,
    usage_per_label)``; ``forbidden`` are ``(node, label)`` pairs, folded into the
    unary costs as :data:`FORBIDDEN`. Raises :class:`ProblemError` naming the part.
    """
    nodes = _checked_nodes(unary, forbidden)
    checked_edges = _checked_edges(nodes, edges)
    checked_ties = _checked_ties(nodes, ties)
    if memory_limit is not None and (not isinstance(memory_limit, (int, np.integer))
                                     or memory_limit < 0):
        raise ProblemError(f"memory limit: {memory_limit!r} is not a non-negative integer")
    checked_memory = _checked_memory(nodes, memory)
    checked_fixed = _checked_fixed(fixed_memory)
    if names is not None and len(names) != len(nodes):
        raise ProblemError(f"names: {len(names)} names for {len(nodes)} nodes")
    return Problem(
        unary=tuple(nodes),
        edges=tuple(checked_edges),
        ties=tuple(checked_ties),
        memory=tuple(checked_memory),
        fixed_memory=tuple(checked_fixed),
        memory_limit=None if memory_limit is None else int(memory_limit),
        names=None if names is None else tuple(str(x) for x in names),
    )


def _check_node(nodes: list[np.ndarray], node: object, what: str) -> int:
    n = len(nodes)
    if not isinstance(node, (int, np.integer)) or not 0 <= int(node) < n:
        raise ProblemError(f"{what}: node {node!r} is not in 0..{n - 1}")
    return int(node)


def _check_label(nodes: list[np.ndarray], node: int, label: object, what: str) -> int:
    k = len(nodes[node])
    if not isinstance(label, (int, np.integer)) or not 0 <= int(label) < k:
        raise ProblemError(f"{what}: label {label!r} is not in 0..{k - 1} of node {node}")
    return int(label)


def _checked_nodes(unary: Sequence[Sequence[int] | np.ndarray],
                   forbidden: Iterable[tuple[int, int]]) -> list[np.ndarray]:
    """The unary cost rows, frozen, with the forbidden labels at :data:`FORBIDDEN`."""
    nodes: list[np.ndarray] = []
    for i, costs in enumerate(unary):
        if type(costs) is np.ndarray and costs.dtype == np.int64 and costs.ndim == 1:
            array = costs.copy()
        else:
            array = _frozen_array(costs, f"node {i}", 1)
            array.flags.writeable = True  # forbidden labels are written below
        if array.size == 0:
            raise ProblemError(f"node {i}: has no candidate labels")
        nodes.append(array)
    # The cost range of all rows at once; the first offending row is named.
    if nodes:
        flat = np.concatenate(nodes)
        if flat.min() < 0 or flat.max() > FORBIDDEN:
            for i, array in enumerate(nodes):
                if array.min() < 0 or array.max() > FORBIDDEN:
                    raise ProblemError(f"node {i}: unary costs must lie in [0, FORBIDDEN]")
    for node, label in forbidden:
        node = _check_node(nodes, node, "forbidden label")
        nodes[node][_check_label(nodes, node, label, f"forbidden label of node {node}")] = FORBIDDEN
    for array in nodes:
        array.flags.writeable = False
    return nodes


def _checked_edges(nodes: list[np.ndarray], edges: Iterable[tuple[int, int, object] | Edge]
                   ) -> list[Edge]:
    checked: list[Edge] = []
    n = len(nodes)
    # One frozen copy per distinct int64 table object (the layers of a model share their
    # tables), kept with the object so that its id is not reused while this runs.
    copies: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for k, item in enumerate(edges):
        u, v, table = (item.u, item.v, item.costs) if isinstance(item, Edge) else item
        # The common case checked inline; the message is made only for an error.
        if not (type(u) is int and type(v) is int and 0 <= u < n and 0 <= v < n):
            what = f"edge {k} ({u}, {v})"
            u, v = _check_node(nodes, u, what), _check_node(nodes, v, what)
        if u == v:
            raise ProblemError(f"edge {k} ({u}, {v}): joins a node to itself")
        if type(table) is np.ndarray and table.dtype == np.int64 and table.ndim == 2:
            found = copies.get(id(table))
            if found is None:
                costs = table.copy()
                costs.flags.writeable = False
                copies[id(table)] = (table, costs)
            else:
                costs = found[1]
        else:
            costs = _frozen_array(table, f"edge {k} ({u}, {v})", 2)
        if costs.shape != (len(nodes[u]), len(nodes[v])):
            raise ProblemError(
                f"edge {k} ({u}, {v}): table shape {costs.shape} != "
                f"({len(nodes[u])}, {len(nodes[v])})"
            )
        checked.append(Edge(u, v, costs))
    # The cost range of all tables at once (one pass instead of two per table);
    # the first offending table is named.
    if checked:
        distinct = {id(e.costs): e.costs for e in checked}
        flat = np.concatenate([costs.ravel() for costs in distinct.values()])
        if flat.size and (flat.min() < 0 or flat.max() > FORBIDDEN):
            for k, e in enumerate(checked):
                if e.costs.size and (e.costs.min() < 0 or e.costs.max() > FORBIDDEN):
                    raise ProblemError(f"edge {k} ({e.u}, {e.v}): costs must lie in [0, FORBIDDEN]")
    return checked


def _checked_ties(nodes: list[np.ndarray],
                  ties: Iterable[tuple[int, int] | tuple[int, int, Sequence[int | None] | None]
                                 | Tie]) -> list[Tie]:
    checked: list[Tie] = []
    for k, item in enumerate(ties):
        if isinstance(item, Tie):
            u, v, mapping = item.u, item.v, item.mapping
        else:
            u, v, *rest = item
            mapping = rest[0] if rest else None
        what = f"tie {k} ({u}, {v})"
        u, v = _check_node(nodes, u, what), _check_node(nodes, v, what)
        if u == v:
            raise ProblemError(f"{what}: ties a node to itself")
        if mapping is None:
            if len(nodes[u]) != len(nodes[v]):
                raise ProblemError(
                    f"{what}: an identity tie needs equal label counts "
                    f"({len(nodes[u])} != {len(nodes[v])})"
                )
        else:
            mapping = tuple(mapping)
            if len(mapping) != len(nodes[u]):
                raise ProblemError(f"{what}: mapping has {len(mapping)} entries, node {u} has "
                                   f"{len(nodes[u])} labels")
            mapping = tuple(None if b is None else _check_label(nodes, v, b, what)
                            for b in mapping)
        checked.append(Tie(u, v, mapping))
    return checked


def _checked_memory(nodes: list[np.ndarray],
                    memory: Iterable[tuple[int, int, int, Sequence[int]] | MemoryUse]
                    ) -> list[MemoryUse]:
    checked: list[MemoryUse] = []
    for k, item in enumerate(memory):
        if isinstance(item, MemoryUse):
            node, start, end, usage = item.node, item.start, item.end, item.usage
        else:
            node, start, end, usage = item
        what = f"memory use {k} of node {node}"
        node = _check_node(nodes, node, what)
        if not int(start) <= int(end):
            raise ProblemError(f"{what}: interval [{start}, {end}) is reversed")
        array = _frozen_array(usage, what, 1)
        if array.shape != (len(nodes[node]),):
            raise ProblemError(f"{what}: {array.size} usages for {len(nodes[node])} labels")
        if array.size and array.min() < 0:
            raise ProblemError(f"{what}: usage must be non-negative")
        checked.append(MemoryUse(node, int(start), int(end), array))
    return checked


def _checked_fixed(fixed_memory: Iterable[tuple[int, int, int] | FixedUse]) -> list[FixedUse]:
    checked: list[FixedUse] = []
    for k, item in enumerate(fixed_memory):
        start, end, amount = (item.start, item.end, item.amount) if isinstance(item, FixedUse) \
            else item
        if not int(start) <= int(end) or int(amount) < 0:
            raise ProblemError(f"fixed memory use {k}: needs start <= end and amount >= 0")
        checked.append(FixedUse(int(start), int(end), int(amount)))
    return checked


def trivial_bound(problem: Problem) -> int:
    """Smallest allowed unary cost per node plus smallest allowed entry per table
    (:data:`FORBIDDEN` when some node or table allows nothing): a lower bound on
    every assignment's cost."""
    total = 0
    for costs in problem.unary:
        total += int(costs.min())
    for edge in problem.edges:
        total += int(edge.costs.min())
    return min(total, FORBIDDEN)


def evaluate(problem: Problem, labels: Sequence[int]) -> int | None:
    """Total cost of ``labels``, or ``None`` when a forbidden label/pair or a tie is broken.

    Memory is not part of the cost: see :func:`memory_feasible`.
    """
    if len(labels) != problem.num_nodes:
        raise ProblemError(f"labels: {len(labels)} labels for {problem.num_nodes} nodes")
    total = 0
    for node, costs in enumerate(problem.unary):
        label = int(labels[node])
        if not 0 <= label < len(costs):
            raise ProblemError(f"labels: {label} is not a label of {problem.node_name(node)}")
        cost = int(costs[label])
        if cost >= FORBIDDEN:
            return None
        total += cost
    for edge in problem.edges:
        cost = int(edge.costs[labels[edge.u], labels[edge.v]])
        if cost >= FORBIDDEN:
            return None
        total += cost
    for tie in problem.ties:
        a = int(labels[tie.u])
        want = a if tie.mapping is None else tie.mapping[a]
        if want is None or int(labels[tie.v]) != want:
            return None
    return total


def memory_profile(problem: Problem, labels: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """``(times, live)``: the bytes live from each event time until the next one."""
    starts = [m.start for m in problem.memory] + [f.start for f in problem.fixed_memory]
    ends = [m.end for m in problem.memory] + [f.end for f in problem.fixed_memory]
    amounts = [int(m.usage[labels[m.node]]) for m in problem.memory] + [
        f.amount for f in problem.fixed_memory
    ]
    if not starts:
        return np.zeros(1, np.int64), np.zeros(1, np.int64)
    times, inverse = np.unique(np.array(starts + ends, np.int64), return_inverse=True)
    delta = np.zeros(len(times) + 1, np.int64)
    k = len(starts)
    np.add.at(delta, inverse[:k], np.array(amounts, np.int64))
    np.subtract.at(delta, inverse[k:], np.array(amounts, np.int64))
    return times, np.cumsum(delta[:-1])


def peak_memory(problem: Problem, labels: Sequence[int]) -> int:
    """The largest total usage live at one time (0 without memory uses)."""
    return int(memory_profile(problem, labels)[1].max())


def memory_feasible(problem: Problem, labels: Sequence[int]) -> bool:
    """Whether ``labels`` keep the live total within ``memory_limit`` at every time."""
    return problem.memory_limit is None or peak_memory(problem, labels) <= problem.memory_limit


class Status(enum.Enum):
    OPTIMAL = "OPTIMAL"
    FEASIBLE = "FEASIBLE"
    INFEASIBLE = "INFEASIBLE"
    UNKNOWN = "UNKNOWN"


@dataclass(frozen=True, slots=True)
class Solution:
    """A solve's answer. ``labels`` is ``None`` unless status is OPTIMAL or FEASIBLE.

    ``gap`` is ``(objective - lower_bound) / max(1, objective)``; timings are
    ``(phase, milliseconds)`` pairs; ``first_solution_ms`` is the time from the
    start of the solve to the first complete feasible assignment.
    """

    status: Status
    labels: tuple[int, ...] | None = None
    objective: int | None = None
    lower_bound: int | None = None
    memory_feasible: bool | None = None
    peak_memory: int | None = None
    timings_ms: tuple[tuple[str, float], ...] = ()
    first_solution_ms: float | None = None
    message: str = ""

    @property
    def gap(self) -> float | None:
        if self.objective is None or self.lower_bound is None:
            return None
        return max(0.0, (self.objective - self.lower_bound) / max(1, abs(self.objective)))
