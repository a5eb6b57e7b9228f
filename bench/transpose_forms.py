"""A 2-D transpose in XLA's form and as one standalone transpose, timed in XLA:CPU beside the
cost model's price.

``f32[n, m]{1,0}`` transposed to ``f32[m, n]{1,0}`` runs two ways: XLA's form (a transpose
that is a bitcast, then a ``copy``, which XLA:CPU runs as a blocked transpose in square tiles
no wider than ``n``) and a standalone ``transpose`` (an elementwise loop over the result
whose innermost loop reads ``n`` elements ``4 m`` bytes apart). Both run as their own modules
on the same input (:func:`service.xla.execution.run_modules`: one pinned CPU, interleaved
rounds); a row per ``n`` (``m`` = ``elements / n``) gives XLA's form's time and the
standalone's over it, measured and as the target's cost model prices both::

    python3 bench/transpose_forms.py --reps 11
    python3 bench/transpose_forms.py --n 3,32 --elements 1048576 --json

Short minor dims are where the two forms part: a copy to 3 elements runs most of its tiles
one element at a time, while the standalone loop's few reads per pass stay cached (where
they fit the ways of the cache's sets: :class:`hlo.target.CacheGeometry`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from hlo.parser import parse_module  # noqa: E402
from hlo.target import load_target  # noqa: E402
from service.layout_operations import model_cost  # noqa: E402
from service.xla.execution import run_modules  # noqa: E402

MINOR = (2, 3, 4, 5, 8, 12, 16, 24, 32, 48, 64, 128, 256)


def modules(n: int, m: int) -> list[tuple[str, object]]:
    """XLA's form and the standalone transpose of ``f32[n, m]``, as parsed modules."""
    head = (f"HloModule transpose_{n}x{m}, entry_computation_layout="
            f"{{(f32[{n},{m}]{{1,0}})->f32[{m},{n}]{{1,0}}}}\nENTRY e {{\n"
            f"  p = f32[{n},{m}]{{1,0}} parameter(0)\n")
    form = (head + f"  b = f32[{m},{n}]{{0,1}} transpose(p), dimensions={{1,0}}\n"
            f"  ROOT c = f32[{m},{n}]{{1,0}} copy(b)\n}}\n")
    alone = head + f"  ROOT t = f32[{m},{n}]{{1,0}} transpose(p), dimensions={{1,0}}\n}}\n"
    return [("form", parse_module(form)), ("standalone", parse_module(alone))]


def measure(n: int, elements: int, reps: int, target) -> dict:
    m = elements // n
    pair = modules(n, m)
    run = run_modules(pair, reps=reps)
    form, alone = (model_cost(module, target) for _, module in pair)
    return {"n": n, "m": m, "form_ms": round(run.executions[0].median_ms, 4),
            "measured": round(run.ratio(1).median, 3),
            "band": [round(run.ratio(1).low, 3), round(run.ratio(1).high, 3)],
            "noise": round(run.noise().median, 3), "outputs_match": run.matches(1).ok,
            "model_form_us": round(form / 1e3, 1), "model_standalone_us": round(alone / 1e3, 1),
            "predicted": round(alone / form, 3) if form else None}


#: The table's header rows.
HEAD = ("| n x m | XLA's form ms | standalone / form, measured | predicted | "
        "model: form, standalone us | outputs |\n|---|---|---|---|---|---|")


def _row(row: dict) -> str:
    band = f"[{row['band'][0]:.2f}, {row['band'][1]:.2f}]"
    return (f"| {row['n']} x {row['m']} | {row['form_ms']} | {row['measured']:.2f} {band} | "
            f"{row['predicted']:.2f} | {row['model_form_us']:.0f}, "
            f"{row['model_standalone_us']:.0f} | "
            f"{'match' if row['outputs_match'] else 'DIFFER'} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", default=",".join(map(str, MINOR)),
                        help="the result's minor dims, comma-separated")
    parser.add_argument("--elements", type=int, default=262144)
    parser.add_argument("--reps", type=int, default=11)
    parser.add_argument("--target", default="cpu")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = (measure(int(n), args.elements, args.reps, load_target(args.target))
            for n in args.n.split(","))
    if not args.json:
        print(HEAD)
    for row in rows:
        print(json.dumps(row) if args.json else _row(row), flush=True)


if __name__ == "__main__":
    main()
