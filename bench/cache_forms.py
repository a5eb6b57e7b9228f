"""What the cpu target's cache terms were measured from, re-run beside the model's prices.

``--columns``: an ``f32[R, m]`` sum over dim 0 with the parameter laid out ``{1,0}`` (a column
reduction reading ``4 m`` bytes apart) and ``{0,1}`` (the row form), at operand sizes from
64 KiB to 8 MiB; each row prints the column form's extra ns per element over the row form,
measured and priced (``rules._column_passes``: passes by stride and operand size, at the
cache's bandwidth).

``--nests``: a standalone ``transpose`` against XLA's form of it (a bitcast transpose and a
copy), for transposes whose loop nest overflows the level-1 cache's sets
(``[k,16,256] -> [256,k,16]``) and two that do as much over small operands (conv weights);
each row prints standalone / form measured, and the standalone's extra us over the form,
measured (from that ratio) and priced::

    python3 bench/cache_forms.py --columns --reps 7
    python3 bench/cache_forms.py --nests --reps 21
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hlo.parser import parse_module  # noqa: E402
from hlo.target import load_target  # noqa: E402
from service.layout_operations import model_cost  # noqa: E402
from service.xla.execution import run_modules  # noqa: E402

#: (elements, minor extent m): 64 KiB to 8 MiB, reads 128, 512 and 2048 bytes apart.
COLUMNS = [(n, m) for n in (1 << 14, 1 << 16, 1 << 18, 1 << 20, 1 << 21) for m in (32, 128, 512)
           if n // m >= 128]
#: (operand dims, transpose dimensions).
NESTS = [((8, 16, 256), (2, 0, 1)), ((16, 16, 256), (2, 0, 1)), ((32, 16, 256), (2, 0, 1)),
         ((32, 16, 5, 5), (2, 3, 1, 0)), ((4, 16, 16, 16), (3, 1, 2, 0))]


def _dims(values) -> str:
    return ",".join(map(str, values))


def column_sum(r: int, m: int, layout: str) -> str:
    return (f"HloModule columns\n%add (a: f32[], b: f32[]) -> f32[] {{\n  %a = f32[] parameter(0)\n"
            f"  %b = f32[] parameter(1)\n  ROOT %s = f32[] add(%a, %b)\n}}\n"
            f"ENTRY %e (p: f32[{r},{m}]) -> f32[{m}] {{\n  %p = f32[{r},{m}]{{{layout}}} parameter(0)\n"
            f"  %z = f32[] constant(0)\n  ROOT %r = f32[{m}]{{0}} reduce(%p, %z), dimensions={{0}}, "
            f"to_apply=%add\n}}\n")


def transposes(dims: tuple[int, ...], perm: tuple[int, ...]) -> tuple[str, str]:
    """The standalone transpose and XLA's form of it, both row-major at both ends."""
    n = len(dims)
    row = _dims(range(n - 1, -1, -1))
    out = tuple(dims[p] for p in perm)
    bitcast = _dims(perm.index(d) for d in range(n - 1, -1, -1))
    src, dst = f"f32[{_dims(dims)}]", f"f32[{_dims(out)}]"
    head = f"ENTRY %e (p: {src}) -> {dst} {{\n  %p = {src}{{{row}}} parameter(0)\n"
    standalone = (f"HloModule standalone\n{head}  ROOT %t = {dst}{{{row}}} transpose(%p), "
                  f"dimensions={{{_dims(perm)}}}\n}}\n")
    form = (f"HloModule form\n{head}  %t = {dst}{{{bitcast}}} transpose(%p), "
            f"dimensions={{{_dims(perm)}}}\n  ROOT %c = {dst}{{{row}}} copy(%t)\n}}\n")
    return standalone, form


def _paired(texts: list[tuple[str, str]], reps: int, target) -> tuple[float, list[float], float]:
    """(median paired ratio second / first, medians in ms, predicted ns of second - first)."""
    modules = [(label, parse_module(text)) for label, text in texts]
    run = run_modules(modules, reps=reps, outputs=False)
    first, second = (e.times_ms for e in run.executions)
    ratio = statistics.median(b / a for a, b in zip(first, second))
    priced = model_cost(modules[1][1], target) - model_cost(modules[0][1], target)
    return ratio, [statistics.median(first), statistics.median(second)], priced


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--columns", action="store_true")
    parser.add_argument("--nests", action="store_true")
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--target", default="cpu")
    args = parser.parse_args()
    target = load_target(args.target)
    if args.columns:
        print("| operand | bytes apart | row ms | column ms | extra ns/element measured | priced |")
        print("|---|---|---|---|---|---|")
        for n, m in COLUMNS:
            _, (row, column), priced = _paired(
                [("row", column_sum(n // m, m, "0,1")), ("column", column_sum(n // m, m, "1,0"))],
                args.reps, target)
            print(f"| {n * 4 // 1024} KiB | {4 * m} | {row:.3f} | {column:.3f} | "
                  f"{(column - row) * 1e6 / n:.2f} | {priced / n:.2f} |", flush=True)
    if args.nests:
        print("| transpose | form ms | standalone / form | extra us measured | priced |")
        print("|---|---|---|---|---|")
        for dims, perm in NESTS:
            standalone, form = transposes(dims, perm)
            ratio, (form_ms, _), priced = _paired([("form", form), ("standalone", standalone)],
                                                  args.reps, target)
            print(f"| {list(dims)} perm {list(perm)} | {form_ms:.3f} | {ratio:.2f} | "
                  f"{(ratio - 1) * form_ms * 1e3:.1f} | {priced / 1e3:.1f} |", flush=True)

if __name__ == "__main__":
    main()
