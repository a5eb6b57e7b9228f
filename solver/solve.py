"""The solve pipeline: reduce, heuristic, CP-SAT, postsolve, verify.

``solve(problem)`` never returns an unchecked answer: the full labels are
re-evaluated with :func:`~solver.problem.evaluate` and the memory check, and
must agree with the reduced objective; a disagreement is a bug and raises
:class:`SolveError` instead of being returned.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from solver import cpsat, lns
from solver.anneal import TEMPERATURE, anneal, blocked_moves, kick
from solver.beside import Beside, NotBeside, beside
from solver.dual_bound import DualBound, dual_bound, dual_bound_detail
from solver.dual_memory import exact_rows
from solver.errors import BuildTimeout, ProblemError, SolveError
from solver.heuristics import heuristic
from solver.laps import Laps
from solver.options import SolveOptions
from solver.penalties import PRICE_SCALE, penalty_search, price_search, table_entries
from solver.plan import Plan
from solver.progress import SearchCallback
from solver.problem import (
    Problem, Solution, Status, evaluate, memory_feasible, peak_memory, trivial_bound,
)
from solver.quick import quick_answer
from solver.reductions import Reduction, reduce_problem


#: CP-SAT works on windows (:mod:`solver.lns`) instead of the whole model when the
#: reduced problem has more labels than ``SolveOptions.whole_model_labels``, or a node
#: more than this: the level clauses of its tables alone would not be written in time.
FULL_MODEL_NODE_LABELS = 512


#: Problems at least this large (nodes plus edges) first get a quick vectorized
#: answer on the unreduced problem: their reductions alone take seconds, the
#: quick answer a fraction of one (BENCHMARKS.md, Solver core).
QUICK_START_SIZE = 20_000


#: The reproducible mode's plan (:mod:`solver.plan`): the heuristic's price rounds, the
#: penalty rounds and the windows together spend at most SEARCH_SHARE of the time
#: limit in estimated seconds, and CP-SAT on a whole model gets CPSAT_WORK_PER_SECOND
#: deterministic units per estimated second left (contest A and C took 0.26 and 0.32
#: units a second on 2026-11-27, so the estimates leave room on a slower machine).
SEARCH_SHARE = 0.8
CPSAT_WORK_PER_SECOND = 0.16
#: CP-SAT gets at least CPSAT_LEAST_SHARE of the time limit's worth of work, however
#: much of the plan the stages before it spent (on the annealed cores B and G it
#: proves the optimum after them; BENCHMARKS.md, Solver core).
CPSAT_LEAST_SHARE = 0.4
#: A window of the window search (1500 nodes) is estimated at WINDOW_SECONDS (contest K:
#: 3.8 s on 2026-11-27); at most WINDOWS of them.
WINDOW_SECONDS = 4.0
WINDOWS = 100
#: At least this share of the time left after the penalty search (at most this many
#: seconds) is kept from the windows for the dual bound that follows them: the windows
#: prove nothing and rarely gain much in their last seconds, while the trivial bound
#: is weak.
DUAL_BOUND_SHARE = 0.25
DUAL_BOUND_SECONDS = 20.0
#: Likewise kept back from CP-SAT on a whole model with memory rows (a share of the time
#: limit, at most what is left), used only when CP-SAT does not prove its answer: with
#: memory rows its own bound stays weak. (A share of the time left kept contest V's
#: bound to 0.8 s after its annealed stages on a slow day: a 96 % gap against 57 %.)
MEMORY_DUAL_SHARE = 0.1
MEMORY_DUAL_SECONDS = 5.0
#: Where the memory rows are small (:func:`solver.dual_memory.exact_rows`), the bound's
#: searches after its exact multiplier steps need about 800 sweeps to settle:
#: EXACT_DUAL_SHARE of the time limit, at most EXACT_DUAL_SECONDS (contest V, 60 s:
#: 1204512 with 10.1 s left for it, 1071306 with 5.1 s, BENCHMARKS.md).
EXACT_DUAL_SHARE = 0.2
EXACT_DUAL_SECONDS = 12.0
#: A memory-limited core of at most this many nodes (and no ties) modelled whole is
#: first annealed (:mod:`solver.anneal`): ANNEAL_ROUNDS walks of this many moves per
#: node (at most ANNEAL_MOVES each), within ANNEAL_SHARE of the time left. On contest
#: core V CP-SAT's reproducible search hardly moved from its hint
#: (BENCHMARKS.md).
ANNEAL_NODES = 2000
#: Smaller cores are left to CP-SAT alone: it proves them in well under a second.
ANNEAL_MIN_NODES = 64
#: Nor is a core annealed before CP-SAT whose nodes carry more memory uses than this on
#: average: on contest cores C, D, Q (many uses per node after the reductions) walks at
#: TEMPERATURE found nothing cheaper than the start while CP-SAT improves it
#: (BENCHMARKS.md, Solver core); such cores are walked cooler after CP-SAT (below).
ANNEAL_USES_PER_NODE = 4
ANNEAL_MOVES_PER_NODE = 1500
ANNEAL_MOVES = 400_000
ANNEAL_ROUNDS = 3
ANNEAL_SHARE = 0.6
#: A move's estimated seconds (contest V: 15.0 s for 3 walks of 388,500 moves on
#: 2026-11-27).
ANNEAL_MOVE_SECONDS = 1.3e-5
#: Denser cores modelled whole (more than ANNEAL_USES_PER_NODE uses a node: contest A, C,
#: D, Q) are annealed cooler after CP-SAT, from its answer: ANNEAL_ROUNDS walks starting
#: at COOL_TEMPERATURES in turn (a share of the start's cost). At the sparse cores'
#: temperature their walks find nothing, while cooler ones from CP-SAT's answers took
#: contest core A from 1.0032 to 1.0013 of the best published and Q from 1.0039 to
#: 1.00002 (whole solves; the walks land in one of a few basins, and which one moves
#: with the temperatures: Q reached 0.993 in a longer walk; BENCHMARKS.md, Solver core).
#: Their moves cost more: a move's estimated seconds are COOL_MOVE_SECONDS times 1 + the
#: mean squared degree / 16 + the memory uses per node / 40 (contest cores A, C, D, Q,
#: V: 57, 14, 17, 24 and 7 microseconds a move on 2026-11-29), and the walks are as
#: long as fit in COOL_SHARE of the time limit, planned before CP-SAT's work is sized.
#: The temperatures were (1e-3, 3e-4) until the walks of A, C, D and Q were measured
#: whole from the same CP-SAT answers on the Xeon of BENCHMARKS.md: at (2e-3, 6e-4) A
#: ends at 6550.18e6 (6556.99e6 before), Q at 523.05e9 (526.79e9), C 35e3 dearer (still
#: below the best published), D the same; and A and Q reach their first gain in the
#: first two walks, where the cooler ones needed the third. The clock cuts the walks at
#: COOL_WALK_SHARE of the time left (only the kicks follow them there): at ANNEAL_SHARE
#: it cut the walks of all four on that machine (A's ran 22 of 27 s), and their answers
#: moved with the load from run to run (A: 6557e6 to 6569e6).
COOL_TEMPERATURES = (2e-3, 6e-4)
COOL_MOVE_SECONDS = 4e-6
COOL_SHARE = 0.3
COOL_WALK_SHARE = 0.9
#: After the cool walks come kicks: at most KICKS of the largest moves the memory limit
#: refuses, each at least KICK_GAIN of the cost cheaper (:func:`solver.anneal.blocked_moves`),
#: taken with the memory they overdraw freed (:func:`solver.anneal.kick`) and settled by
#: KICK_WINDOWS shifted windows of ANNEALED_WINDOW nodes; the cheapest answer is kept,
#: and the next kick starts from it. Their count is fixed; they run in the time the plan
#: leaves outside SEARCH_SHARE (the clock only cuts them). On contest core Q one kick
#: (+10.3e9 for the freed memory) settles 1.36e9 below the walks' answer, 0.9974 of the
#: best published, in 9 s (BENCHMARKS.md, Solver core). Cores searched in windows get
#: them after the windows when they are walkable: on contest core L (736 nodes, 16 of
#: them of up to 1037 labels, which the windows keep fixed) the second kick settles
#: 2.2e6 cheaper, 0.9999 of the best published, where the windows stalled at 1.001.
KICKS = 2
KICK_GAIN = 1e-4
KICK_WINDOWS = 20
#: The window search (cores too large to model whole) first runs shifted windows of
#: ANNEALED_WINDOW nodes from the penalty search's answer: at most SMALL_WINDOWS, as many
#: as fit in SMALL_SHARE of the time limit at an estimated SMALL_SECONDS times 1 + the
#: memory uses a node / SMALL_USES each (contest cores L, N, M, S, U: 0.9-1.2, 0.19, 0.12,
#: 0.08, 0.012 s a window on 2026-11-30; L holds 30 uses a node, the others 1-5; the
#: clock's cut, WINDOWS_SHARE of the time left, lies beyond), ending
#: once CP-SAT spent SMALL_WORK deterministic units on them. CP-SAT solves a window of 30
#: nodes in a fraction of a unit where a window of 1500 nodes ends on its budget with
#: nothing: contest N 210.32e9 -> 206.42e9 (1.037 -> 1.018 of the best published), L
#: 1.004 -> 1.001 (BENCHMARKS.md, Solver core).
SMALL_WINDOWS = 100
SMALL_SHARE = 0.3
SMALL_SECONDS = 0.2
SMALL_USES = 8
SMALL_WORK = 5.0
#: The annealed answer then goes to shifted windows (:func:`solver.lns.improve_shifted`):
#: at most ANNEALED_WINDOWS windows of ANNEALED_WINDOW nodes, within WINDOWS_SHARE of the
#: time left (a safety net), before CP-SAT gets the whole model for the rest. On contest
#: core V CP-SAT's whole model stayed at its hint for 45 s, the windows took it from 1.485
#: to about 1.15 times the best published cost (BENCHMARKS.md, Solver core).
ANNEALED_WINDOWS = 40
ANNEALED_WINDOW = 30
WINDOWS_SHARE = 0.8
#: A shifted window's and a peak window's estimated seconds (contest V: 1.1 and 5.5-7.4 s
#: on 2026-11-27, rounded up); in the reproducible mode the shifted windows are as many
#: as the plan has room for, at most ANNEALED_WINDOWS (ANNEALED_WINDOWS_AGAIN), and the
#: clock's cut (WINDOWS_SHARE of the time left) lies beyond them: at 0.6 it cut V's
#: planned windows on a loaded machine, and the answer changed with the load.
ANNEALED_WINDOW_SECONDS = 1.3
PEAK_SECONDS = 7.0
#: (On V the windows reach their fixed point, 1866414, within 40 windows.)
#: Then PEAK_ROUNDS windows of the nodes live where the load peaks, with their
#: neighbours (:func:`solver.lns.improve_peak`; at most PEAK_NODES nodes), PEAK_WORK
#: deterministic units each, within PEAK_SHARE of the time left (a safety net). On contest
#: core V the load comes within 0.4 % of the limit at 4 times only; one such window of 122
#: nodes, proven optimal in 1.5 units, takes the shifted windows' 1866414 to 1643243
#: (1.007 times the best published; BENCHMARKS.md, Solver core); a second window, cut
#: around the new peak, gains nothing there in 6 units. When the window gains, at most
#: ANNEALED_WINDOWS_AGAIN shifted windows run once more (V: 1643243 -> 1623645, 0.995 of
#: the best published, by the 15th window), at least as many as fit in AGAIN_LEAST_SHARE
#: of the time limit whatever the plan says: the stages before them spend its room (at
#: 60 s on 2026-11-29 V's plan had room for one, 1643243, and the solve ended at 38 s).
PEAK_ROUNDS = 1
ANNEALED_WINDOWS_AGAIN = 20
AGAIN_LEAST_SHARE = 1 / 3
PEAK_NODES = 160
PEAK_WORK = 6.0
PEAK_SHARE = 0.8
#: A memory-limited core that is not annealed, whose tables hold at most PENALTY_ENTRIES
#: entries (at most PENALTY_NODE_ENTRIES per node, no node above PENALTY_LABELS labels),
#: first gets toulbar2's answers with bisected memory penalties (:mod:`solver.penalties`):
#: PENALTY_ROUNDS rounds of PENALTY_SEARCH // entries backtracks each (between
#: PENALTY_MIN_BACKTRACKS and PENALTY_MAX_BACKTRACKS), fewer when their estimated work
#: (:func:`solver.penalties.round_seconds`) reaches PENALTY_WORK_SHARE of the time limit,
#: within PENALTY_SHARE of the time left (a safety net for a loaded machine: at 0.8 it
#: cut contest K's and N's planned rounds with another busy process on one of the two
#: cores, and their answers changed with the load; at 0.9 the fifth of R's least priced
#: rounds missed it by a second in one run of three on a quiet machine that ran slower
#: that hour, 1.068 of the best published against 1.035). Denser cores (contest A, L, S: wide
#: tables) took toulbar2 ten seconds and more a round (BENCHMARKS.md, Solver core). Up to 6M
#: entries takes in contest cores R and T (5.1M and 5.3M entries, 10k and 16k nodes):
#: six rounds of 100 backtracks take 26 and 34 CPU seconds there and end 7.7 and 9.4 %
#: below the heuristic's 20-s answer (1.133 and 1.039 of the best published); the window
#: search gained 0.04 and 6.5 % in 36 and 30 s. So cores above PENALTY_LARGE_ENTRIES get
#: PENALTY_LARGE_ROUNDS. On contest U and N (3.8M and 3.4M entries) the weights settle
#: late (U's first four answers break the limit): rounds 7-12 took U from 4.1e9 to
#: 2.9e9, N from 221e9 to 215e9 (toulbar2 alone on their cores), more than the window
#: search gains in that time; the dual bound that follows gets less time there.
PENALTY_ENTRIES = 6_000_000
PENALTY_NODE_ENTRIES = 2_000
PENALTY_LABELS = 512
PENALTY_ROUNDS = 12
PENALTY_LARGE_ENTRIES, PENALTY_LARGE_ROUNDS = 4_000_000, 6
PENALTY_SEARCH = 300_000_000
PENALTY_MIN_BACKTRACKS, PENALTY_MAX_BACKTRACKS = 100, 2_000
PENALTY_SHARE = 0.95
PENALTY_WORK_SHARE = 0.7
#: The priced search's dual bound: as many sweeps as fit in PRICE_DUAL_SECONDS, each
#: estimated at PRICE_SWEEP_SECONDS per table entry (contest cores T, N: 2.8e-8 and
#: 2.3e-8 on 2026-11-29, rounded up; the compiled sweeps since take about a quarter of
#: that, and the real seconds saved go to the stages after by the clock: charged at 1e-8,
#: the plan gave them to the priced searches' rounds instead, and contest cores R and T
#: ended 5 % dearer), at most PRICE_SWEEPS (N and M converge in 220),
#: within PRICE_DUAL_SHARE of the penalty searches' time left (a safety net). Its
#: multipliers ripen slowly: on N the priced answers cost 1.12 of the best published
#: after 120 sweeps, 1.04 after 220.
PRICE_DUAL_SECONDS = 20.0
PRICE_SWEEPS = 240
PRICE_SWEEP_SECONDS = 3e-8
PRICE_DUAL_SHARE = 0.6
#: On cores above PENALTY_LARGE_ENTRIES the search beside the priced one is the priced
#: search again, its scales PRICE_OFFSET times the first's (two and a half growth steps
#: above): there a round takes 3-7 s, only three to five fit, and the per-node rounds stall
#: (contest R and T: 1.113 and 1.104 of the best published), while which scale's answer is
#: cheap varies from core to core and with the multipliers. The multipliers price the memory
#: far too low for toulbar2: on contest cores R and T its answers keep the limit from a
#: scale of 32 and 64 on, the cheapest come at 27 and 38-45, so one search grows from
#: PRICE_SCALE and the other starts above and comes down (T: its first round 672e9, where
#: half a growth step above PRICE_SCALE took three rounds to it; BENCHMARKS.md).
PRICE_OFFSET = 2**2.5
#: The heuristic (:func:`solver.heuristics.heuristic`) does as many price rounds as fit,
#: at most HEURISTIC_ROUNDS, each estimated at HEURISTIC_ROUND_SECONDS per node (contest
#: cores R and T, 10k and 16k nodes: 1.15 and 1.85 s a round on 2026-11-27), in its
#: share of the time limit: at most ``SolveOptions.heuristic_time`` and HEURISTIC_SHARE,
#: and before the penalty search at most PENALTY_HEURISTIC_SHARE: on the largest cores
#: its last seconds gain about 1 % (contest T: 793e9 after 6 s, 783e9 after 20 s), time
#: the penalty rounds need. The clock cuts it only at HEURISTIC_SHARE of the time left.
HEURISTIC_ROUNDS = 16
#: Its first answer and the group descent after the rounds cost about this many rounds
#: (contest R and T: 1.8 and 3.0 s).
HEURISTIC_FIXED_ROUNDS = 2
HEURISTIC_ROUND_SECONDS = 1.2e-4
HEURISTIC_SHARE = 0.4
PENALTY_HEURISTIC_SHARE = 0.1
#: A core searched in windows that the penalty search does not take for its wide nodes
#: gets it with the nodes of more than PENALTY_FIXED_LABELS labels fixed at the start's
#: labels: contest S (7 of its 6449 nodes, up to 853 labels) leaves 6442 nodes and 1.8M
#: table entries, where 12 rounds end 5 % below the heuristic's answer (BENCHMARKS.md).
PENALTY_FIXED_LABELS = 128


#: A cost above every real one: the start that any found answer replaces.
BAD_COST = 2**63 - 1


@dataclass(frozen=True, slots=True)
class Answer:
    """A feasible assignment and its cost, on the problem it was found for."""

    labels: tuple[int, ...]
    cost: int


def _feasible(problem: Problem, labels: tuple[int, ...]) -> Answer | None:
    cost = evaluate(problem, labels)
    if cost is None or not memory_feasible(problem, labels):
        return None
    return Answer(labels, cost)


def _status(bound: int | None, cost: int) -> Status:
    return Status.OPTIMAL if bound is not None and bound >= cost else Status.FEASIBLE


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


def _modelled_whole(core: Problem, options: SolveOptions) -> bool:
    return (sum(len(u) for u in core.unary) <= options.whole_model_labels
            and max(map(len, core.unary), default=0) <= FULL_MODEL_NODE_LABELS)


def _build_in_time(core: Problem, deadline: float) -> cpsat.LabelModel | None:
    try:
        return cpsat.build_model(core, None, deadline)
    except BuildTimeout:
        return None


def prepare(problem: Problem, options: SolveOptions = SolveOptions()) -> Prepared:
    """Reduce ``problem`` and build its model, within ``options.time_limit``."""
    laps = Laps()
    reduction = reduce_problem(problem, options.passes, laps.began + 0.3 * options.time_limit)
    laps.lap("reduce")
    model = None
    core = reduction.problem
    if core is not None and core.num_nodes and _modelled_whole(core, options):
        model = _build_in_time(core, laps.began + options.time_limit)
        laps.lap("build")
    return Prepared(problem, reduction, model, laps.timings())


@dataclass(frozen=True, slots=True)
class Search:
    """What the search on the reduced problem found: its best answer (``None``
    when it found none), a lower bound on the reduced cost, the status they make,
    and whether CP-SAT itself proved the answer optimal."""

    best: Answer | None
    bound: int | None
    status: Status
    first_ms: float | None
    proven: bool = False


def solve(problem: Problem, options: SolveOptions = SolveOptions(),
          hint: Sequence[int] | None = None,
          prepared: Prepared | None = None,
          report: SearchCallback | None = None) -> Solution:
    """Solve ``problem`` within ``options.time_limit`` seconds (wall clock).

    ``hint``: a known assignment of ``problem`` (one label per node), carried
    through the reductions. When it is feasible and every label it uses survives
    them (the reductions drop only labels some optimum can do without), the
    search starts from it instead of the heuristic, and the answer costs at most
    as much. Otherwise its expressible part, completed by the heuristic's
    answer, is the start if that is cheaper.

    The steps, in order: a quick answer on the unreduced problem (large problems
    only), the reductions and the model (:func:`prepare`), a first answer on the
    reduced problem (:func:`_first_answer`), the search (:func:`_search`: CP-SAT
    on the whole model, or on windows), and the answer restored and re-checked on
    ``problem`` (:func:`_restored`).

    ``report``: hears each better answer and bound the search finds, as costs of
    ``problem`` (an answer's reported cost is at least its true cost).
    """
    _check_arguments(problem, hint, prepared)
    laps = Laps()
    deadline = laps.began + options.time_limit - _reserve(problem, options)
    quick = _quick_start(problem, hint, laps)
    first_ms = None if quick is None else laps.elapsed_ms()
    if prepared is None:
        prepared = prepare(problem, options)
        laps.skip()
    laps.add(prepared.timings_ms)
    reduction = prepared.reduction
    if reduction.problem is None:
        if quick is not None:
            raise SolveError("reductions proved infeasible a problem with a known solution")
        return Solution(Status.INFEASIBLE, timings_ms=laps.timings(),
                        message=reduction.infeasible or "")
    plan = Plan(SEARCH_SHARE * options.time_limit)
    start, first_ms = _first_answer(reduction, hint, quick, options, deadline, laps, first_ms,
                                    plan)
    found = _search(reduction.problem, prepared.model, start, first_ms, options, deadline, laps,
                    plan, _offset(report, reduction.offset))
    if found.best is None:
        return _unanswered(problem, reduction, found, quick, laps)
    return _restored(problem, reduction, found, quick, laps)


def _offset(report: SearchCallback | None, offset: int) -> SearchCallback | None:
    """``report`` of costs on the reduced problem, as costs of the original one."""
    if report is None:
        return None
    target = report

    def shifted(best: int | None, bound: int | None) -> None:
        target(None if best is None else best + offset, None if bound is None else bound + offset)

    return shifted


def _check_arguments(problem: Problem, hint: Sequence[int] | None,
                     prepared: Prepared | None) -> None:
    if prepared is not None and prepared.problem is not problem:
        raise ProblemError("prepared for another problem")
    if hint is not None and len(hint) != problem.num_nodes:
        raise ProblemError(f"hint has {len(hint)} labels, the problem {problem.num_nodes} nodes")


def _reserve(problem: Problem, options: SolveOptions) -> float:
    """Seconds kept for postsolve and the final re-evaluation after the search
    (they grow with the problem), and for CP-SAT stopping a little after its limit."""
    size = problem.num_nodes + len(problem.edges)
    return min(0.1 * options.time_limit, 0.3 + 4e-6 * size)


def _quick_start(problem: Problem, hint: Sequence[int] | None, laps: Laps) -> Answer | None:
    """On a large problem without a hint, a quick answer before the reductions
    (which alone take seconds there)."""
    if hint is not None or problem.num_nodes + len(problem.edges) < QUICK_START_SIZE:
        return None
    quick = quick_answer(problem)
    laps.lap("quick")
    return None if quick is None else Answer(*quick)


def _projected(reduction: Reduction, known: Sequence[int], fill: Answer | None
               ) -> Answer | None:
    """A known full assignment on the reduced problem, with its cost there. Nodes
    it cannot express (a label the reductions dropped) take ``fill``'s label, or
    it is unusable."""
    start = reduction.postsolve.project(known)
    if not all(x >= 0 for x in start):
        if fill is None:
            return None
        start = tuple(x if x >= 0 else f for x, f in zip(start, fill.labels))
    return _feasible(reduction.problem, start)


def _first_answer(reduction: Reduction, hint: Sequence[int] | None, quick: Answer | None,
                  options: SolveOptions, deadline: float, laps: Laps, first_ms: float | None,
                  plan: Plan) -> tuple[Answer | None, float | None]:
    """The start of the search on the reduced problem, and when a first answer was had:
    the hint when it survives the reductions whole, else the cheapest of the heuristic's
    answer, the hint completed by it, and the quick answer."""
    core = reduction.problem
    if core.num_nodes == 0:
        return Answer((), 0), first_ms if first_ms is not None else laps.elapsed_ms()
    hinted = None if hint is None else _projected(reduction, hint, None)
    if hinted is not None:
        first_ms = laps.elapsed_ms()
        laps.lap("hint")
        return hinted, first_ms
    share = HEURISTIC_SHARE
    if _penalised(core) or (_wide(core) and not _modelled_whole(core, options)):
        share = PENALTY_HEURISTIC_SHARE
    each = HEURISTIC_ROUND_SECONDS * core.num_nodes
    # The rounds and the fixed parts stay below the clock's cut (``heuristic_time``, and
    # HEURISTIC_SHARE of the time left, taken at 0.9 of the limit) on a core so large that
    # its rounds would fill the heuristic's whole share.
    below = min(options.heuristic_time, 0.9 * HEURISTIC_SHARE * options.time_limit)
    seconds = min(share * options.time_limit, below - HEURISTIC_FIXED_ROUNDS * each)
    rounds = plan.fitting(each, HEURISTIC_ROUNDS, seconds)
    plan.spend((rounds + HEURISTIC_FIXED_ROUNDS) * each)
    cut = min(options.heuristic_time, max(0.0, (deadline - laps.mark) * HEURISTIC_SHARE))
    before = time.perf_counter()
    guess = heuristic(core, cut, rounds)
    best = _feasible(core, guess.labels)
    if best is not None and first_ms is None:
        found_after = guess.first_seconds if guess.first_seconds is not None else guess.seconds
        first_ms = ((before - laps.began) + found_after) * 1000
    laps.lap("heuristic")
    for known in (hint, None if quick is None else quick.labels):
        other = None if known is None else _projected(reduction, known, best)
        if other is not None and (best is None or other.cost < best.cost):
            best = other
    return best, first_ms


def _search(core: Problem, model: cpsat.LabelModel | None, start: Answer | None,
            first_ms: float | None, options: SolveOptions, deadline: float, laps: Laps,
            plan: Plan, report: SearchCallback | None = None) -> Search:
    """CP-SAT on the whole model from ``start``, or on windows when the model is too
    large and there is a start; the start with the trivial bound when no model could
    be built in time."""
    if core.num_nodes == 0:
        return Search(start, 0, Status.OPTIMAL, first_ms)
    penalties = plan.part(PENALTY_WORK_SHARE * options.time_limit)
    dual = None
    if start is not None and _penalised(core):
        start, dual = _penalty_searched(core, start, deadline, laps, options.num_workers,
                                        penalties)
    elif start is not None and not _modelled_whole(core, options):
        start = _narrowed_penalty_searched(core, start, deadline, laps, options.num_workers,
                                           penalties)
    if start is not None and not _modelled_whole(core, options):
        return _at_least(_window_search(core, start, first_ms, options, deadline, laps, plan,
                                        dual, report), dual)
    if model is None and not _modelled_whole(core, options):
        # Too large to model in time, but no start for the windows either.
        model = _build_in_time(core, deadline)
        laps.lap("build")
    if model is None:
        if start is None:
            return Search(None, None, Status.UNKNOWN, first_ms)
        bound = trivial_bound(core)
        return Search(start, bound, _status(bound, start.cost), first_ms)
    if start is not None and _anneals(core):
        start = _annealed(core, start, deadline, laps, plan)
        start = _windowed(core, start, options, deadline, laps, plan)
        peaked = _peaked(core, start, options, deadline, laps, plan)
        if peaked.cost < start.cost:
            # The peak window moved memory between distant nodes: their neighbourhoods
            # settle again in shifted windows (contest V: 1643243 -> 1623645).
            peaked = _windowed(core, peaked, options, deadline, laps, plan, "windows-again",
                               ANNEALED_WINDOWS_AGAIN, AGAIN_LEAST_SHARE * options.time_limit)
        start = peaked
    if start is not None:
        cpsat.add_hint(model, start.labels)
        laps.lap("add-hint")
    cool = _cool_moves(core, plan, COOL_SHARE * options.time_limit)
    return _at_least(_model_search(core, model, start, first_ms, options, deadline, laps, plan,
                                   dual, report, cool), dual)


def _multipliers(dual: DualBound | None) -> tuple[float, ...] | None:
    return None if dual is None else dual.multipliers


def _at_least(found: Search, dual: DualBound | None) -> Search:
    """``found`` with ``dual`` (a bound found by an earlier stage) as its lower bound where
    that is higher."""
    if (dual is None or found.best is None
            or (found.bound is not None and found.bound >= dual.value)):
        return found
    return replace(found, bound=dual.value, status=_status(dual.value, found.best.cost))


def _walkable(core: Problem) -> bool:
    """A memory-limited core without ties of ANNEAL_MIN_NODES to ANNEAL_NODES nodes."""
    return (core.memory_limit is not None and bool(core.memory) and not core.ties
            and ANNEAL_MIN_NODES <= core.num_nodes <= ANNEAL_NODES)


def _anneals(core: Problem) -> bool:
    """Annealed before CP-SAT: a walkable core of few uses a node."""
    return _walkable(core) and len(core.memory) <= ANNEAL_USES_PER_NODE * core.num_nodes


def _anneals_cool(core: Problem) -> bool:
    """Walked cooler after CP-SAT: a walkable core of many uses a node."""
    return _walkable(core) and len(core.memory) > ANNEAL_USES_PER_NODE * core.num_nodes


def _anneal_moves(core: Problem) -> int:
    """The most moves of one walk on ``core``."""
    return min(ANNEAL_MOVES, ANNEAL_MOVES_PER_NODE * core.num_nodes)


def _move_seconds(core: Problem) -> float:
    """A cool walk's estimated seconds a move on ``core`` (COOL_MOVE_SECONDS)."""
    ends = [end for edge in core.edges for end in (edge.u, edge.v)]
    degree = np.bincount(np.array(ends, np.int64), minlength=core.num_nodes)
    n = max(1, core.num_nodes)
    return COOL_MOVE_SECONDS * (1 + float((degree ** 2).mean()) / 16 + len(core.memory) / n / 40)


def _small_seconds(core: Problem) -> float:
    """A small window's estimated seconds in the window search (SMALL_SECONDS)."""
    return SMALL_SECONDS * (1 + len(core.memory) / max(1, core.num_nodes) / SMALL_USES)


def _penalised(core: Problem) -> bool:
    if core.memory_limit is None or not core.memory or core.ties or _anneals(core):
        return False
    entries = table_entries(core)
    return (entries <= min(PENALTY_ENTRIES, PENALTY_NODE_ENTRIES * core.num_nodes)
            and max(map(len, core.unary)) <= PENALTY_LABELS)


def _penalty_searched(core: Problem, start: Answer, deadline: float, laps: Laps,
                      workers: int = 2, work: Plan | None = None
                      ) -> tuple[Answer, DualBound | None]:
    """``start``, or the cheapest answer of toulbar2 with memory penalties, and the dual
    bound on ``core`` found on the way (``None`` without memory multipliers). The priced
    search (:func:`_priced`): the dual bound with memory multipliers, then toulbar2 with
    those multipliers as prices on the memory, times a bisected scale; and with
    ``workers`` of 2 or more (the solve's ``num_workers``) a second search beside it, in
    a child process on the other core (toulbar2 uses one), with the same work (the first
    spends ``work``, the second a copy of it): toulbar2 with bisected per-node penalties
    (:func:`~solver.penalties.penalty_search`), or on cores above PENALTY_LARGE_ENTRIES
    the priced search again with its scales PRICE_OFFSET times the first's, on the same
    prices (:func:`_priced_beside`). Each helps where the other stalls: at 60 s, contest
    T 1.104 -> 0.962 of the best published and U 1.085 -> 1.031 with the priced search,
    while M keeps the per-node search's 1.024 (priced alone: 1.061; BENCHMARKS.md). On
    equal costs the first search's answer is kept."""
    entries = max(1, table_entries(core))
    backtracks = min(PENALTY_MAX_BACKTRACKS,
                     max(PENALTY_MIN_BACKTRACKS, PENALTY_SEARCH // entries))
    cut = time.perf_counter() + PENALTY_SHARE * max(0.0, deadline - time.perf_counter())
    large = entries > PENALTY_LARGE_ENTRIES
    rounds = PENALTY_LARGE_ROUNDS if large else PENALTY_ROUNDS
    own = None if work is None else Plan(work.left())
    if large and workers >= 2:
        found, dual = _priced_beside(core, start.cost, rounds, backtracks, cut, work, own)
    else:
        def second() -> tuple[tuple[int, ...], int] | None:
            return penalty_search(core, rounds, backtracks, deadline=cut, work=own)
        other = None if workers < 2 or large else beside(second)
        first, dual = _priced(core, rounds, backtracks, cut, work, PRICE_SCALE)
        found = [first, *_collected(other)]
    laps.lap("penalties")
    for labels, _ in sorted((f for f in found if f is not None), key=lambda f: f[1]):
        answer = _feasible(core, labels)
        if answer is not None:
            return (answer if answer.cost < start.cost else start), dual
    return start, dual


def _collected(pending: Beside | None) -> list:
    """The result of work started beside, in a list; empty when none was started or the
    child died."""
    if pending is None:
        return []
    try:
        return [pending.result()]
    except NotBeside:
        return []


def _priced_beside(core: Problem, aim: int, rounds: int, backtracks: int, cut: float,
                   work: Plan | None, own: Plan | None
                   ) -> tuple[list[tuple[tuple[int, ...], int] | None], DualBound | None]:
    """Two priced searches on the same prices, the second in a child process at scales
    PRICE_OFFSET times the first's (each spends its plan: the first ``work``, the
    second ``own``); their answers, and the higher of two dual bounds. The prices' bound
    (:func:`_priced_bound`) is found once, and beside it, on the other core, in as many
    sweeps, the default bound (exact multiplier steps) aimed at ``aim``, for the report
    and the last bound to start from: its prices serve the search worse, but it is far
    higher (contest T: 38 % below our cost with the prices' multipliers, 13 % with the
    default's, where the last bound gets a second or three; BENCHMARKS.md)."""
    entries = max(1, table_entries(core))
    seconds = PRICE_DUAL_SHARE * max(0.0, cut - time.perf_counter())
    lp = beside(lambda: dual_bound_detail(core, seconds, sweeps=_price_sweeps(entries),
                                          target=aim))
    dual = _priced_bound(core, cut, work)
    if own is not None:
        own.spend(PRICE_SWEEP_SECONDS * entries * dual.sweeps)
    found: list[tuple[tuple[int, ...], int] | None] = []
    if dual.prices is not None:
        other = beside(lambda: price_search(core, dual.prices, rounds, backtracks, deadline=cut,
                                            work=own, scale=PRICE_OFFSET * PRICE_SCALE))
        found = [price_search(core, dual.prices, rounds, backtracks, deadline=cut, work=work,
                              scale=PRICE_SCALE), *_collected(other)]
    bounds = [b for b in (dual, *_collected(lp)) if b.prices is not None]
    return found, max(bounds, key=lambda b: b.value, default=None)


def _priced(core: Problem, rounds: int, backtracks: int, cut: float, work: Plan | None,
            scale: float) -> tuple[tuple[tuple[int, ...], int] | None, DualBound | None]:
    """The priced search's answer (or ``None``) and its dual bound (``None`` without
    memory multipliers): the bound of :func:`_priced_bound`, then
    :func:`~solver.penalties.price_search` on its multipliers from ``scale``; both spend
    their estimates in ``work``."""
    dual = _priced_bound(core, cut, work)
    if dual.prices is None:
        return None, None
    return price_search(core, dual.prices, rounds, backtracks, deadline=cut, work=work,
                        scale=scale), dual


def _priced_bound(core: Problem, cut: float, work: Plan | None) -> DualBound:
    """The priced search's dual bound: :func:`_price_sweeps` sweeps, the multipliers
    found as the priced search was built on them (``pricing``: see
    :func:`solver.dual_bound.dual_bound`); the sweeps' estimate spent in ``work``."""
    entries = max(1, table_entries(core))
    dual = dual_bound_detail(core, PRICE_DUAL_SHARE * max(0.0, cut - time.perf_counter()),
                             sweeps=_price_sweeps(entries), pricing=True)
    if work is not None:
        work.spend(PRICE_SWEEP_SECONDS * entries * dual.sweeps)
    return dual


def _price_sweeps(entries: int) -> int:
    """The priced search's dual bound's sweeps on a core of ``entries`` table entries."""
    return max(1, min(PRICE_SWEEPS, int(PRICE_DUAL_SECONDS / (PRICE_SWEEP_SECONDS * entries))))


def _wide(core: Problem) -> bool:
    """A memory-limited core (no ties) with a node of more than PENALTY_FIXED_LABELS labels."""
    return (core.memory_limit is not None and bool(core.memory) and not core.ties
            and max(map(len, core.unary), default=0) > PENALTY_FIXED_LABELS)


def _narrowed_penalty_searched(core: Problem, start: Answer, deadline: float, laps: Laps,
                               workers: int = 2, work: Plan | None = None) -> Answer:
    """``start``, or the cheaper answer of the penalty search on ``core`` with its nodes
    of more than PENALTY_FIXED_LABELS labels fixed at ``start``'s labels (when that
    leaves a core the penalty search takes)."""
    if not _wide(core):
        return start
    nodes = [v for v in range(core.num_nodes) if core.label_count(v) <= PENALTY_FIXED_LABELS]
    narrow = lns.fixed_problem(core, nodes, start.labels)
    if not _penalised(narrow):
        return start
    found, _ = _penalty_searched(narrow, Answer(tuple(start.labels[v] for v in nodes), BAD_COST),
                                 deadline, laps, workers, work)
    if found.cost == BAD_COST:
        return start
    labels = list(start.labels)
    for v, label in zip(nodes, found.labels):
        labels[v] = label
    answer = _feasible(core, tuple(labels))
    return answer if answer is not None and answer.cost < start.cost else start


def _annealed(core: Problem, start: Answer, deadline: float, laps: Laps, plan: Plan
              ) -> Answer:
    """``start`` improved by annealing (a fixed number of moves; the clock only cuts it)."""
    moves = _anneal_moves(core)
    plan.spend(ANNEAL_MOVE_SECONDS * moves * ANNEAL_ROUNDS)
    return _walked(core, start, deadline, laps, moves, (TEMPERATURE,))


def _cool_moves(core: Problem, plan: Plan, seconds: float) -> tuple[int, float]:
    """The moves of each of a cool core's walks after CP-SAT and their estimated seconds
    (0 for other cores): as many as fit in ``seconds`` of the plan, which spends them
    now, before CP-SAT's work is sized from what is left."""
    if not _anneals_cool(core):
        return 0, 0.0
    each = _move_seconds(core) * ANNEAL_ROUNDS
    moves = plan.fitting(each, _anneal_moves(core), seconds)
    plan.spend(each * moves)
    return moves, each * moves


def _walked(core: Problem, start: Answer, deadline: float, laps: Laps, moves: int,
            temperatures: Sequence[float], share: float = ANNEAL_SHARE) -> Answer:
    """``start`` improved by ANNEAL_ROUNDS walks of ``moves`` moves (the clock only cuts
    them, at ``share`` of the time left)."""
    cut = time.perf_counter() + share * max(0.0, deadline - time.perf_counter())
    labels, _ = anneal(core, start.labels, moves, deadline=cut, rounds=ANNEAL_ROUNDS,
                       temperatures=temperatures)
    laps.lap("anneal")
    found = _feasible(core, labels)
    return found if found is not None and found.cost < start.cost else start


def _kicked(core: Problem, start: Answer, options: SolveOptions, deadline: float,
            laps: Laps) -> Answer:
    """``start`` improved by at most KICKS kicks (see KICK_GAIN), each settled by
    KICK_WINDOWS shifted windows; a kick that settles no cheaper is dropped. A move
    whose memory cannot be freed is passed over without counting as a kick."""
    best, tried, kicks = start, set(), 0
    while kicks < KICKS and time.perf_counter() <= deadline:
        moves = [(node, label) for _, node, label
                 in blocked_moves(core, best.labels, int(KICK_GAIN * best.cost))
                 if (node, label) not in tried]
        if not moves:
            break
        tried.add(moves[0])
        kicked = kick(core, best.labels, *moves[0], deadline=deadline)
        if kicked is None:
            continue
        kicks += 1
        settled, _ = lns.improve_shifted(core, kicked, deadline, options, KICK_WINDOWS,
                                         ANNEALED_WINDOW)
        answer = _feasible(core, settled)
        if answer is not None and answer.cost < best.cost:
            best = answer
    laps.lap("kicks")
    return best


def _windowed(core: Problem, start: Answer, options: SolveOptions, deadline: float,
              laps: Laps, plan: Plan, lap: str = "windows", windows: int = ANNEALED_WINDOWS,
              least: float = 0.0, each: float = ANNEALED_WINDOW_SECONDS,
              work: float | None = None) -> Answer:
    """``start`` improved by at most ``windows`` shifted windows of an estimated
    ``each`` seconds, in the reproducible mode as many as the plan has room for, or as
    fit in ``least`` estimated seconds where that is more, ending once they spent
    ``work`` deterministic units where given (the clock only cuts them)."""
    cut = time.perf_counter() + WINDOWS_SHARE * max(0.0, deadline - time.perf_counter())
    if options.deterministic:
        windows = max(plan.fitting(each, windows), min(windows, int(least / each)))
    improved, solved = lns.improve_shifted(core, start.labels, cut, options, windows,
                                           ANNEALED_WINDOW, work_limit=work)
    plan.spend(solved * each)
    laps.lap(lap)
    return _no_worse(core, start, improved, "window search")


def _peaked(core: Problem, start: Answer, options: SolveOptions, deadline: float,
            laps: Laps, plan: Plan) -> Answer:
    """``start`` improved by windows around the load's peak (fixed work; the clock only
    cuts them)."""
    cut = time.perf_counter() + PEAK_SHARE * max(0.0, deadline - time.perf_counter())
    improved, solved = lns.improve_peak(core, start.labels, cut, options, PEAK_ROUNDS,
                                        PEAK_WORK, PEAK_NODES)
    plan.spend(solved * PEAK_SECONDS)
    laps.lap("peak-windows")
    return _no_worse(core, start, improved, "peak window")


def _no_worse(core: Problem, start: Answer, improved: Sequence[int], what: str) -> Answer:
    """``improved`` as an answer, checked to keep every rule and cost at most ``start``
    (a search that only ever takes cheaper answers: anything else is a bug)."""
    answer = _feasible(core, tuple(improved))
    if answer is None or answer.cost > start.cost:
        cost = None if answer is None else answer.cost
        raise SolveError(f"{what} answer re-evaluates to {cost}, start was {start.cost}")
    return answer


def _window_search(core: Problem, start: Answer, first_ms: float | None,
                   options: SolveOptions, deadline: float, laps: Laps, plan: Plan,
                   earlier: DualBound | None = None, report: SearchCallback | None = None
                   ) -> Search:
    """CP-SAT on windows of the reduced problem, the rest fixed (:mod:`solver.lns`):
    first small shifted windows (SMALL_WINDOWS), then windows of 1500 nodes, in the
    reproducible mode as many as the plan has room for at WINDOW_SECONDS each (at
    most WINDOWS), else until the time kept for the bound; on a walkable core (at most
    ANNEAL_NODES nodes) then kicks (:func:`_kicked`), which move the nodes of more than
    ``lns.WINDOW_MAX_LABELS`` labels that the windows keep fixed. The windows prove nothing,
    so the time left then goes to a real bound, at least DUAL_BOUND_SHARE of the time
    left before the windows (at most DUAL_BOUND_SECONDS): the LP dual with memory
    multipliers (:mod:`solver.dual_bound`), from ``earlier``'s multipliers where an
    earlier stage found some. When it meets the answer, the answer is optimal."""
    keep = min(DUAL_BOUND_SHARE * max(0.0, deadline - time.perf_counter()), DUAL_BOUND_SECONDS)
    each, share = _small_seconds(core), SMALL_SHARE * options.time_limit
    start = _windowed(core, start, options, deadline - keep, laps, plan, "small-windows",
                      min(SMALL_WINDOWS, max(1, int(share / each))), least=share, each=each,
                      work=SMALL_WORK)
    windows = plan.fitting(WINDOW_SECONDS, WINDOWS) if options.deterministic else None
    improved, solved = lns.improve(core, start.labels, deadline - keep, options,
                                   max_windows=windows)
    plan.spend(solved * WINDOW_SECONDS)
    answer = _no_worse(core, start, improved, "window search")
    laps.lap("window-search")
    if _walkable(core):
        answer = _kicked(core, answer, options, deadline - keep, laps)
    seconds = max(0.0, deadline - time.perf_counter())
    bound = max(trivial_bound(core), dual_bound(core, seconds, target=answer.cost,
                                                start=_multipliers(earlier)))
    laps.lap("dual-bound")
    if report is not None:
        report(answer.cost, min(bound, answer.cost))
    return Search(answer, bound, _status(bound, answer.cost), first_ms)


def _dual_keep(core: Problem, time_limit: float, left: float) -> float:
    """The seconds (of ``left``) kept from CP-SAT on the whole model for the dual bound:
    none without memory rows, else MEMORY_DUAL_SHARE of ``time_limit`` up to
    MEMORY_DUAL_SECONDS, or EXACT_DUAL_SHARE up to EXACT_DUAL_SECONDS where the rows take
    the exact multiplier steps."""
    if not core.memory:
        return 0.0
    share, most = ((EXACT_DUAL_SHARE, EXACT_DUAL_SECONDS) if exact_rows(core)
                   else (MEMORY_DUAL_SHARE, MEMORY_DUAL_SECONDS))
    return min(share * time_limit, most, left)


def _model_search(core: Problem, model: cpsat.LabelModel, start: Answer | None,
                  first_ms: float | None, options: SolveOptions, deadline: float,
                  laps: Laps, plan: Plan, earlier: DualBound | None = None,
                  report: SearchCallback | None = None,
                  cool: tuple[int, float] = (0, 0.0)) -> Search:
    """CP-SAT on the whole model (hinted with ``start``); in the reproducible mode with
    the plan's work left (CPSAT_WORK_PER_SECOND deterministic units per estimated
    second) unless the options set a budget; ``cool``: the moves of the cool walks from
    CP-SAT's answer when it does not prove it (:func:`_cool_moves`) and their estimated
    seconds, kept from CP-SAT's wall limit; with memory rows a slice of the time is
    kept for the dual bound in case CP-SAT does not prove its answer (from ``earlier``'s
    multipliers where an earlier stage found some)."""
    left = max(0.0, deadline - time.perf_counter())
    keep = _dual_keep(core, options.time_limit, left)
    searched = options
    if options.deterministic and options.deterministic_time is None:
        searched = replace(options, deterministic_time=CPSAT_WORK_PER_SECOND
                           * max(plan.left(), CPSAT_LEAST_SHARE * options.time_limit))
    walks = min(cool[1], max(0.0, left - keep) / 2)  # CP-SAT's wall limit leaves them room
    raw = cpsat.solve_model(model, searched, deadline - time.perf_counter() - keep - walks,
                            report)
    laps.lap("cpsat")
    best = start
    if raw.labels is not None:
        answer = _feasible(core, raw.labels)
        # Level/pair booleans are only bounded from below, so a non-optimal
        # model objective may over-count; the re-evaluated cost never exceeds it.
        if answer is None or answer.cost > raw.objective:
            cost = None if answer is None else answer.cost
            raise SolveError(f"CP-SAT answer re-evaluates to {cost}, reported {raw.objective}")
        if best is None or answer.cost <= best.cost:
            best = answer
            if first_ms is None:
                first_ms = laps.elapsed_ms()
    bound = max(trivial_bound(core), raw.bound if raw.bound is not None else 0)
    if cool[0] and best is not None and raw.status != Status.OPTIMAL:
        walked = _walked(core, best, deadline - keep, laps, cool[0], COOL_TEMPERATURES,
                         COOL_WALK_SHARE)
        walked = _kicked(core, walked, options, deadline - keep, laps)
        if report is not None and walked.cost < best.cost:
            report(walked.cost, min(bound, walked.cost))
        best = walked
    if (keep and raw.status in (Status.FEASIBLE, Status.UNKNOWN) and best is not None
            and bound < best.cost):
        bound = max(bound, dual_bound(core, max(0.0, deadline - time.perf_counter()),
                                      target=best.cost, start=_multipliers(earlier)))
        laps.lap("dual-bound")
    if raw.status == Status.INFEASIBLE:
        if best is not None:
            raise SolveError("CP-SAT proved infeasible a problem with a known solution")
        return Search(None, bound, Status.INFEASIBLE, first_ms)
    if best is None:
        return Search(None, bound, Status.UNKNOWN, first_ms)
    return Search(best, bound, _status(bound, best.cost), first_ms,
                  proven=raw.status == Status.OPTIMAL)


def _unanswered(problem: Problem, reduction: Reduction, found: Search, quick: Answer | None,
                laps: Laps) -> Solution:
    """The search found no answer: the quick answer if there is one, else why not."""
    if found.status == Status.INFEASIBLE:
        if quick is not None:
            raise SolveError("CP-SAT proved infeasible a problem with a known solution")
        return Solution(Status.INFEASIBLE, timings_ms=laps.timings(),
                        message="no assignment meets the hard rules and the memory limit")
    if quick is not None:
        return Solution(status=Status.FEASIBLE, labels=quick.labels, objective=quick.cost,
                        lower_bound=None, memory_feasible=True,
                        peak_memory=peak_memory(problem, quick.labels),
                        timings_ms=laps.timings(), first_solution_ms=found.first_ms)
    lower = None if found.bound is None else found.bound + reduction.offset
    return Solution(Status.UNKNOWN, lower_bound=lower, timings_ms=laps.timings(),
                    message="no feasible assignment found in time")


def _restored(problem: Problem, reduction: Reduction, found: Search, quick: Answer | None,
              laps: Laps) -> Solution:
    """The answer on ``problem``: restored through the reductions and re-checked (a
    disagreement is a bug), or the quick answer when that is cheaper."""
    labels = reduction.postsolve.restore(found.best.labels)
    expected = found.best.cost + reduction.offset
    cost = evaluate(problem, labels)
    if cost is None or cost != expected or not memory_feasible(problem, labels):
        raise SolveError(f"restored answer costs {cost}, expected {expected}")
    laps.lap("postsolve")
    lower = None if found.bound is None else min(found.bound + reduction.offset, cost)
    if found.proven:
        lower = cost
    status = found.status
    if quick is not None and quick.cost < cost:
        # Never return worse than the quick answer (the bound still holds for it).
        labels, cost = quick.labels, quick.cost
        lower = None if lower is None else min(lower, cost)
        status = _status(lower, cost)
    return Solution(status=status, labels=labels, objective=cost, lower_bound=lower,
                    memory_feasible=True, peak_memory=peak_memory(problem, labels),
                    timings_ms=laps.timings(), first_solution_ms=found.first_ms)
