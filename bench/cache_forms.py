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

``--edge``: copies of ``f32[512, c]`` timed alone, kept row-major and moving the minor dim, at
0.5 to 32 MiB moved (read + written), each against a module that reads one element (its
launch); each row prints ns per byte moved, measured and priced: where a copy timed alone
stops streaming at the cache's bandwidth (the target's ``cache_bytes``; inside a module a copy
does sooner, ``copies.cache_bytes``)::

    python3 bench/cache_forms.py --columns --reps 7
    python3 bench/cache_forms.py --nests --reps 21
    python3 bench/cache_forms.py --edge --reps 15
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

#: Array sizes of ``--edge`` in KiB (f32[512, c]): 0.5 to 32 MiB moved.
EDGE_KIB = (256, 512, 1024, 1536, 2048, 3072, 4096, 8192, 16384)


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


def edge_copies(kib: int) -> list[tuple[str, str]]:
    """``base`` (a 1-element slice), ``copy`` (row-major to row-major) and ``minor`` (to
    ``{0,1}``) of one ``f32[512, c]`` parameter of ``kib`` KiB."""
    c = kib * 1024 // 4 // 512
    shape = f"f32[512,{c}]"
    out = []
    for label, root, result in (
            ("base", "slice(%p), slice={[0:1], [0:1]}", "f32[1,1]{1,0}"),
            ("copy", "copy(%p)", f"{shape}{{1,0}}"),
            ("minor", "copy(%p)", f"{shape}{{0,1}}")):
        out.append((label, f"HloModule edge_{label}\nENTRY %e (p: {shape}) -> {result.split('{')[0]} {{\n"
                    f"  %p = {shape}{{1,0}} parameter(0)\n  ROOT %r = {result} {root}\n}}\n"))
    return out


def _edge(reps: int, target) -> None:
    print("| array | moved | copy ns/B measured | priced | moving the minor dim ns/B measured | priced |")
    print("|---|---|---|---|---|---|")
    for kib in EDGE_KIB:
        modules = [(label, parse_module(text)) for label, text in edge_copies(kib)]
        run = run_modules(modules, reps=reps, outputs=False)
        ms = {e.label: statistics.median(e.times_ms) for e in run.executions}
        moved = 2 * kib * 1024
        cells = []
        for label in ("copy", "minor"):
            priced = model_cost(modules[1 if label == "copy" else 2][1], target)
            cells += [f"{(ms[label] - ms['base']) * 1e6 / moved:.4f}", f"{priced / moved:.4f}"]
        print(f"| {kib} KiB | {moved / 2**20:g} MiB | " + " | ".join(cells) + " |", flush=True)


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
    parser.add_argument("--edge", action="store_true")
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
    if args.edge:
        _edge(args.reps, target)

if __name__ == "__main__":
    main()
