"""The penalty search alone on reduced IOPDDL contest instances, at fixed work.

Each instance is read and reduced as :func:`solver.solve.solve` does; then the
heuristic (``--heuristic`` seconds) and :func:`solver.penalties.penalty_search`
with ``--rounds`` rounds of ``--backtracks`` backtracks run on the reduced
problem, without a deadline. A core that the solver's penalty search does not
take whole but that has nodes of more than ``solver.solve.PENALTY_FIXED_LABELS``
labels (contest A, L, S) gets it as the solver does on cores searched in
windows: with those nodes fixed at the heuristic's labels. A core it takes whole
(contest U, whose nodes have up to 379 labels) is searched whole. The rounds and backtracks fix the work, so the
costs do not depend on the machine's load; the CPU seconds beside them are what
the same work takes on one core of this machine (about the wall time on a quiet
one). Costs include the reductions' offset; ratio = cost / best published.
Prints a markdown table; writes nothing.

With ``--priced`` the search is :func:`solver.penalties.price_search` instead: the
dual bound's memory multipliers as prices (the sweeps the solver plans for the core,
:func:`solver.solve._price_sweeps`; their CPU seconds are counted too), ``--scale``
the first scale.

    python3 bench/penalty_rounds.py [--only R,T] [--rounds 6] [--backtracks 100] [--hinted]
    python3 bench/penalty_rounds.py --only S --rounds 12 --backtracks 166
    python3 bench/penalty_rounds.py --only R,T --rounds 3 --priced [--scale 11.3]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.iopddl import DATA, published  # noqa: E402
from solver.heuristics import heuristic  # noqa: E402
from solver.iopddl import read_instance  # noqa: E402
from solver.options import SolveOptions  # noqa: E402
from solver.penalties import penalty_search, table_entries  # noqa: E402
from solver.problem import evaluate  # noqa: E402
from solver.lns import fixed_problem  # noqa: E402
from solver.reductions import reduce_problem  # noqa: E402
from solver.dual_bound import dual_bound_detail  # noqa: E402
from solver.penalties import PRICE_SCALE, price_search  # noqa: E402
from solver.solve import PENALTY_FIXED_LABELS, _penalised, _price_sweeps  # noqa: E402


def row(name: str, rounds: int, backtracks: int, heuristic_s: float, best: int,
        hinted: bool, priced: float | None = None) -> str:
    problem = read_instance(DATA / f"asplos-2025-iopddl-{name}.json.gz")
    reduction = reduce_problem(problem, SolveOptions().passes, time.perf_counter() + 60)
    core, offset = reduction.problem, reduction.offset
    guess = heuristic(core, heuristic_s)
    start = evaluate(core, guess.labels) + offset
    nodes = [v for v in range(core.num_nodes)
             if _penalised(core) or core.label_count(v) <= PENALTY_FIXED_LABELS]
    began = time.process_time()
    narrow = fixed_problem(core, nodes, guess.labels) if len(nodes) < core.num_nodes else core
    hint = tuple(guess.labels[v] for v in nodes) if hinted else None
    if priced is None:
        found = penalty_search(narrow, rounds, backtracks, hint=hint)
    else:
        sweeps = _price_sweeps(max(1, table_entries(narrow)))
        prices = dual_bound_detail(narrow, 3600.0, sweeps=sweeps, pricing=True).prices
        found = None if prices is None else price_search(narrow, prices, rounds, backtracks,
                                                         scale=priced)
    cpu = time.process_time() - began
    cost = None
    if found is not None:
        labels = list(guess.labels)
        for v, label in zip(nodes, found[0]):
            labels[v] = label
        cost = evaluate(core, tuple(labels)) + offset
    shown = "none" if cost is None else f"{cost} | {cost / best:.3f}"
    entries = table_entries(narrow)
    return (f"| {name} | {narrow.num_nodes} | {entries} | {start} | {start / best:.3f} | "
            f"{shown} | {cpu:.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", default="R,T")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--backtracks", type=int, default=100)
    parser.add_argument("--heuristic", type=float, default=8.0,
                        help="the heuristic's seconds (its answer is the column 'start')")
    parser.add_argument("--hinted", action="store_true",
                        help="the hinted search (toulbar2's dives led by the cheapest answer "
                             "known, the start first)")
    parser.add_argument("--priced", action="store_true",
                        help="the priced search on the dual bound's multipliers instead")
    parser.add_argument("--scale", type=float, default=PRICE_SCALE,
                        help="the priced search's first scale")
    args = parser.parse_args()
    best = {name: min(costs.values()) for name, costs in published().items()}
    print(f"| instance | nodes searched | table entries | start (heuristic, {args.heuristic:g} s) | "
          f"ratio | after {args.rounds} penalty rounds | ratio | CPU s |")
    print("|---|---|---|---|---|---|---|---|")
    for name in args.only.split(","):
        print(row(name, args.rounds, args.backtracks, args.heuristic, best[name], args.hinted,
                  args.scale if args.priced else None), flush=True)


if __name__ == "__main__":
    main()
