"""Random JAX programs through XLA:CPU and through our tools (bench/differential.py).

Oracles we did not write: XLA's own stages (its layout assignment's answer must verify against
the module it started from) and XLA:CPU's own execution (our interpreter must agree with it).
Two subprocesses run 12 programs each (XLA runs there: it may abort a process); breaks planted
into the saved ``after_layout`` modules must then fail verification.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from bench.programs.random_programs import FEATURES, random_program  # noqa: E402
from hlo.equivalence import compare_modules  # noqa: E402
from hlo.parser import parse_file  # noqa: E402
from bench.planted_breaks import PLANTERS, VALUE_PLANTERS, observable  # noqa: E402

PER_PROCESS = 12


def _run_programs(folder: Path) -> list[dict]:
    procs = [
        subprocess.Popen(
            [sys.executable, str(REPO / "bench" / "differential.py"), "--start", str(start),
             "--count", str(PER_PROCESS), "--json", str(folder / f"{start}.json"), "--save", str(folder)],
            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for start in (0, PER_PROCESS)
    ]
    results = []
    for start, proc in zip((0, PER_PROCESS), procs):
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-2000:]
        results += json.loads((folder / f"{start}.json").read_text())["results"]
    return results


@pytest.mark.xla
def test_generated_programs_verify_agree_with_xla_and_planted_breaks_fail(tmp_path):
    results = _run_programs(tmp_path)
    assert len(results) == 2 * PER_PROCESS
    failed = [f"seed {r['seed']} {r['features']}: {r['cause']}: {r['detail']}" for r in results if not r["ok"]]
    assert not failed, "\n".join(failed)
    covered = {f for r in results for f in r["features"]}
    assert covered == set(FEATURES), set(FEATURES) - covered
    # Every planted change that changes the function (value-level ones: the two modules differ
    # when evaluated in f64) fails verification; up to three per kind of break.
    for planter, plant in sorted(PLANTERS.items()):
        real = caught = 0
        for seed in range(2 * PER_PROCESS):
            pre = parse_file(tmp_path / f"random_{seed}.pre.hlo")
            after = parse_file(tmp_path / f"random_{seed}.after_layout.hlo")
            broken = plant(after)
            if broken is None or (planter in VALUE_PLANTERS and not observable(after, broken, seed)):
                continue
            real += 1
            caught += not compare_modules(pre, broken, seed=seed).ok
            if real == 3:
                break
        assert real >= 1, f"no generated module has a place for {planter}"
        assert caught == real, planter


def test_programs_are_deterministic():
    one, two = random_program(7), random_program(7)
    assert one.features == two.features and all((a == b).all() for a, b in zip(one.args, two.args))
    assert random_program(8).features != one.features or random_program(9).features != one.features
