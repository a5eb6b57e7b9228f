"""Solve a problem component by component, conditioning on hubs where CP-SAT is slow.

``solve_in_parts(problem, options)``: the exact reductions, then each connected
component of the reduced problem on its own (they share nothing, so their optima
add up):

0. the heuristic's answer (or the given start's), when it meets the trivial bound (a
   component that can cost nothing, of which deep models have many);
1. identical pieces on the same hubs folded into one (:mod:`solver.folding`: the same
   optimum; a deep model's identical layers on the shared copies), then exact dynamic
   programming by bucket elimination (:mod:`solver.bucket`), when the tables it makes
   stay small (:data:`ELIMINATION_WORK` entries in all, fewer when little time is
   left): a deep model's layers hang on a few separator nodes, and eliminating each
   layer leaves a small table over the separator nodes it touches;
2. CP-SAT on the (folded) component within a small *deterministic* budget
   (:data:`FIRST_TRY`, CP-SAT's own work units: the same answer on every machine);
   most components are proven here in milliseconds;
3. else, when it has a small separator, exact dynamic programming over the
   separator's states (:mod:`solver.conditioning`): the pieces left are solved like
   components, identical pieces once;
4. else CP-SAT with a share of the time left (its best answer and bound).

Steps 0 and 1 run on every component first; the time left is then shared, by size,
among the components they did not settle (only those need it).

With a start (``hint``: an answer of the whole problem, e.g. the exact shared-copy
problem's start), steps 2 and 3 are skipped: a component that neither the start nor
elimination settles goes to CP-SAT from the start, with its share of the time.

The answer is OPTIMAL when every component's is. On a deep model's relaxed layout
problem (48 layers) the one hard component, all layers' rotary tables hanging on a
few broadcast values, took CP-SAT minutes to prove; conditioned, seconds.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Sequence

import numpy as np

from solver.bucket import eliminate
from solver.conditioning import Split, components, find_split, solve_split
from solver.folding import Folded, fold
from solver.laps import Laps
from solver.options import SolveOptions
from solver.heuristics import heuristic
from solver.errors import SolveError
from solver.problem import (
    FORBIDDEN, Edge, Problem, Solution, Status, evaluate, make_problem, trivial_bound,
)
from solver.reductions import Reduction, reduce_problem
from solver.progress import SearchCallback
from solver.solve import solve

__all__ = ["reduce_for_parts", "solve_in_parts"]

#: CP-SAT's deterministic budget (its work units) for the first try on a component.
FIRST_TRY = 0.5
#: A separator whose pieces each see at most this many of its states is tried before
#: CP-SAT (identical pieces make it a few dozen small solves); a wider one after it.
NARROW_BOUNDARY = 64
#: Table entries bucket elimination is given per second left (about half of what numpy
#: does on one loaded core), so that it ends well within the time.
ELIMINATION_PER_SECOND = 20_000_000
#: The most table entries elimination may make on one component: 1-3 s. A GPT-2-style
#: step's per-use components (48 layers, a chain of layers on 4 hubs) take 3.3e7,
#: eliminated in 0.8 s under load; CP-SAT had not proven them after 6-12 s (its first
#: try alone, 0.5 work units, took 5.5 s). The pieces of a Llama-style step's components
#: take 1.5-5e6.
ELIMINATION_WORK = 60_000_000
#: A piece is solved with at most this many seconds (it has at most a few dozen nodes).
PIECE_SECONDS = 5.0


@dataclasses.dataclass(slots=True)
class _Found:
    labels: dict[int, int]
    cost: int
    bound: int
    proven: bool


def reduce_for_parts(problem: Problem, options: SolveOptions) -> Reduction:
    """The exact reductions :func:`solve_in_parts` starts with (at most 30 % of
    ``options.time_limit``), for a caller that makes them beforehand."""
    return reduce_problem(problem, options.passes,
                          time.perf_counter() + 0.3 * options.time_limit)


def solve_in_parts(problem: Problem, options: SolveOptions = SolveOptions(), *,
                   quick: bool = False, hint: Sequence[int] | None = None,
                   report: SearchCallback | None = None,
                   reduction: Reduction | None = None) -> Solution:
    """Solve ``problem`` (no memory rows) within ``options.time_limit`` seconds, component
    by component (see the module docstring). ``quick``: a component that neither the first
    try nor a separator settles keeps the first try's answer and bound (step 4 is skipped),
    for a caller with another way to spend the time. ``hint``: a feasible answer of
    ``problem`` to start from. ``report`` hears the answer and bound at the end.
    ``reduction``: ``problem``'s reductions made beforehand (:func:`reduce_for_parts`)."""
    if problem.memory or problem.fixed_memory:
        return solve(problem, options)
    laps = Laps()
    deadline = laps.began + options.time_limit
    if reduction is None:
        reduction = reduce_for_parts(problem, options)
        laps.lap("reduce")
    core = reduction.problem
    if core is None:
        return Solution(Status.INFEASIBLE, timings_ms=laps.timings(),
                        message=reduction.infeasible or "")
    start = None if hint is None else reduction.postsolve.project(hint)
    parts = components(core)
    owner = np.zeros(core.num_nodes, np.int64)
    for i, nodes in enumerate(parts):
        owner[list(nodes)] = i
    edges_of: list[list[Edge]] = [[] for _ in parts]
    for e in core.edges:
        edges_of[int(owner[e.u])].append(e)
    # The cheap steps on every component first, so that the search's time is shared
    # among the components that need it.
    settled: list[_Found | _Open | None] = [
        _cheap(core, nodes, edges_of[i], deadline,
               None if start is None else [start[n] for n in nodes])
        for i, nodes in enumerate(parts)]
    if any(found is None for found in settled):
        return Solution(Status.INFEASIBLE, timings_ms=laps.timings(),
                        message="no assignment meets the hard rules")
    opened = [i for i, part in enumerate(settled) if isinstance(part, _Open)]
    sizes = [len(settled[i].nodes) for i in opened]
    for k, i in enumerate(opened):
        share = 0.0 if quick else sizes[k] / max(1, sum(sizes[k:]))
        try:
            settled[i] = found = _searched(settled[i], options, deadline, share)
        except _Unanswered as err:
            return Solution(Status.UNKNOWN, timings_ms=laps.timings(),
                            message=f"no answer found in time: {err}")
        if found is None:
            return Solution(Status.INFEASIBLE, timings_ms=laps.timings(),
                            message="no assignment meets the hard rules")
    labels = [0] * core.num_nodes
    for found in settled:
        for node, label in found.labels.items():
            labels[node] = label
    cost = sum(found.cost for found in settled)
    bound = sum(found.bound for found in settled)
    proven = all(found.proven for found in settled)
    laps.lap("components")
    full = reduction.postsolve.restore(tuple(labels))
    total = evaluate(problem, full)
    if total is None or total != cost + reduction.offset:
        raise SolveError(f"restored answer costs {total}, expected {cost + reduction.offset}")
    laps.lap("postsolve")
    lower = total if proven else min(total, bound + reduction.offset)
    if report is not None:
        report(total, lower)
    return Solution(Status.OPTIMAL if proven else Status.FEASIBLE, labels=full, objective=total,
                    lower_bound=lower, memory_feasible=True, peak_memory=0,
                    timings_ms=laps.timings())


