"""The CP-SAT model of a labeling problem, built separately from solving it.

Formulation (measured in DESIGN §7; see ``bench/iopddl.py``):

* ``x[n][a]``: node ``n`` takes label ``a``; exactly one per node; forbidden
  labels get no variable.
* Edge costs, per distinct positive cost level ``l`` of the table, a boolean
  ``y[l]`` that must be true when the chosen pair costs at least ``l``:
  ``x[u][a] -> y[l] or OR{x[v][b] : M[a, b] < l}`` for the levels occurring in
  row ``a`` (``y[l] -> y[l']`` for ``l' < l`` covers the rest); the objective
  charges the increments between levels. Tables whose level clauses would be too large
  fall back to one boolean per costly pair.
* Forbidden pairs: ``x[u][a] -> OR{x[v][b] : M[a, b] allowed}``.
* Ties: ``x[u][a] -> x[v][mapping[a]]`` and back.
* Memory, at each binding check (:mod:`solver.memory`): the live extras fit in
  the cap. When the checks × labels matrix is small (few nodes, e.g. after
  fusion), as merged per-node rows over the label booleans with duplicate and
  neighbour-dominated rows dropped (:func:`solver.memory.label_rows`); else
  directly when small; otherwise as a running total
  ``m[j] = m[j-1] + (uses starting) - (uses ending)``, so each use appears in
  at most two constraints instead of once per check it is live at.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from ortools.sat.python import cp_model

from solver import memory as memory_checks
from solver.errors import BuildTimeout, ModelInvalid
from solver.options import SolveOptions
from solver.problem import FORBIDDEN, Problem, Status
from solver.progress import SearchCallback

#: Largest literal count of one edge's level clauses before falling back to pairs.
LEVEL_LITERALS_LIMIT = 40_000
#: Largest number of (check, use, label) terms written as direct memory sums.
DIRECT_MEMORY_TERMS = 400_000
#: Largest number of terms in merged per-node memory rows (:func:`solver.memory.label_rows`).
LABEL_ROW_TERMS = 2_000_000


@dataclass(frozen=True, slots=True)
class RawResult:
    """What CP-SAT said, in plain values (no CP-SAT object leaves this module)."""

    status: Status
    labels: tuple[int, ...] | None
    objective: int | None
    bound: int | None
    wall_seconds: float
    work: float = 0.0  # CP-SAT's deterministic time spent


class LabelModel:
    """A built model: the CP-SAT model plus the label variables to read back."""

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        self.model = cp_model.CpModel()
        # x[n][a]: node n takes label a; None where the label is forbidden.
        self.x: list[list[cp_model.IntVar | None]] = []
        # How to hint the auxiliary variables from the labels (see :func:`add_hint`):
        # level booleans (u, v, table oriented (k_u, k_v), [(level, var)]), pair
        # booleans (z, u, a, v, b), running memory totals (var, uses starting, uses ending).
        self.level_vars: list[tuple[int, int, np.ndarray, list[tuple[int, cp_model.IntVar]]]] = []
        self.pair_vars: list[tuple[cp_model.IntVar, int, int, int, int]] = []
        self.running_vars: list[tuple[cp_model.IntVar, list[int], list[int]]] = []
        self.checks: memory_checks.MemoryChecks | None = None
        self.objective_terms: list[tuple[cp_model.IntVar, int]] = []
        #: What :func:`_small_table` found, per distinct small table.
        self.small_tables: dict[tuple, tuple] = {}


def build_model(problem: Problem, hint: tuple[int, ...] | None = None,
                deadline: float | None = None) -> LabelModel:
    """Variables, constraints and objective for ``problem``; optional complete hint
    (or add it later with :func:`add_hint`).

    Raises :class:`BuildTimeout` when ``deadline`` (``time.perf_counter()``) passes.
    """
    built = LabelModel(problem)
    model = built.model

    # Label booleans, one-hot per node; unary costs go straight to the objective.
    for costs in problem.unary:
        row = [model.new_bool_var("") if c < FORBIDDEN else None for c in costs.tolist()]
        model.add_exactly_one([v for v in row if v is not None])
        built.x.append(row)
        for a, var in enumerate(row):
            if var is not None and costs[a]:
                built.objective_terms.append((var, int(costs[a])))

    # Pairwise tables: level booleans (tight), or pair booleans for huge tables.
    for k, edge in enumerate(problem.edges):
        _add_edge(built, k, edge.u, edge.v, edge.costs, deadline)
        if deadline is not None and k % 256 == 255 and time.perf_counter() > deadline:
            raise BuildTimeout(f"model building stopped after {k + 1} edges")

    # Ties: the mapped label follows, both ways.
    for tie in problem.ties:
        _add_tie(built, tie.u, tie.v, tie.mapping)

    # Memory at every binding check.
    checks = memory_checks.analyze(problem)
    if checks is not None:
        if checks.infeasible_time is not None:
            model.add_bool_or([])  # constant parts alone break the limit
        else:
            _add_memory(built, checks)

    model.minimize(cp_model.LinearExpr.weighted_sum(
        [v for v, _ in built.objective_terms], [c for _, c in built.objective_terms]))
    if hint is not None:
        add_hint(built, hint)
    return built


def add_hint(built: LabelModel, hint: tuple[int, ...]) -> None:
    """A complete hint: the labels, and every auxiliary variable at the value
    those labels give it. Once per model."""
    pairs = [(var.index, int(hint[node] == a)) for node, row in enumerate(built.x)
             for a, var in enumerate(row) if var is not None]
    for u, v, table, levels in built.level_vars:
        chosen = int(table[hint[u], hint[v]])
        pairs.extend((var.index, int(chosen >= level)) for level, var in levels)
    pairs.extend((z.index, int(hint[u] == a and hint[v] == b))
                 for z, u, a, v, b in built.pair_vars)
    if built.running_vars:
        checks, memory = built.checks, built.problem.memory
        assert checks is not None
        running = 0
        for var, starting, ending in built.running_vars:
            running += sum(int(checks.extras[i][hint[memory[i].node]]) for i in starting)
            running -= sum(int(checks.extras[i][hint[memory[i].node]]) for i in ending)
            pairs.append((var.index, running))
    # Every hinted variable is a fresh (non-negated) one: write the hint in two
    # bulk appends instead of one call per variable.
    solution_hint = built.model.proto.solution_hint
    solution_hint.vars.extend([i for i, _ in pairs])
    solution_hint.values.extend([value for _, value in pairs])


#: Tables up to this many entries are handled as Python lists: on the small
#: tables layout assignment produces (mostly 6x2 and 2x2), per-call numpy
#: overhead was most of the model building time.
SMALL_TABLE = 64


def _add_edge(built: LabelModel, k: int, u: int, v: int, table: np.ndarray,
              deadline: float | None = None) -> None:
    model, xu, xv = built.model, built.x[u], built.x[v]
    if table.size <= SMALL_TABLE:
        # Layout assignment repeats the same few small tables thousands of times.
        key = (table.shape, table.tobytes())
        known = built.small_tables.get(key)
        if known is None:
            known = built.small_tables[key] = _small_table(table)
        allowed_rows, levels, by_u, by_v = known
        for a, allowed in allowed_rows:
            if xu[a] is not None:
                model.add_bool_or([xu[a].Not()] + [xv[b] for b in allowed if xv[b] is not None])
        if not levels:
            return
    else:
        finite = table < FORBIDDEN
        for a in np.flatnonzero(~finite.all(axis=1)):
            if xu[a] is not None:
                allowed = [xv[b] for b in np.flatnonzero(finite[a]) if xv[b] is not None]
                model.add_bool_or([xu[a].Not()] + allowed)
        costly = finite & (table > 0)
        if not costly.any():
            return
        levels = np.unique(table[costly]).tolist()
        # Level clauses cost, rows over u or over v: pick the smaller.
        by_u, by_v = _level_layout(table), _level_layout(table.T)
        if min(by_u[0], by_v[0]) > LEVEL_LITERALS_LIMIT:
            _add_pair_booleans(built, k, u, v, table, costly, deadline)
            return
    _, order, starts = by_u
    if by_v[0] < by_u[0]:
        u, v, table, xu, xv = v, u, table.T, xv, xu
        _, order, starts = by_v
    # One boolean per level; y[l] -> y[previous level] keeps them ordered.
    y: dict[int, cp_model.IntVar] = {}
    previous_level, previous_var = 0, None
    for level in levels:
        var = model.new_bool_var("")
        built.objective_terms.append((var, level - previous_level))
        if previous_var is not None:
            model.add_implication(var, previous_var)
        y[level] = var
        previous_level, previous_var = level, var
    built.level_vars.append((u, v, table, list(y.items())))
    # Row a needs a clause only for the levels that occur in it: a level l between
    # two of its values l0 < l <= l1 follows from the clause of l1 and the ordering.
    for a, row_starts in enumerate(starts):
        if deadline is not None and a % 64 == 63 and time.perf_counter() > deadline:
            raise BuildTimeout(f"model building stopped inside edge {k}")
        if xu[a] is None or not row_starts:
            continue
        ranked = [xv[b] for b in order[a]]
        not_a = xu[a].Not()
        for j, level in row_starts:
            cheaper = [lit for lit in ranked[:j] if lit is not None]
            model.add_bool_or([not_a, y[level]] + cheaper)


def _add_pair_booleans(built: LabelModel, k: int, u: int, v: int, table: np.ndarray,
                       costly: np.ndarray, deadline: float | None) -> None:
    """One boolean per costly pair: z -> chosen pair (a, b) costs M[a, b]."""
    model, xu, xv = built.model, built.x[u], built.x[v]
    for count, (a, b) in enumerate(zip(*np.nonzero(costly))):
        if count % 4096 == 4095 and deadline is not None and time.perf_counter() > deadline:
            raise BuildTimeout(f"model building stopped inside edge {k}")
        if xu[a] is None or xv[b] is None:
            continue
        z = model.new_bool_var("")
        model.add_bool_or([xu[a].Not(), xv[b].Not(), z])
        built.objective_terms.append((z, int(table[a, b])))
        built.pair_vars.append((z, u, int(a), v, int(b)))


#: Level-clause layout of a table with rows over its first axis: the literal
#: count, per row the column order by ascending cost, and per row the
#: ``(position, level)`` pairs where a new positive allowed level starts.
LevelLayout = tuple[int, list[list[int]], list[list[tuple[int, int]]]]


def _level_layout(table: np.ndarray) -> LevelLayout:
    """:data:`LevelLayout` of a large table, vectorized."""
    order = np.argsort(table, axis=1, kind="stable")
    ranked = np.take_along_axis(table, order, axis=1)
    new = np.ones(ranked.shape, bool)
    new[:, 1:] = ranked[:, 1:] != ranked[:, :-1]
    new &= (ranked > 0) & (ranked < FORBIDDEN)
    rows, cols = np.nonzero(new)
    literals = int(cols.sum()) + 2 * len(cols)
    bounds = np.searchsorted(rows, np.arange(table.shape[0] + 1)).tolist()
    cols_list, levels = cols.tolist(), ranked[rows, cols].tolist()
    starts = [list(zip(cols_list[lo:hi], levels[lo:hi])) for lo, hi in zip(bounds, bounds[1:])]
    return literals, order.tolist(), starts


def _small_table(table: np.ndarray) -> tuple[list[tuple[int, list[int]]], list[int],
                                              LevelLayout, LevelLayout]:
    """What the model needs of a small table: the allowed columns of each row
    with a forbidden entry, the positive levels, and both level layouts."""
    rows = table.tolist()
    allowed_rows = [(a, [b for b, c in enumerate(row) if c < FORBIDDEN])
                    for a, row in enumerate(rows) if max(row) >= FORBIDDEN]
    levels = sorted({c for row in rows for c in row if 0 < c < FORBIDDEN})
    return (allowed_rows, levels, _level_layout_small(rows),
            _level_layout_small([list(c) for c in zip(*rows)]))


def _level_layout_small(rows: list[list[int]]) -> LevelLayout:
    """:data:`LevelLayout` of a small table given as lists (same result as
    :func:`_level_layout`: a stable sort, so equal costs keep column order)."""
    literals, orders, starts = 0, [], []
    for row in rows:
        order = sorted(range(len(row)), key=row.__getitem__)
        ranked = [row[b] for b in order]
        row_starts = [(j, c) for j, c in enumerate(ranked)
                      if 0 < c < FORBIDDEN and (j == 0 or c != ranked[j - 1])]
        literals += sum(j for j, _ in row_starts) + 2 * len(row_starts)
        orders.append(order)
        starts.append(row_starts)
    return literals, orders, starts


def _add_tie(built: LabelModel, u: int, v: int, mapping: tuple[int | None, ...] | None) -> None:
    model, xu, xv = built.model, built.x[u], built.x[v]
    m = list(range(len(xu))) if mapping is None else list(mapping)
    for a, var in enumerate(xu):
        if var is None:
            continue
        if m[a] is None or xv[m[a]] is None:
            model.add(var == 0)
        else:
            model.add_implication(var, xv[m[a]])
    for b, var in enumerate(xv):
        if var is not None:
            sources = [xu[a] for a in range(len(xu)) if m[a] == b and xu[a] is not None]
            model.add_bool_or([var.Not()] + sources)


def _add_memory(built: LabelModel, checks: memory_checks.MemoryChecks) -> None:
    model, problem = built.model, built.problem
    count = len(checks.times)
    if count == 0:
        return
    direct_size = sum(int(np.count_nonzero(checks.extras[i])) * int(checks.last[i] - checks.first[i])
                      for i in range(len(problem.memory)) if checks.first[i] < checks.last[i])
    rows = memory_checks.label_rows(problem, checks)
    if (rows is not None and np.count_nonzero(rows.coefficients) <= LABEL_ROW_TERMS
            and 2 * np.count_nonzero(rows.coefficients) <= direct_size):
        # Merged per-node rows: few, and each one a plain knapsack over the labels.
        # Only when merging pays (P: 100M direct terms, 0.64M merged; V: 60k, 51k).
        columns = [(node, a) for node, row in enumerate(built.x) for a in range(len(row))]
        for coefficients, cap in zip(rows.coefficients, rows.caps.tolist()):
            nonzero = np.flatnonzero(coefficients).tolist()
            pairs = [(built.x[columns[c][0]][columns[c][1]], int(coefficients[c])) for c in nonzero]
            pairs = [(var, weight) for var, weight in pairs if var is not None]
            model.add(cp_model.LinearExpr.weighted_sum([p[0] for p in pairs], [p[1] for p in pairs])
                      <= cap)
        return
    # Per use: its extra usage as a linear expression of the label booleans.
    terms: dict[int, cp_model.LinearExpr] = {}
    widest: dict[int, int] = {}
    direct_size = 0
    for i, use in enumerate(problem.memory):
        if checks.first[i] >= checks.last[i]:
            continue
        extra = checks.extras[i]
        row = built.x[use.node]
        pairs = [(row[a], int(e)) for a, e in enumerate(extra) if e and row[a] is not None]
        if not pairs:
            continue
        terms[i] = cp_model.LinearExpr.weighted_sum([p[0] for p in pairs], [p[1] for p in pairs])
        widest[i] = max(p[1] for p in pairs)
        direct_size += len(pairs) * int(checks.last[i] - checks.first[i])
    starting: list[list[int]] = [[] for _ in range(count + 1)]
    ending: list[list[int]] = [[] for _ in range(count + 1)]
    for i in terms:
        starting[checks.first[i]].append(i)
        ending[checks.last[i]].append(i)
    if direct_size <= DIRECT_MEMORY_TERMS:
        live: set[int] = set()
        for j in range(count):
            live.difference_update(ending[j])
            live.update(starting[j])
            if live:
                model.add(sum(terms[i] for i in sorted(live)) <= int(checks.caps[j]))
        return
    # Running total: m[j] is the live extra at check j.
    built.checks = checks
    running = None
    live_width = 0
    for j in range(count):
        live_width += sum(widest[i] for i in starting[j]) - sum(widest[i] for i in ending[j])
        m = model.new_int_var(0, max(0, min(int(checks.caps[j]), live_width)), f"m{j}")
        change = sum(terms[i] for i in starting[j]) - sum(terms[i] for i in ending[j])
        model.add(m == (change if running is None else running + change))
        built.running_vars.append((m, starting[j], ending[j]))
        running = m


class _Reporter(cp_model.CpSolverSolutionCallback):
    """Passes each improving solution's objective and each better bound to ``report``."""

    def __init__(self, report: SearchCallback) -> None:
        super().__init__()
        self.report = report
        self.best: int | None = None
        self.bound: int | None = None

    def on_solution_callback(self) -> None:
        objective = int(round(self.objective_value))
        bound = int(np.ceil(self.best_objective_bound - 1e-6))
        if self.best is None or objective < self.best:
            self.best = objective
            self.bound = max(self.bound or bound, min(bound, objective))
            self.report(self.best, self.bound)

    def on_bound(self, value: float) -> None:
        bound = int(np.ceil(value - 1e-6))
        if self.best is not None:
            bound = min(bound, self.best)
        if self.bound is None or bound > self.bound:
            self.bound = bound
            self.report(self.best, bound)


