"""Layout assignment end to end: ``assign(module, target, options)`` and ``score(module, target)``.

``assign``: layout graph -> candidates -> labeling problem -> baselines
(all-default, greedy) -> the relaxed problem (copies charged in shares to the uses
that can share them: a lower bound on the true cost) and the per-use model (a copy
per use), each solved component by component (:func:`solver.parts.solve_in_parts`:
CP-SAT, or exact dynamic programming over a few hub nodes) -> local search on the *true* cost (the
rewritten module scored, where one copy serves every use of a value in a layout;
see :mod:`.compile` and :mod:`.shared_copies`) from the best answer so far ->
the exact shared-copy problem (:mod:`.exact`) from that answer, component by
component: the answer where it meets the trivial bound, exact bucket elimination
(:mod:`solver.bucket`), else CP-SAT from the answer -> the best answer by true cost ->
rewrite -> verify.
``status`` is ``OPTIMAL`` only when that true cost equals the bound: every
claim is about the true cost, over the candidate layouts considered.

``score``: the cost of the layouts a module already has (e.g. XLA's
``after_layout``) under the same model: every explicit ``copy`` is charged,
duplicates and no-op copies included; bitcast transposes/reshapes are free.
"""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from hlo.ir import Computation, Module, ProgramShape
from hlo.shape import leaf_arrays
from hlo.layout_verifier import verify_layouts
from hlo.passes.apply_layouts import apply_layouts
from hlo.target import Target, load_target
from hlo.verifier import collect_errors
from solver.errors import AssignmentError
from solver.laps import Laps
from solver.layout_assignment.baselines import default_labels, greedy_labels
from solver.layout_assignment.candidates import candidate_sets
from solver.layout_assignment.compile import Compiled, compile_problem, evaluate
from solver.layout_assignment.costs import Candidate, CostModel, Term
from solver.layout_assignment.exact import exact_labels, exact_problem
from solver.layout_assignment.layout_graph import build_graph
from solver.layout_assignment.normalization import (
    NOTHING_NORMALIZED,
    Normalization,
    normalization_passes,
    normalize,
)
from solver.layout_assignment.options import AssignOptions, EntryLayout
from solver.layout_assignment.plan import InsertedCopy, plan_for
from solver.layout_assignment.shared_copies import improve, true_cost
from solver.options import SolveOptions
from solver.beside import NotBeside, beside, core_free
from solver.reductions import Reduction
from solver.parts import reduce_for_parts, solve_in_parts
from solver.problem import Problem, Solution, Status
from solver.progress import ProgressCallback, Tracker
from solver.problem import evaluate as evaluate_labels
from solver.solve import trivial_bound

__all__ = ["AssignResult", "ScoreResult", "assign", "score"]


