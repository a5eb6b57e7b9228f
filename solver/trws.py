"""The compiled inner loops of :mod:`solver.dual_bound`'s sweeps (numba), and the
lower convex hulls of :func:`solver.dual_memory.exact_multipliers`.

One pass of TRW-S visits the levels of the layout in order (forward) or in reverse
(backward). At each level it recomputes the min-marginals ``h`` of some of its slots,

    h[s] = min over the entries e of s's row of  table[e] - m[column_slot[e]],

sums them per label into ``M`` (plus the unary cost) and hands ``M`` back in shares:
``m[s] = h[s] - weight[s] * M[label(s)]``. The loops are the ones the numpy passes
of the layout ran level by level; the arithmetic is the same operation for operation
(the per-label sums add the slots in slot order, as ``np.bincount`` does), so the
messages are the same to the bit, with no temporary array per level: contest cores
R, S, T and U sweep about four times as fast (BENCHMARKS.md).

``classes`` is the layout's per-level table (:func:`solver.dual_bound._level_classes`):
columns 3-5 the level's slots ``s0 <= sm <= s1`` (slots towards earlier nodes first),
9-10 its labels ``l0:l1``; ``slot_label`` is relative to ``l0``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

# Columns of the per-level table.
_S0, _SM, _S1, _L0, _L1 = 3, 4, 5, 9, 10


@njit(cache=True, nogil=True)
def fill_marginals(table: np.ndarray, column_slot: np.ndarray, row_start: np.ndarray,
                   m: np.ndarray, h: np.ndarray, first: int,
                   stop: int) -> None:  # pragma: no cover - compiled
    """``h[s]`` for the slots ``first:stop`` (slot ``s``'s row: entries ``row_start[s]``
    to ``row_start[s + 1]``)."""
    for s in range(first, stop):
        best = np.inf
        for e in range(row_start[s], row_start[s + 1]):
            value = table[e] - m[column_slot[e]]
            if value < best:
                best = value
        h[s] = best


@njit(cache=True, nogil=True)
def sweep_pass(classes: np.ndarray, table: np.ndarray, column_slot: np.ndarray,
               row_start: np.ndarray, slot_label: np.ndarray,
               unary: np.ndarray, weights: np.ndarray, m: np.ndarray, h: np.ndarray,
               forward: bool, whole: bool) -> None:  # pragma: no cover - compiled
    """One pass over the levels (forward: in order, else reversed). A forward pass
    recomputes the marginals of the slots towards earlier nodes, a backward one of
    those towards later nodes; ``whole``: both."""
    count = classes.shape[0]
    total = np.zeros(unary.shape[0])
    for i in range(count):
        c = i if forward else count - 1 - i
        s0, sm, s1 = classes[c, _S0], classes[c, _SM], classes[c, _S1]
        l0, l1 = classes[c, _L0], classes[c, _L1]
        if s0 == s1:
            continue
        if (whole or forward) and s0 < sm:
            fill_marginals(table, column_slot, row_start, m, h, s0, sm)
        if (whole or not forward) and sm < s1:
            fill_marginals(table, column_slot, row_start, m, h, sm, s1)
        for label in range(l0, l1):
            total[label] = 0.0
        for s in range(s0, s1):
            total[l0 + slot_label[s]] += h[s]
        for label in range(l0, l1):
            total[label] += unary[label]
        for s in range(s0, s1):
            m[s] = h[s] - weights[s] * total[l0 + slot_label[s]]


@njit(cache=True, nogil=True)
def lower_hulls(cost: np.ndarray, usage: np.ndarray, node_start: np.ndarray,
                nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                            np.ndarray]:  # pragma: no cover - compiled
    """Per node of ``nodes`` (labels ``node_start[u]:node_start[u + 1]``, each a point
    (``usage``, ``cost``)): the lower convex hull from its cheapest label (the smallest
    usage among the cheapest) down to its smallest usage, as segments: (node, usage
    given up, cost per unit given up), the slopes rising along each node's hull; and per
    node of ``nodes`` the cheapest label's usage (its top)."""
    total = 0
    for u in nodes:
        total += node_start[u + 1] - node_start[u]
    seg_node = np.empty(total, np.int64)
    seg_length = np.empty(total)
    seg_slope = np.empty(total)
    top = np.empty(len(nodes))
    count = 0
    for i in range(len(nodes)):
        u = nodes[i]
        a0, a1 = node_start[u], node_start[u + 1]
        best = a0
        for a in range(a0 + 1, a1):
            if cost[a] < cost[best] or (cost[a] == cost[best] and usage[a] < usage[best]):
                best = a
        top[i] = usage[best]
        # The labels below the top, by usage falling, the cheaper first on a tie.
        order = np.empty(a1 - a0, np.int64)
        k = 0
        for a in range(a0, a1):
            if usage[a] < usage[best]:
                j = k
                while j > 0 and (usage[order[j - 1]] < usage[a] or (
                        usage[order[j - 1]] == usage[a] and cost[order[j - 1]] > cost[a])):
                    order[j] = order[j - 1]
                    j -= 1
                order[j] = a
                k += 1
        hull = np.empty(k + 1, np.int64)
        hull[0], h = best, 1
        for j in range(k):
            a = order[j]
            if usage[a] >= usage[hull[h - 1]]:
                continue  # a dearer label of the same usage
            while h >= 2:
                p, r = hull[h - 2], hull[h - 1]
                if ((cost[a] - cost[r]) * (usage[p] - usage[r])
                        <= (cost[r] - cost[p]) * (usage[r] - usage[a])):
                    h -= 1  # r lies on or above the segment from p to a
                else:
                    break
            hull[h] = a
            h += 1
        for j in range(1, h):
            p, r = hull[j - 1], hull[j]
            seg_node[count] = u
            seg_length[count] = usage[p] - usage[r]
            seg_slope[count] = (cost[r] - cost[p]) / (usage[p] - usage[r])
            count += 1
    return seg_node[:count], seg_length[:count], seg_slope[:count], top


def warm() -> None:
    """Compile the kernels for the layouts' usual types (int32 indices) now, into numba's
    cache, so the first bound of a fresh process does not wait for the compiler (about
    two seconds; a cached kernel loads in a fraction of one)."""
    index = np.zeros(1, np.int32)
    starts = np.array([0, 1], np.int64)
    classes = np.array([[0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 1]], np.int64)
    m, h, values = np.zeros(1), np.zeros(1), np.zeros(1)
    fill_marginals(values, index, starts, m, h, 0, 1)
    sweep_pass(classes, values, index, starts, index, values, values, m, h, True, True)
    lower_hulls(values, values, starts, np.zeros(1, np.int64))
