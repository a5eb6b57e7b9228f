"""What a relayout copy costs inside a module, by size, against what the target prices it.

A copy in a real module reads a value an earlier op wrote and writes a temporary a later op
reads; the calibration's copy benchmarks (``ROOT copy(parameter)``) write the module's
result instead. Here each copy sits between two elementwise ops over ``f32[n,n]``:

- ``ref``: ``p -> negate -> negate`` (``{1,0}`` throughout);
- ``plain``: ``p -> negate -> copy -> negate`` (the copy keeps ``{1,0}``: a memcpy);
- ``minor``: the copy to ``{0,1}`` (moves the minor dim) and the last negate in ``{0,1}``.

Per size, one interleaved run of the three (XLA:CPU, one pinned CPU, A/B/A); the copy's
time is ``(paired ratio - 1) x ref's median``, printed beside the target's price of the same
copy (``score`` of the module less the reference's)::

    python3 bench/copy_sizes.py --reps 15 --target cpu-xeon
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
from service.xla.execution import run_modules  # noqa: E402
from solver.layout_assignment.assign import score  # noqa: E402

EDGES = (128, 256, 362, 512, 724, 1024, 1448, 2048)


def module(name: str, n: int, copy: str | None) -> str:
    """``p -> negate -> [copy to layout ``copy``] -> negate`` over ``f32[n,n]``."""
    a = f"f32[{n},{n}]{{1,0}}"
    b = f"f32[{n},{n}]{copy}" if copy else a
    lines = [f"p = {a} parameter(0)", f"t = {a} negate(p)"]
    if copy:
        lines.append(f"c = {b} copy(t)")
    lines.append(f"ROOT r = {b} negate({'c' if copy else 't'})")
    body = "\n  ".join(lines)
    return (f"HloModule {name}, entry_computation_layout={{({a})->{b}}}\n\n"
            f"ENTRY e {{\n  {body}\n}}\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--target", default="cpu")
    parser.add_argument("--json", help="write the rows to this file")
    args = parser.parse_args()
    target = load_target(args.target)
    rows = []
    print("| n | bytes | ref ms | plain copy us (priced) | minor copy us (priced) |")
    print("|---|---|---|---|---|")
    for n in EDGES:
        mods = [(k, parse_module(module(k, n, c)))
                for k, c in (("ref", None), ("plain", "{1,0}"), ("minor", "{0,1}"))]
        run = run_modules(mods, reps=args.reps, warmup=2)
        ref_ms = run.executions[0].median_ms
        base = score(mods[0][1], target).predicted
        row = {"n": n, "bytes": 4 * n * n, "ref_ms": ref_ms}
        for k in (1, 2):
            ratio = run.ratio(k)
            row[mods[k][0]] = {"us": (ratio.median - 1) * ref_ms * 1e3,
                               "p25_us": (ratio.low - 1) * ref_ms * 1e3,
                               "p75_us": (ratio.high - 1) * ref_ms * 1e3,
                               "priced_us": (score(mods[k][1], target).predicted - base) / 1e3}
        rows.append(row)
        cells = [f"{row[k]['us']:.1f} [{row[k]['p25_us']:.1f}, {row[k]['p75_us']:.1f}] "
                 f"({row[k]['priced_us']:.1f})" for k in ("plain", "minor")]
        print(f"| {n} | {4 * n * n} | {ref_ms:.4f} | " + " | ".join(cells) + " |", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"target": target.name, "reps": args.reps,
                                               "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
