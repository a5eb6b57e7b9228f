"""The solve pipeline: reduce, heuristic, CP-SAT, postsolve, verify.

``solve(problem)`` never returns an unchecked answer: the full labels are
re-evaluated with :func:`~solver.problem.evaluate` and the memory check, and
must agree with the reduced objective; a disagreement is a bug and raises
:class:`SolveError` instead of being returned.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from solver import cpsat, lns, quick
from solver.dual_bound import dual_bound
from solver.heuristics import heuristic
from solver.options import SolveOptions
from solver.problem import (
    Problem, Solution, Status, evaluate, memory_feasible, peak_memory, trivial_bound,
)
from solver.reductions import Reduction, reduce_problem


#: Above this many labels in the reduced problem, CP-SAT works on windows
#: (:mod:`solver.lns`) instead of the whole model, which would not build in time.
FULL_MODEL_LABELS = 30_000
#: Likewise when a node has more labels than this: the level clauses of its
#: tables alone took 29 s to write on contest instance L (1037 labels).
FULL_MODEL_NODE_LABELS = 512


#: Problems at least this large (nodes plus edges) first get a quick vectorized
#: answer on the unreduced problem: their reductions alone take seconds
#: (1.9-4.2 s on the contest instances), the quick answer ~0.3 s.
QUICK_START_SIZE = 20_000


#: Share of the time left after the heuristic that goes to the dual bound before
#: a window search, at most this many seconds: on the contest cores the bound's
#: gap to the best known cost was 3-81 % after 5 s and 3-64 % after 20 s
#: (trivial bound: 55-100 %); the windows rarely gain much in their last seconds.
DUAL_BOUND_SHARE = 0.25
DUAL_BOUND_SECONDS = 20.0
#: Likewise kept back from CP-SAT on a whole model with memory rows, used only when
#: CP-SAT does not prove its answer (contest C, D, Q, V: CP-SAT's bound 36e9, 172e9,
#: 312e9, 1316 against 80e9, 282e9, 494e9, 552e3 from 5 s of the dual bound).
MEMORY_DUAL_SHARE = 0.1
MEMORY_DUAL_SECONDS = 5.0


class SolveError(RuntimeError):
    """An internal inconsistency: a returned assignment failed re-evaluation."""


def _feasible_cost(problem: Problem, labels: tuple[int, ...]) -> int | None:
    cost = evaluate(problem, labels)
    if cost is None or not memory_feasible(problem, labels):
        return None
    return cost


def quick_answer(problem: Problem) -> tuple[tuple[int, ...], int] | None:
    """A feasible answer in a few vectorized passes on the unreduced problem, or
    ``None`` (see :func:`solver.quick.quick_answer`: functional chains and ties
    move as one)."""
    return quick.quick_answer(problem)


def _projected_hint(core: Problem, postsolve, hint, fill: tuple[int, ...] | None = None
                    ) -> tuple[int, ...] | None:
    """``hint`` on the reduced problem; nodes it cannot express (a label the
    reductions dropped) take ``fill``'s label, or the hint is unusable."""
    projected = postsolve.project(hint)
    if all(x >= 0 for x in projected):
        return projected
    if fill is None:
        return None
    return tuple(x if x >= 0 else f for x, f in zip(projected, fill))


@dataclass(frozen=True, slots=True, eq=False)
class Prepared:
    """The part of a solve that needs no start: the reductions and, when the
    reduced problem is modelled whole, its CP-SAT model (not yet hinted).

    Made by :func:`prepare` (CP-SAT releases the GIL, so this can run in a
    thread while another solve searches) and consumed by one :func:`solve`.
    """

    problem: Problem
    reduction: Reduction
    model: cpsat.LabelModel | None
    timings_ms: tuple[tuple[str, float], ...]


def _modelled_whole(core: Problem) -> bool:
    return (sum(len(u) for u in core.unary) <= FULL_MODEL_LABELS
            and max(map(len, core.unary), default=0) <= FULL_MODEL_NODE_LABELS)


def prepare(problem: Problem, options: SolveOptions = SolveOptions()) -> Prepared:
    """Reduce ``problem`` and build its model, within ``options.time_limit``."""
    began = time.perf_counter()
    reduction = reduce_problem(problem, options.passes, began + 0.3 * options.time_limit)
    reduced = time.perf_counter()
    timings = [("reduce", round((reduced - began) * 1000, 3))]
    model = None
    core = reduction.problem
    if core is not None and core.num_nodes and _modelled_whole(core):
        try:
            model = cpsat.build_model(core, None, began + options.time_limit)
        except cpsat.BuildTimeout:
            model = None
        timings.append(("build", round((time.perf_counter() - reduced) * 1000, 3)))
    return Prepared(problem, reduction, model, tuple(timings))


