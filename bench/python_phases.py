"""The Python phases of layout assignment, each timed on its own, side by side with earlier commits.

    python3 bench/python_phases.py [--family llama] [--depth 48] [--targets tpu,cpu]
                                   [--base COMMIT[,COMMIT..]] [--rounds 1]

Each (target, tree) runs in a fresh process, the trees alternately so that all see the same
machine load: parse, the layout graph, candidates, the per-use problem, the exact shared-copy
problem stated, the reductions of the relaxed, per-use and exact problems, the CP-SAT model of
the reduced exact problem built (not solved), and the rewrite of the greedy answer (plan,
apply, score). Every phase is given in CPU seconds of the process (``time.process_time``:
less sensitive to a shared machine's load than the wall clock, which is printed too). The
``fingerprint`` column hashes the reduced problems and the rewritten module's score: trees
that state and reduce the same problems print the same fingerprint.

The modules are those of ``bench/scaling.py`` (:mod:`bench.programs.deep`, cached under
``bench/results/deep/``); earlier commits are checked out with ``git worktree``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CACHE = REPO / "bench" / "results" / "deep"

_RUN = r"""
import hashlib, json, sys, time
from hlo.parser import parse_module
from hlo.passes.apply_layouts import apply_layouts
from hlo.target import load_target
from solver.cpsat import build_model
from solver.layout_assignment.assign import score
from solver.layout_assignment.baselines import greedy_labels
from solver.layout_assignment.candidates import candidate_sets
from solver.layout_assignment.compile import compile_problem
from solver.layout_assignment.costs import CostModel
from solver.layout_assignment.exact import exact_problem
from solver.layout_assignment.layout_graph import build_graph
from solver.layout_assignment.plan import plan_for
from solver.reductions import reduce_problem
path, target = sys.argv[1], sys.argv[2]
cpu, wall, digest = {}, {}, hashlib.sha1()
marks = [time.process_time(), time.perf_counter()]
def lap(name):
    now = [time.process_time(), time.perf_counter()]
    cpu[name], wall[name] = round(now[0] - marks[0], 3), round(now[1] - marks[1], 3)
    marks[:] = now
def fingerprint(reduction):
    p = reduction.problem
    digest.update(repr((reduction.offset, reduction.stats, p.num_nodes, len(p.edges))).encode())
    for u in p.unary:
        digest.update(u.tobytes())
    for e in p.edges:
        digest.update(repr((e.u, e.v)).encode())
        digest.update(e.costs.tobytes())
text = open(path).read()
lap("read")
module = parse_module(text)
lap("parse")
cm = CostModel(load_target(target))
graph = build_graph(module)
lap("graph")
cands = candidate_sets(graph, cm, cap=6)
lap("candidates")
compiled = compile_problem(graph, cands, cm)
lap("problem")
exact = exact_problem(compiled)
lap("exact stated")
for name, problem in (("relaxed", compiled.relaxed), ("per-use", compiled.problem),
                      ("exact", exact)):
    reduction = reduce_problem(problem)
    lap(f"reduce {name}")
    fingerprint(reduction)
build_model(reduction.problem)
lap("exact model")
labels = greedy_labels(compiled.problem, sorted({p.node for p in graph.prefs}))
chosen = [cands[i][int(label)] for i, label in enumerate(labels)]
plan, _ = plan_for(graph, cm, chosen, False)
scored = score(apply_layouts(module, plan), cm.target)
lap("rewrite")
digest.update(repr(scored.total).encode())
print(json.dumps({"cpu": cpu, "wall": wall, "fingerprint": digest.hexdigest()[:12]}))
"""


def run_one(tree: Path, module: Path, target: str) -> dict:
    from bench.worktrees import run_in

    return run_in(tree, _RUN, str(module), target)


def main() -> None:
    sys.path.insert(0, str(REPO))
    from bench.programs.deep import cached_hlo
    from bench.worktrees import checked_out

    ap = argparse.ArgumentParser()
    ap.add_argument("--family", default="llama")
    ap.add_argument("--depth", type=int, default=48)
    ap.add_argument("--targets", default="tpu,cpu")
    ap.add_argument("--base", default="", help="earlier commits to run alternately (a,b)")
    ap.add_argument("--rounds", type=int, default=1)
    args = ap.parse_args()
    module = cached_hlo(args.family, args.depth, CACHE)
    bases = [b for b in args.base.split(",") if b]
    with checked_out(bases) as trees:
        header = None
        for _ in range(args.rounds):
            for target in args.targets.split(","):
                for name, tree in trees:
                    row = run_one(tree, module, target)
                    if header is None:
                        header = list(row["cpu"])
                        print("target | tree | load | " + " | ".join(header) +
                              " | cpu total | wall total | fingerprint", flush=True)
                    cells = " | ".join(f"{row['cpu'][k]:.2f}" for k in header)
                    print(f"{target} | {name} | {row['load']} | {cells} | "
                          f"{sum(row['cpu'].values()):.2f} | "
                          f"{sum(row['wall'].values()):.2f} | {row['fingerprint']}",
                          flush=True)


if __name__ == "__main__":
    main()
