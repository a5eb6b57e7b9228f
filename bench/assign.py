"""Layout assignment over the corpus and every built-in target, plus scaling.

    python3 bench/assign.py [--targets cpu,gpu,tpu,ascend] [--modules a,b]
                            [--synthetic N[,N..]] [--time-limit S] [--json out.json]

Per module and target: instructions, cost of all-default, greedy and ours (true,
after sharing copies), the proven lower bound on the true cost and the gap, status
(OPTIMAL: ours equals that bound), which answer won (``chosen_by``), the per-use
model's own objective, the time of the relaxed problem's solve (``solve_s``) and
of the true-cost proof (``exact_s``: the shared-copy problem, and the local
searches), and total time
(``assign`` only: the module is parsed first, and, as ``hlo-layout assign`` does,
frozen out of the cyclic garbage collector). On cpu also XLA's own
``after_layout`` scored under the same model. ``--synthetic 1000,10000`` runs the
synthetic modules of :mod:`bench.synthetic` instead of the corpus.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hlo.parser import parse_file, parse_module  # noqa: E402
from solver.layout_assignment.assign import assign, score  # noqa: E402
from solver.layout_assignment.options import AssignOptions  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared"


def _path(name: str, stage: str) -> Path:
    p = SHARED / "corpus" / f"{name}.{stage}.hlo"
    return p if p.exists() else p.with_suffix(".hlo.gz")


def _count(module) -> int:
    return sum(len(c.instructions) for c in module.computations)


def run(name: str, module, target: str, time_limit: float, xla=None) -> dict:
    began = time.perf_counter()
    r = assign(module, target, AssignOptions(time_limit_s=time_limit))
    total = time.perf_counter() - began
    row = {"module": name, "target": target, "instructions": _count(module),
           "default": r.baselines.get("default"), "greedy": r.baselines.get("greedy"),
           "ours": r.objective, "model": r.model_objective, "lower_bound": r.lower_bound,
           "gap": None if r.gap is None else round(r.gap, 6), "chosen_by": r.chosen_by,
           "model_lower_bound": r.model_lower_bound, "model_status": r.model_status,
           "bound_status": r.bound_status,
           "status": r.status, "solve_s": round(r.timings_ms.get("relaxed", 0) / 1000, 2),
           # Stating, reducing and modelling the exact problem, its solve, the local searches.
           "exact_s": round(sum(r.timings_ms.get(k, 0) for k in
                                ("exact_prepare", "exact", "local_search", "polish")) / 1000,
                            2),
           "total_s": round(total, 2), "violations": len(r.violations),
           "nodes": r.nodes, "timings_ms": r.timings_ms}
    if xla is not None:
        row["xla"] = score(xla, target).total
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--targets", default="cpu,gpu,tpu,ascend")
    ap.add_argument("--modules", default="")
    ap.add_argument("--synthetic", default="")
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    manifest = json.loads((SHARED / "corpus" / "manifest.json").read_text())
    names = args.modules.split(",") if args.modules else [m["name"] for m in manifest["modules"]]
    rows = []
    header = ("module", "target", "instructions", "default", "greedy", "xla", "ours",
              "lower_bound", "gap", "status", "chosen_by", "model", "model_status", "solve_s",
              "exact_s", "total_s", "violations")
    print(" | ".join(header))
    for name in names if not args.synthetic else []:
        began = time.perf_counter()
        module = parse_file(_path(name, "before_layout"))
        parse_s = time.perf_counter() - began
        xla = parse_file(_path(name, "after_layout"))
        gc.freeze()
        for target in args.targets.split(","):
            row = run(name, module, target, args.time_limit, xla if target == "cpu" else None)
            row["parse_s"] = round(parse_s, 2)
            rows.append(row)
            print(" | ".join(str(row.get(h, "")) for h in header), flush=True)
    for size in [int(n) for n in args.synthetic.split(",") if n]:
        from bench.synthetic import synthetic_module
        began = time.perf_counter()
        module = parse_module(synthetic_module(size))
        parse_s = time.perf_counter() - began
        gc.freeze()
        for target in args.targets.split(","):
            row = run(f"synthetic-{size}", module, target, args.time_limit)
            row["parse_s"] = round(parse_s, 2)
            rows.append(row)
            print(" | ".join(str(row.get(h, "")) for h in header), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
