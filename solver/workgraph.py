"""The mutable graph the reductions rewrite, and the record that undoes them.

The reductions need in-place edits (drop a label, fold a node into a
neighbour) on tens of thousands of nodes, so they work on this private
structure instead of rebuilding frozen problems. Nothing here leaves
``solver``: the reductions hand back a frozen :class:`~solver.problem.Problem`
and a :class:`Postsolve`.

Label spaces: a tie group becomes one node whose labels are the group's
consistent joint assignments (*rows*); ``orig[node][i]`` is the row that the
node's current label ``i`` stands for. Eliminated nodes are restored by the
recorded steps, replayed in reverse order.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from solver.problem import FORBIDDEN


def clamp_add(a: np.ndarray, b: np.ndarray | int) -> np.ndarray:
    """``a + b`` where anything at or above FORBIDDEN stays FORBIDDEN."""
    return np.minimum(a + b, FORBIDDEN)


@dataclass(frozen=True, slots=True, eq=False)
class Fix:
    """Node ``node`` takes current label ``label``."""

    node: int
    label: int


@dataclass(frozen=True, slots=True, eq=False)
class Leaf:
    """Node ``node`` takes ``best[label[neighbour]]``."""

    node: int
    neighbour: int
    best: np.ndarray


@dataclass(frozen=True, slots=True, eq=False)
class Series:
    """Node ``node`` takes ``best[label[u], label[w]]``."""

    node: int
    u: int
    w: int
    best: np.ndarray


@dataclass(frozen=True, slots=True, eq=False)
class Postsolve:
    """Maps labels of the reduced problem back to labels of the original one."""

    num_nodes: int
    core: tuple[int, ...]
    steps: tuple[Fix | Leaf | Series, ...]
    orig: tuple[np.ndarray | None, ...]
    groups: tuple[tuple[int, tuple[tuple[int, np.ndarray], ...]], ...]

    def restore(self, core_labels: tuple[int, ...] | list[int]) -> tuple[int, ...]:
        """Full labels from the reduced problem's labels (one per core node)."""
        current: dict[int, int] = {node: int(x) for node, x in zip(self.core, core_labels)}
        for step in reversed(self.steps):
            if isinstance(step, Fix):
                current[step.node] = step.label
            elif isinstance(step, Leaf):
                current[step.node] = int(step.best[current[step.neighbour]])
            else:
                current[step.node] = int(step.best[current[step.u], current[step.w]])
        labels = [0] * self.num_nodes
        for rep, members in self.groups:
            orig = self.orig[rep]
            row = int(orig[current[rep]]) if orig is not None else current[rep]
            for member, column in members:
                labels[member] = int(column[row])
        return tuple(labels)

    def project(self, labels: tuple[int, ...] | list[int]) -> tuple[int, ...]:
        """Reduced labels (one per core node) that stand for the full ``labels``:
        ``-1`` where the group's joint labels are not a row the reduced node kept
        (pruned or dominated there). The inverse of :meth:`restore` on core nodes;
        eliminated nodes are chosen anew by ``restore``, never worse for the cost.
        """
        members_of = dict(self.groups)
        out = []
        for rep in self.core:
            members = members_of[rep]
            if len(members) == 1:
                member, column = members[0]
                hits = np.flatnonzero(column == labels[member])
            else:
                rows = np.ones(len(members[0][1]), bool)
                for member, column in members:
                    rows &= column == labels[member]
                hits = np.flatnonzero(rows)
            orig = self.orig[rep]
            if orig is None or not len(hits):
                current = hits
            elif len(hits) == 1:
                current = np.flatnonzero(orig == hits[0])
            else:
                current = np.flatnonzero(np.isin(orig, hits))
            out.append(int(current[0]) if len(current) else -1)
        return tuple(out)


