"""Where the time goes as models get deeper: layout assignment of generated deep models.

    python3 bench/scaling.py [--family llama] [--depths 12,24,48,96] [--targets cpu,gpu,tpu,ascend]
                             [--time-limit 120] [--base COMMIT[,COMMIT..]] [--json out.json]

The modules come from :mod:`bench.programs.deep` (JAX, ``before_layout``: as they enter
XLA:CPU's layout assignment), generated once and cached under ``bench/results/deep/``
(ignored by git). Each (depth, target) runs in a fresh process: parse, then ``assign`` with
the default options; the row has the wall clock of both, the CPU time of the process over
both (``cpu_s``: every thread's, CP-SAT's workers included; less disturbed by a shared
machine's load than the wall clock), the status and costs, the peak
resident memory of that process, and every phase time ``assign`` reports (phases that run in
a thread overlap the others, so they need not add up to the wall clock).

``--base COMMIT[,COMMIT..]`` runs the same modules with earlier commits too (each checked out
with ``git worktree`` into a temporary folder), alternately with the working tree, so all see
the same machine load; the load average is printed with every row. ``--family`` also takes
``gpt2`` (a GPT-2-style step, for measuring on a model not used while tuning).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CACHE = REPO / "bench" / "results" / "deep"

# Both option APIs (earlier commits took the target and ``time_limit`` as options).
_RUN = r"""
import dataclasses, gc, json, os, resource, sys, time
from hlo.parser import parse_module
from solver.layout_assignment.assign import assign as _assign
from solver.layout_assignment.options import AssignOptions
def assign(module, target, limit):
    if "target" in {f.name for f in dataclasses.fields(AssignOptions)}:
        return _assign(module, AssignOptions(target=target, time_limit=limit))
    return _assign(module, target, AssignOptions(time_limit_s=limit))
path, target, limit = sys.argv[1], sys.argv[2], float(sys.argv[3])
text = open(path).read()
began, cpu_began = time.perf_counter(), time.process_time()
module = parse_module(text)
gc.freeze()
parsed = time.perf_counter()
result = assign(module, target, limit)
done = time.perf_counter()
print(json.dumps({"instructions": sum(len(c.instructions) for c in module.computations),
                  "parse_s": round(parsed - began, 2), "assign_s": round(done - parsed, 2),
                  "end_to_end_s": round(done - began, 2),
                  # with a child process beside the assignment (its seeds)
                  "cpu_s": round(time.process_time() - cpu_began + os.times().children_user
                                 + os.times().children_system, 2), "status": result.status,
                  "cost": result.objective, "lower_bound": result.lower_bound,
                  # A child process beside the assignment (its seeds) counted in full.
                  "peak_mb": (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
                              + resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) // 1024,
                  "timings_ms": result.timings_ms}))
"""


def run_one(tree: Path, module: Path, target: str, limit: float) -> dict:
    from bench.worktrees import run_in

    return run_in(tree, _RUN, str(module), target, str(limit))


def _phases(timings: dict) -> str:
    keep = {k: v for k, v in timings.items() if v >= 100}
    return " ".join(f"{k}={v / 1000:.1f}" for k, v in keep.items())


def main() -> None:
    sys.path.insert(0, str(REPO))
    from bench.programs.deep import cached_hlo
    from bench.worktrees import checked_out

    ap = argparse.ArgumentParser()
    ap.add_argument("--family", default="llama")
    ap.add_argument("--depths", default="12,24,48,96")
    ap.add_argument("--targets", default="cpu,gpu,tpu,ascend")
    ap.add_argument("--time-limit", type=float, default=120.0)
    ap.add_argument("--base", default="", help="earlier commits to run alternately (a,b)")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    modules = {int(d): cached_hlo(args.family, int(d), CACHE) for d in args.depths.split(",")}
    rows = []
    bases = [b for b in args.base.split(",") if b]
    with checked_out(bases) as trees:
        print("depth | target | tree | instructions | parse_s | end_to_end_s | cpu_s | status | cost | "
              "lower_bound | peak_mb | load | phases (s)", flush=True)
        for depth, path in modules.items():
            for target in args.targets.split(","):
                for name, tree in trees:
                    row = run_one(tree, path, target, args.time_limit)
                    row.update(depth=depth, target=target, tree=name)
                    rows.append(row)
                    print(f"{depth} | {target} | {name} | {row['instructions']} | "
                          f"{row['parse_s']} | {row['end_to_end_s']} | {row.get('cpu_s', '')} | "
                          f"{row['status']} | "
                          f"{row['cost']} | {row['lower_bound']} | {row['peak_mb']} | "
                          f"{row['load']} | {_phases(row['timings_ms'])}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
