"""Our layouts against XLA's own in a backend's compiler, through the PRE_SCHEDULER swap.

For each ``NAME.ours.hlo`` in a folder (with its input, ``NAME.before.hlo``): XLA's own
layout assignment for the platform is run on the input (``xla_layout_assignment``), and both
modules are swapped in at ``PRE_SCHEDULER`` (unfused, exactly their layouts) and timed
interleaved, XLA's twice per round (A/B/A); the outputs are compared. One JSON row per
module, written after each one, so a run cut short keeps what it measured.

    python3 bench/device_measure.py FOLDER OUT_DIR [--platform gpu] [--reps 15]

The folder is made on any machine: ``hlo-layout assign NAME.before.hlo -t gpu -o
NAME.ours.hlo`` for each module.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hlo.parser import parse_module  # noqa: E402
from service.xla.execution import run_modules  # noqa: E402
from service.xla.layout_pass import xla_layout_assignment  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--platform", default="gpu")
    parser.add_argument("--reps", type=int, default=15)
    args = parser.parse_args(argv)
    rows: list[dict] = []
    start = time.time()
    for path in sorted(args.folder.glob("*.ours.hlo")):
        name = path.name[: -len(".ours.hlo")]
        row: dict = {"module": name}
        try:
            before = (args.folder / f"{name}.before.hlo").read_text()
            xla = xla_layout_assignment(before, platform=args.platform, timeout_s=60)
            run = run_modules([("xla", parse_module(xla, name)),
                               ("ours", parse_module(path.read_text(), name))],
                              reps=args.reps, platform=args.platform, timeout_s=90)
            ratio, noise, match = run.ratio(1), run.noise(), run.matches(1)
            row.update(refusals=[e.refusal and e.refusal[:400] for e in run.executions],
                       medians_ms=[e.median_ms for e in run.executions],
                       ratio=ratio and ratio.median, noise=noise and noise.median,
                       match=match and (match.ok, match.max_error))
        except Exception as err:  # a probe: report what broke and go on
            row["error"] = f"{type(err).__name__}: {str(err)[:400]}"
        row["t"] = round(time.time() - start, 1)
        rows.append(row)
        print(json.dumps(row), flush=True)
        (args.out / "gpu_measure.json").write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
