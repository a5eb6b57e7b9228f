"""A dot in each of its physical forms, timed in XLA:CPU beside the cost model's price.

A ``dot`` of ``lhs[M, K]`` and ``rhs[K, N]`` (``--rhs-contracting 1``: ``rhs[N, K]``, the
form of ``x @ w.T``; ``--lhs-contracting 0``: ``lhs[K, M]``, the form of ``x.T @ g``) has
eight physical forms: each of the two operands and
the result row-major (``r``, ``{1,0}``) or column-major (``c``, ``{0,1}``). Every form runs
as its own module whose parameters and result carry the form's layouts, all on the same
inputs (:func:`service.xla.execution.run_modules`: one pinned CPU, interleaved rounds), and
each is priced by the target's cost model. A row per shape gives the ``rrr`` time and every
other form's time over it, with the model's extra cost over ``rrr`` beside it::

    python3 bench/dot_forms.py --reps 15
    python3 bench/dot_forms.py --shapes 64x256x256 --rhs-contracting 1 --json

``ccc`` is the same product transposed (``C^T = B^T A^T``), so a model that prices only
transposes charges it three while XLA:CPU may run it as fast as ``rrr``, or faster.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from hlo.target import load_target  # noqa: E402
from service.calibration.microbenchmarks import dot_module  # noqa: E402
from service.layout_operations import model_cost  # noqa: E402
from service.xla.execution import run_modules  # noqa: E402

SHAPES = ((64, 64, 64), (128, 128, 128), (64, 256, 256), (256, 256, 64), (256, 256, 256),
          (512, 512, 512))
FORMS = tuple("".join(form) for form in itertools.product("rc", repeat=3))


def measure(m: int, k: int, n: int, reps: int, target, lhs_c: int = 1, rhs_c: int = 0
            ) -> dict:
    modules = [(form, dot_module(f"dot_{form}", m, k, n, form, lhs_c, rhs_c))
               for form in FORMS]
    run = run_modules(modules, reps=reps)
    base = model_cost(modules[0][1], target)
    return {"shape": [m, k, n], "contracting": [lhs_c, rhs_c], "rrr_ms": round(run.executions[0].median_ms, 4),
            "noise": round(run.noise().median, 3),
            "outputs_match": all(run.matches(i).ok for i in range(1, len(FORMS))),
            "measured": {form: round(run.ratio(i).median, 3) for i, form in enumerate(FORMS)},
            "model_extra_us": {form: round((model_cost(module, target) - base) / 1e3, 1)
                               for form, module in modules}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default=",".join("x".join(map(str, s)) for s in SHAPES),
                        help="MxKxN, comma-separated")
    parser.add_argument("--lhs-contracting", type=int, choices=(0, 1), default=1)
    parser.add_argument("--rhs-contracting", type=int, choices=(0, 1), default=0)
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--target", default="cpu")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    target = load_target(args.target)
    shapes = [tuple(int(x) for x in s.split("x")) for s in args.shapes.split(",")]
    if not args.json:
        print("| M x K x N | rrr ms | " + " | ".join(FORMS[1:]) + " | outputs |")
        print("|---|---|" + "---|" * (len(FORMS) - 1) + "---|")
    for m, k, n in shapes:
        row = measure(m, k, n, args.reps, target, args.lhs_contracting, args.rhs_contracting)
        if args.json:
            print(json.dumps(row), flush=True)
            continue
        cells = [f"{row['measured'][f]:.2f} ({row['model_extra_us'][f]:+.0f} us)"
                 for f in FORMS[1:]]
        print(f"| {m}x{k}x{n} | {row['rrr_ms']} | " + " | ".join(cells) + " | "
              f"{'match' if row['outputs_match'] else 'DIFFER'} |", flush=True)


if __name__ == "__main__":
    main()
