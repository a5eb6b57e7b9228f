"""Does the candidate cap hide cheaper layouts? Every corpus module assigned twice: with the
default cap (``max_candidates=6``) and with 64, which adds every dim order of each array up to
rank 4 (``solver.layout_assignment.candidates.EVERY_ORDER_CAP``).

    python3 bench/optimality.py --target cpu --time-limit 10 --out bench/optimality_results.json

Per module: status, true cost and bound with each cap, and how many free arrays still had
dim orders left out with the larger cap (rank 5 and up). A cheaper answer with the larger cap
would mean the default OPTIMAL was optimal over the capped list only.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
SHARED = Path(os.environ.get("HLO_LAYOUT_SHARED", REPO.parent / "shared"))

from hlo.parser import parse_module  # noqa: E402
from solver.layout_assignment.assign import assign  # noqa: E402
from solver.layout_assignment.options import AssignOptions  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--target", default="cpu")
    parser.add_argument("--time-limit", type=float, default=10.0)
    parser.add_argument("--max-instructions", type=int, default=4000)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    rows = []
    for path in sorted((SHARED / "corpus").glob("*.before_layout.hlo*")):
        name = path.name.split(".")[0]
        text = gzip.open(path, "rt").read() if path.suffix == ".gz" else path.read_text()
        module = parse_module(text, name)
        size = sum(len(c.instructions) for c in module.computations)
        if size > args.max_instructions:
            rows.append({"module": name, "skipped": f"{size} instructions"})
            continue
        row = {"module": name, "instructions": size}
        for cap in (6, 64):
            began = time.perf_counter()
            r = assign(module, args.target, AssignOptions(time_limit_s=args.time_limit,
                                             max_candidates=cap))
            row[f"cap{cap}"] = {"status": r.status, "cost": r.objective,
                                "bound": r.lower_bound, "s": round(time.perf_counter() - began, 1),
                                "arrays_capped": r.scope["arrays_capped"],
                                "free_arrays": r.scope["free_arrays"]}
        row["cheaper_uncapped"] = row["cap64"]["cost"] < row["cap6"]["cost"]
        rows.append(row)
        print(json.dumps(row), flush=True)
    done = [r for r in rows if "cap6" in r]
    summary = {
        "target": args.target, "modules": len(done),
        "skipped": [r["module"] for r in rows if "skipped" in r],
        "cheaper_with_every_order": [r["module"] for r in done if r["cheaper_uncapped"]],
        "optimal_both": sum(r["cap6"]["status"] == r["cap64"]["status"] == "OPTIMAL" for r in done),
        "arrays_still_capped_at_64": sum(r["cap64"]["arrays_capped"] for r in done),
    }
    print(json.dumps(summary, indent=1))
    if args.out:
        args.out.write_text(json.dumps({"summary": summary, "modules": rows}, indent=1))


if __name__ == "__main__":
    main()
