"""The dual lower bound on the reduced IOPDDL contest instances, against the
trivial bound and the best known costs.

Each instance is read and reduced as :func:`solver.solve.solve` does, then
:func:`solver.dual_bound.dual_bound_detail` runs on the reduced problem for each
time limit (the reductions' offset is added back). Prints a markdown table;
writes nothing.

    python3 bench/dual_bound.py [--limits 5,20] [--only A,K] [--no-memory]
    python3 bench/dual_bound.py --stages 100 [--only K,U]
    python3 bench/dual_bound.py --only V --limits 2,5 --no-exact
    python3 bench/dual_bound.py --only R,T --limits 7,20 --aim [--pricing]
    python3 bench/dual_bound.py --warm 100 [--only K,R,U]
    python3 bench/dual_bound.py --lp 600 --only V --limits 5,20 [--no-scale]

``--stages N``: instead of time limits, N sweeps (the same work on any machine,
so the numbers do not depend on the load) with the memory multipliers' first
stage alone (the subgradient steps, as before the second stage existed) and
with both stages (the default), each aimed at our cost as in the solver.

``--warm N``: as the solver's last bound after the priced search: first the
priced search's bound (the sweeps :func:`solver.solve._price_sweeps` plans for the
core, not aimed), then N sweeps aimed at our cost, from zeros and from that bound's
multipliers (``start``).

``--no-exact``: the memory multipliers by subgradient steps alone, also where the
memory rows are small enough for the exact (LP) multiplier steps.

``--aim``: each bound aimed at our cost (``target``), as the solver aims its bounds at
its answer's cost.

``--pricing``: the multipliers found as the priced search's bound finds them (``pricing``
of :func:`solver.dual_bound.dual_bound`).

``--no-scale``: no search where the exact steps stop (neither the scale nor the pattern
search over each multiplier), and multipliers to start from go through the exact steps.

``--lp SECONDS``: beside the dual bounds, the LP they are the dual of (the local
polytope with the memory rows; ties as tables of 0 and forbidden entries), solved
by HiGHS within SECONDS: the highest any multipliers and messages can reach. Its
size is the tables' entries; only the small cores solve in minutes.

``ours`` is the cost in ``bench/iopddl_results.json`` (the solver-core table of
BENCHMARKS.md), ``winner`` the contest winner's published cost; gaps are
``(best known - bound) / best known`` with best known = the smaller of the two.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "benchmarks" / "iopddl"
sys.path.insert(0, str(REPO))

import solver.dual_bound as dual  # noqa: E402
import solver.dual_memory as memory_rows  # noqa: E402
from solver.dual_bound import dual_bound_detail  # noqa: E402
from solver.iopddl import read_instance  # noqa: E402
from solver.problem import FORBIDDEN  # noqa: E402
from solver.reductions import reduce_problem  # noqa: E402


def known_costs() -> dict[str, tuple[int | None, int | None]]:
    """Per instance: (our cost from the last solver-core run, the winner's cost)."""
    ours = json.loads((REPO / "bench" / "iopddl_results.json").read_text())
    with open(DATA / "final_results.csv", newline="") as handle:
        rows = {row["TEAM #"]: row for row in csv.DictReader(handle)}
    out = {}
    for name, cost in ((n, r.get("cost")) for n, r in ours.items()):
        winner = rows["team01"].get(name) or None
        out[name] = (cost, None if winner is None else int(winner))
    return out


def smallest_allowed(problem) -> int:
    """Smallest allowed unary per node plus smallest allowed entry per table."""
    return (sum(int(c[c < FORBIDDEN].min()) for c in problem.unary)
            + sum(int(e.costs[e.costs < FORBIDDEN].min()) for e in problem.edges))


def gap(best: int | None, bound: int) -> str:
    return "—" if not best else f"{100 * (best - bound) / best:.1f} %"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limits", default="5,20")
    parser.add_argument("--only", default="")
    parser.add_argument("--no-memory", action="store_true",
                        help="drop the memory rule instead of relaxing it with multipliers")
    parser.add_argument("--stages", type=int, default=0,
                        help="N sweeps with the first multiplier stage alone and with both")
    parser.add_argument("--warm", type=int, default=0,
                        help="N sweeps from zeros and from the priced search's multipliers")
    parser.add_argument("--no-exact", action="store_true",
                        help="no exact (LP) multiplier steps, whatever the rows' size")
    parser.add_argument("--aim", action="store_true",
                        help="aim the bound at our cost, as the solver aims its bounds")
    parser.add_argument("--pricing", action="store_true",
                        help="the multipliers as the priced search's bound finds them")
    parser.add_argument("--no-scale", action="store_true",
                        help="no search where the exact steps stop")
    parser.add_argument("--lp", type=float, default=0.0,
                        help="also solve the LP the bound is the dual of, in this many seconds")
    args = parser.parse_args()
    if args.no_exact:
        memory_rows.EXACT_ENTRIES = -1
    if args.no_scale:
        dual._SCALE_SWEEPS = 0
    if args.stages:
        compare_stages(args.stages, {x for x in args.only.split(",") if x})
        return
    if args.warm:
        compare_starts(args.warm, {x for x in args.only.split(",") if x})
        return
    limits = [float(x) for x in args.limits.split(",")]
    wanted = {x for x in args.only.split(",") if x}
    costs = known_costs()
    head = ["instance", "core nodes", "core edges", "labels (max)", "reduce s", "trivial"]
    for limit in limits:
        head += [f"dual {limit:g} s", "sweeps", "s"]
    head += ["ours", "winner", "gap trivial"] + [f"gap {limit:g} s" for limit in limits]
    if args.lp:
        head += ["LP with memory rows", "LP s", "gap LP"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for path in sorted(DATA.glob("asplos-2025-iopddl-*.json.gz")):
        name = path.name.removeprefix("asplos-2025-iopddl-").removesuffix(".json.gz")
        if wanted and name not in wanted:
            continue
        problem = read_instance(path)
        began = time.perf_counter()
        reduction = reduce_problem(problem)
        reduce_s = time.perf_counter() - began
        core, offset = reduction.problem, reduction.offset
        trivial = smallest_allowed(core) + offset
        ours, winner = costs.get(name, (None, None))
        best = min((c for c in (ours, winner) if c), default=None)
        row = [name, str(core.num_nodes), str(len(core.edges)),
               f"{sum(map(len, core.unary))} ({max(map(len, core.unary), default=0)})",
               f"{reduce_s:.1f}", str(trivial)]
        bounds = []
        for limit in limits:
            began = time.perf_counter()
            aim = None if not args.aim or ours is None else ours - offset
            detail = dual_bound_detail(core, limit, memory=not args.no_memory,
                                       pricing=args.pricing, target=aim)
            seconds = time.perf_counter() - began
            bounds.append(detail.value + offset)
            row += [str(detail.value + offset), f"{detail.sweeps} ({detail.stopped})",
                    f"{seconds:.1f}"]
        row += [str(ours), str(winner), gap(best, trivial)] + [gap(best, b) for b in bounds]
        if args.lp:
            began = time.perf_counter()
            value = local_polytope_lp(core, args.lp)
            row += ["unsolved" if value is None else f"{value + offset:.0f}",
                    f"{time.perf_counter() - began:.1f}",
                    "—" if value is None else gap(best, int(value + offset))]
        print("| " + " | ".join(row) + " |", flush=True)


def local_polytope_lp(problem, seconds: float) -> float | None:
    """The optimum of the local-polytope LP of ``problem`` with its memory rows (HiGHS'
    dual simplex), or ``None`` when unsolved within ``seconds``. Variables: one per
    (node, label) and per (edge, label pair); each node's sum 1, each edge's row and
    column sums its endpoints' variables; a forbidden label or pair bounded to 0."""
    import numpy as np
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix

    tables = dual._pair_tables(problem)
    sizes = np.array([len(u) for u in problem.unary], np.int64)
    start = np.concatenate([[0], np.cumsum(sizes)])
    costs = [np.asarray(u, np.float64) for u in problem.unary]
    rows, cols, vals = [np.repeat(np.arange(len(sizes)), sizes)], [np.arange(start[-1])], []
    vals.append(np.ones(start[-1]))
    row, col = len(sizes), int(start[-1])
    for (u, v), table in tables.items():
        ku, kv = table.shape
        pair = col + np.arange(ku * kv)
        for node, k, label in ((u, ku, np.repeat(np.arange(ku), kv)),
                               (v, kv, np.tile(np.arange(kv), ku))):
            rows += [row + label, row + np.arange(k)]
            cols += [pair, start[node] + np.arange(k)]
            vals += [np.ones(ku * kv), -np.ones(k)]
            row += k
        costs.append(table.ravel().astype(np.float64))
        col += ku * kv
    equal = coo_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                       shape=(row, col)).tocsr()
    c = np.concatenate(costs)
    upper = np.where(c >= FORBIDDEN, 0.0, 1.0)
    c = np.where(c >= FORBIDDEN, 0.0, c)
    memory_rows = memory_matrix(problem, start, col)
    result = linprog(c, A_ub=None if memory_rows is None else memory_rows[0],
                     b_ub=None if memory_rows is None else memory_rows[1], A_eq=equal,
                     b_eq=np.concatenate([np.ones(len(sizes)), np.zeros(row - len(sizes))]),
                     bounds=np.stack([np.zeros_like(upper), upper], axis=1),
                     method="highs-ds", options={"time_limit": seconds})
    return float(result.fun) if result.status == 0 else None


def memory_matrix(problem, start, columns: int):
    """The memory rows (:class:`solver.dual_memory.MemoryRows`, every label kept) as a
    matrix over the LP's node variables, with their right sides; or ``None``."""
    import numpy as np
    from scipy.sparse import coo_matrix

    from solver.dual_memory import MemoryRows
    from solver.flat import ranges

    rows = MemoryRows.build(problem, [np.ones(len(u), bool) for u in problem.unary], start)
    if rows is None:
        return None
    span = (rows.last - rows.first)[rows.pair_use]
    matrix = coo_matrix((np.repeat(rows.pair_usage.astype(np.float64), span),
                         (ranges(rows.first[rows.pair_use], span), np.repeat(rows.pair_slot, span))),
                        shape=(rows.checks, columns)).tocsr()
    return matrix, rows.cap.astype(np.float64)


def cores(wanted: set[str]):
    """Per instance (all, or those ``wanted``): its name, reduced problem, the
    reductions' offset and our cost from the last solver-core run (or ``None``)."""
    costs = known_costs()
    for path in sorted(DATA.glob("asplos-2025-iopddl-*.json.gz")):
        name = path.name.removeprefix("asplos-2025-iopddl-").removesuffix(".json.gz")
        if wanted and name not in wanted:
            continue
        reduction = reduce_problem(read_instance(path))
        yield name, reduction.problem, reduction.offset, costs.get(name, (None, None))[0]


def compare_stages(sweeps: int, wanted: set[str]) -> None:
    """Per instance: the bound after ``sweeps`` sweeps, first stage alone and both."""
    print(f"| instance | first stage, {sweeps} sweeps | both stages | s (first, both) "
          "| ours | gap first | gap both |")
    print("|---|---|---|---|---|---|---|")
    for name, core, offset, ours in cores(wanted):
        target = None if ours is None else ours - offset
        values, seconds = [], []
        for share in (1.0, dual._SUBGRADIENT_SHARE):
            saved, dual._SUBGRADIENT_SHARE = dual._SUBGRADIENT_SHARE, share
            began = time.perf_counter()
            try:
                values.append(dual_bound_detail(core, 3600, sweeps=sweeps, target=target).value
                              + offset)
            finally:
                dual._SUBGRADIENT_SHARE = saved
            seconds.append(time.perf_counter() - began)
        print(f"| {name} | {values[0]} | {values[1]} | {seconds[0]:.1f}, {seconds[1]:.1f} "
              f"| {ours} | {gap(ours, values[0])} | {gap(ours, values[1])} |", flush=True)


def compare_starts(sweeps: int, wanted: set[str]) -> None:
    """Per instance: the priced search's bound, then ``sweeps`` sweeps aimed at our cost
    from zeros and from its multipliers."""
    from solver.penalties import table_entries
    from solver.solve import _price_sweeps

    print(f"| instance | priced search's bound (sweeps, s) | {sweeps} sweeps from zeros | "
          f"{sweeps} from its multipliers | s (zeros, its) | ours | gap zeros | gap its |")
    print("|---|---|---|---|---|---|---|---|")
    for name, core, offset, ours in cores(wanted):
        target = None if ours is None else ours - offset
        began = time.perf_counter()
        priced = dual_bound_detail(core, 3600, sweeps=_price_sweeps(max(1, table_entries(core))),
                                   pricing=True)
        priced_s = time.perf_counter() - began
        if priced.multipliers is None:
            continue  # no memory multipliers: nothing to start from
        values, seconds = [], []
        for start in (None, priced.multipliers):
            began = time.perf_counter()
            values.append(dual_bound_detail(core, 3600, sweeps=sweeps, target=target,
                                            start=start).value + offset)
            seconds.append(time.perf_counter() - began)
        print(f"| {name} | {priced.value + offset} ({priced.sweeps}, {priced_s:.1f}) "
              f"| {values[0]} | {values[1]} | {seconds[0]:.1f}, {seconds[1]:.1f} | {ours} "
              f"| {gap(ours, values[0])} | {gap(ours, values[1])} |", flush=True)


if __name__ == "__main__":
    main()
