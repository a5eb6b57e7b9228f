"""A quick feasible answer on the unreduced problem, moving functional chains as one.

Contest instances join most nodes by *functional* edges: the allowed pairs of
the table make one end's label a function of the other's (on the public
instances every such edge is a partial bijection). Single-node moves cannot
leave a forbidden pair there: changing one node of a chain breaks the pair
toward its neighbour. Here every node belongs to a :class:`Groups` group: a
root plus the nodes reached from it along functional edges, whose labels
follow from the root's. A group's *rows* are the root labels for which every
member's derived label and every edge inside the group is allowed, so a
group move changes the whole chain consistently; a node on no functional edge
is a group of its own, one row per allowed label.

:func:`quick_answer`: per group the row with the smallest usage, memory
repair, then memory-safe descent over group moves (groups of one colour class
share no edge, so they move together exactly); checked exactly at the end.
All steps are vectorized over flat arrays (:class:`~solver.flat.Flat`).
"""

from __future__ import annotations

import time

import numpy as np

from solver.flat import BAD, Flat, _range_max, colour_nodes, ranges
from solver.problem import FORBIDDEN, Edge, Problem, evaluate, memory_feasible


def _with_tie_edges(problem: Problem) -> Problem:
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

    def row_sum(self, per_label: np.ndarray, groups: np.ndarray | None = None) -> np.ndarray:
        """Per row (of ``groups``, default all): the sum of ``per_label`` over its members."""
        if groups is None:
            return np.bincount(self.entry_row, per_label[self.entry], len(self.inner))
        at = ranges(self.eoff[groups], self.eoff[groups + 1] - self.eoff[groups])
        rows = ranges(self.roff[groups], self.rows[groups])
        sums = np.bincount(self.entry_row[at] - 0, per_label[self.entry[at]],
                           len(self.inner))
        return sums[rows]

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


class _Step:
    """One colour class in compact form: its groups' rows, the flat labels they use
    (``labels``; ``entry`` indexes it), the half-edges toward other groups aimed at
    those labels (``target`` indexes ``labels``), and the usage entries of its uses."""

    __slots__ = (
        "base",
        "entry",
        "groups",
        "inner",
        "labels",
        "other",
        "seg",
        "single",
        "stride",
        "target",
        "unary",
        "use_entries",
        "use_label",
        "use_of",
        "where",
    )

    def __init__(self, groups: Groups, cls: np.ndarray, halves: np.ndarray) -> None:
        flat = groups.flat
        self.groups = cls
        rows = ranges(groups.roff[cls], groups.rows[cls])
        entries = groups.entry[ranges(groups.eoff[cls], groups.eoff[cls + 1] - groups.eoff[cls])]
        used = np.zeros(flat.size, bool)
        used[entries] = True
        self.labels = np.flatnonzero(used)
        self.unary = flat.unary[self.labels]
        index = np.full(flat.size, -1, np.int64)
        index[self.labels] = np.arange(len(self.labels))
        self.entry = index[entries]
        # Position of each entry's row within the class's rows.
        self.where = np.repeat(np.arange(len(rows)), np.repeat(groups.size[cls], groups.rows[cls]))
        self.seg = np.cumsum(groups.rows[cls]) - groups.rows[cls]
        self.inner = groups.inner[rows]
        # Groups of one node: row i is entry i (no sum over members needed).
        self.single = bool((groups.size[cls] == 1).all())
        target = index[flat.h_target[halves]]
        halves = halves[target >= 0]  # labels in no row need no value
        self.target = target[target >= 0]
        self.base, self.other = flat.h_base[halves], flat.h_other[halves]
        self.stride = flat.h_stride[halves]
        self.use_entries = self.use_of = self.use_label = np.zeros(0, np.int64)
        if flat.limited:
            mine = np.zeros(flat.n, bool)
            mine[groups.members[ranges(groups.moff[cls], groups.size[cls])]] = True
            uses = np.flatnonzero(mine[flat.u_node])
            counts = np.diff(flat.u_off)[uses]
            use_entries = ranges(flat.u_off[uses], counts)
            use_of = np.repeat(uses, counts)
            use_label = index[flat.u_pos[use_entries]]
            keep = use_label >= 0
            self.use_entries, self.use_of = use_entries[keep], use_of[keep]
            self.use_label = use_label[keep]


