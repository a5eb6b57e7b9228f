"""XLA:CPU's relayout copies of ``f32[8,64,64,C]``, timed as the calibration times them, with
the blocked-transpose tiles and memcpy runs the cost model counts and the coefficients the
calibration fits from them.

The copy-rows and copy-runs calibration groups (:mod:`service.calibration.microbenchmarks`)
for each ``C``: ``copy_wide`` (both minor dims 64 elements), ``copy_rows`` (the result's minor
dim ``C``), ``copy_rev`` (the source's minor dim ``C``) and ``copy_runs`` (``C`` stays minor,
major dims move). A row per ``C`` gives each copy's time over the wide one in ns per element
and its tiles (or runs); the last line the fitted ``row_ns``, ``tile_ns`` and
``tile_input_factor``::

    python3 bench/copy_tiles.py --reps 15
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from hlo.parser import parse_shape  # noqa: E402
from hlo.target import TILE_BYTES  # noqa: E402
from service.calibration.fit import Sample, _copy_runs, _copy_tiles  # noqa: E402
from service.calibration.microbenchmarks import copy_shapes  # noqa: E402
from service.calibration.run import measure  # noqa: E402
from solver.layout_assignment.costs import copy_tiles  # noqa: E402

KINDS = ("copy_rows", "copy_rev", "copy_runs")


def _tiles(kind: str, extent: int) -> str:
    if kind == "copy_runs":
        return f"{8 * 64 * 64} runs"
    found = copy_tiles(*(parse_shape(t) for t in copy_shapes(kind, extent)), TILE_BYTES)  # type: ignore[arg-type]
    return "-" if found is None else f"{found.count:.0f} tiles of {found.edge}x{found.edge}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=15)
    args = parser.parse_args()
    measured, machine = measure(reps=args.reps,
                                only=lambda g: g.name.endswith(("copy rows", "copy runs")))
    ms = {m.kind: m.median_ms for m in measured}
    extents = sorted({int(m.kind.rsplit("_", 1)[1]) for m in measured if m.kind != "base"})
    print(f"{machine}, {args.reps} rounds")
    print("| C | wide ms | " + " | ".join(f"{k}: ns/element over wide (model's count)"
                                          for k in KINDS) + " |")
    print("|---|---|" + "---|" * len(KINDS))
    for c in extents:
        elements = 8 * 64 * 64 * c
        cells = [f"{(ms[f'{k}_{c}'] - ms[f'copy_wide_{c}']) * 1e6 / elements:+.2f} "
                 f"({_tiles(k, c)})" if f"{k}_{c}" in ms else "-" for k in KINDS]
        print(f"| {c} | {ms[f'copy_wide_{c}']:.4f} | " + " | ".join(cells) + " |")
    samples = [Sample(m.kind, m.bytes, m.median_ms * 1e6) for m in measured]
    tile = _copy_tiles(samples, "copy_rows")
    print(f"row_ns {_copy_runs(samples):.2f}, tile_ns {tile:.2f}, "
          f"tile_input_factor {_copy_tiles(samples, 'copy_rev', tile):.2f}")


if __name__ == "__main__":
    main()