def solve(problem: Problem, options: SolveOptions = SolveOptions(),
          hint: tuple[int, ...] | list[int] | None = None,
          prepared: Prepared | None = None) -> Solution:
    """Solve ``problem`` within ``options.time_limit`` seconds (wall clock).

    ``hint``: a known assignment of ``problem`` (one label per node), carried
    through the reductions. When it is feasible and every label it uses survives
    them (the reductions drop only labels some optimum can do without), the
    search starts from it instead of the heuristic, and the answer costs at most
    as much. Otherwise its expressible part, completed by the heuristic's
    answer, is the start if that is cheaper.
    """
    if prepared is not None and prepared.problem is not problem:
        raise ValueError("prepared for another problem")
    if hint is not None and len(hint) != problem.num_nodes:
        raise ValueError(f"hint has {len(hint)} labels, the problem {problem.num_nodes} nodes")
    began = time.perf_counter()
    # Postsolve and the final re-evaluation run after the search: keep time for
    # them (measured ~0.15 s + ~0.3 s per 100k nodes and edges), and for CP-SAT
    # stopping a little after its own limit.
    size = problem.num_nodes + len(problem.edges)
    reserve = min(0.1 * options.time_limit, 0.3 + 4e-6 * size)
    deadline = began + options.time_limit - reserve
    timings: list[tuple[str, float]] = []

    def lap(name: str, since: float) -> float:
        now = time.perf_counter()
        timings.append((name, round((now - since) * 1000, 3)))
        return now

    quick: tuple[tuple[int, ...], int] | None = None
    first_ms: float | None = None
    mark = began
    if hint is None and problem.num_nodes + len(problem.edges) >= QUICK_START_SIZE:
        quick = quick_answer(problem)
        mark = lap("quick", began)
        if quick is not None:
            first_ms = (mark - began) * 1000

    def fallback(message: str) -> Solution:
        """The quick answer when the main search found none (else UNKNOWN)."""
        if quick is None:
            return Solution(Status.UNKNOWN, timings_ms=tuple(timings), message=message)
        return Solution(status=Status.FEASIBLE, labels=quick[0], objective=quick[1],
                        lower_bound=None, memory_feasible=True,
                        peak_memory=peak_memory(problem, quick[0]), timings_ms=tuple(timings),
                        first_solution_ms=first_ms)

    if prepared is None:
        prepared = prepare(problem, options)
        mark = time.perf_counter()
    timings.extend(prepared.timings_ms)
    reduction = prepared.reduction
    if reduction.problem is None:
        if quick is not None:
            raise SolveError("reductions proved infeasible a problem with a known solution")
        return Solution(Status.INFEASIBLE, timings_ms=tuple(timings),
                        message=reduction.infeasible or "")
    core, offset, postsolve = reduction.problem, reduction.offset, reduction.postsolve

    def start_from(known: tuple[int, ...] | list[int], fill: tuple[int, ...] | None
                   ) -> tuple[tuple[int, ...], int] | None:
        """A known full assignment on the reduced problem, with its cost there."""
        start = _projected_hint(core, postsolve, known, fill)
        cost = None if start is None else _feasible_cost(core, start)
        return None if cost is None else (start, cost)

    best: tuple[int, ...] | None = None
    best_cost: int | None = None
    if core.num_nodes == 0:
        best, best_cost = (), 0
        if first_ms is None:
            first_ms = (time.perf_counter() - began) * 1000
    else:
        hinted = None if hint is None else start_from(hint, None)
        if hinted is not None:
            (best, best_cost), first_ms = hinted, (time.perf_counter() - began) * 1000
            mark = lap("hint", mark)
        else:
            budget = min(options.heuristic_time, max(0.0, (deadline - mark) * 0.4))
            before = time.perf_counter()
            guess = heuristic(core, budget)
            best_cost = _feasible_cost(core, guess.labels)
            if best_cost is not None:
                best = guess.labels
                if first_ms is None:
                    first_ms = ((before - began) + (guess.first_seconds if guess.first_seconds
                                                    is not None else guess.seconds)) * 1000
            mark = lap("heuristic", mark)
            # Other known answers start the search instead when cheaper: a hint only
            # partly expressible on the reduced problem (over the heuristic's answer),
            # the quick answer.
            for known in (hint, None if quick is None else quick[0]):
                other = None if known is None else start_from(known, best)
                if other is not None and (best_cost is None or other[1] < best_cost):
                    best, best_cost = other

    status, bound, raw_status = Status.OPTIMAL, best_cost, None
    built = None
    windowed = best is not None and not _modelled_whole(core)
    if windowed:
        # Too large to model whole in time: CP-SAT on windows, the rest fixed. The
        # windows prove nothing, so a share of the time first goes to a real bound:
        # the LP dual with memory multipliers (:mod:`solver.dual_bound`).
        share = min(DUAL_BOUND_SHARE * (deadline - time.perf_counter()), DUAL_BOUND_SECONDS)
        dual = dual_bound(core, max(0.0, share), target=best_cost)
        mark = lap("dual-bound", mark)
        improved, _ = lns.improve(core, best, deadline, options)
        cost = _feasible_cost(core, improved)
        if cost is None or cost > best_cost:
            raise SolveError(f"window search answer re-evaluates to {cost}, start was {best_cost}")
        best, best_cost = improved, cost
        mark = lap("window-search", mark)
        bound = max(trivial_bound(core), dual)
        status = Status.OPTIMAL if bound >= best_cost else Status.FEASIBLE
    elif core.num_nodes:
        built = prepared.model
        if built is None and not _modelled_whole(core):
            # Too large to model in time, but no start for the windows either.
            try:
                built = cpsat.build_model(core, None, deadline)
            except cpsat.BuildTimeout:
                built = None
            mark = lap("build", mark)
        if built is not None and best is not None:
            cpsat.add_hint(built, best)
            mark = lap("add-hint", mark)
    if core.num_nodes and built is None and not windowed:
        # No time left for CP-SAT: the heuristic answer with the trivial bound.
        if best is None:
            return fallback("no feasible assignment found in time")
        bound = trivial_bound(core)
        status = Status.OPTIMAL if bound >= best_cost else Status.FEASIBLE
    elif built is not None:
        # With memory rows CP-SAT's own bound often stays weak: keep a slice of the
        # time for the dual bound in case it does not prove its answer.
        keep = (min(MEMORY_DUAL_SHARE * (deadline - time.perf_counter()), MEMORY_DUAL_SECONDS)
                if core.memory else 0.0)
        raw = cpsat.solve_model(built, options, deadline - time.perf_counter() - keep)
        mark = lap("cpsat", mark)
        raw_status = raw.status
        if raw.labels is not None:
            cost = _feasible_cost(core, raw.labels)
            # Level/pair booleans are only bounded from below, so a non-optimal
            # model objective may over-count; the re-evaluated cost never exceeds it.
            if cost is None or cost > raw.objective:
                raise SolveError(f"CP-SAT answer re-evaluates to {cost}, reported {raw.objective}")
            if best_cost is None or cost <= best_cost:
                best, best_cost = raw.labels, cost
                if first_ms is None:
                    first_ms = (time.perf_counter() - began) * 1000
        bound = max(trivial_bound(core), raw.bound if raw.bound is not None else 0)
        if (keep and raw.status in (Status.FEASIBLE, Status.UNKNOWN) and best_cost is not None
                and bound < best_cost):
            bound = max(bound, dual_bound(core, max(0.0, deadline - time.perf_counter()),
                                          target=best_cost))
            mark = lap("dual-bound", mark)
        if raw.status == Status.INFEASIBLE:
            if best is not None or quick is not None:
                raise SolveError("CP-SAT proved infeasible a problem with a known solution")
            return Solution(Status.INFEASIBLE, timings_ms=tuple(timings),
                            message="no assignment meets the hard rules and the memory limit")
        if best is None:
            if quick is not None:
                return fallback("")
            return Solution(Status.UNKNOWN, lower_bound=None if bound is None else bound + offset,
                            timings_ms=tuple(timings), message="no feasible assignment found in time")
        status = Status.OPTIMAL if bound is not None and bound >= best_cost else Status.FEASIBLE

    labels = postsolve.restore(best)
    cost = evaluate(problem, labels)
    if cost is None or cost != best_cost + offset or not memory_feasible(problem, labels):
        raise SolveError(f"restored answer costs {cost}, expected {best_cost + offset}")
    lap("postsolve", mark)
    lower = None if bound is None else min(bound + offset, cost)
    if raw_status == Status.OPTIMAL:
        lower = cost
    if quick is not None and quick[1] < cost:
        # Never return worse than the quick answer (the bound still holds for it).
        labels, cost = quick
        lower = None if lower is None else min(lower, cost)
        status = Status.OPTIMAL if lower is not None and lower >= cost else Status.FEASIBLE
    return Solution(
        status=status,
        labels=labels,
        objective=cost,
        lower_bound=lower,
        memory_feasible=True,
        peak_memory=peak_memory(problem, labels),
        timings_ms=tuple(timings),
        first_solution_ms=first_ms,
    )
