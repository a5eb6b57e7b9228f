"""Differential testing at scale: random JAX programs through XLA:CPU and through our tools.

For each program of :mod:`bench.programs.random_programs` (seeds ``start .. start+count-1``):

1. XLA:CPU compiles it and dumps its stages (``pre``, ``before_layout``, ``after_layout``:
   :func:`service.xla.stages.dump_stages`);
2. ``verify pre after_layout`` must pass (:func:`hlo.equivalence.compare_modules`);
3. ``verify before_layout after_layout`` must pass;
4. our interpreter's run of ``pre`` must agree with XLA:CPU's own execution of the program on the
   same inputs (:func:`hlo.equivalence.compare_outputs`: the same criterion as ``verify``).

With ``--plant``, each break of :mod:`bench.planted_breaks` is also planted into ``after_layout``
and must make ``verify pre`` fail (a value-level change that leaves the function the same in f64,
such as a transpose of a symmetric matrix, is counted as "no change"). A program that fails is
recorded with its cause (which step, and the opcode or reason), never
skipped. Usage::

    python bench/differential.py --count 300 [--start 0] [--json out.json] [--save DIR] [--plant]

It needs jax (the ``test`` extra). XLA runs in this process: run it as a script, not inside a
process that must survive an XLA abort.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import sys
import time
from dataclasses import asdict, dataclass

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.programs.random_programs import Program, random_program  # noqa: E402
from hlo.equivalence import compare_modules, compare_outputs  # noqa: E402
from hlo.errors import HloError  # noqa: E402
from hlo.parser import parse_module  # noqa: E402
from hlo.random_inputs import random_arguments  # noqa: E402


@dataclass(frozen=True)
class Result:
    seed: int
    features: tuple[str, ...]
    ok: bool
    cause: str | None
    detail: str | None
    seconds: float
    #: planter -> "caught", "missed", "no change" (the f64 function is the same), "decided by
    #: rounding" (the original's f64 value moves as far under f64 rounding), "undefined output" or "no place"
    planted: dict[str, str] | None = None
    name: str = ""
    #: "pre", "before_layout" -> the largest error / allowed error of that verify step, for the
    #: rounding clause ("<step>") and the f64 clause ("<step> f64"): how close XLA's answer came.
    margins: dict[str, float] | None = None


def _defined(module, seed: int) -> bool:
    """Whether some float output element of ``module`` is a number on the planting inputs."""
    from hlo.interpreter import evaluate

    value = evaluate(module, random_arguments(module, np.random.default_rng([seed, 0])))
    leaves = value if isinstance(value, tuple) else (value,)
    return any(np.isfinite(np.asarray(v, np.float64)).any() for v in leaves if np.asarray(v).size)


def plant_breaks(pre, after, seed: int) -> dict[str, str]:
    """Each break of :mod:`bench.planted_breaks` planted into ``after``, and whether verify fails."""
    from bench.planted_breaks import PLANTERS

    out = {}
    defined = _defined(pre, seed)
    for name, plant in sorted(PLANTERS.items()):
        try:
            out[name] = _planted(name, plant, pre, after, seed, defined)
        except HloError as exc:  # recorded, not fatal to the run: it shows in the summary
            out[name] = f"error: {exc.message[:120]}"
    return out


def _planted(name, plant, pre, after, seed: int, defined: bool) -> str:
    from bench.planted_breaks import VALUE_PLANTERS, change

    broken = plant(after)
    if broken is None:
        return "no place"
    if not defined:
        return "undefined output"  # the original is NaN everywhere: nothing to compare
    if name not in VALUE_PLANTERS:
        return _verdict(pre, broken, seed)
    verdict = change(after, broken, seed)
    if verdict == "no change" and change(after, broken, seed, SMALL_CHANGE) == "changed":
        # Below the counting threshold but more than f64 noise: recorded on its own.
        return "small change " + _verdict(pre, broken, seed)
    return _verdict(pre, broken, seed) if verdict == "changed" else verdict  # or "decided by rounding"


#: Breaks that move an output by less than :data:`bench.planted_breaks.OBSERVABLE` but more than
#: this fraction of its scale are reported apart ("small change caught" / "small change missed").
SMALL_CHANGE = 1e-6


def _verdict(pre, broken, seed: int) -> str:
    try:
        return "caught" if not compare_modules(pre, broken, seed=seed).ok else "missed"
    except HloError:
        return "caught"  # refused: the broken module cannot even be run


def _cause(step: str, message: str) -> str:
    """``step: opcode`` for an interpreter error (``custom-call 'x' (line 3): ...``), else the step."""
    found = re.match(r"([a-z][a-z0-9-]*) '", message)
    if found:
        target = re.search(r"custom_call_target=?\"?'?([A-Za-z0-9_]+)", message) or re.search(
            r"target '([^']+)'", message)
        opcode = found.group(1) + (f" {target.group(1)}" if found.group(1) == "custom-call" and target else "")
        return f"{step}: {opcode}"
    return step


def check(seed: int, save: str | None = None, plant: bool = False) -> Result:
    return check_program(random_program(seed), seed, save, plant)


def check_program(program: Program, seed: int, save: str | None = None, plant: bool = False) -> Result:
    """The three checks (and with ``plant`` the planted breaks) for one program; ``seed`` seeds
    the random inputs."""
    import jax

    start = time.perf_counter()
    features = program.features

    planted: dict[str, str] | None = None
    margins: dict[str, float] = {}

    def done(cause: str | None = None, detail: str | None = None) -> Result:
        return Result(seed, features, cause is None, cause, detail, round(time.perf_counter() - start, 3),
                      planted, program.name, margins)

    jitted = jax.jit(program.function, keep_unused=True)
    try:
        from service.xla.stages import dump_stages

        stages = dump_stages(jitted, *program.args, name=program.name)
    except Exception as exc:  # noqa: BLE001  (a program XLA cannot compile is the generator's fault)
        return done("generator: XLA did not compile it", f"{type(exc).__name__}: {exc}"[:300])
    if save:
        for stage in ("pre", "before_layout", "after_layout"):
            with open(os.path.join(save, f"{program.name}.{stage}.hlo"), "w") as f:
                f.write(getattr(stages, stage))
    try:
        pre = parse_module(stages.pre, "pre.hlo")
        before = parse_module(stages.before_layout, "before_layout.hlo")
        after = parse_module(stages.after_layout, "after_layout.hlo")
    except HloError as exc:
        return done("parse", str(exc)[:300])
    for step, first, second in (("verify pre after_layout", pre, after),
                                ("verify before_layout after_layout", before, after)):
        try:
            report = compare_modules(first, second, seed=seed)
        except HloError as exc:
            return done(_cause(step, exc.message), exc.message[:300])
        margins[step.split()[1]] = round(report.worst_ratio, 4)
        margins[step.split()[1] + " f64"] = round(report.worst_f64_ratio, 4)
        if not report.ok:
            detail = str(report.difference) if report.difference else "; ".join(report.violations[:2])
            return done(f"{step}: not equivalent", detail[:300])
    inputs = random_arguments(pre, np.random.default_rng([seed, 99]))
    outputs = jitted(*inputs)
    got = tuple(np.asarray(o) for o in jax.tree_util.tree_leaves(outputs))
    try:
        report = compare_outputs(pre, inputs, got, seed=seed)
    except HloError as exc:
        return done(_cause("interpreter vs XLA:CPU", exc.message), exc.message[:300])
    if not report.equivalent:
        return done("interpreter vs XLA:CPU: outputs differ", str(report.difference)[:300])
    if plant:
        planted = plant_breaks(pre, after, seed)
    return done()


def run(start: int, count: int, save: str | None = None, plant: bool = False) -> list[Result]:
    return [check(seed, save, plant) for seed in range(start, start + count)]


def run_motivating(save: str | None = None, plant: bool = False) -> list[Result]:
    """The programs of :mod:`bench.programs.motivating_cases`, numbered 0.. in the results."""
    from bench.programs.motivating_cases import motivating_cases

    return [check_program(program, number, save, plant) for number, program in enumerate(motivating_cases())]


def summary(results: list[Result]) -> dict:
    causes = collections.Counter(r.cause for r in results if not r.ok)
    by_feature = collections.defaultdict(lambda: [0, 0])
    for r in results:
        for f in set(r.features):
            by_feature[f][0 if r.ok else 1] += 1
    return {
        "programs": len(results),
        "passed": sum(r.ok for r in results),
        "failed": len(results) - sum(r.ok for r in results),
        "failures_by_cause": dict(causes.most_common()),
        "by_feature": {f: {"passed": p, "failed": q} for f, (p, q) in sorted(by_feature.items())},
        "planted": {
            name: dict(collections.Counter(r.planted[name] for r in results if r.planted))
            for name in sorted({n for r in results if r.planted for n in r.planted})
        },
        "worst_margins": {
            key: max(r.margins[key] for r in results if r.margins and key in r.margins)
            for key in sorted({k for r in results if r.margins for k in r.margins})
        },
        "seconds": round(sum(r.seconds for r in results), 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--json", help="write every result and the summary here")
    parser.add_argument("--save", help="write each program's three stages into this folder")
    parser.add_argument("--plant", action="store_true",
                        help="also plant each break of bench/planted_breaks.py into after_layout")
    parser.add_argument("--motivating", action="store_true",
                        help="run bench/programs/motivating_cases.py instead of random programs")
    args = parser.parse_args(argv)
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    if args.motivating:
        results = run_motivating(args.save, args.plant)
    else:
        results = run(args.start, args.count, args.save, args.plant)
    data = {"summary": summary(results), "results": [asdict(r) for r in results]}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(data, f, indent=1)
    print(json.dumps(data["summary"], indent=1))
    for r in results:
        if not r.ok:
            print(f"seed {r.seed} {r.name} {r.features}: {r.cause}: {r.detail}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
