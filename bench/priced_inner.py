"""How high the Lagrangian bound can go at the multipliers the dual bound ends with,
whatever solves the relaxed problem: toulbar2 on the priced problem.

Per reduced IOPDDL contest core (as :func:`solver.solve.solve` reduces it): the dual
bound with memory multipliers (:func:`solver.dual_bound.dual_bound_detail`, ``--bound``
seconds, not aimed), then toulbar2 (:func:`solver.wcsp.solve_wcsp`, ``--search``
seconds of CPU) on the core with those multipliers' prices on the labels' bytes. At
multipliers ``μ`` the Lagrangian value is ``min_x cost(x) + Σ_t μ_t (load_t(x) - cap_t)``;
the sweeps certify a value below it (the local polytope's), and the priced cost of any
answer toulbar2 finds is above it. So where toulbar2's answer, priced, lies below the
bound a gap of 25 % needs, no solver of the relaxed problem, however exact, reaches
that gap at these multipliers: the multipliers have to change. ``complete``: toulbar2
ended its search, so its answer is the relaxed problem's optimum (penalties rounded
down to integers) and the priced cost is the Lagrangian value itself.

    python3 bench/priced_inner.py [--only T,V] [--bound 30] [--search 60]

Prints a markdown table; writes nothing. ``needs`` is 75 % of our cost in
``bench/iopddl_results.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "benchmarks" / "iopddl"
sys.path.insert(0, str(REPO))

from solver.dual_bound import dual_bound_detail  # noqa: E402
from solver.dual_memory import MemoryRows  # noqa: E402
from solver.flat import Flat  # noqa: E402
from solver.iopddl import read_instance  # noqa: E402
from solver.reductions import reduce_problem  # noqa: E402
from solver.wcsp import solve_wcsp  # noqa: E402


def priced(core, prices: tuple[float, ...], multipliers: tuple[float, ...]
           ) -> tuple[list[np.ndarray], float]:
    """Per node, the prices' cost of each label (float), as the priced search puts them
    (:meth:`solver.flat.Flat.penalty_per_use`), and the constant ``-Σ μ_t cap_t``."""
    flat = Flat(core)
    per_label = flat.penalty_per_use(np.asarray(prices, np.float64)[flat.u_source])
    rows = MemoryRows.build(core, [np.ones(len(u), bool) for u in core.unary], flat.off[:-1])
    return (np.split(per_label, flat.off[1:-1]),
            rows.constant(np.asarray(multipliers, np.float64)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="T,V")
    parser.add_argument("--bound", type=float, default=30.0)
    parser.add_argument("--search", type=int, default=60)
    args = parser.parse_args()
    ours = json.loads((REPO / "bench" / "iopddl_results.json").read_text())
    print("| instance | sweeps' bound | s | toulbar2's answer, priced | complete | s "
          "| needs (25 % gap) |")
    print("|---|---|---|---|---|---|---|")
    for name in args.only.split(","):
        reduction = reduce_problem(read_instance(DATA / f"asplos-2025-iopddl-{name}.json.gz"))
        core, offset = reduction.problem, reduction.offset
        began = time.perf_counter()
        dual = dual_bound_detail(core, args.bound)
        bound_s = time.perf_counter() - began
        if dual.prices is None:
            print(f"| {name} | {dual.value + offset} | {bound_s:.1f} | no memory rule | | | |")
            continue
        extra, constant = priced(core, dual.prices, dual.multipliers)
        began = time.perf_counter()
        found = solve_wcsp(core, [np.floor(e).astype(np.int64) for e in extra],
                           backtracks=10**9, seconds=args.search)
        search_s = time.perf_counter() - began
        value = "none found" if found.labels is None else (
            f"{found.cost + sum(e[a] for e, a in zip(extra, found.labels)) + constant + offset:.0f}")
        print(f"| {name} | {dual.value + offset} | {bound_s:.1f} | {value} | "
              f"{'yes' if found.complete else 'no'} | {search_s:.1f} | "
              f"{int(0.75 * ours[name]['cost'])} |", flush=True)


if __name__ == "__main__":
    main()