def solve_model(built: LabelModel, options: SolveOptions, time_limit: float,
                report: SearchCallback | None = None) -> RawResult:
    """Run CP-SAT on a built model within ``time_limit`` seconds; ``report`` (when given)
    hears of every improving solution and bound, in the model's own objective."""
    solver = cp_model.CpSolver()
    params = solver.parameters
    params.max_time_in_seconds = max(0.01, time_limit)
    params.num_workers = options.num_workers
    if options.subsolvers and options.num_workers > 1:
        params.subsolvers.extend(options.subsolvers)
    params.random_seed = options.seed
    params.log_search_progress = options.log_search
    if options.num_workers == 1:
        params.linearization_level = 2
    if options.deterministic:
        params.interleave_search = True
    if options.deterministic_time is not None:
        params.max_deterministic_time = options.deterministic_time
    if options.presolve == "light":
        params.symmetry_level = 0
        params.max_presolve_iterations = 1
        params.cp_model_probing_level = 0
        # Smaller interleaved batches: a batch ends with its slowest task, and a
        # proof by the first LP worker then stops the search sooner.
        params.interleave_batch_size = 4
    reporter = None
    if report is not None:
        reporter = _Reporter(report)
        solver.best_bound_callback = reporter.on_bound
    status = solver.solve(built.model, reporter)
    wall = solver.wall_time
    work = solver.response_proto.deterministic_time
    if status == cp_model.MODEL_INVALID:
        raise ModelInvalid(f"CP-SAT rejected the model: {built.model.validate()}")
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        mapped = Status.INFEASIBLE if status == cp_model.INFEASIBLE else Status.UNKNOWN
        bound = None
        if status == cp_model.UNKNOWN and np.isfinite(solver.best_objective_bound):
            bound = int(np.ceil(solver.best_objective_bound - 1e-6))
        return RawResult(mapped, None, None, bound, wall, work)
    labels = []
    for row in built.x:
        chosen = [a for a, var in enumerate(row) if var is not None and solver.boolean_value(var)]
        labels.append(chosen[0])
    objective = int(round(solver.objective_value))
    bound = int(np.ceil(solver.best_objective_bound - 1e-6))
    mapped = Status.OPTIMAL if status == cp_model.OPTIMAL else Status.FEASIBLE
    final = objective if mapped == Status.OPTIMAL else min(bound, objective)
    if reporter is not None and (reporter.best, reporter.bound) != (objective, final):
        # The proof that ends the search comes with no callback of its own.
        reporter.report(objective, final)
    return RawResult(mapped, tuple(labels), objective, min(bound, objective), wall, work)
