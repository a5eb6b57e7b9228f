"""Parse and print time of our HLO front end next to XLA's C++ parser (through jaxlib).

    python3 bench/parse_print.py [FILE] [--reps N]

Default FILE: the largest corpus module (``gpt_train_12l.pre.hlo.gz``, ~10.5k
instructions). Reports the median of N repetitions, wall and CPU time, for
``hlo.parser.parse_module`` + ``hlo.printer.print_module`` and for XLA's
``_hlo.hlo_module_from_text`` + ``to_string`` (run in a subprocess, as XLA can abort).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from hlo.parser import parse_module, read_text  # noqa: E402
from hlo.printer import print_module  # noqa: E402

DEFAULT = REPO.parent / "shared" / "corpus" / "gpt_train_12l.pre.hlo.gz"

_XLA = r"""
import json, statistics, sys, time
from jaxlib import _hlo
text = open(sys.argv[1]).read()
reps = int(sys.argv[2])
parse, printing = [], []
for _ in range(reps):
    t0 = time.perf_counter(); m = _hlo.hlo_module_from_text(text); t1 = time.perf_counter()
    m.to_string(); t2 = time.perf_counter()
    parse.append(t1 - t0); printing.append(t2 - t1)
print(json.dumps({"parse": statistics.median(parse), "print": statistics.median(printing)}))
"""


def measure_ours(text: str, reps: int) -> dict[str, float]:
    parse, printing, cpu = [], [], []
    for _ in range(reps):
        c0 = time.process_time()
        t0 = time.perf_counter()
        module = parse_module(text)
        t1 = time.perf_counter()
        print_module(module)
        t2 = time.perf_counter()
        cpu.append(time.process_time() - c0)
        parse.append(t1 - t0)
        printing.append(t2 - t1)
    n = sum(len(c.instructions) for c in module.computations)
    return {"parse": statistics.median(parse), "print": statistics.median(printing),
            "cpu_parse_print": statistics.median(cpu), "instructions": n}


def measure_xla(text: str, reps: int, tmp: Path) -> dict[str, float]:
    tmp.write_text(text)
    run = subprocess.run([sys.executable, "-c", _XLA, str(tmp), str(reps)],
                         capture_output=True, text=True, check=True)
    return json.loads(run.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file", nargs="?", default=str(DEFAULT))
    ap.add_argument("--reps", type=int, default=7)
    args = ap.parse_args()
    text = read_text(args.file)
    ours = measure_ours(text, args.reps)
    xla = measure_xla(text, args.reps, Path("/tmp/hlo_layout_bench_parse.hlo"))
    print(f"file: {args.file} ({len(text) / 1e6:.2f} MB, {ours['instructions']} instructions), "
          f"median of {args.reps}")
    print(f"{'':18}{'parse (s)':>12}{'print (s)':>12}")
    print(f"{'hlo-layout':18}{ours['parse']:12.3f}{ours['print']:12.3f}"
          f"   (CPU parse+print {ours['cpu_parse_print']:.3f} s)")
    print(f"{'XLA via jaxlib':18}{xla['parse']:12.3f}{xla['print']:12.3f}")
    print(f"{'ratio (ours/XLA)':18}{ours['parse'] / xla['parse']:12.1f}{ours['print'] / xla['print']:12.1f}")


if __name__ == "__main__":
    main()