@dataclass(frozen=True, slots=True)
class ScoreResult:
    module: str
    target: str
    total: int
    terms: tuple[Term, ...]
    broken: tuple[str, ...] = ()
    #: What the elementwise ops predicted to overwrite an operand's buffer pay (``in_place``
    #: terms): part of the module's predicted time, not of the layout cost ``total`` that
    #: assignment minimizes and proves (:mod:`.in_place`).
    in_place: int = 0

    @property
    def predicted(self) -> int:
        """The model's price of the module's time beyond what every layout pays (ns)."""
        return self.total + self.in_place

    def breakdown(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for t in self.terms:
            out[t.kind] = out.get(t.kind, 0) + t.ns
        return dict(sorted(out.items()))

    def to_json(self) -> dict:
        return {"module": self.module, "target": self.target, "cost": self.total,
                "in_place_ns": self.in_place, "predicted_ns": self.predicted,
                "breakdown": self.breakdown(), "terms": [t.to_json() for t in self.terms],
                "hard_rules_broken": list(self.broken)}


@dataclass(frozen=True, slots=True)
class AssignResult:
    """Everything the report needs (see :mod:`.report`)."""

    module: Module
    original: Module
    target: str
    options: AssignOptions
    status: str
    chosen_by: str
    objective: int
    model_objective: int
    lower_bound: int | None
    baselines: dict[str, int]
    baselines_model: dict[str, int]
    score: ScoreResult
    layouts: tuple[tuple[str, str, str], ...]
    inserted: tuple[InsertedCopy, ...]
    entry_layouts: dict
    timings_ms: dict[str, float] = field(default_factory=dict)
    violations: tuple[str, ...] = ()
    nodes: int = 0
    relations: int = 0
    normalization: Normalization = NOTHING_NORMALIZED
    #: The laid-out module before normalization (``module`` when no pass ran).
    assigned: Module | None = None
    #: The per-use labeling model's own result: its solve status and proven bound
    #: (on the model's cost, not the true one); empty when the time limit left no time.
    model_status: str = ""
    model_lower_bound: int | None = None
    #: Status of the solves that give ``lower_bound`` (the exact one, and the relaxed one
    #: where the exact one is not proven).
    bound_status: str = ""
    local_search_moves: int = 0
    #: Wall-clock milliseconds of the whole call.
    wall_ms: float = 0.0
    #: What OPTIMAL covers: the candidate layouts considered (:func:`optimality_scope`).
    scope: dict = field(default_factory=dict)

    @property
    def gap(self) -> float | None:
        """``(objective - lower_bound) / objective``: 0 exactly when ``OPTIMAL``."""
        if self.lower_bound is None:
            return None
        if self.objective == 0:
            return 0.0
        return max(0.0, (self.objective - self.lower_bound) / self.objective)


def _target(target: str | Target) -> Target:
    return target if isinstance(target, Target) else load_target(target)


def score(module: Module, target: str | Target) -> ScoreResult:
    """The cost of ``module``'s own layouts on ``target``."""
    t = _target(target)
    cm = CostModel(t)
    graph = build_graph(module, actual=True)
    chosen = [n.pinned or Candidate(tuple(range(n.shape.rank - 1, -1, -1))) for n in graph.nodes]
    total, terms, broken = evaluate(cm, graph, chosen)
    in_place = sum(term.ns for term in terms if term.kind == "in_place")
    return ScoreResult(module.name, t.name, total - in_place, tuple(terms), tuple(broken),
                       in_place)


#: Preference among answers of equal true cost.
_ORDER = ("exact", "cp-sat", "bound", "local-search", "in-place", "greedy", "default")


#: Layout problems keep a few labels per node, and CP-SAT proves them whole far beyond
#: the general limit, where windows prove nothing (BENCHMARKS.md, deep models): up to
#: this many labels.
WHOLE_MODEL_LABELS = 400_000

#: Seconds kept from ``time_limit_s`` for the rewrite, normalization and verification that
#: follow the solves: this much, plus :data:`FINISH_S_PER_INSTRUCTION` per instruction (at
#: most a quarter of the limit).
FINISH_S = 0.1
FINISH_S_PER_INSTRUCTION = 1e-4
#: The optional last local search starts only with this much time left.
OPTIONAL_STEP_S = 0.2


#: Modules of at least this many instructions solve their seeds in a child process while
#: the exact problem is stated and reduced (:func:`solver.beside.beside`), when a core is
#: idle (:func:`solver.beside.core_free`); smaller ones take a second or less for both,
#: less than what the fork and the result's way back would save.
BESIDE_INSTRUCTIONS = 5_000
#: ... and only with at least this many seconds left.
BESIDE_S = 2.0


#: CP-SAT's workers on the exact problem (see ``SolveOptions.subsolvers``).
EXACT_SUBSOLVERS = ("core", "max_lp")


def _solve_options(options: AssignOptions, time_limit: float,
                   subsolvers: tuple[str, ...] = ()) -> SolveOptions:
    return SolveOptions(time_limit=time_limit, seed=options.seed, heuristic_time=min(2.0, time_limit / 4),
                        presolve="light", whole_model_labels=WHOLE_MODEL_LABELS,
                        subsolvers=subsolvers)


class Budget:
    """``time_limit_s`` is one budget for all solves. Each share is of the time still
    left, so a solve that finishes early (proven) hands its rest to the next one."""

    __slots__ = ("deadline",)

    def __init__(self, seconds: float) -> None:
        self.deadline = time.monotonic() + seconds

    def share(self, fraction: float) -> float:
        return max(0.05, self.left() * fraction)

    def left(self) -> float:
        return self.deadline - time.monotonic()


class Runs:
    """The answers found so far, by who found them (``default``, ``greedy``,
    ``cp-sat``, ``local-search``, ``exact``, ``bound``): their labels, their cost in the
    per-use model where it was computed, and the fast estimate of their true cost."""

    __slots__ = ("compiled", "labels", "model_cost", "estimate")

    def __init__(self, compiled: Compiled) -> None:
        self.compiled = compiled
        self.labels: dict[str, tuple[int, ...]] = {}
        self.model_cost: dict[str, int] = {}
        self.estimate: dict[str, int] = {}

    def add(self, name: str, labels: tuple[int, ...], model_cost: int | None = None) -> None:
        self.labels[name] = labels
        if model_cost is not None:
            self.model_cost[name] = model_cost

    def estimated(self) -> dict[str, int]:
        """The true cost of every run (:func:`.shared_copies.true_cost`)."""
        for name, labels in self.labels.items():
            if name not in self.estimate:
                self.estimate[name] = true_cost(self.compiled, labels)
        return self.estimate

    def by_estimate(self) -> list[str]:
        """Run names, cheapest estimate first (ties in :data:`_ORDER`)."""
        estimate = self.estimated()
        return sorted(self.labels, key=lambda k: (estimate[k], _ORDER.index(k)))

    def improve_cheapest(self, starts: int = 1) -> tuple[tuple[int, ...], int]:
        """Local search on the true cost from each of the ``starts`` cheapest runs; the
        best improvement is added as run ``local-search``. Returns the best answer and the
        number of moves that led to it. (A cheaper start can end worse: on deep models the
        per-use model's optimum is cheaper in truth than the relaxed problem's, and the
        search from it stops above the true optimum that it reaches from the other.)"""
        best: tuple[tuple[int, ...], int, int] | None = None
        for name in self.by_estimate()[:starts]:
            improved, moves = improve(self.compiled, self.labels[name])
            cost = true_cost(self.compiled, improved) if moves else self.estimated()[name]
            if best is None or cost < best[2]:
                best = (improved, moves, cost)
        assert best is not None
        improved, moves, cost = best
        if moves:
            self.labels["local-search"] = improved
            self.estimate["local-search"] = cost
        return improved, moves


@dataclass(frozen=True, slots=True, eq=False)
class Rewritten:
    """The rewritten module of the chosen run, its score, and the true cost of every run
    (the estimate for those whose estimate was no better than the best rewrite)."""

    chosen_by: str
    module: Module
    score: ScoreResult
    inserted: tuple[InsertedCopy, ...]
    true_costs: dict[str, int]


def assign(module: Module, target: str | Target, options: AssignOptions = AssignOptions(),
           progress: ProgressCallback | None = None) -> AssignResult:
    """Assign layouts to ``module`` (see the module docstring for the steps).

    ``target``: a loaded target, or a built-in name or target file to load.
    ``options.time_limit_s`` bounds the wall clock of the whole call: the solves share
    what the steps before them left, minus a reserve for the rewrite after them, and
    optional steps are skipped when it is spent. ``progress`` hears every step and
    every better answer or bound (:mod:`solver.progress`; costs are true costs).
    """
    with _long_lived_kept():
        return _assign(module, target, options, progress)


@contextmanager
def _long_lived_kept() -> Iterator[None]:
    """The cyclic collector is paused until the assignment ends (as the parser pauses
    it), and the objects alive now (the module, above all) are left out of its passes,
    as are those alive at each :func:`_settle` inside it, should something resume it:
    the assignment makes hundreds of thousands of objects that live until it ends (the
    graph, candidates, problems and their reductions) and no reference cycles to
    free. On a 30k-instruction module the collector's passes over them cost 1-3 s (of
    about 20) and freed nothing; peak memory is the same without them."""
    was_enabled = gc.isenabled()
    gc.disable()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
        if was_enabled:
            gc.enable()


def _settle() -> None:
    """Everything alive now lives until the assignment ends (see :func:`_long_lived_kept`)."""
    gc.freeze()


def _assign(module: Module, target: str | Target, options: AssignOptions,
            progress: ProgressCallback | None) -> AssignResult:
    laps = Laps()
    tracker = Tracker(progress)
    tracker.enter("candidates")
    instructions = sum(len(c.instructions) for c in module.computations)
    limit = options.time_limit_s
    budget = Budget(limit - min(0.25 * limit, FINISH_S + FINISH_S_PER_INSTRUCTION * instructions))
    target = _target(target)
    passes = normalization_passes(options.normalize, target)
    cm = CostModel(target)
    compiled = _compile(module, options, cm, laps)
    _settle()
    tracker.enter("baselines")
    runs = _baselines(compiled, laps)
    tracker.heard(best=min(runs.estimated().values()))
    tracker.enter("relaxed problem")
    stated = None
    if instructions >= BESIDE_INSTRUCTIONS and budget.left() > BESIDE_S and core_free():
        # The seeds in a child process, the exact problem stated and reduced here
        # meanwhile: neither needs the other (the same answers as one after the other).
        pending = beside(lambda: _seed_solutions(compiled, options, budget))
        stated = _stated_exact(compiled, options, budget)
        laps.lap("exact_prepare")
        try:
            seeds = pending.result()
        except NotBeside:
            seeds = _seed_solutions(compiled, options, budget)
        laps.lap("seeds_wait")
    else:
        seeds = _seed_solutions(compiled, options, budget, tracker)
    relaxed, per_use, improved, moves = _seeds_added(seeds, runs, laps, tracker)
    tracker.heard(best=min(runs.estimated().values()))
    if stated is not None or budget.left() > OPTIONAL_STEP_S:
        tracker.enter("exact problem")
        if stated is None:
            stated = _stated_exact(compiled, options, budget, reduce=False)
            laps.lap("exact_prepare")
        lower, bound_status = _solve_exact(compiled, options, budget, stated, improved,
                                           relaxed, runs, laps, tracker)
    else:
        # No time left to state the exact problem: the relaxed problem's bound.
        lower = (relaxed.lower_bound if relaxed.lower_bound is not None
                 else trivial_bound(compiled.relaxed))
        bound_status = f"exact not solved (time limit), relaxed {relaxed.status.value}"
    if min(runs.estimated().values()) > lower and budget.left() > OPTIONAL_STEP_S:
        tracker.enter("local search")
        moves += runs.improve_cheapest()[1]
        tracker.heard(best=min(runs.estimated().values()))
    laps.lap("polish")
    tracker.enter("rewrite")
    rewritten = _rewrite_cheapest(module, compiled, cm, runs, options, instructions)
    laps.lap("rewrite")
    normalized, normalization = (normalize(rewritten.module, passes) if passes
                                 else (rewritten.module, NOTHING_NORMALIZED))
    laps.lap("normalize")
    violations = _violations(normalized) if options.verify else ()
    laps.lap("verify")
    # Proven optimal for the true cost only when it meets the bound on the true cost.
    total = rewritten.score.total
    status = Status.OPTIMAL.value if total <= lower else Status.FEASIBLE.value
    tracker.heard(best=total, bound=min(lower, total))
    tracker.enter("done")
    return AssignResult(
        module=normalized, original=module, target=target.name, options=options,
        status=status, chosen_by=rewritten.chosen_by, objective=total,
        model_objective=evaluate_labels(compiled.problem, runs.labels[rewritten.chosen_by]) or 0,
        lower_bound=lower,
        baselines={k: rewritten.true_costs[k] for k in ("default", "greedy")},
        baselines_model=dict(runs.model_cost),
        model_status="" if per_use is None else per_use.status.value,
        model_lower_bound=None if per_use is None else per_use.lower_bound,
        bound_status=bound_status, local_search_moves=moves,
        score=rewritten.score, layouts=_layouts(normalized), inserted=rewritten.inserted,
        entry_layouts=_entry_layouts(module, normalized, options),
        timings_ms=dict(laps.timings()), wall_ms=round(laps.elapsed_ms(), 3),
        violations=violations,
        nodes=compiled.problem.num_nodes, relations=len(compiled.graph.relations),
        scope=optimality_scope(compiled, options.max_candidates),
        normalization=normalization, assigned=rewritten.module)


def optimality_scope(compiled: Compiled, cap: int) -> dict:
    """What an OPTIMAL status is optimal over: each free array's candidate layouts, at most
    ``cap`` of them; ``arrays_capped`` counts the free arrays with fewer candidates than the
    ``rank!`` dim orders (plain layouts) they could have, i.e. where layouts went unpriced."""
    free = [(n, c) for n, c in zip(compiled.graph.nodes, compiled.candidates)
            if n.pinned is None and n.shape.rank > 1]
    capped = sum(1 for n, c in free if len(c) < math.factorial(n.shape.rank))
    return {
        "max_candidates": cap,
        "free_arrays": len(free),
        "arrays_capped": capped,
        "covers": ("every dim order of every free array" if not capped else
                   f"the candidate layouts of each array (at most {cap}); {capped} of "
                   f"{len(free)} free arrays had dim orders left out"),
    }


def _compile(module: Module, options: AssignOptions, cm: CostModel, laps: Laps) -> Compiled:
    """Layout graph -> candidate layouts -> the per-use labeling problem."""
    graph = build_graph(module, entry_auto=options.entry_layout == EntryLayout.AUTO)
    _settle()
    cands = candidate_sets(graph, cm, cap=options.max_candidates)
    laps.lap("candidates")
    compiled = compile_problem(graph, cands, cm)
    laps.lap("build")
    return compiled


def _baselines(compiled: Compiled, laps: Laps) -> Runs:
    """The all-default and greedy answers."""
    problem = compiled.problem
    runs = Runs(compiled)
    default = default_labels(problem)
    runs.add("default", default, evaluate_labels(problem, default))
    greedy = greedy_labels(problem, sorted({p.node for p in compiled.graph.prefs}))
    runs.add("greedy", greedy, evaluate_labels(problem, greedy))
    laps.lap("baselines")
    return runs


@dataclass(frozen=True, slots=True, eq=False)
class Seeds:
    """The relaxed problem's and the per-use model's solutions (``None``: not solved),
    and the seconds each took."""

    relaxed: Solution
    per_use: Solution | None
    seconds: tuple[float, float]


@dataclass(frozen=True, slots=True, eq=False)
class StatedExact:
    """The exact shared-copy problem, and its reductions when made beforehand."""

    problem: Problem
    reduction: Reduction | None


def _stated_exact(compiled: Compiled, options: AssignOptions, budget: Budget,
                  reduce: bool = True) -> StatedExact:
    """The exact problem (:func:`.exact.exact_problem`), with its reductions when
    ``reduce`` (:func:`solver.parts.reduce_for_parts`, as its solve would make them)."""
    exact = exact_problem(compiled)
    _settle()
    if not reduce:
        return StatedExact(exact, None)
    reduction = reduce_for_parts(exact, _solve_options(options, budget.share(1.0)))
    _settle()
    return StatedExact(exact, reduction)


def _seed_solutions(compiled: Compiled, options: AssignOptions, budget: Budget,
                    tracker: Tracker | None = None) -> Seeds:
    """The relaxed problem, then the per-use model when time is left, each solved
    component by component (:func:`solver.parts.solve_in_parts`)."""
    began = time.perf_counter()
    relaxed = solve_in_parts(compiled.relaxed, _solve_options(options, budget.share(0.25)),
                             quick=True)
    middle = time.perf_counter()
    if relaxed.labels is None:
        raise AssignmentError(f"no layout assignment meets the hard rules: {relaxed.message}")
    per_use = None
    if budget.left() > OPTIONAL_STEP_S:
        if tracker is not None:
            tracker.heard(bound=relaxed.lower_bound)
            tracker.enter("per-use model")
        per_use = solve_in_parts(compiled.problem, _solve_options(options, budget.share(0.4)))
    return Seeds(relaxed, per_use, (middle - began, time.perf_counter() - middle))


def _seeds_added(seeds: Seeds, runs: Runs, laps: Laps, tracker: Tracker
                 ) -> tuple[Solution, Solution | None, tuple[int, ...], int]:
    """The seeds (:func:`_seed_solutions`) added to the runs, then local search on the
    true cost from the best answer so far: the exact solve's start.

    The relaxed problem charges each copy's share to the uses that can share it, so its
    optimum is a lower bound on the true cost; the per-use model charges every use its
    own copy. Which of the two optima starts the exact solve better depends on the
    module, and the start decides the exact solve's time: on deep models the relaxed one
    (improved by the local search, the exact optimum itself, where CP-SAT took 20 s from
    the per-use one); on flax_resnet_train/cpu the per-use one (the exact optimum; 17 s
    from the relaxed one). Both are solved, the relaxed one only as far as its first tries
    and separators go, the per-use one only when time is left. Returns both solutions (the
    per-use one ``None`` when not solved), the improved answer and the local search's
    moves."""
    relaxed, per_use = seeds.relaxed, seeds.per_use
    laps.add((("relaxed", round(seeds.seconds[0] * 1000, 3)),))
    laps.add(relaxed.timings_ms, "relaxed.")
    assert relaxed.labels is not None
    runs.add("bound", relaxed.labels, evaluate_labels(runs.compiled.problem, relaxed.labels))
    tracker.heard(best=min(runs.estimated().values()), bound=relaxed.lower_bound)
    if per_use is not None:
        laps.add((("solve", round(seeds.seconds[1] * 1000, 3)),))
        laps.add(per_use.timings_ms, "solve.")
        if per_use.labels is not None:
            runs.add("cp-sat", per_use.labels, per_use.objective)
    laps.skip()
    improved, moves = runs.improve_cheapest(starts=2)
    laps.lap("local_search")
    return relaxed, per_use, improved, moves


def _solve_exact(compiled: Compiled, options: AssignOptions, budget: Budget,
                 stated: StatedExact, start: tuple[int, ...], relaxed: Solution, runs: Runs,
                 laps: Laps, tracker: Tracker) -> tuple[int, str]:
    """The exact shared-copy problem from ``start``, component by component
    (:func:`solver.parts.solve_in_parts`: the start where it meets the trivial bound,
    bucket elimination, else CP-SAT from the start). Returns the best lower bound on the
    true cost (the exact solve's, or the relaxed problem's) and the statuses of the solves
    that gave it."""
    exact = stated.problem
    solution = solve_in_parts(exact, _solve_options(options, budget.share(1.0), EXACT_SUBSOLVERS),
                              hint=exact_labels(exact, start), report=tracker.heard,
                              reduction=stated.reduction)
    laps.lap("exact")
    laps.add(solution.timings_ms, "exact.")
    bounds = [solution.lower_bound if solution.lower_bound is not None
              else trivial_bound(exact)]
    if solution.labels is not None:
        runs.add("exact", tuple(solution.labels[:compiled.problem.num_nodes]))
    if solution.status == Status.OPTIMAL:
        return max(bounds), solution.status.value
    bounds.append(relaxed.lower_bound if relaxed.lower_bound is not None
                  else trivial_bound(compiled.relaxed))
    return max(bounds), f"exact {solution.status.value}, relaxed {relaxed.status.value}"


def _rewrite_cheapest(module: Module, compiled: Compiled, cm: CostModel, runs: Runs,
                      options: AssignOptions, instructions: int) -> Rewritten:
    """Rewrite and score (the true cost) in order of the fast estimate; a run whose
    estimate is no better than the best scored one is reported by its estimate. Where the
    cheapest rewrite has elementwise ops predicted to write over their operand (a cost the
    assignment does not see, :mod:`.in_place`), the all-default and greedy answers are
    rewritten too and the one with the least predicted time (true cost plus in-place
    writes) is returned: its true cost may then be above the bound (status FEASIBLE). Where
    that one still has such writes (and the entry calls no library: :func:`_has_custom_calls`),
    the in-place descent (:func:`_in_place_descent`, at most :func:`in_place_trials`
    rewrites) relabels around them; an answer it finds is run ``in-place``."""
    estimate = runs.estimated()
    true_costs: dict[str, int] = {}
    built: dict[str, tuple[Module, ScoreResult, tuple[InsertedCopy, ...]]] = {}

    def rewrite(labels: tuple[int, ...]) -> tuple[Module, ScoreResult, tuple[InsertedCopy, ...]]:
        chosen = [compiled.candidates[i][int(label)] for i, label in enumerate(labels)]
        plan, inserted = plan_for(compiled.graph, cm, chosen, options.emit_bitcasts)
        rewritten = apply_layouts(module, plan)
        return rewritten, score(rewritten, cm.target), inserted

    def build(name: str) -> None:
        built[name] = rewrite(runs.labels[name])
        true_costs[name] = built[name][1].total

    for name in runs.by_estimate():
        if built and estimate[name] >= min(true_costs.values()):
            true_costs[name] = estimate[name]
            continue
        build(name)
    best = min(built, key=lambda k: (built[k][1].total, _ORDER.index(k)))
    if built[best][1].in_place:
        for name in ("default", "greedy"):
            if name in runs.labels and name not in built:
                build(name)
        best = min(built, key=lambda k: (built[k][1].predicted, built[k][1].total,
                                         _ORDER.index(k)))
        if built[best][1].in_place and not _has_custom_calls(module.entry):
            labels = _in_place_descent(module, compiled, runs.labels[best], built[best][1],
                                       lambda trial: rewrite(trial)[1],
                                       in_place_trials(instructions, options.time_limit_s))
            if labels is not None:
                runs.add("in-place", labels)
                build("in-place")
                best = "in-place"
    rewritten, scored, inserted = built[best]
    return Rewritten(best, rewritten, scored, inserted, true_costs)


#: The in-place descent's rewrites: each is scored whole, about this many instructions a
#: second (measured: 0.5 s to score a 3,500-instruction model), and the descent may take
#: this share of ``time_limit_s`` (as a count, so the answer does not depend on the clock),
#: between the least and the most number of rewrites.
IN_PLACE_INSTRUCTIONS_PER_S = 4000
IN_PLACE_SHARE = 0.2
IN_PLACE_TRIALS = (2, 48)
#: The descent moves no array to a layout whose minor dim is shorter than this (and than
#: its own): XLA:CPU's loops over such layouts run far slower than the model prices them
#: (measured, 15 rounds in 3 processes: ``exponential`` of ``f32[2,4,64,64]`` laid out
#: ``{1,0,3,2}`` 4.9x its time in ``{3,2,1,0}``; of ``f32[2048,16]`` and ``f32[1024,32]``
#: row-major 1.55-1.58x the column-major one; minor dims of 64 and more alike).
IN_PLACE_MIN_MINOR = 64


def in_place_trials(instructions: int, time_limit_s: float) -> int:
    """How many rewrites the in-place descent may score (see :data:`IN_PLACE_SHARE`)."""
    fits = int(IN_PLACE_SHARE * time_limit_s * IN_PLACE_INSTRUCTIONS_PER_S / max(1, instructions))
    return max(IN_PLACE_TRIALS[0], min(IN_PLACE_TRIALS[1], fits))


def _in_place_descent(module: Module, compiled: Compiled, start: tuple[int, ...],
                      scored: ScoreResult, rescore, trials: int) -> tuple[int, ...] | None:
    """Labels that take in-place writes off their operands' buffers at a lower predicted
    time than ``start``'s, or None. A move relabels an op that writes over an operand
    (costliest first) or one of its operands, never to a short minor dim
    (:data:`IN_PLACE_MIN_MINOR`). A move whose layout cost (the fast estimate)
    rises by the write's price or more is not tried; the others are rewritten and scored
    whole by ``rescore`` (XLA's buffer assignment replayed, :mod:`.in_place`), at most
    ``trials`` of them, and the first that lowers the predicted time is kept, until none
    does."""
    labels = start = tuple(start)
    best, base = scored.predicted, true_cost(compiled, start)
    while trials > 0:
        for trial, estimate in _in_place_moves(compiled, module.entry, scored, labels, base):
            trials -= 1
            result = rescore(trial)
            if result.predicted < best:
                labels, best, scored, base = trial, result.predicted, result, estimate
                break
            if trials == 0:
                break
        else:
            break
    return None if labels == start else labels


def _in_place_moves(compiled: Compiled, entry: Computation, scored: ScoreResult,
                    labels: tuple[int, ...], base: int
                    ) -> Iterator[tuple[tuple[int, ...], int]]:
    """The descent's moves from ``labels`` (layout cost ``base``), in order: ``(trial
    labels, their layout cost)`` for each free node of an op that writes over an operand and
    each label it may take, left out a short minor dim and a rise in layout cost as large as
    the write's price."""
    for node, stake in _in_place_nodes(compiled, entry, scored):
        for alt in range(len(compiled.candidates[node])):
            if alt == labels[node] or _shorter_minor(compiled, node, labels[node], alt):
                continue
            trial = labels[:node] + (alt,) + labels[node + 1:]
            estimate = true_cost(compiled, trial)
            if estimate - base < stake:
                yield trial, estimate


def _has_custom_calls(entry: Computation) -> bool:
    """Does ``entry`` call a library? XLA:CPU runs LAPACK's solvers in place on copies of
    their operands, and around them the replay still misses XLA's buffer assignment more
    often than elsewhere (``linalg_custom_calls``' variants: 171 of 216 ops agree, a select
    over a broadcast predicted in place where XLA gives it a buffer of its own): the descent
    would chase writes that are not there."""
    return any(i.opcode == "custom-call" for i in entry.instructions)


def _shorter_minor(compiled: Compiled, node: int, now: int, alt: int) -> bool:
    """Would label ``alt`` give node ``node`` a minor dim shorter than
    :data:`IN_PLACE_MIN_MINOR` and than label ``now``'s?"""
    dims = compiled.graph.nodes[node].shape.dims

    def minor(label: int) -> int:
        order = compiled.candidates[node][label].minor_to_major
        return dims[order[0]] if order else 1

    return minor(alt) < min(IN_PLACE_MIN_MINOR, minor(now))


def _in_place_nodes(compiled: Compiled, entry: Computation,
                    scored: ScoreResult) -> list[tuple[int, int]]:
    """``(node, price)``: the free nodes of the ops that write over an operand, costliest
    first, each followed by its operands', with the price of that write."""
    graph = compiled.graph
    by = {i.name: i for i in entry.instructions}
    nodes: dict[int, int] = {}
    for term in sorted((t for t in scored.terms if t.kind == "in_place"), key=lambda t: -t.ns):
        instr = by.get(term.instruction)
        for name in [term.instruction, *(instr.operands if instr is not None else ())]:
            node = graph.position_node.get((entry.name, name, ()))
            if node is not None and graph.nodes[node].pinned is None and node not in nodes:
                nodes[node] = term.ns
    return list(nodes.items())


def _layouts(module: Module) -> tuple[tuple[str, str, str], ...]:
    return tuple((comp.name, instr.name, str(instr.shape))
                 for comp in module.computations for instr in comp.instructions)


def _entry_layouts(original: Module, module: Module, options: AssignOptions) -> dict:
    """The entry computation's layouts, when some were left to the assignment."""
    if options.entry_layout != EntryLayout.AUTO and not _has_auto(original):
        return {}
    return {"parameters": [str(p.shape) for p in module.entry.parameter_instructions()],
            "result": str(module.entry.root_instruction.shape)}


def _violations(module: Module) -> tuple[str, ...]:
    """Structural errors, then layout violations, of the returned module."""
    errors = tuple(str(e) for e in collect_errors(module))
    return errors + tuple(str(v) for v in verify_layouts(module))


def _has_auto(module: Module) -> bool:
    layout = module.attr("entry_computation_layout")
    if not isinstance(layout, ProgramShape):
        return False
    shapes = list(layout.parameters) + [layout.result]
    return any(leaf.layout is None and leaf.rank > 0 for s in shapes for _, leaf in leaf_arrays(s))
