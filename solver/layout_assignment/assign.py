"""Layout assignment end to end: ``assign(module, options)`` and ``score(module, target)``.

``assign``: layout graph -> candidates -> labeling problem -> baselines
(all-default, greedy) -> CP-SAT (through :func:`solver.solve.solve`) on the
per-use model -> local search on the *true* cost (the rewritten module scored,
where one copy serves every use of a value in a layout; see :mod:`.compile` and
:mod:`.shared_copies`) from the best answer so far -> CP-SAT on the exact
shared-copy problem (:mod:`.exact`; reduced and modelled in a thread during the
per-use solve), started from that answer -> if not proven, the relaxed problem
for a bound -> the best answer by true cost -> rewrite -> verify.
``status`` is ``OPTIMAL`` only when that true cost equals the bound: every
claim is about the true cost, over the candidate layouts considered.

``score``: the cost of the layouts a module already has (e.g. XLA's
``after_layout``) under the same model: every explicit ``copy`` is charged,
duplicates and no-op copies included; bitcast transposes/reshapes are free.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from hlo.ir import Module
from hlo.layout_verifier import verify_layouts
from hlo.passes.apply_layouts import Conversion, LayoutPlan, apply_layouts
from hlo.shape import Layout
from hlo.target import Target, load_target
from hlo.verifier import collect_errors
from solver.layout_assignment.baselines import default_labels, greedy_labels
from solver.layout_assignment.candidates import candidate_sets
from solver.layout_assignment.compile import Compiled, compile_problem, evaluate, view_of
from solver.layout_assignment.costs import Candidate, CostModel, Term
from solver.layout_assignment.layout_graph import LayoutGraph, build_graph
from solver.layout_assignment.normalization import (
    NOTHING_NORMALIZED,
    Normalization,
    normalization_passes,
    normalize,
)
from solver.layout_assignment.exact import exact_labels, exact_problem
from solver.layout_assignment.options import AssignOptions
from solver.layout_assignment.shared_copies import improve, true_cost
from solver.options import SolveOptions
from solver.problem import Problem, Status
from solver.problem import evaluate as evaluate_labels
from solver.solve import Prepared, prepare, solve, trivial_bound

__all__ = ["AssignResult", "ScoreResult", "assign", "score", "AssignmentError"]


class AssignmentError(ValueError):
    """No assignment satisfies the hard rules (names the instructions involved)."""


@dataclass(frozen=True, slots=True)
class ScoreResult:
    module: str
    target: str
    total: int
    terms: tuple[Term, ...]
    broken: tuple[str, ...] = ()

    def breakdown(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for t in self.terms:
            out[t.kind] = out.get(t.kind, 0) + t.ns
        return dict(sorted(out.items()))

    def to_json(self) -> dict:
        return {"module": self.module, "target": self.target, "cost": self.total,
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
    inserted: tuple[dict, ...]
    entry_layouts: dict
    timings_ms: dict[str, float] = field(default_factory=dict)
    violations: tuple[str, ...] = ()
    nodes: int = 0
    relations: int = 0
    normalization: Normalization = NOTHING_NORMALIZED
    #: The laid-out module before normalization (``module`` when no pass ran).
    assigned: Module | None = None
    #: The per-use labeling model's own result: its solve status and proven bound
    #: (on the model's cost, not the true one).
    model_status: str = ""
    model_lower_bound: int | None = None
    #: Status of the solve of the relaxed problem that gives ``lower_bound``.
    bound_status: str = ""
    local_search_moves: int = 0

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
    return ScoreResult(module.name, t.name, total, tuple(terms), tuple(broken))


def plan_for(graph: LayoutGraph, cm: CostModel, chosen: list[Candidate],
             emit_bitcasts: bool) -> tuple[LayoutPlan, list[dict]]:
    """The rewrite plan of one labeling, and the inserted conversions for the report."""
    layouts: dict = {}
    formats: dict = {}
    for pos, nid in graph.position_node.items():
        node = graph.nodes[nid]
        c = chosen[nid]
        layouts[pos] = cm.laid_out(node.shape, c).layout
        if c.format and c.format != "NC1HWC0":
            formats[pos] = c.format
    for buf in graph.buffers.buffers:
        if buf.shape.rank == 0:
            for pos in buf.members:
                layouts[pos] = Layout(())
    conversions: list[Conversion] = []
    inserted: list[dict] = []
    seen: set = set()
    for rel in graph.relations:
        if rel.kind != "convert":
            continue
        cu, want = chosen[rel.u], view_of(rel, chosen[rel.v])
        src = cm.laid_out(rel.shape, cu)
        dst = cm.laid_out(rel.shape, want)
        if src == dst and cu.format == want.format:
            continue
        conversions.append(Conversion(rel.computation, rel.instruction, rel.operand, rel.path,
                                      dst.layout, want.format if want.format != "NC1HWC0" else ""))
        key = (rel.computation, rel.value, rel.path, dst, want.format)
        ns, why = cm.conversion(src, cu.format, dst, want.format)
        inserted.append({
            "value": rel.value, "path": list(rel.path), "computation": rel.computation,
            "for": rel.instruction or "ROOT", "operand": rel.operand,
            "from": str(src), "to": str(dst) + (f" ({want.format})" if want.format else ""),
            "bytes": int(cm_bytes(src, dst, cu, want)),
            "cost_ns": 0 if graph.nodes[rel.u].constant else ns * rel.weight,
            "runs": rel.weight,
            "shared": key in seen,
            "why": ("constant re-laid out at compile time" if graph.nodes[rel.u].constant
                    else f"{rel.instruction or 'the root'} needs {want}: {why}"),
        })
        seen.add(key)
    return LayoutPlan(layouts, tuple(conversions), formats, emit_bitcasts), inserted


def cm_bytes(src, dst, cu: Candidate, want: Candidate) -> int:
    from solver.layout_assignment.costs import physical_bytes
    return physical_bytes(src, cu.format) + physical_bytes(dst, want.format)


#: Preference among answers of equal true cost.
_ORDER = ("exact", "cp-sat", "bound", "local-search", "greedy", "default")


def _solve_options(options: AssignOptions, time_limit: float) -> SolveOptions:
    return SolveOptions(time_limit=time_limit, num_workers=options.num_workers,
                        seed=options.seed, heuristic_time=min(2.0, time_limit / 4),
                        presolve="light")


def _prepare_exact(compiled: Compiled, options: SolveOptions) -> tuple[Problem, Prepared, float]:
    """The exact shared-copy problem, prepared for its solve, and the ms it took to state it."""
    began = time.perf_counter()
    exact = exact_problem(compiled)
    stated = round((time.perf_counter() - began) * 1000, 3)
    return exact, prepare(exact, options), stated


def _improve_best(compiled: Compiled, runs: dict[str, tuple[int, ...]], fast: dict[str, int]
                  ) -> tuple[tuple[int, ...], int]:
    """Local search on the true cost from the cheapest run (``fast``: true costs, filled
    in); an improvement is added as run ``local-search``. Returns its answer and moves."""
    fast.update({k: true_cost(compiled, v) for k, v in runs.items() if k not in fast})
    start = min(runs, key=lambda k: (fast[k], _ORDER.index(k)))
    improved, moves = improve(compiled, runs[start])
    if moves:
        runs["local-search"] = improved
        fast["local-search"] = true_cost(compiled, improved)
    return improved, moves


def _labels_to_candidates(compiled: Compiled, labels) -> list[Candidate]:
    return [compiled.candidates[i][int(l)] for i, l in enumerate(labels)]


def assign(module: Module, options: AssignOptions = AssignOptions()) -> AssignResult:
    """Assign layouts to ``module`` (see the module docstring)."""
    timings: dict[str, float] = {}
    clock = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        timings[name] = round((now - clock) * 1000, 3)
        clock = now

    target = _target(options.target)
    passes = normalization_passes(options.normalize, target)
    cm = CostModel(target)
    graph = build_graph(module, entry_auto=options.entry_layout == "auto")
    cands = candidate_sets(graph, cm, cap=options.max_candidates)
    lap("candidates")
    compiled = compile_problem(graph, cands, cm)
    problem = compiled.problem
    lap("build")
    runs: dict[str, tuple[int, ...]] = {"default": default_labels(problem)}
    seeds = sorted({p.node for p in graph.prefs})
    runs["greedy"] = greedy_labels(problem, seeds)
    model_cost = {k: evaluate_labels(problem, v) for k, v in runs.items()}
    lap("baselines")
    # ``time_limit`` is one budget for all solves. Each share is of the time still
    # left, so a solve that finishes early (proven) hands its rest to the next one.
    deadline = time.monotonic() + options.time_limit

    def budget(share: float) -> float:
        return max(0.05, (deadline - time.monotonic()) * share)

    # The true cost (copies shared by their uses) as a problem of its own: its optimum is
    # the true optimum and its proven bound a bound on the true cost. Its reductions and
    # model need no start, so they are made in a thread while CP-SAT (which releases the
    # GIL) solves the per-use model; that model is prepared first, as its Python work
    # would otherwise compete with the thread's for the GIL.
    per_use = _solve_options(options, budget(0.4))
    per_use_prepared = prepare(problem, per_use)
    with ThreadPoolExecutor(max_workers=1) as pool:
        ahead = pool.submit(_prepare_exact, compiled, _solve_options(options, budget(1.0)))
        solution = solve(problem, per_use, prepared=per_use_prepared)
        lap("solve")
        timings.update({f"solve.{k}": v for k, v in solution.timings_ms})
        if solution.labels is None:
            raise AssignmentError(f"no layout assignment meets the hard rules: {solution.message}")
        runs["cp-sat"] = solution.labels
        model_cost["cp-sat"] = solution.objective
        # The best answer so far by true cost, improved by local search, starts the
        # exact solve (whose heuristic alone starts far worse on large modules).
        fast: dict[str, int] = {}
        improved, moves = _improve_best(compiled, runs, fast)
        lap("local_search")
        exact, prepared, exact_ms = ahead.result()
    lap("exact_wait")
    timings["exact_build"] = exact_ms
    exact_solution = solve(exact, _solve_options(options, budget(0.75)),
                           hint=exact_labels(exact, improved), prepared=prepared)
    lap("exact")
    timings.update({f"exact.{k}": v for k, v in exact_solution.timings_ms})
    n = problem.num_nodes
    bounds = [exact_solution.lower_bound if exact_solution.lower_bound is not None
              else trivial_bound(exact)]
    if exact_solution.labels is not None:
        runs["exact"] = tuple(exact_solution.labels[:n])
    bound_status = exact_solution.status.value
    if exact_solution.status != Status.OPTIMAL:
        relaxed = compiled.relaxed
        assert relaxed is not None
        bound_solution = solve(relaxed, _solve_options(options, budget(1.0)))
        lap("bound")
        timings.update({f"bound.{k}": v for k, v in bound_solution.timings_ms})
        bounds.append(bound_solution.lower_bound if bound_solution.lower_bound is not None
                      else trivial_bound(relaxed))
        if bound_solution.labels is not None:
            runs["bound"] = bound_solution.labels
        bound_status = f"exact {bound_status}, relaxed {bound_solution.status.value}"
    lower = max(bounds)
    fast.update({k: true_cost(compiled, v) for k, v in runs.items() if k not in fast})
    if min(fast.values()) > lower:
        moves += _improve_best(compiled, runs, fast)[1]
    lap("polish")
    # Rewrite and score (the true cost) in order of the fast estimate; a run whose
    # estimate is no better than the best scored one is reported by its estimate.
    true_cost_of: dict[str, int] = {}
    built: dict[str, tuple[Module, ScoreResult, list[dict]]] = {}
    for name in sorted(runs, key=lambda k: (fast[k], _ORDER.index(k))):
        if built and fast[name] >= min(true_cost_of.values()):
            true_cost_of[name] = fast[name]
            continue
        chosen = _labels_to_candidates(compiled, runs[name])
        plan, inserted = plan_for(graph, cm, chosen, options.emit_bitcasts)
        rewritten = apply_layouts(module, plan)
        sc = score(rewritten, target)
        true_cost_of[name] = sc.total
        built[name] = (rewritten, sc, inserted)
    best = min(built, key=lambda k: (built[k][1].total, _ORDER.index(k)))
    rewritten, sc, inserted = built[best]
    lap("rewrite")
    assigned = rewritten
    if passes:
        rewritten, normalization = normalize(rewritten, passes)
    else:
        normalization = NOTHING_NORMALIZED
    lap("normalize")
    violations = _violations(rewritten) if options.verify else ()
    lap("verify")
    chosen = _labels_to_candidates(compiled, runs[best])
    layouts = []
    for comp in rewritten.computations:
        for instr in comp.instructions:
            layouts.append((comp.name, instr.name, str(instr.shape)))
    entry_layouts = {}
    if options.entry_layout == "auto" or _has_auto(module):
        entry_layouts = {
            "parameters": [str(p.shape) for p in rewritten.entry.parameter_instructions()],
            "result": str(rewritten.entry.root_instruction.shape),
        }
    # Proven optimal for the true cost only when it meets the bound on the true cost.
    status = Status.OPTIMAL.value if sc.total <= lower else Status.FEASIBLE.value
    return AssignResult(
        module=rewritten, original=module, target=target.name, options=options,
        status=status, chosen_by=best, objective=sc.total,
        model_objective=evaluate_labels(problem, runs[best]) or 0, lower_bound=lower,
        baselines={k: true_cost_of[k] for k in ("default", "greedy")},
        baselines_model={k: v for k, v in model_cost.items() if v is not None},
        model_status=solution.status.value, model_lower_bound=solution.lower_bound,
        bound_status=bound_status, local_search_moves=moves,
        score=sc, layouts=tuple(layouts), inserted=tuple(inserted),
        entry_layouts=entry_layouts, timings_ms=timings, violations=violations,
        nodes=problem.num_nodes, relations=len(graph.relations), normalization=normalization,
        assigned=assigned)


def _violations(module: Module) -> tuple[str, ...]:
    """Structural errors, then layout violations, of the returned module."""
    errors = tuple(str(e) for e in collect_errors(module))
    return errors + tuple(str(v) for v in verify_layouts(module))


def _has_auto(module: Module) -> bool:
    from hlo.buffers import value_leaves
    from hlo.ir import ProgramShape
    layout = module.attr("entry_computation_layout")
    if not isinstance(layout, ProgramShape):
        return False
    shapes = list(layout.parameters) + [layout.result]
    return any(leaf.layout is None and leaf.rank > 0 for s in shapes for _, leaf in value_leaves(s))
