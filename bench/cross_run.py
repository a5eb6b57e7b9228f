"""How far two fidelity runs agree with each other, and the model with each.

Two ``bench/fidelity.py`` results files with the folders their runs wrote the variants to
(``--variants-dir``): the variants that are the same program in both runs (their text, metadata
aside; XLA's own left out, its ratio is 1 by definition) are the programs measured twice. The
Kendall tau between the two runs' measured ratios over them is what the measurement agrees with
itself; the model's tau against each run over the same programs is what it reaches there.

    python3 bench/cross_run.py RUN_A.json DIR_A RUN_B.json DIR_B [--near 0.05]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.fidelity_stats import kendall_tau  # noqa: E402

_METADATA = re.compile(r", metadata=\{[^}]*\}")


def measured(results: Path, variants: Path) -> dict[tuple[str, str], tuple[float, float]]:
    """``(module, program text) -> (measured ratio, predicted ratio)`` of a run's variants
    whose text its folder holds (XLA's own left out)."""
    out = {}
    for r in json.loads(results.read_text())["results"]:
        for label, row in r.get("variants", {}).items():
            path = variants / r["module"] / f"{label}.hlo"
            if label == "xla" or not path.exists() or not row.get("ratio"):
                continue
            if row.get("predicted_ratio") is None:
                continue
            text = _METADATA.sub("", path.read_text())
            out[(r["module"], text)] = (row["ratio"]["median"], row["predicted_ratio"])
    return out


def agreement(a: dict, b: dict, near: float) -> dict:
    """The taus over the programs both runs measured (module docstring); ``near``: the
    programs within that share of XLA's time in either run, and the rest, apart."""
    common = sorted(k for k in a if k in b)

    def tau(keys: list, first: int, second: int, x: dict, y: dict) -> float | None:
        return kendall_tau([x[k][first] for k in keys], [y[k][second] for k in keys])

    close = [k for k in common if abs(a[k][0] - 1) < near or abs(b[k][0] - 1) < near]
    rest = [k for k in common if k not in close]
    return {"programs": len(common), "runs": tau(common, 0, 0, a, b),
            "near": len(close), "runs_near": tau(close, 0, 0, a, b),
            "rest": len(rest), "runs_rest": tau(rest, 0, 0, a, b),
            "model_vs_a": tau(common, 1, 0, a, a), "model_vs_b": tau(common, 1, 0, b, b)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_a", type=Path)
    parser.add_argument("dir_a", type=Path)
    parser.add_argument("run_b", type=Path)
    parser.add_argument("dir_b", type=Path)
    parser.add_argument("--near", type=float, default=0.05)
    args = parser.parse_args(argv)
    found = agreement(measured(args.run_a, args.dir_a), measured(args.run_b, args.dir_b),
                      args.near)
    print(json.dumps(found, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