class Descent:
    """Coordinate descent over group rows, one colour class at a time, memory-safe.

    Keeps the labels and the load per time segment up to date as groups move.
    A move may not raise the load over the limit: rows whose uses grow past
    the room they had at the start of the sweep are skipped, and the chosen
    moves are checked exactly (all that fit together at once, the contested
    rest one by one, largest gain first).
    """

    def __init__(self, groups: Groups, row: np.ndarray) -> None:
        self.groups = groups
        flat = groups.flat
        self.flat = flat
        self.row = row.copy()
        self.labels = groups.labels(self.row)
        self.load = flat.load(self.labels) if flat.limited else None
        m = len(flat.eu)
        edge_of_half = np.concatenate([np.repeat(np.arange(m), flat.k[flat.eu]),
                                       np.repeat(np.arange(m), flat.k[flat.ev])])
        outside = np.zeros(m, bool)
        outside[groups.outside] = True
        half_group = groups.group[flat.node_of[flat.h_target]]
        colour = np.full(groups.count, -1, np.int64)
        for c, cls in enumerate(groups.classes):
            colour[cls] = c
        half_colour = np.where(outside[edge_of_half], colour[half_group], -1)
        if len(groups.classes) < 2**15 - 1:
            half_colour = half_colour.astype(np.int16)  # a radix sort below
        order = np.argsort(half_colour, kind="stable")
        bounds = np.searchsorted(half_colour[order], np.arange(len(groups.classes) + 1))
        self.steps = [_Step(groups, cls, order[bounds[c]:bounds[c + 1]])
                      for c, cls in enumerate(groups.classes)]
        #: Array entries one sweep goes through (a size measure for the callers).
        self.work = sum(len(s.target) + len(s.entry) + len(s.use_entries) for s in self.steps)
        # Uses of each group's members.
        if flat.limited:
            use_group = groups.group[flat.u_node]
            self.use_order = np.argsort(use_group, kind="stable")
            self.use_off = np.searchsorted(use_group[self.use_order], np.arange(groups.count + 1))

    def run(self, sweeps: int, extra: np.ndarray | None = None, tolerance: float = 1e-4
            ) -> np.ndarray:
        """Up to ``sweeps`` sweeps on cost plus ``extra`` per flat label; stops early
        when a sweep gains less than ``tolerance`` of the current value."""
        groups, flat = self.groups, self.flat
        total = flat.cost(self.labels)
        if extra is not None:
            total += float(extra[flat.off[:-1] + self.labels].sum())
        for _ in range(sweeps):
            gained = 0.0
            room = None
            if self.load is not None:
                room = flat.limit - _range_max(self.load, flat.u_lo, flat.u_hi)
            for step in self.steps:
                cls = step.groups
                source = step.base + self.labels[step.other] * step.stride
                local = step.unary + np.bincount(step.target, flat.tables[source],
                                                 len(step.unary))
                if extra is not None:
                    local += extra[step.labels]
                if step.single:
                    value = step.inner + local[step.entry]
                else:
                    value = step.inner + np.bincount(step.where, local[step.entry],
                                                     len(step.inner))
                if room is not None and len(step.use_entries):
                    use = step.use_of
                    now = flat.u_usage[flat.u_off[use] + self.labels[flat.u_node[use]]]
                    too_big = flat.u_usage[step.use_entries] - now > room[use] + 1e-6
                    bad = np.zeros(len(step.labels), bool)
                    bad[step.use_label[too_big]] = True
                    blocked = bad[step.entry] if step.single else np.bincount(
                        step.where, bad[step.entry], len(step.inner)) > 0
                    value[blocked] = BAD * 4
                best, best_value = groups.best_rows(value, cls)
                current = value[step.seg + (self.row[cls] - groups.roff[cls])]
                gain = current - best_value
                better = gain > 1e-9 * np.abs(current) + 1e-9
                if not better.any():
                    continue
                movers, targets, gain = cls[better], best[better], gain[better]
                if self.load is not None:
                    accept = self._fit(movers, targets, gain)
                    movers, targets, gain = movers[accept], targets[accept], gain[accept]
                self._move(movers, targets)
                gained += float(gain.sum())
            total -= gained
            if gained <= tolerance * abs(total):
                break
        return self.labels

    def _move(self, movers: np.ndarray, targets: np.ndarray) -> None:
        groups, flat = self.groups, self.flat
        self.row[movers] = targets
        at = ranges(groups.eoff[movers] + (targets - groups.roff[movers]) * groups.size[movers],
                    groups.size[movers])
        label = groups.entry[at]
        node = flat.node_of[label]
        self.labels[node] = label - flat.off[node]

    def _fit(self, movers: np.ndarray, targets: np.ndarray, gain: np.ndarray) -> np.ndarray:
        """Which moves keep memory within the limit (a mask); updates the load."""
        groups, flat = self.groups, self.flat
        counts = self.use_off[movers + 1] - self.use_off[movers]
        uses = self.use_order[ranges(self.use_off[movers], counts)]
        owner = np.repeat(np.arange(len(movers)), counts)
        node = flat.u_node[uses]
        g = movers[owner]
        label = groups.entry[groups.eoff[g] + (targets[owner] - groups.roff[g]) * groups.size[g]
                             + groups.slot[node]] - flat.off[node]
        delta = (flat.u_usage[flat.u_off[uses] + label]
                 - flat.u_usage[flat.u_off[uses] + self.labels[node]])
        lo, hi = flat.u_lo[uses], flat.u_hi[uses]
        contested = np.zeros(len(movers), bool)
        while True:
            d = np.where(contested[owner], 0.0, delta)
            step = np.bincount(lo, d, flat.segments + 1) - np.bincount(hi, d, flat.segments + 1)
            trial = self.load + np.cumsum(step[:-1])
            over = trial > flat.limit + 1e-6
            if not over.any():
                break
            count = np.concatenate([[0], np.cumsum(over)])
            hit = (d > 0) & (count[hi] > count[lo])
            contested[owner[hit]] = True
        self.load = trial
        accept = ~contested
        # The contested moves one by one, largest gain first, each checked exactly.
        first = np.searchsorted(owner, np.arange(len(movers) + 1))
        load = self.load
        for j in np.lexsort((movers, -gain)).tolist():
            if not contested[j]:
                continue
            span = range(first[j], first[j + 1])
            for i in span:
                load[lo[i]:hi[i]] += delta[i]
            if any(delta[i] > 0 and load[lo[i]:hi[i]].max() > flat.limit + 1e-6 for i in span):
                for i in span:
                    load[lo[i]:hi[i]] -= delta[i]
            else:
                accept[j] = True
        return accept


