"""How often the in-place prediction agrees with XLA:CPU's own buffer assignment.

For every variant module a fidelity run saved (``bench/fidelity.py --variants-dir D``: one
folder per module, one ``LABEL.hlo`` per variant), XLA compiles the module once with its
dumps on (:func:`service.xla.buffer_assignment.xla_in_place`) and every elementwise op XLA
keeps is compared with :func:`solver.layout_assignment.in_place.in_place_reads`: in place or
not, and over which operand.

    python3 bench/in_place_agreement.py --variants-dir /tmp/fid_variants_b3 --out A.json

Prints per module the ops agreeing, predicted in place where XLA is not, and the reverse;
then the totals. About a minute per module of nine variants on a 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from hlo.parser import parse_file  # noqa: E402
from service.xla.buffer_assignment import xla_in_place  # noqa: E402
from service.xla.errors import XlaError  # noqa: E402
from solver.layout_assignment.in_place import in_place_reads  # noqa: E402


def compare(module_path: Path) -> dict:
    """Counts for one variant: agreeing ops, false and missed in-place predictions."""
    module = parse_file(module_path)
    truth = xla_in_place(module)
    predicted = in_place_reads(module.entry)
    agree = extra = missed = 0
    for name, operands in truth.items():
        if bool(operands) == (name in predicted) and (
                not operands or predicted[name].name in operands):
            agree += 1
        elif name in predicted and not operands:
            extra += 1
        else:
            missed += 1
    return {"ops": len(truth), "agree": agree, "predicted_not_xla": extra,
            "xla_not_predicted": missed}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants-dir", type=Path, required=True)
    parser.add_argument("--modules", default="", help="comma-separated module folders (all)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    folders = sorted(p for p in args.variants_dir.iterdir() if p.is_dir())
    if args.modules:
        folders = [p for p in folders if p.name in args.modules.split(",")]
    results, total = {}, {"ops": 0, "agree": 0, "predicted_not_xla": 0, "xla_not_predicted": 0}
    for folder in folders:
        row = {"ops": 0, "agree": 0, "predicted_not_xla": 0, "xla_not_predicted": 0}
        for path in sorted(folder.glob("*.hlo")):
            try:
                counts = compare(path)
            except XlaError as exc:  # XLA refused the variant: a row, not a crash
                results[f"{folder.name}/{path.stem}"] = {"refused": str(exc)[:200]}
                continue
            for key, value in counts.items():
                row[key] += value
        results[folder.name] = row
        for key, value in row.items():
            total[key] += value
        print(f"{folder.name}: {row['agree']}/{row['ops']} agree, "
              f"{row['predicted_not_xla']} predicted only, {row['xla_not_predicted']} XLA only",
              flush=True)
    share = total["agree"] / total["ops"] if total["ops"] else 0.0
    print(f"total: {total['agree']}/{total['ops']} agree ({share:.3f}), "
          f"{total['predicted_not_xla']} predicted only, {total['xla_not_predicted']} XLA only")
    if args.out:
        args.out.write_text(json.dumps({"total": total, "modules": results}, indent=1))


if __name__ == "__main__":
    main()
