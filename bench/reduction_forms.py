"""A reduction read in place as a column reduction against the copy that makes it a row one.

For each combiner (``argmax``: the variadic reduce ``jnp.argmax`` lowers to; ``max``; ``add``)
and each shape, two modules take the same ``f32`` parameter in row-major layout:

- ``column``: the reduce reads it as it is (the kept minor dim stays minor);
- ``copied``: a ``copy`` puts the reduced dim minor first, then the reduce runs as a row
  reduction (what an assignment that avoids the column form writes).

Both run in XLA:CPU (:func:`service.xla.execution.run_modules`: one pinned CPU, interleaved
rounds) and are priced by the target's cost model. Each row prints the measured time of
``copied`` minus ``column`` next to the model's difference, and whether they agree in sign::

    python3 bench/reduction_forms.py --reps 21
    python3 bench/reduction_forms.py --kinds argmax --reps 31 --json

The shapes: ``[B, 32, K]`` reduced over its middle dim (the rows one result element reads lie
``4 K`` bytes apart and span ``128 K`` bytes) and ``[R, K]`` reduced over dim 0 (``R`` rows
``4 K`` bytes apart), 128 KiB to 4 MiB.
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

SHAPES = (((16, 32, 64), 1), ((32, 32, 128), 1), ((64, 32, 256), 1), ((128, 32, 256), 1),
          ((128, 256), 0), ((256, 512), 0), ((512, 1024), 0), ((1024, 1024), 0))

COMBINERS = """%argmax (a: f32[], b: s32[], c: f32[], d: s32[]) -> (f32[], s32[]) {
  %a = f32[] parameter(0)
  %b = s32[] parameter(1)
  %c = f32[] parameter(2)
  %d = s32[] parameter(3)
  %gt = pred[] compare(f32[] %a, f32[] %c), direction=GT
  %ne = pred[] compare(f32[] %a, f32[] %a), direction=NE
  %or = pred[] or(pred[] %gt, pred[] %ne)
  %v = f32[] select(pred[] %or, f32[] %a, f32[] %c)
  %eq = pred[] compare(f32[] %a, f32[] %c), direction=EQ
  %lt = pred[] compare(s32[] %b, s32[] %d), direction=LT
  %and = pred[] and(pred[] %eq, pred[] %lt)
  %first = pred[] or(pred[] %or, pred[] %and)
  %i = s32[] select(pred[] %first, s32[] %b, s32[] %d)
  ROOT %t = (f32[], s32[]) tuple(f32[] %v, s32[] %i)
}

%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(f32[] %a, f32[] %b)
}

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}
"""


def _text(values) -> str:
    return ",".join(map(str, values))


def reduction(shape: tuple[int, ...], dim: int, layout: tuple[int, ...], kind: str) -> str:
    """The module: ``f32[shape]`` row-major, copied to ``layout`` unless that is row-major,
    reduced over ``dim`` by ``kind``."""
    row = tuple(range(len(shape) - 1, -1, -1))
    kept = [d for i, d in enumerate(shape) if i != dim]
    array, result = f"f32[{_text(shape)}]", f"[{_text(kept)}]{{{_text(range(len(kept) - 1, -1, -1))}}}"
    lines = [f"  %x = {array}{{{_text(row)}}} parameter(0)"]
    source = "%x"
    if layout != row:
        lines.append(f"  %y = {array}{{{_text(layout)}}} copy({array}{{{_text(row)}}} %x)")
        source = "%y"
    operand = f"{array}{{{_text(layout)}}} {source}"
    if kind == "argmax":
        iota = f"s32[{_text(shape)}]{{{_text(layout)}}}"
        lines += [f"  %i = {iota} iota(), iota_dimension={dim}", "  %c = f32[] constant(-inf)",
                  "  %z = s32[] constant(0)"]
        out = f"(f32{result}, s32{result})"
        lines.append(f"  ROOT %r = {out} reduce({operand}, {iota} %i, f32[] %c, s32[] %z), "
                     f"dimensions={{{dim}}}, to_apply=%argmax")
    else:
        out = f"f32{result}"
        lines += [f"  %c = f32[] constant({'-inf' if kind == 'max' else '0'})",
                  f"  ROOT %r = {out} reduce({operand}, f32[] %c), dimensions={{{dim}}}, "
                  f"to_apply=%{kind}"]
    head = f"HloModule {kind}, entry_computation_layout={{({array}{{{_text(row)}}})->{out}}}\n\n"
    return f"{head}{COMBINERS}\nENTRY %e (x: {array}) -> {out} {{\n" + "\n".join(lines) + "\n}\n"


def reduced_minor(shape: tuple[int, ...], dim: int) -> tuple[int, ...]:
    """The layout with ``dim`` minor, the others in row-major order."""
    return (dim, *[d for d in range(len(shape) - 1, -1, -1) if d != dim])


def measure(kind: str, shape: tuple[int, ...], dim: int, reps: int, target) -> dict:
    column = parse_module(reduction(shape, dim, tuple(range(len(shape) - 1, -1, -1)), kind))
    copied = parse_module(reduction(shape, dim, reduced_minor(shape, dim), kind))
    run = run_modules([("column", column), ("copied", copied)], reps=reps)
    ratio, column_ms = run.ratio(1), run.executions[0].median_ms
    measured_us = (ratio.median - 1.0) * column_ms * 1e3
    predicted_us = (model_cost(copied, target) - model_cost(column, target)) / 1e3
    size = 4
    for d in shape:
        size *= d
    return {"kind": kind, "shape": list(shape), "dim": dim, "bytes": size,
            "column_ms": round(column_ms, 4), "copied_over_column": round(ratio.median, 3),
            "p25": round(ratio.low, 3), "p75": round(ratio.high, 3),
            "noise": round(run.noise().median, 3), "outputs_match": run.matches(1).ok,
            "measured_us": round(measured_us, 1), "predicted_us": round(predicted_us, 1),
            "same_sign": (measured_us > 0) == (predicted_us > 0)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kinds", default="argmax,max,add")
    parser.add_argument("--reps", type=int, default=21)
    parser.add_argument("--target", default="cpu")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    target = load_target(args.target)
    print("| combiner | shape | reduced | bytes | column ms | copied / column [p25, p75] | "
          "copied - column, measured us | model us | same sign |")
    print("|---|---|---|---|---|---|---|---|---|")
    for kind in args.kinds.split(","):
        for shape, dim in SHAPES:
            row = measure(kind, shape, dim, args.reps, target)
            if args.json:
                print(json.dumps(row), flush=True)
                continue
            print(f"| {kind} | {shape} | {dim} | {row['bytes']} | {row['column_ms']} | "
                  f"{row['copied_over_column']} [{row['p25']}, {row['p75']}] | "
                  f"{row['measured_us']} | {row['predicted_us']} | "
                  f"{'yes' if row['same_sign'] else 'no'} |", flush=True)


if __name__ == "__main__":
    main()
