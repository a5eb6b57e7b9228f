"""Which memory checks can bind: the time points a solver must look at.

Each memory use splits into a constant part (its smallest usage over the
node's labels) and a label-dependent *extra*. Constant parts and fixed uses
form a base profile; at time ``t`` the extras of the live uses must fit in
``cap(t) = limit - base(t)``. A time needs no check when

* its live extras cannot exceed the cap even at their largest (slack), or
* a neighbouring time checks a superset of its live uses with a cap no larger
  (dominated: between two neighbours only starts happen, or only ends).

This is the reduction XLA's auto-sharding applies before its solver (check only
where the live set peaks). Example: a use live over [0, 3) with extras {0, 5}
and limit 4 needs one check (at 0), not three.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from solver.problem import FixedUse, Problem


@dataclass(frozen=True, slots=True, eq=False)
class MemoryChecks:
    """The binding checks. ``times``/``caps`` per check (ascending times).

    ``first``/``last`` give, per memory use (in ``Problem.memory`` order), the
    half-open range of check indices where it is live with a non-zero extra
    (``first == last``: never checked). ``extras`` are the label-dependent parts.
    ``infeasible_time`` is a time where the constant parts alone exceed the limit.
    """

    times: np.ndarray
    caps: np.ndarray
    first: np.ndarray
    last: np.ndarray
    extras: tuple[np.ndarray, ...]
    infeasible_time: int | None = None


def analyze(problem: Problem) -> MemoryChecks | None:
    """The binding checks of ``problem``, or ``None`` without a memory limit."""
    if problem.memory_limit is None:
        return None
    uses = [(m.start, m.end, m.usage) for m in problem.memory]
    return analyze_uses(uses, problem.fixed_memory, problem.memory_limit)


def analyze_uses(
    uses: Sequence[tuple[int, int, np.ndarray]], fixed: Sequence[FixedUse], limit: int
) -> MemoryChecks:
    """:func:`analyze` on bare ``(start, end, usage per label)`` triples."""
    starts = np.array([u[0] for u in uses], np.int64)
    ends = np.array([u[1] for u in uses], np.int64)
    mins = np.array([int(u[2].min()) for u in uses], np.int64)
    extras = tuple(u[2] - u[2].min() for u in uses)
    widest = np.array([int(e.max()) for e in extras], np.int64)
    fstarts = np.array([f.start for f in fixed], np.int64)
    fends = np.array([f.end for f in fixed], np.int64)
    famount = np.array([f.amount for f in fixed], np.int64)
    empty = np.zeros(0, np.int64)
    nothing = MemoryChecks(empty, empty, np.zeros(len(uses), np.int64),
                           np.zeros(len(uses), np.int64), extras)

    times = np.unique(np.concatenate([starts, ends, fstarts, fends]))
    if times.size == 0:
        return nothing
    t = len(times)

    def profile(s: np.ndarray, e: np.ndarray, amount: np.ndarray) -> np.ndarray:
        delta = np.zeros(t + 1, np.int64)
        np.add.at(delta, np.searchsorted(times, s), amount)
        np.subtract.at(delta, np.searchsorted(times, e), amount)
        return np.cumsum(delta[:-1])

    base = profile(starts, ends, mins) + profile(fstarts, fends, famount)
    caps = limit - base
    if (caps < 0).any():
        where = int(times[np.argmax(caps < 0)])
        return MemoryChecks(empty, empty, nothing.first, nothing.last, extras, where)
    variable = (widest > 0) & (starts < ends)
    worst = profile(starts[variable], ends[variable], widest[variable])
    # Segment j is [times[j], times[j+1]); a boundary j has a variable start/end.
    starts_at = np.zeros(t, bool)
    ends_at = np.zeros(t, bool)
    starts_at[np.searchsorted(times, starts[variable])] = True
    ends_at[np.searchsorted(times, ends[variable])] = True
    keep = worst > caps
    # Rule 1: no use ends at boundary j+1, so segment j+1 sees a superset of j.
    grows = ~ends_at[1:]
    rule1 = np.zeros(t, bool)
    rule1[:-1] = grows & (caps[:-1] >= caps[1:])
    # Rule 2: no use starts at boundary j+1, so segment j sees a superset of j+1;
    # skipped where j was itself dropped by rule 1 (that would drop both).
    shrinks = ~starts_at[1:]
    rule2 = np.zeros(t, bool)
    rule2[1:] = shrinks & (caps[1:] >= caps[:-1]) & ~rule1[:-1]
    keep &= ~rule1 & ~rule2
    kept = np.flatnonzero(keep)
    check_times = times[kept]
    first = np.searchsorted(check_times, starts, side="left")
    last = np.searchsorted(check_times, ends, side="left")
    first = np.where(variable, first, 0)
    last = np.where(variable, last, 0)
    return MemoryChecks(check_times, caps[kept], first, last, extras)


#: Largest checks × labels matrix :func:`label_rows` builds (int64 cells).
LABEL_ROW_CELLS = 30_000_000
#: How many neighbouring checks (in time order) each check is compared with
#: when dropping dominated rows.
DOMINANCE_REACH = 16


@dataclass(frozen=True, slots=True, eq=False)
class LabelRows:
    """The binding checks as rows over all labels: ``coefficients[r] @ x <= caps[r]``.

    Column ``offsets[n] + a`` is node ``n`` taking label ``a`` (``x`` one-hot per
    node). Rows are merged per node (all uses of a node at a time summed), shifted
    so each node's smallest coefficient is 0, and only rows that can bind and are
    not implied by another row are kept.
    """

    offsets: np.ndarray
    coefficients: np.ndarray
    caps: np.ndarray


def label_rows(problem: Problem, checks: MemoryChecks) -> LabelRows | None:
    """Per-check rows over the label booleans, or ``None`` when the matrix is too large.

    After fusion many uses belong to one node (P: 42926 uses over 196 nodes), and
    the per-use running total hides from CP-SAT that each check is a sum over a
    few hundred booleans; merged, most checks turn out identical or implied by a
    neighbour (P: 35079 checks to a few thousand rows).
    """
    sizes = np.array([len(u) for u in problem.unary], np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    count, width = len(checks.times), int(offsets[-1])
    if count == 0 or count * width > LABEL_ROW_CELLS:
        return None
    # Difference rows per use (added at its first check, removed at its last), then a
    # running sum over checks gives each check's per-label usage.
    matrix = np.zeros((count + 1, width), np.int64)
    by_node: dict[int, list[int]] = {}
    for i, use in enumerate(problem.memory):
        if checks.first[i] < checks.last[i]:
            by_node.setdefault(use.node, []).append(i)
    for node, uses in by_node.items():
        block = matrix[:, offsets[node]:offsets[node + 1]]
        extras = np.stack([checks.extras[i] for i in uses])
        np.add.at(block, checks.first[uses], extras)
        np.subtract.at(block, checks.last[uses], extras)
    matrix = np.cumsum(matrix[:-1], axis=0, out=matrix[:-1])
    caps = checks.caps.astype(np.int64).copy()
    widest = np.zeros(count, np.int64)
    for node in by_node:
        block = matrix[:, offsets[node]:offsets[node + 1]]
        low = block.min(axis=1)
        block -= low[:, None]
        caps -= low
        widest += block.max(axis=1)
    if (caps < 0).any():
        return LabelRows(offsets, np.zeros((1, width), np.int64), np.array([-1], np.int64))
    binding = np.flatnonzero(widest > caps)
    matrix, caps = matrix[binding], caps[binding]
    # Identical rows: keep the smallest cap. Rows are grouped by a hash (fixed
    # weights, wrapping products) and only exact copies of a neighbour are dropped.
    weights = np.random.default_rng(0).integers(1, 2**62, width, dtype=np.int64)
    with np.errstate(over="ignore"):
        key = matrix @ weights
    order = np.lexsort((caps, key))
    same = key[order[1:]] == key[order[:-1]]
    candidates = np.flatnonzero(same)
    copies = (matrix[order[candidates + 1]] == matrix[order[candidates]]).all(axis=1)
    keep = np.ones(len(caps), bool)
    keep[order[candidates[copies] + 1]] = False
    matrix, caps = matrix[keep], caps[keep]
    # Row j is implied by row k when its coefficients are no larger and its cap no
    # smaller; distinct rows make this a strict order, so all dominated rows can go.
    dominated = np.zeros(len(caps), bool)
    for step in range(1, DOMINANCE_REACH + 1):
        if step >= len(caps):
            break
        below = (matrix[:-step] <= matrix[step:]).all(axis=1)
        above = (matrix[step:] <= matrix[:-step]).all(axis=1)
        dominated[:-step] |= below & (caps[:-step] >= caps[step:])
        dominated[step:] |= above & (caps[step:] >= caps[:-step])
    keep = ~dominated
    return LabelRows(offsets, matrix[keep], caps[keep])