#: Price rounds after the first descent (see :func:`quick_answer`); one only when
#: a sweep touches more than ``LARGE_SWEEP`` array entries (contest R and T: 1.8M),
#: where a round costs ~0.2 s and the second one gained 1 % or less.
PRICE_ROUNDS = 2
LARGE_SWEEP = 1_500_000
#: Segments loaded to at least this share of the limit are priced.
TIGHT = 0.97
#: Price scale: the priced usage of the current answer is worth this many times its cost.
PRICE_WEIGHT = 3.0
#: Sweeps of each price round: on cost plus priced usage, then on cost alone.
SOFT_SWEEPS, HARD_SWEEPS = 2, 4
#: A descent stops when a sweep gains less than this share of the objective.
TOLERANCE = 1e-2


def quick_answer(problem: Problem, sweeps: int = 8,
                 rounds: int = PRICE_ROUNDS) -> tuple[tuple[int, ...], int] | None:
    """A feasible answer in a few vectorized passes, or ``None``.

    Per group (see :class:`Groups`) the row with the smallest usage (cheapest on
    ties), then up to ``sweeps`` of memory-safe descent moving whole groups
    (:class:`Descent`). Then ``rounds`` price rounds: the time segments loaded
    near the limit get a price, a short descent on cost plus priced usage frees
    memory where that is cheap, and a descent on cost alone spends it where it
    pays most (measured on the contest instances: up to 54 % cheaper, Q). Every
    step keeps memory within the limit; the cheapest answer seen is checked
    exactly with :func:`~solver.problem.evaluate` and the memory check.
    """
    if problem.num_nodes == 0:
        return None
    flat = Flat(_with_tie_edges(problem))
    groups = Groups(flat)
    if (groups.rows == 0).any():
        return None  # a group without a consistent row: no answer exists
    everyone = np.arange(groups.count)
    cost = groups.row_sum(flat.unary) + groups.inner
    if flat.limited:
        usage = groups.row_sum(flat.usage_total)
        key = np.where(cost >= BAD, np.inf, usage)
        row, value = groups.best_rows(key, everyone)
        tied = key == np.repeat(value, groups.rows)
        row, _ = groups.best_rows(np.where(tied, cost, np.inf), everyone)
    else:
        row, _ = groups.best_rows(cost, everyone)
    if flat.limited and not flat.fits(groups.labels(row)):
        return None
    descent = Descent(groups, row)
    descent.run(sweeps, tolerance=TOLERANCE)
    best = _price_rounds(descent, 1 if descent.work > LARGE_SWEEP else rounds)
    answer = tuple(int(x) for x in best)
    total = evaluate(problem, answer)
    if total is None or not memory_feasible(problem, answer):
        return None
    return answer, total


