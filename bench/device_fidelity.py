"""How well a target's cost model ranks modules measured on an accelerator.

Reads what ``bench/calibrate_device.py --held-out`` measured (one-op modules the calibration
never ran, each with its median time) and scores every module with each target given
(``hlo-layout score``'s model): per group, the own time of a module is its median minus the
group's base module, and Kendall's tau compares the model's cost with it (pooled: the
per-group taus weighted by their pairs). A pair whose measured times differ by less than
``--tie`` of the larger is counted as a tie (the host's dispatch varies by about 10 us from
module to module), and so is one the model prices the same.

    python3 bench/device_fidelity.py gpu_held_out.json --target gpu \\
        --target estimate=old_gpu.toml
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hlo.parser import parse_module  # noqa: E402
from hlo.target import load_target, read_target_file  # noqa: E402
from solver.layout_assignment.assign import score  # noqa: E402


def tau(predicted: list[float], measured: list[float], tie: float) -> tuple[float, int]:
    """Kendall's tau-a over the pairs the measurement orders (beyond ``tie``), and how many
    such pairs: concordant minus discordant over that count (a pair the model ties counts
    as neither)."""
    agree = disagree = pairs = 0
    for (p1, m1), (p2, m2) in itertools.combinations(zip(predicted, measured), 2):
        if abs(m1 - m2) <= tie * max(abs(m1), abs(m2)):
            continue
        pairs += 1
        if p1 == p2:
            continue
        if (p1 - p2) * (m1 - m2) > 0:
            agree += 1
        else:
            disagree += 1
    return ((agree - disagree) / pairs if pairs else 0.0), pairs


def evaluate(held_out: dict, targets: dict[str, object], tie: float) -> dict:
    groups: dict[str, list[dict]] = {}
    for row in held_out["modules"]:
        groups.setdefault(row["group"], []).append(row)
    report: dict = {"groups": {}, "pooled": {}}
    totals = {name: [0.0, 0] for name in targets}
    for group, rows in groups.items():
        base = next(r["median_ms"] for r in rows if r["kind"] == "base")
        rows = [r for r in rows if r["kind"] != "base"]
        measured = [(r["median_ms"] - base) * 1e6 for r in rows]
        entry: dict = {"modules": {r["label"]: {"measured_ns": round(m)}
                                   for r, m in zip(rows, measured)}}
        for name, target in targets.items():
            costs = [score(parse_module(r["module"], r["label"]), target).total for r in rows]
            for r, c in zip(rows, costs):
                entry["modules"][r["label"]][name] = c
            value, pairs = tau(costs, measured, tie)
            entry[f"tau_{name}"] = round(value, 3)
            entry["ordered_pairs"] = pairs
            totals[name][0] += value * pairs
            totals[name][1] += pairs
        report["groups"][group] = entry
    for name, (weighted, pairs) in totals.items():
        report["pooled"][name] = round(weighted / pairs, 3) if pairs else None
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("held_out", type=Path)
    parser.add_argument("--target", action="append", default=[],
                        help="a built-in target or NAME=PATH (repeat to compare)")
    parser.add_argument("--tie", type=float, default=0.05)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    targets: dict[str, object] = {}
    for spec in args.target or ["gpu"]:
        name, _, path = spec.partition("=")
        targets[name] = load_target(read_target_file(Path(path)) if path else name)
    report = evaluate(json.loads(args.held_out.read_text()), targets, args.tie)
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    names = list(targets)
    for group, entry in report["groups"].items():
        print(f"{group}: {entry['ordered_pairs']} ordered pairs, tau "
              + ", ".join(f"{n} {entry[f'tau_{n}']}" for n in names))
        for label, row in entry["modules"].items():
            print(f"  {label:24s} measured {row['measured_ns']:>9} ns   "
                  + "   ".join(f"{n} {row[n]:>9}" for n in names))
    print("pooled tau: " + ", ".join(f"{n} {report['pooled'][n]}" for n in names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
