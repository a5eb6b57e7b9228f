"""Large neighbourhood search: CP-SAT on windows of nodes, everything else fixed.

For cores too large to model whole within the time limit. A window is a run of
consecutive node indices (instances number nodes in program order, so a run is
a connected stretch of the graph with overlapping live ranges). With the other
nodes fixed, the window is itself a labeling problem: edges to fixed nodes
become unary costs, fixed nodes' memory becomes fixed uses. CP-SAT solves it
from the current labels as a complete hint, so an accepted window never makes
the answer worse, and every accepted answer is feasible for the whole problem.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from solver import cpsat
from solver.errors import BuildTimeout
from solver.options import SolveOptions
from solver.problem import FORBIDDEN, Edge, FixedUse, MemoryUse, Problem, evaluate


#: Nodes with more labels than this stay fixed in windows (their tables would
#: dominate the window's model).
WINDOW_MAX_LABELS = 64
#: A window's CP-SAT budget, in deterministic work units per second of ``window_time``,
#: and the wall-clock limit as a multiple of ``window_time`` (a safety net only).
WORK_PER_SECOND = 0.5
WALL_FACTOR = 4.0


@dataclass(frozen=True, slots=True)
class _Index:
    """What a window is cut out with: each node's edges and memory uses, and every use
    as flat arrays."""

    incident: tuple[tuple[int, ...], ...]
    node_uses: tuple[tuple[int, ...], ...]
    uses: _Uses

    @staticmethod
    def build(problem: Problem) -> _Index:
        incident: list[list[int]] = [[] for _ in range(problem.num_nodes)]
        for k, edge in enumerate(problem.edges):
            incident[edge.u].append(k)
            incident[edge.v].append(k)
        node_uses: list[list[int]] = [[] for _ in range(problem.num_nodes)]
        for i, use in enumerate(problem.memory):
            node_uses[use.node].append(i)
        return _Index(tuple(map(tuple, incident)), tuple(map(tuple, node_uses)),
                      _Uses.build(problem))


def _window_problem(problem: Problem, nodes: list[int], labels: np.ndarray, index: _Index
                    ) -> Problem:
    """The problem on ``nodes`` with every other node fixed at ``labels``: edges to
    fixed nodes become unary costs, fixed nodes' memory becomes fixed uses."""
    incident = index.incident
    inside = {n: i for i, n in enumerate(nodes)}
    unary = [problem.unary[n].copy() for n in nodes]
    edges: list[Edge] = []
    seen: set[int] = set()
    for n in nodes:
        for k in incident[n]:
            if k in seen:
                continue
            seen.add(k)
            edge = problem.edges[k]
            if edge.u in inside and edge.v in inside:
                edges.append(Edge(inside[edge.u], inside[edge.v], edge.costs))
            elif edge.u in inside:
                i = inside[edge.u]
                unary[i] = np.minimum(unary[i] + edge.costs[:, labels[edge.v]], FORBIDDEN)
            else:
                i = inside[edge.v]
                unary[i] = np.minimum(unary[i] + edge.costs[labels[edge.u], :], FORBIDDEN)
    memory, fixed = _window_memory(problem, inside, labels, index.node_uses, index.uses)
    for array in unary:
        array.flags.writeable = False
    return Problem(unary=tuple(unary), edges=tuple(edges), memory=tuple(memory),
                   fixed_memory=tuple(fixed), memory_limit=problem.memory_limit)


def fixed_problem(problem: Problem, nodes: list[int], labels: Sequence[int]) -> Problem:
    """The problem on ``nodes`` (in that order) with every other node fixed at ``labels``."""
    return _window_problem(problem, nodes, np.asarray(labels, np.int64), _Index.build(problem))