def _subproblem(core: Problem, nodes: tuple[int, ...], edges: list[Edge]) -> Problem:
    index = {n: i for i, n in enumerate(nodes)}
    return make_problem([core.unary[n] for n in nodes],
                        [(index[e.u], index[e.v], e.costs) for e in edges])


@dataclasses.dataclass(slots=True)
class _Open:
    """A component the cheap steps did not settle: its problem (folded, when identical
    pieces fold: ``folded``), and its start (the given one, else the heuristic's; ``None``
    when it breaks a hard rule)."""

    nodes: tuple[int, ...]
    sub: Problem
    late: _Found | None
    hinted: bool
    folded: Folded | None

    def answer(self, labels: Sequence[int]) -> dict[int, int]:
        """The component's labels from an answer of ``sub``."""
        if self.folded is not None:
            labels = self.folded.unfold(labels)
        return dict(zip(self.nodes, (int(x) for x in labels)))

    def start(self) -> tuple[int, ...]:
        """The start as an answer of ``sub``."""
        assert self.late is not None
        labels = [self.late.labels[n] for n in self.nodes]
        return tuple(labels) if self.folded is None else self.folded.folded_labels(labels)


def _cheap(core: Problem, nodes: tuple[int, ...], edges: list[Edge], deadline: float,
           known: list[int] | None) -> _Found | _Open | None:
    """The component's answer by the cheap steps (a node alone, the start meeting the
    trivial bound, bucket elimination), else what the search needs; ``None`` if it is
    infeasible. ``known``: a start (labels of ``nodes``; ``-1`` where the reductions
    dropped its label)."""
    if len(nodes) == 1:
        # A node alone (reductions cut short leave them): its cheapest label.
        costs = core.unary[nodes[0]]
        best = int(np.argmin(costs))
        if costs[best] >= FORBIDDEN:
            return None
        return _Found({nodes[0]: best}, int(costs[best]), int(costs[best]), True)
    sub = _subproblem(core, nodes, edges)
    if known is not None and min(known) < 0:
        known = None
    # The start's or the heuristic's answer, proven when it meets the trivial bound
    # (components that cost nothing); past the deadline, taken as it is.
    late = _late(sub, nodes, known)
    if late is not None and (late.proven or time.perf_counter() >= deadline):
        return late
    # Identical pieces on the same hubs folded into one (the same optimum, far fewer
    # nodes: a deep model's layers), for elimination and the search alike.
    folded = fold(sub)
    part = _Open(nodes, sub if folded is None else folded.problem, late,
                 known is not None and late is not None, folded)
    eliminated = eliminate(part.sub, max_work=min(ELIMINATION_WORK, int(
        ELIMINATION_PER_SECOND * max(0.0, deadline - time.perf_counter()))))
    if eliminated is None:
        return part
    # Exact: the optimum, or no labels meet the hard rules.
    labels, cost = eliminated
    return _Found(part.answer(labels), cost, cost, True) if cost < FORBIDDEN else None


