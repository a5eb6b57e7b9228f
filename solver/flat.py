"""A flat (array) view of a problem for vectorized local search.

Python loops over 40k-node problems cost about a second per sweep; here every
label of every node is one entry of a flat array (node ``n``'s labels at
``off[n]:off[n+1]``), every table entry one entry of another, and a sweep of
coordinate descent (ICM) is a few numpy calls per colour class of a
colouring: nodes of one class share no edge, so they can all move at once and
each move is exact given the others.

Costs are float64 here (sums of penalties and costs; exact below 2**53); the
callers re-evaluate answers exactly with :func:`~solver.problem.evaluate`.
Ties must have been merged (see :mod:`solver.reductions`).

Memory: each use adds ``usage[label]`` over the segments ``[lo, hi)`` of the
sorted event times; ``load`` per segment must stay within ``limit``.
"""

from __future__ import annotations

import numpy as np

from solver.problem import FORBIDDEN, Problem

#: Float stand-in for a forbidden label or pair.
BAD = float(FORBIDDEN)


class Flat:
    """Arrays of one problem; built once, shared by all searches on it."""

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        n = problem.num_nodes
        self.n = n
        self.k = np.array([len(u) for u in problem.unary], np.int64)
        self.off = np.zeros(n + 1, np.int64)
        np.cumsum(self.k, out=self.off[1:])
        self.size = int(self.off[-1])
        self.node_of = np.repeat(np.arange(n), self.k)
        self.unary = (np.concatenate(problem.unary, dtype=np.float64) if n
                      else np.zeros(0))
        edges = problem.edges
        self.eu = np.array([e.u for e in edges], np.int64)
        self.ev = np.array([e.v for e in edges], np.int64)
        ku, kv = self.k[self.eu], self.k[self.ev]
        sizes = ku * kv
        self.eoff = np.zeros(len(edges) + 1, np.int64)
        np.cumsum(sizes, out=self.eoff[1:])
        self.tables = (np.concatenate([e.costs.ravel() for e in edges], dtype=np.float64)
                       if edges else np.zeros(0))
        # Half-edge entries: one per (edge, label of one end). For end u, label a
        # reads table[a, label[v]] = tables[eoff + a*kv + label[v]]; for end v,
        # label b reads tables[eoff + label[u]*kv + b]. Kept in 32 bits when they
        # fit: these arrays are the largest after the tables (and written first
        # touch, page by page).
        index = np.int32 if max(len(self.tables), self.size, n) < 2**31 - 1 else np.int64
        e_u = np.repeat(np.arange(len(edges), dtype=index), ku)
        a_u = ranges(np.zeros(len(edges), np.int64), ku).astype(index)
        e_v = np.repeat(np.arange(len(edges), dtype=index), kv)
        b_v = ranges(np.zeros(len(edges), np.int64), kv).astype(index)
        off, eoff = self.off.astype(index), self.eoff.astype(index)
        eu, ev, kv_i = self.eu.astype(index), self.ev.astype(index), kv.astype(index)
        self.h_target = np.concatenate([off[eu[e_u]] + a_u, off[ev[e_v]] + b_v])
        self.h_base = np.concatenate([eoff[e_u] + a_u * kv_i[e_u], eoff[e_v] + b_v])
        self.h_other = np.concatenate([ev[e_u], eu[e_v]])
        self.h_stride = np.concatenate([np.ones(len(e_u), index), kv_i[e_v]])
        self._memory(problem)
        self._classes: list[tuple[np.ndarray, np.ndarray]] | None = None

    # -- memory -------------------------------------------------------------
    def _memory(self, problem: Problem) -> None:
        # The uses live at all, and where each sits in ``problem.memory``.
        self.u_source = np.array([i for i, u in enumerate(problem.memory) if u.start < u.end],
                                 np.int64)
        uses = [problem.memory[i] for i in self.u_source]
        fixed = [f for f in problem.fixed_memory if f.start < f.end]
        self.limited = problem.memory_limit is not None
        self.limit = float(problem.memory_limit) if self.limited else np.inf
        times = np.unique(np.array([u.start for u in uses] + [u.end for u in uses]
                                   + [f.start for f in fixed] + [f.end for f in fixed] + [0],
                                   np.int64))
        self.segments = len(times)
        self.u_node = np.array([u.node for u in uses], np.int64)
        self.u_lo = np.searchsorted(times, [u.start for u in uses]).astype(np.int64)
        self.u_hi = np.searchsorted(times, [u.end for u in uses]).astype(np.int64)
        # Usage of each use per label, aligned with its node's labels.
        self.u_off = np.zeros(len(uses) + 1, np.int64)
        np.cumsum(self.k[self.u_node], out=self.u_off[1:])
        self.u_usage = (np.concatenate([u.usage for u in uses]).astype(np.float64) if uses
                        else np.zeros(0))
        self.u_pos = ranges(self.off[self.u_node], self.k[self.u_node])
        delta = np.zeros(self.segments + 1)
        np.add.at(delta, np.searchsorted(times, [f.start for f in fixed]).astype(np.int64),
                  np.array([f.amount for f in fixed], np.float64))
        np.subtract.at(delta, np.searchsorted(times, [f.end for f in fixed]).astype(np.int64),
                       np.array([f.amount for f in fixed], np.float64))
        self.fixed_load = np.cumsum(delta[:-1])
        # Total usage per label over all of a node's uses (for the smallest-usage start).
        self.usage_total = np.bincount(self.u_pos, weights=self.u_usage, minlength=self.size)

    def load(self, labels: np.ndarray) -> np.ndarray:
        """Bytes live per segment under ``labels``."""
        amount = self.u_usage[self.u_off[:-1] + labels[self.u_node]]
        delta = np.bincount(self.u_lo, amount, self.segments + 1)
        delta -= np.bincount(self.u_hi, amount, self.segments + 1)
        return self.fixed_load + np.cumsum(delta[:-1])

    def fits(self, labels: np.ndarray) -> bool:
        return not self.limited or bool(self.load(labels).max(initial=0.0) <= self.limit)

    def penalty(self, price: np.ndarray) -> np.ndarray:
        """Per flat label: its usage times the summed price of the segments it is live in."""
        total = np.concatenate([[0.0], np.cumsum(price)])
        return self.penalty_per_use(total[self.u_hi] - total[self.u_lo])

    def penalty_per_use(self, price: np.ndarray) -> np.ndarray:
        """Per flat label: its usage on each use times that use's ``price`` (one per use
        of this view: the problem's uses that are live at all, ``u_source``), summed."""
        weights = self.u_usage * np.repeat(price, np.diff(self.u_off))
        return np.bincount(self.u_pos, weights=weights, minlength=self.size)

    # -- costs --------------------------------------------------------------
    def cost(self, labels: np.ndarray) -> float:
        pairs = self.tables[self.eoff[:-1] + labels[self.eu] * self.k[self.ev] + labels[self.ev]]
        return float(self.unary[self.off[:-1] + labels].sum() + pairs.sum())

    def local(self, labels: np.ndarray, select: np.ndarray | None = None) -> np.ndarray:
        """Per flat label: unary plus the tables toward the neighbours' current labels."""
        if select is None:
            source = self.h_base + labels[self.h_other] * self.h_stride
            return self.unary + np.bincount(self.h_target, self.tables[source], self.size)
        source = self.h_base[select] + labels[self.h_other[select]] * self.h_stride[select]
        return self.unary + np.bincount(self.h_target[select], self.tables[source], self.size)

    @property
    def classes(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Colour classes (:func:`colour_nodes`): per class its nodes with two or more
        labels and the half-edge entries aimed at them (built on first use)."""
        if self._classes is None:
            colour = colour_nodes(self.n, self.eu, self.ev)
            self._classes = []
            # Small integer keys: numpy's stable sort is a radix sort then.
            small = colour.astype(np.int16) if colour.max(initial=0) < 2**15 else colour
            target_colour = small[self.node_of[self.h_target]]
            order = np.argsort(target_colour, kind="stable")
            bounds = np.searchsorted(target_colour[order], np.arange(colour.max(initial=-1) + 2))
            for c in range(int(colour.max(initial=-1)) + 1):
                nodes = np.flatnonzero((colour == c) & (self.k > 1))
                if nodes.size:
                    self._classes.append((nodes, order[bounds[c]:bounds[c + 1]]))
        return self._classes

    def segment_argmin(self, values: np.ndarray, nodes: np.ndarray) -> tuple[np.ndarray,
                                                                             np.ndarray]:
        """Per node in ``nodes``: its best label (first on ties) and that value."""
        starts = self.off[nodes]
        k = self.k[nodes]
        pos = ranges(starts, k)
        vals = values[pos]
        seg = np.zeros(len(nodes), np.int64)
        np.cumsum(k[:-1], out=seg[1:])
        best = np.minimum.reduceat(vals, seg)
        index = np.arange(len(vals), dtype=np.float64)
        first = -np.maximum.reduceat(np.where(vals == np.repeat(best, k), -index, -np.inf), seg)
        return first.astype(np.int64) - seg, best

    # -- searches -----------------------------------------------------------
    def icm(self, labels: np.ndarray, extra: np.ndarray | None = None, sweeps: int = 50,
            hard_memory: bool = False) -> np.ndarray:
        """Coordinate descent by colour class on cost (+ ``extra`` per flat label).

        With ``hard_memory``, a move may not raise the load over the limit:
        moves that free memory go at once; moves that need memory are checked
        and applied one by one against the current load.
        """
        labels = labels.copy()
        base = self.unary if extra is None else self.unary + extra
        load = self.load(labels) if hard_memory and self.limited else None
        for _ in range(sweeps):
            moved = 0
            for nodes, entries in self.classes:
                source = self.h_base[entries] + labels[self.h_other[entries]] * \
                    self.h_stride[entries]
                local = base + np.bincount(self.h_target[entries], self.tables[source], self.size)
                if load is not None:
                    local = self._forbid_growth(local, labels, nodes, load)
                best, value = self.segment_argmin(local, nodes)
                current = local[self.off[nodes] + labels[nodes]]
                better = value < current - 1e-9 * np.abs(current) - 1e-9
                if not better.any():
                    continue
                movers, targets = nodes[better], best[better]
                if load is not None:
                    targets, movers = self._apply_memory_moves(labels, movers, targets, load)
                labels[movers] = targets
                moved += len(movers)
            if not moved:
                break
        return labels

    def _use_delta(self, labels: np.ndarray) -> np.ndarray:
        """Per flat label: usage change of each use if its node moved to that label."""
        current = self.u_usage[self.u_off[:-1] + labels[self.u_node]]
        return self.u_usage - np.repeat(current, np.diff(self.u_off))

    def _forbid_growth(self, local: np.ndarray, labels: np.ndarray, nodes: np.ndarray,
                       load: np.ndarray) -> np.ndarray:
        """Labels that raise a use by more than the room over its interval: forbidden."""
        room = self.limit - range_max(load, self.u_lo, self.u_hi)
        grow = self._use_delta(labels)
        too_big = grow > np.repeat(room, np.diff(self.u_off)) + 1e-6
        bad = np.bincount(self.u_pos[too_big], minlength=self.size) > 0
        return np.where(bad, BAD * 4, local)

    def _apply_memory_moves(self, labels: np.ndarray, movers: np.ndarray, targets: np.ndarray,
                            load: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Apply moves to ``load``: freeing ones at once, growing ones checked one by one."""
        uses_of = self._uses_by_node()
        keep = np.ones(len(movers), bool)
        for j, (node, b) in enumerate(zip(movers.tolist(), targets.tolist())):
            a = int(labels[node])
            changes = []
            for i in uses_of.get(node, ()):
                d = self.u_usage[self.u_off[i] + b] - self.u_usage[self.u_off[i] + a]
                if d:
                    changes.append((i, d))
            for i, d in changes:
                load[self.u_lo[i]:self.u_hi[i]] += d
            # Checked after all of the node's uses changed: they may overlap in time.
            if any(d > 0 and load[self.u_lo[i]:self.u_hi[i]].max() > self.limit + 1e-6
                   for i, d in changes):
                for i, d in changes:
                    load[self.u_lo[i]:self.u_hi[i]] -= d
                keep[j] = False
        return targets[keep], movers[keep]

    def _uses_by_node(self) -> dict[int, list[int]]:
        if not hasattr(self, "_by_node"):
            by_node: dict[int, list[int]] = {}
            for i, node in enumerate(self.u_node.tolist()):
                by_node.setdefault(node, []).append(i)
            self._by_node = by_node
        return self._by_node

    def repair(self, labels: np.ndarray, rounds: int = 200) -> tuple[np.ndarray, bool]:
        """Move labels to smaller usages, cheapest cost per byte saved first, until memory fits."""
        labels = labels.copy()
        if not self.limited or not len(self.u_node):
            return labels, True
        uses_of = self._uses_by_node()
        for _ in range(rounds):
            load = self.load(labels)
            over = load > self.limit + 1e-6
            if not over.any():
                return labels, True
            count = np.concatenate([[0], np.cumsum(over)])
            hit = count[self.u_hi] > count[self.u_lo]
            # Bytes each label would save on the over-full uses of its node.
            grow = self._use_delta(labels)
            hit_entries = np.repeat(hit, np.diff(self.u_off))
            saved = -np.bincount(self.u_pos[hit_entries], grow[hit_entries], self.size)
            nodes = np.unique(self.u_node[hit])
            local = self.local(labels)
            current = local[self.off[:-1] + labels]
            ratio = np.where(saved > 0,
                             np.maximum(local - np.repeat(current, self.k), 0.0) / np.maximum(
                                 saved, 1e-9), np.inf)
            ratio = np.where(local >= BAD, np.inf, ratio)
            best, value = self.segment_argmin(ratio, nodes)
            ok = np.isfinite(value)
            if not ok.any():
                return labels, False
            nodes, best, value = nodes[ok], best[ok], value[ok]
            order = np.lexsort((nodes, value))
            for j in order.tolist():
                node, b = int(nodes[j]), int(best[j])
                a = int(labels[node])
                changes = [(i, self.u_usage[self.u_off[i] + b] - self.u_usage[self.u_off[i] + a])
                           for i in uses_of.get(node, ())]
                if not any(d < 0 and load[self.u_lo[i]:self.u_hi[i]].max() > self.limit + 1e-6
                           for i, d in changes):
                    continue  # its over-full times were fixed by earlier moves
                for i, d in changes:
                    load[self.u_lo[i]:self.u_hi[i]] += d
                labels[node] = b
        return labels, self.fits(labels)

    def smallest_usage(self) -> np.ndarray:
        """Per node, the allowed label with the smallest total usage (then cheapest)."""
        key = np.where(self.unary >= BAD, np.inf, self.usage_total * 1.0)
        _, value = self.segment_argmin(key, np.arange(self.n))
        # Among equal usage, the cheapest unary: a second pass on the tied labels.
        tied = key == np.repeat(value, self.k)
        best2, _ = self.segment_argmin(np.where(tied, self.unary, np.inf), np.arange(self.n))
        return best2


def ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Concatenated ``arange(s, s + c)`` for each start and count."""
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    shift = np.repeat(np.asarray(starts, np.int64) - (np.cumsum(counts) - counts), counts)
    return shift + np.arange(total)


def colour_nodes(n: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """A proper colouring of ``n`` nodes joined by edges ``a[i] - b[i]`` (vectorized).

    Jones-Plassmann rounds: an uncoloured node whose priority (degree, then a
    fixed hash of its index) beats all its uncoloured neighbours takes the
    smallest colour none of its neighbours has. Close to greedy largest-degree-
    first colouring, in a few dozen numpy passes instead of a loop per node.
    """
    colour = np.full(n, -1, np.int64)
    keep = a != b
    a, b = np.asarray(a, np.int64)[keep], np.asarray(b, np.int64)[keep]
    degree = np.bincount(np.concatenate([a, b]), minlength=n)
    mix = (np.arange(n, dtype=np.uint64) * np.uint64(2654435761)) % np.uint64(2**32)
    priority = degree.astype(np.uint64) * np.uint64(2**32) + mix
    src, dst = np.concatenate([a, b]), np.concatenate([b, a])
    while True:
        open_ = colour < 0
        if not open_.any():
            return colour
        both = open_[src] & open_[dst]
        blocked = np.zeros(n, bool)
        blocked[src[both & (priority[src] < priority[dst])]] = True
        chosen = open_ & ~blocked
        # Smallest colour missing among each chosen node's coloured neighbours.
        near = chosen[src] & ~open_[dst]
        pair = np.unique(src[near] * (n + 1) + colour[dst[near]])
        node, used = pair // (n + 1), pair % (n + 1)
        first = np.searchsorted(node, node)
        rank = np.arange(len(node)) - first
        free = np.bincount(node, minlength=n).astype(np.int64)
        gap = used != rank
        np.minimum.at(free, node[gap], rank[gap])
        colour[chosen] = free[chosen]


def range_max(values: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``values[lo:hi].max()`` for many ranges at once (sparse table; -inf when empty)."""
    if not len(lo):
        return np.zeros(0)
    levels = [values]
    width = 1
    while width * 2 <= len(values):
        prev = levels[-1]
        levels.append(np.maximum(prev[:-width], prev[width:]))
        width *= 2
    length = np.maximum(hi - lo, 1)
    j = np.floor(np.log2(length)).astype(np.int64)
    out = np.full(len(lo), -np.inf)
    for level in np.unique(j).tolist():
        sel = j == level
        table = levels[level]
        w = 1 << level
        out[sel] = np.maximum(table[lo[sel]], table[hi[sel] - w])
    return np.where(hi > lo, out, -np.inf)