def _window_memory(problem: Problem, inside: dict[int, int], labels: np.ndarray,
                   node_uses: tuple[tuple[int, ...], ...], uses: _Uses
                   ) -> tuple[list[MemoryUse], list[FixedUse]]:
    """The window's own memory uses, and everything else as fixed uses: per
    elementary interval between the window uses' start and end times, the
    largest load of the rest there (the window's sum is constant on each, so
    only that largest load can bind). A few fixed uses per window use instead
    of one per use of the whole problem: building the memory rows of a window
    no longer scans the whole time line."""
    if problem.memory_limit is None:
        return [], []
    own = [i for n in inside for i in node_uses[n]
           if problem.memory[i].start < problem.memory[i].end]
    memory = [MemoryUse(inside[problem.memory[i].node], problem.memory[i].start,
                        problem.memory[i].end, problem.memory[i].usage) for i in sorted(own)]
    if not own:
        return memory, []
    times, load = _rest_load(uses, labels, own)
    bounds = np.unique(np.array([m.start for m in memory] + [m.end for m in memory], np.int64))
    # Largest rest load over each [bounds[j], bounds[j+1]): the profile is constant
    # between its event times, so take the value at bounds[j] and at every event inside.
    at = np.searchsorted(times, bounds, side="right") - 1
    value = np.where(at >= 0, load[np.maximum(at, 0)], 0)
    fixed = []
    for j in range(len(bounds) - 1):
        lo, hi = at[j] + 1, np.searchsorted(times, bounds[j + 1], side="left")
        peak = int(max(value[j], load[lo:hi].max(initial=0)))
        if peak:
            fixed.append(FixedUse(int(bounds[j]), int(bounds[j + 1]), peak))
    return memory, fixed


@dataclass(frozen=True, slots=True, eq=False)
class _Uses:
    """The memory uses of a problem as flat arrays, and its fixed uses' profile events."""

    start: np.ndarray
    end: np.ndarray
    node: np.ndarray
    offset: np.ndarray     # first entry of each use in ``usage`` (+ total)
    usage: np.ndarray      # every use's usage per label, concatenated
    fixed: tuple[np.ndarray, np.ndarray, np.ndarray]  # starts, ends, amounts

    @staticmethod
    def build(problem: Problem) -> _Uses:
        memory = problem.memory
        sizes = np.array([len(m.usage) for m in memory], np.int64)
        offset = np.zeros(len(memory) + 1, np.int64)
        np.cumsum(sizes, out=offset[1:])
        usage = (np.concatenate([m.usage for m in memory]).astype(np.int64) if memory
                 else np.zeros(0, np.int64))
        fixed = problem.fixed_memory
        return _Uses(np.array([m.start for m in memory], np.int64),
                     np.array([m.end for m in memory], np.int64),
                     np.array([m.node for m in memory], np.int64), offset, usage,
                     (np.array([f.start for f in fixed], np.int64),
                      np.array([f.end for f in fixed], np.int64),
                      np.array([f.amount for f in fixed], np.int64)))


def _rest_load(uses: _Uses, labels: np.ndarray, own: list[int]
               ) -> tuple[np.ndarray, np.ndarray]:
    """``(times, load)``: the bytes live from each event time on, of every use not
    in ``own`` (at ``labels``) and every fixed use."""
    amount = uses.usage[uses.offset[:-1] + labels[uses.node]] if len(uses.node) else uses.usage
    keep = uses.start < uses.end
    keep[own] = False
    starts = np.concatenate([uses.start[keep], uses.fixed[0]])
    ends = np.concatenate([uses.end[keep], uses.fixed[1]])
    amounts = np.concatenate([amount[keep], uses.fixed[2]])
    if not len(starts):
        return np.zeros(1, np.int64), np.zeros(1, np.int64)
    times, inverse = np.unique(np.concatenate([starts, ends]), return_inverse=True)
    delta = np.zeros(len(times) + 1, np.int64)
    np.add.at(delta, inverse[:len(starts)], amounts)
    np.subtract.at(delta, inverse[len(starts):], amounts)
    return times, np.cumsum(delta[:-1])


