"""Groups of nodes joined by functional edges, whose labels follow from one root's.

An edge is *functional* when its allowed pairs make one end's label a function
of the other's; on the public contest instances every such edge is a partial
bijection, and most nodes lie on them. Single-node moves cannot leave a
forbidden pair there: changing one node of a chain breaks the pair toward its
neighbour. :class:`Groups` puts every node in a group: a root plus the nodes
reached from it along functional edges (breadth first, all roots at once). A
group's *rows* are the root labels for which every member's derived label is
allowed; ``inner`` prices the edges inside the group per row (a forbidden pair
there makes the row forbidden). A node on no functional edge is a group of its
own, one row per label. Example: ``a - b`` with table ``[[0, F], [F, 3]]`` (F
forbidden) is one group with rows ``(0, 0)`` and ``(1, 1)``, inner costs 0 and 3.
"""

from __future__ import annotations

import numpy as np

from solver.flat import BAD, Flat, colour_nodes, ranges
from solver.problem import FORBIDDEN, Edge, Problem


def with_tie_edges(problem: Problem) -> Problem:
    """Ties as edges whose table allows only the tied pairs (cost 0): same answers."""
    if not problem.ties:
        return problem
    edges = list(problem.edges)
    for tie in problem.ties:
        ku, kv = len(problem.unary[tie.u]), len(problem.unary[tie.v])
        table = np.full((ku, kv), FORBIDDEN, np.int64)
        mapping = range(ku) if tie.mapping is None else tie.mapping
        for a, b in enumerate(mapping):
            if b is not None:
                table[a, b] = 0
        edges.append(Edge(tie.u, tie.v, table))
    return Problem(problem.unary, tuple(edges), (), problem.memory, problem.fixed_memory,
                   problem.memory_limit, problem.names)


def _allowed(flat: Flat) -> np.ndarray:
    """Per flat label: not forbidden, nor forbidden beside a single-label neighbour."""
    allowed = flat.unary < BAD
    for near, far in ((flat.eu, flat.ev), (flat.ev, flat.eu)):
        pinned = np.flatnonzero(flat.k[far] == 1)
        k = flat.k[near[pinned]]
        which = ranges(np.zeros(len(pinned), np.int64), k)
        e = np.repeat(pinned, k)
        # The table of an edge toward a single-label end is one row or column.
        entry = flat.eoff[e] + which
        allowed[flat.off[near[e]] + which] &= flat.tables[entry] < BAD
    return allowed


