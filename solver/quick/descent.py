"""Memory-safe coordinate descent over the rows of :class:`~solver.quick.groups.Groups`.

Groups of one colour class share no edge, so they all move at once and each
move is exact given the others. Costs are float64 sums (exact below 2**53);
the callers re-evaluate answers exactly.
"""

from __future__ import annotations

import numpy as np

from solver.flat import BAD, range_max, ranges
from solver.quick.groups import Groups


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
                room = flat.limit - range_max(self.load, flat.u_lo, flat.u_hi)
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
