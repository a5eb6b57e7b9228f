"""What the f64 clause of ``verify`` costs: ``compare_modules(pre, after_layout)`` with and without it,
side by side in one process, on saved stages (``differential.py --save DIR``).

Usage: ``python bench/f64_clause_cost.py DIR [--rounds 3]``; prints per module the best time of each
and the ratio, and the total.
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from hlo.equivalence import compare_modules  # noqa: E402
from hlo.parser import parse_file  # noqa: E402


def _best(pre, after, rounds: int, clause: bool) -> tuple[float, bool]:
    times, ok = [], True
    for _ in range(rounds):
        start = time.perf_counter()
        ok = compare_modules(pre, after, f64_clause=clause).ok
        times.append(time.perf_counter() - start)
    return min(times), ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    total = [0.0, 0.0]
    for path in sorted(glob.glob(os.path.join(args.folder, "*.pre.hlo"))):
        name = os.path.basename(path)[: -len(".pre.hlo")]
        pre, after = parse_file(path), parse_file(path.replace(".pre.hlo", ".after_layout.hlo"))
        without, ok1 = _best(pre, after, args.rounds, False)
        with_clause, ok2 = _best(pre, after, args.rounds, True)
        total[0] += without
        total[1] += with_clause
        print(f"{name:28s} without {without * 1000:8.1f} ms  with {with_clause * 1000:8.1f} ms  "
              f"ratio {with_clause / without:5.2f}  ok {ok1}/{ok2}")
    print(f"{'total':28s} without {total[0]:8.2f} s   with {total[1]:8.2f} s   ratio {total[1] / total[0]:5.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
