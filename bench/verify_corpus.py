"""Every corpus module, both input stages, every built-in target: assign, then prove it.

    python3 bench/verify_corpus.py [--targets cpu,gpu,tpu,ascend] [--stages before_layout,pre]
                                   [--time-limit S] [--skip-interpret NAME,..] [--json out.json]

For each (module, stage, target): ``assign`` succeeds; the reference interpreter runs the
input and the output on the same random inputs and compares every output
(``hlo.equivalence.compare_modules``, which also runs the layout verifier on the output);
and, in one jaxlib subprocess at the end, XLA's own parser accepts every printed output.
The test suite runs a representative subset of this; this script is the whole sweep.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hlo.equivalence import compare_modules  # noqa: E402
from hlo.parser import parse_file  # noqa: E402
from hlo.printer import print_module  # noqa: E402
from solver.layout_assignment.assign import assign  # noqa: E402
from solver.layout_assignment.options import AssignOptions  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared"

XLA_PARSE = """
import json, sys
from jaxlib import _hlo
bad = {}
for path in json.load(open(sys.argv[1])):
    try:
        _hlo.hlo_module_from_text(open(path).read())
    except Exception as err:  # XLA's parser raises RuntimeError with its message
        bad[path] = str(err)[:300]
print(json.dumps(bad))
"""


def _path(name: str, stage: str) -> Path:
    p = SHARED / "corpus" / f"{name}.{stage}.hlo"
    return p if p.exists() else p.with_suffix(".hlo.gz")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--targets", default="cpu,gpu,tpu,ascend")
    ap.add_argument("--stages", default="before_layout,pre")
    ap.add_argument("--time-limit", type=float, default=20.0)
    ap.add_argument("--skip-interpret", default="gpt_train_12l",
                    help="modules whose interpreter runs are too slow for the sweep")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    skip = set(filter(None, args.skip_interpret.split(",")))
    manifest = json.loads((SHARED / "corpus" / "manifest.json").read_text())
    rows: list[dict] = []
    outdir = Path(tempfile.mkdtemp(prefix="hlo-layout-sweep-"))
    began = time.perf_counter()
    for entry in manifest["modules"]:
        name = entry["name"]
        for stage in args.stages.split(","):
            original = parse_file(_path(name, stage))
            for target in args.targets.split(","):
                row = {"module": name, "stage": stage, "target": target}
                try:
                    r = assign(original, target, AssignOptions(time_limit_s=args.time_limit))
                    row.update(status=r.status, objective=r.objective, violations=len(r.violations))
                    out = outdir / f"{name}.{stage}.{target}.hlo"
                    out.write_text(print_module(r.module))
                    row["output"] = str(out)
                    if name in skip:
                        row["equivalent"] = "not run"
                    else:
                        eq = compare_modules(original, r.module, seed=0)
                        row["equivalent"] = eq.ok
                except Exception as err:  # a sweep records every failure and goes on
                    row["error"] = f"{type(err).__name__}: {err}"[:300]
                rows.append(row)
                print(json.dumps(row), flush=True)
    listing = outdir / "outputs.json"
    listing.write_text(json.dumps([r["output"] for r in rows if "output" in r]))
    proc = subprocess.run([sys.executable, "-c", XLA_PARSE, str(listing)],
                          capture_output=True, text=True, timeout=1800)
    rejected = json.loads(proc.stdout) if proc.returncode == 0 else {"<jaxlib>": proc.stderr[-300:]}
    for row in rows:
        if "output" in row:
            row["xla_parses"] = row["output"] not in rejected
    summary = {
        "pairs": len(rows),
        "assigned": sum("error" not in r for r in rows),
        "optimal": sum(r.get("status") == "OPTIMAL" for r in rows),
        "equivalent": sum(r.get("equivalent") is True for r in rows),
        "not_interpreted": sum(r.get("equivalent") == "not run" for r in rows),
        "not_equivalent": [f"{r['module']}.{r['stage']}/{r['target']}" for r in rows
                           if r.get("equivalent") is False],
        "with_violations": sum(bool(r.get("violations")) for r in rows),
        "xla_parses": sum(r.get("xla_parses") is True for r in rows),
        "errors": [f"{r['module']}.{r['stage']}/{r['target']}: {r['error']}" for r in rows
                   if "error" in r],
        "xla_rejected": rejected,
        "seconds": round(time.perf_counter() - began, 1),
    }
    print(json.dumps(summary, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps({"summary": summary, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
