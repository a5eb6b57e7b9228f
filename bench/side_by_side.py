"""Layout assignment of one corpus module by an earlier commit and by the working tree,
alternately in one run, so both see the same machine load (ratios, not absolute times).

    python3 bench/side_by_side.py --base accc981 --module gpt_train_12l --targets cpu,gpu,tpu,ascend

The earlier commit is checked out with ``git worktree`` into a temporary folder (removed
afterwards); each run is a fresh process that parses the module and assigns layouts with
the default options and ``--time-limit``; ``end_to_end_s`` = parse + assign.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("HLO_LAYOUT_SHARED", REPO.parent / "shared"))

_RUN = r"""
import gzip, json, sys, time
from hlo.parser import parse_module
from solver.layout_assignment.assign import assign
from solver.layout_assignment.options import AssignOptions
path, target, limit = sys.argv[1], sys.argv[2], float(sys.argv[3])
text = gzip.open(path, "rt").read() if path.endswith(".gz") else open(path).read()
began = time.perf_counter()
module = parse_module(text)
parsed = time.perf_counter()
result = assign(module, target, AssignOptions(time_limit_s=limit))
done = time.perf_counter()
print(json.dumps({"parse_s": round(parsed - began, 2), "assign_s": round(done - parsed, 2),
                  "end_to_end_s": round(done - began, 2), "status": result.status,
                  "cost": result.objective, "lower_bound": result.lower_bound}))
"""


def _run(tree: Path, module: Path, target: str, limit: float) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    proc = subprocess.run([sys.executable, "-c", _RUN, str(module), target, str(limit)],
                          cwd=tree, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{tree}: {target}: {proc.stderr.strip().splitlines()[-1:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", required=True, help="the earlier commit")
    ap.add_argument("--module", default="gpt_train_12l")
    ap.add_argument("--targets", default="cpu,gpu,tpu,ascend")
    ap.add_argument("--time-limit", type=float, default=60.0)
    args = ap.parse_args()
    corpus = SHARED / "corpus"
    module = next(p for p in (corpus / f"{args.module}.before_layout.hlo.gz",
                              corpus / f"{args.module}.before_layout.hlo") if p.exists())
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        subprocess.run(["git", "worktree", "add", "--detach", str(base), args.base], cwd=REPO,
                       check=True, capture_output=True)
        try:
            print("target | base end_to_end_s | base status | new end_to_end_s | new status | "
                  "new/base")
            for target in args.targets.split(","):
                old = _run(base, module, target, args.time_limit)
                new = _run(REPO, module, target, args.time_limit)
                ratio = new["end_to_end_s"] / old["end_to_end_s"]
                print(f"{target} | {old['end_to_end_s']} | {old['status']} {old['cost']} | "
                      f"{new['end_to_end_s']} | {new['status']} {new['cost']} | {ratio:.2f}",
                      flush=True)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=REPO,
                           check=False, capture_output=True)


if __name__ == "__main__":
    main()
