"""The stages of an annealed core (contest B, G, V) alone, at fixed work.

Each instance is read and reduced as :func:`solver.solve.solve` does; then the
heuristic, the annealing (``solver.solve.ANNEAL_ROUNDS`` walks of
``ANNEAL_MOVES_PER_NODE`` moves per node), the shifted windows
(``ANNEALED_WINDOWS`` of ``ANNEALED_WINDOW`` nodes) and the peak window
(``PEAK_ROUNDS`` of at most ``PEAK_NODES`` nodes, ``PEAK_WORK`` units) and, when the
peak window gained, ``ANNEALED_WINDOWS_AGAIN`` shifted windows once more, run as the solver calls them, without the clock: every stage ends on its own work (moves,
CP-SAT's deterministic units), so the costs do not depend on the machine's load;
the seconds beside them are this run's wall time. Costs include the reductions'
offset; ratio = cost / best published. Prints a markdown table; writes nothing.

    python3 bench/annealed_stages.py [--only V,B,G]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.iopddl import DATA, published  # noqa: E402
from solver import lns  # noqa: E402
from solver import solve as stages  # noqa: E402
from solver.anneal import anneal  # noqa: E402
from solver.heuristics import heuristic  # noqa: E402
from solver.iopddl import read_instance  # noqa: E402
from solver.options import SolveOptions  # noqa: E402
from solver.problem import evaluate  # noqa: E402
from solver.reductions import reduce_problem  # noqa: E402

FAR = 1e9  # no deadline: every stage ends on its own work


def row(name: str, best: int) -> str:
    problem = read_instance(DATA / f"asplos-2025-iopddl-{name}.json.gz")
    reduction = reduce_problem(problem, SolveOptions().passes, time.perf_counter() + 60)
    core, offset = reduction.problem, reduction.offset
    cells = []
    began = time.perf_counter()
    labels = heuristic(core, 8.0).labels
    cells.append((evaluate(core, labels), time.perf_counter() - began))
    began = time.perf_counter()
    moves = min(stages.ANNEAL_MOVES, stages.ANNEAL_MOVES_PER_NODE * core.num_nodes)
    labels, _ = anneal(core, labels, moves, rounds=stages.ANNEAL_ROUNDS)
    cells.append((evaluate(core, labels), time.perf_counter() - began))
    began = time.perf_counter()
    labels, _ = lns.improve_shifted(core, labels, time.perf_counter() + FAR, SolveOptions(),
                                    stages.ANNEALED_WINDOWS, stages.ANNEALED_WINDOW)
    cells.append((evaluate(core, labels), time.perf_counter() - began))
    began = time.perf_counter()
    labels, _ = lns.improve_peak(core, labels, time.perf_counter() + FAR, SolveOptions(),
                                 stages.PEAK_ROUNDS, stages.PEAK_WORK, stages.PEAK_NODES)
    cells.append((evaluate(core, labels), time.perf_counter() - began))
    began = time.perf_counter()
    if cells[-1][0] < cells[-2][0]:  # the solver's second pass of shifted windows
        labels, _ = lns.improve_shifted(core, labels, time.perf_counter() + FAR,
                                        SolveOptions(), stages.ANNEALED_WINDOWS_AGAIN,
                                        stages.ANNEALED_WINDOW)
    cells.append((evaluate(core, labels), time.perf_counter() - began))
    shown = " | ".join(f"{cost + offset} ({(cost + offset) / best:.3f}, {s:.1f} s)"
                       for cost, s in cells)
    return f"| {name} | {core.num_nodes} | {shown} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", default="V,B,G")
    args = parser.parse_args()
    best = {name: min(costs.values()) for name, costs in published().items()}
    print("| instance | core nodes | heuristic | annealed | shifted windows | peak window | "
          "shifted again |")
    print("|---|---|---|---|---|---|---|")
    for name in args.only.split(","):
        print(row(name, best[name]), flush=True)


if __name__ == "__main__":
    main()