def _read_only(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


def as_private(array: np.ndarray | list) -> np.ndarray:
    """``array`` as a C-ordered int64 array nobody else writes: itself when it is one
    already and read-only, else a copy."""
    if (type(array) is np.ndarray and array.dtype == np.int64 and not array.flags.writeable
            and array.flags.c_contiguous):
        return array
    return np.array(array, np.int64)


class WorkGraph:
    """Nodes with unary costs, undirected edges with tables, memory uses."""

    def __init__(self, unary: list[np.ndarray]) -> None:
        # Arrays are replaced, never written in place: a read-only int64 array is kept as
        # it is, and every node of one label count starts from one read-only identity.
        self.unary: list[np.ndarray | None] = [as_private(u) for u in unary]
        identity: dict[int, np.ndarray] = {}
        for u in self.unary:
            if len(u) not in identity:
                identity[len(u)] = _read_only(np.arange(len(u)))
        self.orig: list[np.ndarray | None] = [identity[len(u)] for u in self.unary]
        self.adj: list[set[int]] = [set() for _ in unary]
        self.tables: dict[tuple[int, int], np.ndarray] = {}
        self.uses: list[list] = []  # [node, start, end, usage]
        self.node_uses: dict[int, list[int]] = {}
        self.steps: list[Fix | Leaf | Series] = []
        self.offset = 0

    def alive(self) -> list[int]:
        return [n for n, u in enumerate(self.unary) if u is not None]

    def table(self, u: int, v: int) -> np.ndarray:
        """The table oriented ``(k_u, k_v)``."""
        return self.tables[(u, v)] if u < v else self.tables[(v, u)].T

    def add_table(self, u: int, v: int, table: np.ndarray) -> None:
        """Add ``table`` (oriented ``(k_u, k_v)``) to edge ``u-v``, creating it if needed."""
        key, oriented = ((u, v), table) if u < v else ((v, u), table.T)
        old = self.tables.get(key)
        self.tables[key] = as_private(oriented) if old is None else clamp_add(old, oriented)
        self.adj[u].add(v)
        self.adj[v].add(u)

    def remove_edge(self, u: int, v: int) -> None:
        del self.tables[(u, v) if u < v else (v, u)]
        self.adj[u].discard(v)
        self.adj[v].discard(u)

    def add_use(self, node: int, start: int, end: int, usage: np.ndarray) -> None:
        self.node_uses.setdefault(node, []).append(len(self.uses))
        self.uses.append([node, start, end, np.array(usage, np.int64)])

    def restrict(self, node: int, keep: np.ndarray) -> None:
        """Keep only the labels of ``node`` where ``keep`` is true."""
        self.unary[node] = self.unary[node][keep]
        self.orig[node] = self.orig[node][keep]
        for other in self.adj[node]:
            key = (node, other) if node < other else (other, node)
            table = self.tables[key]
            self.tables[key] = table[keep] if node < other else table[:, keep]
        for i in self.node_uses.get(node, ()):
            self.uses[i][3] = self.uses[i][3][keep]

    def remove_node(self, node: int) -> None:
        for other in list(self.adj[node]):
            self.remove_edge(node, other)
        self.unary[node] = None
        for i in self.node_uses.pop(node, ()):
            self.uses[i] = None

    def reparametrize(self, u: int, v: int) -> bool:
        """Move row and column minima of edge ``u-v`` into the unary costs.

        Exact (one label per node is chosen). Returns True when the edge became
        all-zero and was dropped.
        """
        table = self.table(u, v)
        if table.max() < FORBIDDEN:
            rows = table.min(axis=1)
            table = table - rows[:, None]
            cols = table.min(axis=0)
            table = table - cols[None, :]
        else:
            finite = table < FORBIDDEN
            rows = np.where(finite, table, FORBIDDEN).min(axis=1)
            rows = np.where(rows >= FORBIDDEN, 0, rows)
            table = np.where(finite, table - rows[:, None], FORBIDDEN)
            cols = np.where(finite, table, FORBIDDEN).min(axis=0)
            cols = np.where(cols >= FORBIDDEN, 0, cols)
            table = np.where(finite, table - cols[None, :], FORBIDDEN)
        if rows.any():
            self.unary[u] = clamp_add(self.unary[u], rows)
        if cols.any():
            self.unary[v] = clamp_add(self.unary[v], cols)
        if table.any():
            self.tables[(u, v) if u < v else (v, u)] = table if u < v else table.T
            return False
        self.remove_edge(u, v)
        return True

    def reparametrize_all(self) -> None:
        """:meth:`reparametrize` on every edge, vectorized over the edges of one
        table shape (each edge's shift depends on its own table only, and the
        unary shifts add up in any order)."""
        by_shape: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
        for key in sorted(self.tables):
            by_shape[self.tables[key].shape].append(key)
        for keys in by_shape.values():
            stack = np.array([self.tables[key] for key in keys])
            finite = stack < FORBIDDEN
            rows = np.where(finite, stack, FORBIDDEN).min(axis=2)
            rows = np.where(rows >= FORBIDDEN, 0, rows)
            stack = np.where(finite, stack - rows[:, :, None], FORBIDDEN)
            cols = np.where(finite, stack, FORBIDDEN).min(axis=1)
            cols = np.where(cols >= FORBIDDEN, 0, cols)
            stack = np.where(finite, stack - cols[:, None, :], FORBIDDEN)
            rows_any, cols_any = rows.any(axis=1).tolist(), cols.any(axis=1).tolist()
            nonzero = stack.reshape(len(keys), -1).any(axis=1).tolist()
            for i, (u, v) in enumerate(keys):
                if rows_any[i]:
                    self.unary[u] = clamp_add(self.unary[u], rows[i])
                if cols_any[i]:
                    self.unary[v] = clamp_add(self.unary[v], cols[i])
                if nonzero[i]:
                    self.tables[(u, v)] = stack[i]
                else:
                    self.remove_edge(u, v)