def _price_rounds(descent: Descent, rounds: int, tight: float = TIGHT,
                  weight: float = PRICE_WEIGHT) -> np.ndarray:
    """Price rounds from the descent's current labels; the cheapest labels seen.

    Each round prices the time segments loaded to ``tight`` of the limit or more
    (the priced usage of the current labels is worth ``weight`` times their cost),
    runs a short descent on cost plus priced usage (freeing memory where that is
    cheap), then a descent on cost alone (spending it where it pays most).
    """
    flat = descent.flat
    best = descent.labels.copy()
    best_cost = flat.cost(best)
    for _ in range(rounds if flat.limited else 0):
        near = (descent.load >= tight * flat.limit).astype(np.float64)
        price = flat.penalty(near)
        priced = float(price[flat.off[:-1] + descent.labels].sum())
        if priced <= 0 or best_cost >= BAD:
            break
        descent.run(SOFT_SWEEPS, extra=price * (weight * best_cost / priced),
                    tolerance=TOLERANCE)
        cost = flat.cost(descent.run(HARD_SWEEPS, tolerance=TOLERANCE))
        if cost < best_cost:
            best, best_cost = descent.labels.copy(), cost
    return best


#: Price settings ``(tight, weight)`` tried one after the other by :func:`improve`
#: (each from the best so far; on the contest cores the later ones gained 0-1 %).
IMPROVE_SETTINGS = ((TIGHT, PRICE_WEIGHT), (0.9, 1.0), (0.995, 1.0), (0.9, 3.0))


def improve(flat: Flat, labels: np.ndarray, rounds: int = PRICE_ROUNDS,
            deadline: float | None = None) -> np.ndarray:
    """``labels`` (allowed, memory within the limit) improved by group descent and
    price rounds under each of ``IMPROVE_SETTINGS`` (the next one only before
    ``deadline``, a ``time.perf_counter()`` value); the same labels when nothing
    cheaper is found. Ties must have been merged (or turned into edges)."""
    groups = Groups(flat)
    best, best_cost = labels, flat.cost(labels)
    for k, (tight, weight) in enumerate(IMPROVE_SETTINGS):
        if k and deadline is not None and time.perf_counter() > deadline:
            break
        row = groups.rows_of(best)
        if (row < 0).any():
            break  # a group's labels match no row: not a consistent start
        descent = Descent(groups, row)
        descent.run(2 * HARD_SWEEPS, tolerance=TOLERANCE)
        found = _price_rounds(descent, rounds, tight, weight)
        cost = flat.cost(found)
        if cost < best_cost:
            best, best_cost = found, cost
    return best
