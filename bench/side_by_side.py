"""Layout assignment of one corpus module by an earlier commit and by the working tree,
alternately in one run, so both see the same machine load (ratios, not absolute times).

    python3 bench/side_by_side.py --base accc981 --module gpt_train_12l --targets cpu,gpu,tpu,ascend

``--corpus``: every ``*.before_layout`` module of the corpus (``gpt_train_*`` left out unless
``--with-gpt``) on every target, one process per tree and target assigning them all; prints
(status, true cost) per module and target for both trees and counts those that are the same.
``--iopddl A,B``: the solver core on those IOPDDL instances, deterministic CP-SAT with
``--deterministic-time`` work units (and ``--time-limit`` wall clock as a backstop), one process
per tree and instance.

    python3 bench/side_by_side.py --base 6e1ad3c --corpus --time-limit 5
    python3 bench/side_by_side.py --base 6e1ad3c --iopddl G,B --time-limit 120 --deterministic-time 10

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

# Both option APIs: before one schema, the target and ``time_limit`` were options.
_ASSIGN = r"""
import dataclasses
from solver.layout_assignment.assign import assign as _assign
from solver.layout_assignment.options import AssignOptions
def assign(module, target, limit):
    if "target" in {f.name for f in dataclasses.fields(AssignOptions)}:
        return _assign(module, AssignOptions(target=target, time_limit=limit))
    return _assign(module, target, AssignOptions(time_limit_s=limit))
"""

_RUN = _ASSIGN + r"""
import gzip, json, sys, time
from hlo.parser import parse_module
path, target, limit = sys.argv[1], sys.argv[2], float(sys.argv[3])
text = gzip.open(path, "rt").read() if path.endswith(".gz") else open(path).read()
began = time.perf_counter()
module = parse_module(text)
parsed = time.perf_counter()
result = assign(module, target, limit)
done = time.perf_counter()
print(json.dumps({"parse_s": round(parsed - began, 2), "assign_s": round(done - parsed, 2),
                  "end_to_end_s": round(done - began, 2), "status": result.status,
                  "cost": result.objective, "lower_bound": result.lower_bound}))
"""


_CORPUS = _ASSIGN + r"""
import json, sys
from hlo.parser import parse_file
target, limit = sys.argv[1], float(sys.argv[2])
for path in sys.argv[3:]:
    try:
        r = assign(parse_file(path), target, limit)
        row = [r.status, r.objective, r.lower_bound]
    except Exception as exc:  # the same error at both commits is the same result
        row = ["error", f"{type(exc).__name__}: {exc}"[:120], None]
    print(json.dumps([path.rsplit("/", 1)[-1].split(".")[0], *row]), flush=True)
"""

_IOPDDL = r"""
import json, sys
from solver.iopddl import read_instance
from solver.options import SolveOptions
from solver.solve import solve
path, limit, work = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
r = solve(read_instance(path), SolveOptions(time_limit=limit, deterministic=True,
                                           deterministic_time=work))
print(json.dumps([r.status.value, r.objective, r.lower_bound]))
"""


def _python(tree: Path, script: str, *args: str) -> list[str]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    proc = subprocess.run([sys.executable, "-c", script, *args], cwd=tree, env=env,
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{tree}: {args[:2]}: {proc.stderr.strip().splitlines()[-1:]}")
    return proc.stdout.strip().splitlines()


def _run(tree: Path, module: Path, target: str, limit: float) -> dict:
    return json.loads(_python(tree, _RUN, str(module), target, str(limit))[-1])


def corpus(base: Path, targets: list[str], limit: float, with_gpt: bool) -> None:
    """Every before_layout module on every target, both trees, (status, cost) compared."""
    modules = sorted(p for p in (SHARED / "corpus").iterdir()
                     if ".before_layout.hlo" in p.name
                     and (with_gpt or not p.name.startswith("gpt_train")))
    same = total = 0
    print("module | target | base status cost | new status cost | same")
    for target in targets:
        rows = {}
        for tree in (base, REPO):
            rows[tree] = [json.loads(line) for line in
                          _python(tree, _CORPUS, target, str(limit), *map(str, modules))]
        for old, new in zip(rows[base], rows[REPO]):
            total += 1
            equal = old[1:3] == new[1:3]
            same += equal
            print(f"{old[0]} | {target} | {old[1]} {old[2]} | {new[1]} {new[2]} | "
                  f"{'yes' if equal else 'NO'}", flush=True)
    print(f"{same} of {total} (module, target) pairs with the same status and cost")


def iopddl(base: Path, names: list[str], limit: float, work: float) -> None:
    data = SHARED / "benchmarks" / "iopddl"
    for name in names:
        path = data / f"asplos-2025-iopddl-{name}.json.gz"
        old, new = (json.loads(_python(tree, _IOPDDL, str(path), str(limit), str(work))[-1])
                    for tree in (base, REPO))
        print(f"{name} | base {old[0]} {old[1]} | new {new[0]} {new[1]} | "
              f"{'same' if old[:2] == new[:2] else 'DIFFERENT'}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", required=True, help="the earlier commit")
    ap.add_argument("--module", default="gpt_train_12l")
    ap.add_argument("--targets", default="cpu,gpu,tpu,ascend")
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--corpus", action="store_true", help="every corpus module (see above)")
    ap.add_argument("--with-gpt", action="store_true", help="--corpus: gpt_train_* too")
    ap.add_argument("--iopddl", default="", help="IOPDDL instances, e.g. A,B,G")
    ap.add_argument("--deterministic-time", type=float, default=10.0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        subprocess.run(["git", "worktree", "add", "--detach", str(base), args.base], cwd=REPO,
                       check=True, capture_output=True)
        try:
            if args.corpus:
                corpus(base, args.targets.split(","), args.time_limit, args.with_gpt)
                return
            if args.iopddl:
                iopddl(base, args.iopddl.split(","), args.time_limit, args.deterministic_time)
                return
            folder = SHARED / "corpus"
            module = next(p for p in (folder / f"{args.module}.before_layout.hlo.gz",
                                      folder / f"{args.module}.before_layout.hlo") if p.exists())
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