def improve(problem: Problem, labels: tuple[int, ...], deadline: float, options: SolveOptions,
            window: int = 1500, window_time: float = 3.0, max_windows: int | None = None
            ) -> tuple[tuple[int, ...], int]:
    """Sweep windows over the nodes until ``deadline``, ``max_windows`` solved, or a
    whole sweep that gains nothing (the next would solve the same windows from the same
    labels: on a core no larger than one window, every window after the first); returns
    (labels, windows solved).

    A window's answer replaces the current labels only when CP-SAT found it
    strictly cheaper in context (memory included), so every step keeps a feasible,
    never costlier answer."""
    current = np.array(labels, np.int64)
    index = _Index.build(problem)
    # Each window ends on CP-SAT's deterministic work budget, so the sequence of
    # answers does not depend on the machine's speed (the wall clock only cuts a
    # window that runs far over, and ends the sweep at ``deadline``).
    budget = replace(options, deterministic_time=window_time * WORK_PER_SECOND)
    solved, gained = 0, False
    n = problem.num_nodes
    step = max(1, window * 2 // 3)  # windows overlap by a third
    start = 0
    while time.perf_counter() + 0.5 < deadline and (max_windows is None or solved < max_windows):
        nodes = [v for v in range(start, min(n, start + window))
                 if problem.label_count(v) <= WINDOW_MAX_LABELS]
        if nodes:
            outcome = _window_solved(problem, nodes, current, index, deadline, budget,
                                     window_time)
            if outcome is None:
                break
            solved += 1
            gained = gained or outcome[0]
        if start + window < n:
            start += step
            continue
        if not gained:
            break  # a whole sweep gained nothing: the next would solve the same windows
        start, gained = 0, False
    # Each window was feasible in context, so the whole is; the caller re-checks it.
    return tuple(int(x) for x in current), solved


def _window_solved(problem: Problem, nodes: list[int], current: np.ndarray, index: _Index,
                   deadline: float, budget: SolveOptions, window_time: float
                   ) -> tuple[bool, float] | None:
    """CP-SAT on the window ``nodes``, the other nodes fixed at ``current``, which takes
    the window's answer only when it is strictly cheaper in context: whether it did,
    and CP-SAT's deterministic time; None when the window could not run before
    ``deadline``."""
    sub = _window_problem(problem, nodes, current, index)
    hint = tuple(int(current[v]) for v in nodes)
    try:
        built = cpsat.build_model(sub, hint, deadline)
    except BuildTimeout:
        return None
    limit = min(WALL_FACTOR * window_time, deadline - time.perf_counter())
    if limit <= 0.05:
        return None
    raw = cpsat.solve_model(built, budget, limit)
    before = evaluate(sub, hint)
    if raw.labels is not None and before is not None and raw.objective < before:
        current[nodes] = raw.labels
        return True, raw.work
    return False, raw.work


#: Shifted sweeps: a sweep's first window starts SHIFT_STRIDE nodes after the last
#: sweep's (modulo the step), so successive sweeps cut the nodes at other places.
SHIFT_STRIDE = 7
#: Shifted sweeps end early after this many sweeps in a row without a gain.
STALE_SWEEPS = 3


def improve_shifted(problem: Problem, labels: tuple[int, ...], deadline: float,
                    options: SolveOptions, windows: int, window: int = 30,
                    window_time: float = 1.0, work_limit: float | None = None
                    ) -> tuple[tuple[int, ...], int]:
    """At most ``windows`` windows of ``window`` consecutive nodes, every label free,
    each solved by CP-SAT in context; returns (labels, windows solved). With
    ``work_limit`` they end once CP-SAT's deterministic time over them reaches it.

    For small cores, where :func:`improve`'s fixed windows settle on one answer
    after a sweep or two: each sweep starts ``SHIFT_STRIDE`` nodes further on, so the
    windows meet nodes in new company. The sweeps end after ``STALE_SWEEPS`` in a row
    gain nothing, after ``windows`` windows, or at ``deadline`` (a safety net: each
    window ends on CP-SAT's deterministic work budget). On contest core V (259 nodes,
    after annealing): 2422996 -> 1866414 in about 40 windows of 30 nodes
    (BENCHMARKS.md, Solver core)."""
    current = np.array(labels, np.int64)
    if problem.num_nodes == 0:
        return tuple(labels), 0
    index = _Index.build(problem)
    work = window_time * WORK_PER_SECOND
    if options.deterministic_time is not None:
        work = min(work, options.deterministic_time)  # the caller's budget caps each window
    budget = replace(options, deterministic_time=work)
    n = problem.num_nodes
    window = min(window, n)
    step = max(1, window * 2 // 3)
    solved, sweep, stale, start, gained, spent = 0, 0, 0, 0, False, 0.0
    while (solved < windows and stale < STALE_SWEEPS and time.perf_counter() + 0.5 < deadline
           and (work_limit is None or spent < work_limit)):
        nodes = list(range(start, min(n, start + window)))
        outcome = _window_solved(problem, nodes, current, index, deadline, budget, window_time)
        if outcome is None:
            break
        solved += 1
        gained = gained or outcome[0]
        spent += outcome[1]
        if start + window < n:
            start += step
            continue
        sweep += 1
        stale = 0 if gained else stale + 1
        gained = False
        start = sweep * SHIFT_STRIDE % step
    return tuple(int(x) for x in current), solved


#: Peak windows: the nodes live at this many of the most loaded event times.
PEAK_TIMES = 4
#: A peak window is searched by CP-SAT's core-based worker alone, after a light presolve:
#: on contest core V's window (122 nodes, 28k booleans) it proves the window optimal in
#: 1.5 deterministic units, where the default interleaved workers took 9.8 units and five
#: times the wall time (BENCHMARKS.md, Solver core).
PEAK_SUBSOLVERS = ("core",)


def peak_nodes(problem: Problem, labels: Sequence[int], max_nodes: int,
               index: _Index | None = None) -> list[int]:
    """The nodes whose usage depends on their label and that hold memory at one of the
    ``PEAK_TIMES`` most loaded event times of ``labels`` (where the limit binds), each
    followed by its graph neighbours (which must often move with it), widest usage
    range first, until ``max_nodes``; sorted. Empty without a memory limit."""
    if problem.memory_limit is None or not problem.memory:
        return []
    index = _Index.build(problem) if index is None else index
    uses = index.uses
    current = np.asarray(labels, np.int64)
    times, load = _rest_load(uses, current, [])
    peaks = times[np.argsort(-load, kind="stable")[:PEAK_TIMES]]
    spread: dict[int, int] = {}
    for use in problem.memory:
        if use.usage.max() > use.usage.min() and np.any((use.start <= peaks) & (peaks < use.end)):
            spread[use.node] = max(spread.get(use.node, 0), int(use.usage.max() - use.usage.min()))
    chosen: dict[int, None] = {}
    for node in sorted(spread, key=lambda n: (-spread[n], n)):
        edges = (problem.edges[k] for k in index.incident[node])
        for other in [node, *sorted({e.u if e.v == node else e.v for e in edges})]:
            if len(chosen) < max_nodes:
                chosen.setdefault(other)
    return sorted(chosen)


def improve_peak(problem: Problem, labels: tuple[int, ...], deadline: float,
                 options: SolveOptions, rounds: int, work: float, max_nodes: int
                 ) -> tuple[tuple[int, ...], int]:
    """At most ``rounds`` windows of :func:`peak_nodes` (at most ``max_nodes``), each
    solved by CP-SAT in context with ``work`` deterministic units, the next window cut
    around the new answer's peak; returns (labels, windows solved). Stops at the first
    window that gains nothing (the next would be the same) or at ``deadline``.

    Where the limit binds at a few times only, the nodes live there trade memory with
    each other across the whole program, which windows of consecutive nodes never hold
    together: on contest core V (259 nodes, the load within 0.4 % of the limit at 4 of
    its 675 intervals) one window of 122 nodes, proven optimal in 1.5 units, takes the
    shifted windows' fixed point 1866414 to 1643243 (BENCHMARKS.md, Solver core)."""
    current = np.array(labels, np.int64)
    index = _Index.build(problem)
    if options.deterministic_time is not None:
        work = min(work, options.deterministic_time)  # the caller's budget caps each window
    budget = replace(options, deterministic_time=work, subsolvers=PEAK_SUBSOLVERS,
                     presolve="light")
    solved = 0
    while solved < rounds and time.perf_counter() + 0.5 < deadline:
        nodes = peak_nodes(problem, current, max_nodes, index)
        if not nodes:
            break
        outcome = _window_solved(problem, nodes, current, index, deadline, budget,
                                 work / WORK_PER_SECOND)
        if outcome is None:
            break
        solved += 1
        if not outcome[0]:
            break
    return tuple(int(x) for x in current), solved
