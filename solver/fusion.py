"""Fusing nodes joined by functional edges into one node (an exact reduction).

An edge is *functional* when its allowed pairs make one end's label a
function of the other's: every row (or every column) of its table has at
most one allowed entry. Contest instances chain most memory-bound nodes this
way (a tensor's sharding fixes its consumer's). Such an edge is a tie in
disguise: fused into one node whose labels are the consistent joint
assignments, a single move changes the whole chain instead of being blocked
by a forbidden pair, and CP-SAT sees one one-hot row instead of a chain of
forbidden-pair clauses.

Groups grow edge by edge with the real joint label count and stop at
``cap`` joint labels (that edge stays a table). Joining copies only the
smaller group's columns; the larger group's re-indexing is recorded as a row
map and applied lazily, so fusing tens of thousands of nodes stays near
linear. Example: ``a -> b`` with table ``[[0, F], [F, 3]]`` (F forbidden)
fuses ``a, b`` into one node with joint labels ``(0, 0)`` and ``(1, 1)``.
"""

from __future__ import annotations

import numpy as np

from solver.problem import FORBIDDEN, Problem


class _Group:
    """Members' columns over the group's rows; re-indexings kept as row maps."""

    __slots__ = ("rows", "maps", "cols")

    def __init__(self, node: int, column: np.ndarray) -> None:
        self.rows = len(column)
        self.maps: list[np.ndarray] = []
        self.cols: dict[int, tuple[np.ndarray, int]] = {node: (column, 0)}

    def column(self, member: int) -> np.ndarray:
        col, version = self.cols[member]
        maps = self.maps
        if version < len(maps):
            for k in range(version, len(maps)):
                col = col[maps[k]]
            self.cols[member] = (col, len(maps))
        return col

    def reindex(self, row_map: np.ndarray) -> None:
        if len(row_map) == self.rows and (row_map == np.arange(self.rows)).all():
            return
        self.maps.append(row_map)
        self.rows = len(row_map)

    def resolved(self) -> dict[int, np.ndarray]:
        """Every member's column over the current rows (composed maps, newest first)."""
        composite: list[np.ndarray | None] = [None] * (len(self.maps) + 1)
        current = None
        for k in range(len(self.maps) - 1, -1, -1):
            current = self.maps[k] if current is None else self.maps[k][current]
            composite[k] = current
        out = {}
        for member, (col, version) in self.cols.items():
            out[member] = col if composite[version] is None else col[composite[version]]
        return out


def _functional_edges(problem: Problem, allowed: list[np.ndarray], tied: set[int]
                      ) -> list[tuple[int, int, np.ndarray]]:
    """The functional edges, in the problem's order, as ``(u, v, mapping)``: ``mapping[a]``
    is the one label of ``v`` allowed with label ``a`` of ``u`` (-1: none). Decided table
    shape by table shape (each edge's verdict depends on its table and its ends' allowed
    labels only)."""
    count = [int(a.sum()) for a in allowed]
    by_shape: dict[tuple[int, int], list[int]] = {}
    for i, edge in enumerate(problem.edges):
        # A table without forbidden entries between nodes with two or more
        # allowed labels is not functional; single-label ends are folded later.
        if count[edge.u] < 2 or count[edge.v] < 2 or edge.u in tied or edge.v in tied:
            continue
        by_shape.setdefault(edge.costs.shape, []).append(i)
    found: list[tuple[int, int, int, np.ndarray]] = []
    for picked in by_shape.values():
        costs = np.array([problem.edges[i].costs for i in picked])
        forbids = np.flatnonzero((costs >= FORBIDDEN).any(axis=(1, 2)))
        if not len(forbids):
            continue
        picked = [picked[j] for j in forbids.tolist()]
        costs = costs[forbids]
        edges = [problem.edges[i] for i in picked]
        finite = ((costs < FORBIDDEN) & np.array([allowed[e.u] for e in edges])[:, :, None]
                  & np.array([allowed[e.v] for e in edges])[:, None, :])
        rows_ok = (finite.sum(axis=2) <= 1).all(axis=1)
        cols_ok = ~rows_ok & (finite.sum(axis=1) <= 1).all(axis=1)
        by_row = np.where(finite.any(axis=2), finite.argmax(axis=2), -1)
        by_col = np.where(finite.any(axis=1), finite.argmax(axis=1), -1)
        for j in np.flatnonzero(rows_ok).tolist():
            found.append((picked[j], edges[j].u, edges[j].v, by_row[j]))
        for j in np.flatnonzero(cols_ok).tolist():
            found.append((picked[j], edges[j].v, edges[j].u, by_col[j]))
    found.sort(key=lambda f: f[0])
    return [(u, v, mapping) for _, u, v, mapping in found]


def functional_groups(problem: Problem, cap: int) -> list[dict[int, np.ndarray]]:
    """Groups of two or more nodes fused along functional edges.

    Each group maps member -> column: row ``r`` of the group is the joint
    assignment ``{member: column[r]}``; every row is consistent with the
    fusing edges' allowed pairs and the members' allowed labels. Nodes in
    explicit ties are left out (their groups are built by the tie merge).
    """
    tied = {t.u for t in problem.ties} | {t.v for t in problem.ties}
    allowed = [u < FORBIDDEN for u in problem.unary]
    owner: dict[int, _Group] = {}

    def group(node: int) -> _Group:
        g = owner.get(node)
        if g is None:
            g = owner[node] = _Group(node, np.flatnonzero(allowed[node]))
        return g

    for u, v, mapping in _functional_edges(problem, allowed, tied):
        gu, gv = group(u), group(v)
        target = mapping[gu.column(u)]
        if gu is gv:
            keep = np.flatnonzero(target == gu.column(v))
            if len(keep):  # empty: contradictory, left to the later passes to report
                gu.reindex(keep)
            continue
        # Rows of the join: pairs (i, j) with target[i] == column_v[j].
        col_v = gv.column(v)
        order = np.argsort(col_v, kind="stable")
        sorted_v = col_v[order]
        lo = np.searchsorted(sorted_v, target, side="left")
        hi = np.searchsorted(sorted_v, target, side="right")
        counts = np.where(target >= 0, hi - lo, 0)
        total = int(counts.sum())
        if total == 0 or total > cap:
            continue
        left = np.repeat(np.arange(len(target)), counts)
        starts = np.repeat(lo - (np.cumsum(counts) - counts), counts)
        right = order[starts + np.arange(total)]
        big, small, big_map, small_map = (gu, gv, left, right) if len(gu.cols) >= len(gv.cols) \
            else (gv, gu, right, left)
        big.reindex(big_map)
        version = len(big.maps)
        for member in list(small.cols):
            big.cols[member] = (small.column(member)[small_map], version)
            owner[member] = big
    seen: set[int] = set()
    out = []
    for g in owner.values():
        if id(g) in seen or len(g.cols) < 2:
            continue
        seen.add(id(g))
        out.append(g.resolved())
    return out