def _searched(part: _Open, options: SolveOptions, deadline: float, share: float
              ) -> _Found | None:
    """A component the cheap steps left, searched: from its start by CP-SAT with
    ``share`` of the time left; without one, over a narrow separator, by CP-SAT's first
    try, over a wide separator, then CP-SAT with ``share``."""
    sub = part.sub
    if part.late is not None and time.perf_counter() >= deadline:
        return part.late
    if part.hinted:
        left = max(0.05, (deadline - time.perf_counter()) * share)
        return _found(part, solve(sub, dataclasses.replace(options, time_limit=left),
                                  hint=part.start()))
    split = find_split(sub, tuple(range(sub.num_nodes)))
    narrow = split is not None and max(
        math.prod(len(sub.unary[split.separator[i]]) for i in b) for b in split.boundaries
    ) <= NARROW_BOUNDARY
    if narrow:
        found = _conditioned(part, split, options, deadline)
        if found is not None:
            return found
    first = solve(sub, dataclasses.replace(options, time_limit=max(
        0.05, deadline - time.perf_counter()), deterministic_time=FIRST_TRY,
        heuristic_time=min(options.heuristic_time, 0.1)))
    if first.status in (Status.OPTIMAL, Status.INFEASIBLE):
        return _found(part, first)
    if split is not None and not narrow:
        found = _conditioned(part, split, options, deadline)
        if found is not None:
            return found
    if share == 0.0 and first.labels is not None:
        return _found(part, first)
    left = max(0.05, (deadline - time.perf_counter()) * share)
    return _found(part, solve(sub, dataclasses.replace(options, time_limit=left)))


def _late(sub: Problem, nodes: tuple[int, ...], known: list[int] | None = None
          ) -> _Found | None:
    """The start (else the heuristic's answer, one round) with the trivial bound, or
    ``None`` when it breaks a hard rule."""
    labels = known if known is not None else heuristic(sub, 0.0, rounds=1).labels
    cost = evaluate(sub, labels)
    if cost is None:
        return None
    return _Found(dict(zip(nodes, (int(x) for x in labels))), cost, trivial_bound(sub),
                  cost <= trivial_bound(sub))


def _conditioned(part: _Open, split: Split, options: SolveOptions, deadline: float
                 ) -> _Found | None:
    """The component solved over its separator's states; ``None`` when a piece was not
    proven optimal before ``deadline``."""
    piece_options = dataclasses.replace(options, time_limit=PIECE_SECONDS, num_workers=1,
                                        heuristic_time=0.05, deterministic_time=None)

    def piece(problem: Problem) -> tuple[tuple[int, ...], int] | None:
        if time.perf_counter() > deadline:
            return None
        return _piece(problem, dataclasses.replace(piece_options, time_limit=min(
            PIECE_SECONDS, max(0.05, deadline - time.perf_counter()))))

    solved = solve_split(part.sub, split, piece)
    if solved is None:
        return None
    answer, value = solved
    return _Found(part.answer([answer[i] for i in range(part.sub.num_nodes)]), value, value,
                  True)


class _Unanswered(Exception):
    """A component's solve found no answer in time."""


def _found(part: _Open, solution: Solution) -> _Found | None:
    if solution.labels is None or solution.objective is None:
        if solution.status == Status.INFEASIBLE:
            return None
        raise _Unanswered(solution.message)
    bound = solution.lower_bound if solution.lower_bound is not None else 0
    return _Found(part.answer(solution.labels), solution.objective, bound,
                  solution.status == Status.OPTIMAL)


def _piece(piece: Problem, options: SolveOptions) -> tuple[tuple[int, ...], int] | None:
    """A piece's proven optimum; ``FORBIDDEN`` cost when it is infeasible; ``None`` when
    not proven in time."""
    solution = solve(piece, options)
    if solution.status == Status.OPTIMAL:
        assert solution.labels is not None and solution.objective is not None
        return solution.labels, solution.objective
    if solution.status == Status.INFEASIBLE:
        return tuple(0 for _ in range(piece.num_nodes)), FORBIDDEN
    return None