class Groups:
    """Nodes grouped along functional edges; each group's consistent joint labels as rows.

    ``entry`` holds, per group, a block ``rows x members`` of flat label indices
    (member order: ``members[moff[g]:moff[g+1]]``), at ``eoff[g]``; global row
    ``roff[g] + r`` is row ``r`` of group ``g``; ``inner[row]`` is the cost of the
    edges inside the group at that row.
    """

    def __init__(self, flat: Flat) -> None:
        self.flat = flat
        n = flat.n
        allowed = _allowed(flat)
        tail, head, maps = self._functional(flat, allowed)
        group, parent, levels = self._search(flat, tail, head)
        self.group = group
        groups = int(group.max(initial=-1)) + 1
        self.count = groups
        roots = np.zeros(groups, np.int64)
        roots[group[levels[0]]] = levels[0]
        # Columns: per node, its label for each root label (-1: none).
        width = flat.k[roots][group]
        coff = np.zeros(n + 1, np.int64)
        np.cumsum(width, out=coff[1:])
        column = np.full(int(coff[-1]), -1, np.int64)
        column[ranges(coff[levels[0]], width[levels[0]])] = ranges(
            np.zeros(len(levels[0]), np.int64), width[levels[0]])
        for level in levels[1:]:
            half = parent[level]
            above = tail[half]
            w = width[level]
            mine = ranges(coff[level], w)
            theirs = column[ranges(coff[above], w)]
            base = np.repeat(maps[1][half], w)
            column[mine] = np.where(theirs >= 0, maps[0][base + np.maximum(theirs, 0)], -1)
        # A root label is a row when every member's label exists and is allowed.
        owner = np.repeat(np.arange(n), width)
        row0 = np.zeros(groups + 1, np.int64)
        np.cumsum(flat.k[roots], out=row0[1:])
        row_id = row0[group[owner]] + (np.arange(len(column)) - coff[owner])
        flat_label = flat.off[owner] + np.maximum(column, 0)
        broken = (column < 0) | ~allowed[flat_label]
        bad_row = np.bincount(row_id[broken], minlength=int(row0[-1])) > 0
        keep = np.flatnonzero(~bad_row)
        self.rows = np.bincount(np.searchsorted(row0, keep, side="right") - 1,
                                minlength=groups)
        self.roff = np.zeros(groups + 1, np.int64)
        np.cumsum(self.rows, out=self.roff[1:])
        new_row = np.full(int(row0[-1]), -1, np.int64)
        new_row[keep] = np.arange(len(keep))
        # Member order: by group, then node.
        self.members = np.argsort(group, kind="stable")
        size = np.bincount(group, minlength=groups)
        self.size = size
        self.moff = np.zeros(groups + 1, np.int64)
        np.cumsum(size, out=self.moff[1:])
        slot = np.empty(n, np.int64)
        slot[self.members] = np.arange(n) - self.moff[group[self.members]]
        self.slot = slot
        self.eoff = np.zeros(groups + 1, np.int64)
        np.cumsum(self.rows * size, out=self.eoff[1:])
        self.entry = np.zeros(int(self.eoff[-1]), np.int64)
        alive = new_row[row_id] >= 0
        r = new_row[row_id[alive]]
        o = owner[alive]
        g = group[o]
        self.entry[self.eoff[g] + (r - self.roff[g]) * size[g] + slot[o]] = flat_label[alive]
        self.entry_row = np.repeat(np.arange(int(self.roff[-1])),
                                   np.repeat(size, self.rows))
        self.row_group = np.repeat(np.arange(groups), self.rows)
        # Edges inside a group: their cost per row (forbidden pairs make the row bad).
        gu, gv = group[flat.eu], group[flat.ev]
        inside = np.flatnonzero(gu == gv)
        self.inner = np.zeros(int(self.roff[-1]))
        if len(inside):
            gi = gu[inside]
            count = self.rows[gi]
            e = np.repeat(inside, count)
            rr = ranges(np.zeros(len(inside), np.int64), count)
            ge = np.repeat(gi, count)
            at = self.eoff[ge] + rr * size[ge]
            lu = self.entry[at + slot[flat.eu[e]]] - flat.off[flat.eu[e]]
            lv = self.entry[at + slot[flat.ev[e]]] - flat.off[flat.ev[e]]
            cost = flat.tables[flat.eoff[e] + lu * flat.k[flat.ev[e]] + lv]
            np.add.at(self.inner, self.roff[ge] + rr, cost)
            self.inner = np.minimum(self.inner, BAD * 4)
        self.outside = np.flatnonzero(gu != gv)
        self._colour(gu[self.outside], gv[self.outside])

    @staticmethod
    def _functional(flat: Flat, allowed: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray]]:
        """Half-edges ``tail -> head`` along which the head's label is a function of the
        tail's, and the maps: head label = ``maps[0][maps[1][half] + tail label]``."""
        m = len(flat.eu)
        empty = np.zeros(0, np.int64)
        if m == 0:
            return empty, empty, (empty, empty)
        ku, kv = flat.k[flat.eu], flat.k[flat.ev]
        has_bad = np.maximum.reduceat(flat.tables, flat.eoff[:-1]) >= BAD
        # Only tables with a forbidden pair can be functional (both ends having
        # two or more labels); of those only the allowed entries are looked at
        # (few: k of k*k on the contest instances).
        cand = has_bad & (ku > 1) & (kv > 1)
        pos = np.flatnonzero(np.repeat(cand, ku * kv) & (flat.tables < BAD))
        e = np.searchsorted(flat.eoff, pos, side="right") - 1
        local = pos - flat.eoff[e]
        a, b = local // kv[e], local % kv[e]
        ok = allowed[flat.off[flat.eu[e]] + a] & allowed[flat.off[flat.ev[e]] + b]
        e, a, b = e[ok], a[ok], b[ok]
        aoff = np.zeros(m + 1, np.int64)
        np.cumsum(ku, out=aoff[1:])
        boff = np.zeros(m + 1, np.int64)
        np.cumsum(kv, out=boff[1:])
        per_a = np.bincount(aoff[e] + a, minlength=int(aoff[-1]))
        per_b = np.bincount(boff[e] + b, minlength=int(boff[-1]))
        forward = np.ones(m, bool)
        backward = np.ones(m, bool)
        forward[e[per_a[aoff[e] + a] > 1]] = False
        backward[e[per_b[boff[e] + b] > 1]] = False
        forward &= cand
        backward &= cand
        # One map array: u -> v maps at aoff, v -> u maps after them at boff.
        table = np.full(int(aoff[-1] + boff[-1]), -1, np.int64)
        table[aoff[e] + a] = b
        table[aoff[-1] + boff[e] + b] = a
        fe, be = np.flatnonzero(forward), np.flatnonzero(backward)
        tail = np.concatenate([flat.eu[fe], flat.ev[be]])
        head = np.concatenate([flat.ev[fe], flat.eu[be]])
        base = np.concatenate([aoff[fe], aoff[-1] + boff[be]])
        return tail, head, (table, base)

    @staticmethod
    def _search(flat: Flat, tail: np.ndarray, head: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
        """Breadth-first search from roots along the functional half-edges.

        Returns each node's group, the half-edge it was reached by, and the
        nodes level by level (level 0: the roots, in group order)."""
        n = flat.n
        order = np.argsort(tail, kind="stable")
        tail_s, head_s = tail[order], head[order]
        hoff = np.searchsorted(tail_s, np.arange(n + 1))
        # Undirected components, by min-label propagation with pointer jumping.
        comp = np.arange(n)
        if len(tail):
            while True:
                low = comp.copy()
                np.minimum.at(low, tail, comp[head])
                np.minimum.at(low, head, comp[tail])
                low = low[low]
                low = low[low]
                if (low == comp).all():
                    break
                comp = low
        # Roots: per component, prefer a node every other is reached from; for
        # partial bijections any node does, so the one with fewest labels.
        one_way = np.zeros(n, bool)
        if len(tail):
            pair = np.concatenate([tail * n + head])
            back = np.isin(head * n + tail, pair)
            one_way[head[~back]] = True
        key = (one_way.astype(np.int64) * (int(flat.k.max(initial=1)) + 1) + flat.k) * n \
            + np.arange(n)
        group = np.full(n, -1, np.int64)
        parent = np.full(n, -1, np.int64)
        levels: list[list[np.ndarray]] = []
        roots_all: list[np.ndarray] = []
        next_group = 0
        while True:
            left = group < 0
            if not left.any():
                break
            best = np.full(n, np.iinfo(np.int64).max, np.int64)
            np.minimum.at(best, comp[left], key[left])
            roots = np.sort(best[best < np.iinfo(np.int64).max] % n)
            group[roots] = next_group + np.arange(len(roots))
            next_group += len(roots)
            roots_all.append(roots)
            frontier, depth = roots, 0
            while len(frontier):
                counts = hoff[frontier + 1] - hoff[frontier]
                half = ranges(hoff[frontier], counts)
                dst = head_s[half]
                fresh = group[dst] < 0
                half, dst = half[fresh], dst[fresh]
                dst, first = np.unique(dst, return_index=True)
                half = half[first]
                group[dst] = group[tail_s[half]]
                parent[dst] = order[half]
                depth += 1
                if len(dst):
                    while len(levels) < depth:
                        levels.append([])
                    levels[depth - 1].append(dst)
                frontier = dst
        flat_levels = [np.concatenate(roots_all)] + [np.concatenate(x) for x in levels]
        return group, parent, flat_levels

    def _colour(self, gu: np.ndarray, gv: np.ndarray) -> None:
        """Colour classes of the groups that can move (more than one row)."""
        moving = self.rows > 1
        sel = moving[gu] & moving[gv]
        colour = colour_nodes(self.count, gu[sel], gv[sel])
        colour[~moving] = -1
        self.classes = [np.flatnonzero(colour == c) for c in range(int(colour.max(initial=-1)) + 1)]

    # -- labels and rows ------------------------------------------------------
    def labels(self, row: np.ndarray) -> np.ndarray:
        """Node labels for one row per group (``row``: global row ids)."""
        g = self.row_group[row]
        at = ranges(self.eoff[g] + (row - self.roff[g]) * self.size[g], self.size[g])
        flat_label = self.entry[at]
        node = self.flat.node_of[flat_label]
        out = np.zeros(self.flat.n, np.int64)
        out[node] = flat_label - self.flat.off[node]
        return out

    def rows_of(self, labels: np.ndarray) -> np.ndarray:
        """Per group, the (first) row whose members have ``labels``; -1 when none."""
        node = self.flat.node_of[self.entry]
        match = self.entry == self.flat.off[node] + labels[node]
        hits = np.bincount(self.entry_row, match, len(self.inner))
        rows = np.flatnonzero(hits == np.repeat(self.size, self.rows))
        out = np.full(self.count, -1, np.int64)
        out[self.row_group[rows[::-1]]] = rows[::-1]
        return out

    def row_sum(self, per_label: np.ndarray) -> np.ndarray:
        """Per row: the sum of ``per_label`` (one value per flat label) over its members."""
        return np.bincount(self.entry_row, per_label[self.entry], len(self.inner))

    def best_rows(self, value: np.ndarray, groups: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per group: its row with the smallest ``value`` (values of those groups' rows,
        concatenated), first on ties, and that value."""
        counts = self.rows[groups]
        seg = np.zeros(len(groups), np.int64)
        np.cumsum(counts[:-1], out=seg[1:])
        best = np.minimum.reduceat(value, seg)
        index = np.arange(len(value), dtype=np.float64)
        first = -np.maximum.reduceat(np.where(value == np.repeat(best, counts), -index,
                                              -np.inf), seg)
        return self.roff[groups] + (first.astype(np.int64) - seg), best
