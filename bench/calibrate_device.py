"""Calibrate on a machine that has an accelerator and jax, but not the solver's dependencies.

``hlo-layout calibrate --platform gpu`` needs the whole package installed; a GPU machine
often has only jax (with its CUDA plugin), numpy, ml_dtypes and networkx, which is all the
measuring needs. This script measures there and writes what ``calibrate --json`` writes;
``hlo-layout calibrate --from OUT.json -o gpu.toml`` then fits and writes the target on any
machine (and checks that it loads).

Before measuring it probes the path and prints what it finds: jax's version and device, a
one-copy module pinned through XLA's whole pipeline (its entry layouts kept? its output
right?), and the ``PRE_SCHEDULER`` swap of the same module unfused (the path ``measure``
uses on ``cpu``), so a run on a new jax or backend says first what works there.

``--held-out`` also measures one-op modules the fit never sees (:func:`held_out_groups`:
3-D copies and standalone transposes to every permutation, reductions over each dim with
the operand in every layout, adds with mixed layouts) and writes them beside the
calibration, so ``bench/device_fidelity.py`` can rank them with a target's cost model
against their measured times on any machine.

    python3 bench/calibrate_device.py --platform gpu --reps 15 --out gpu_calibration.json \
        --held-out gpu_held_out.json
    hlo-layout calibrate --from gpu_calibration.json -o hlo/targets/gpu.toml
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hlo.parser import parse_module  # noqa: E402
from hlo.printer import print_module  # noqa: E402
from service.calibration.microbenchmarks import Bench, Group, _module, _reducer  # noqa: E402
from service.calibration.run import _group, measure, record  # noqa: E402
from service.xla.execution import run_modules  # noqa: E402

#: Every layout of a rank-3 array, ``{2,1,0}`` first.
PERMUTATIONS = ("2,1,0", "2,0,1", "1,2,0", "1,0,2", "0,2,1", "0,1,2")


def held_out_groups(dims: tuple[int, int, int] = (256, 512, 512), n: int = 8192) -> list[Group]:
    """One-op modules the calibration does not run, in groups that share a parameter shape:
    ``f32[dims]{2,1,0}`` copied to every layout and transposed (standalone, row-major
    result) by every permutation; summed over each dim with the operand in every layout;
    two ``f32[n,n]`` added with every mix of operand and result layouts (256 MiB each: at
    32 MiB the differences drowned in the host's dispatch noise on an H200)."""
    a, b, c = dims
    shape = f"f32[{a},{b},{c}]"
    nbytes = a * b * c * 4
    src = f"{shape}{{2,1,0}}"
    one = "f32[1,1,1]{2,1,0}"
    base = ("base", [f"%p = {src} parameter(0)",
                     f"ROOT %s = {one} slice(%p), slice={{[0:1], [0:1], [0:1]}}"], [src], one, "")
    movement = [base]
    for layout in PERMUTATIONS:
        movement.append((f"copy_{layout.replace(',', '')}",
                         [f"%p = {src} parameter(0)", f"ROOT %c = {shape}{{{layout}}} copy(%p)"],
                         [src], f"{shape}{{{layout}}}", ""))
    for perm in ("0,2,1", "1,0,2", "1,2,0", "2,0,1", "2,1,0"):
        order = [int(x) for x in perm.split(",")]
        out = f"f32[{','.join(str(dims[d]) for d in order)}]{{2,1,0}}"
        movement.append((f"transpose_{perm.replace(',', '')}",
                         [f"%p = {src} parameter(0)",
                          f"ROOT %t = {out} transpose(%p), dimensions={{{perm}}}"], [src], out, ""))
    reductions = []
    for layout in PERMUTATIONS:
        p = f"{shape}{{{layout}}}"
        for dim in range(3):
            kept = [dims[d] for d in range(3) if d != dim]
            out = f"f32[{kept[0]},{kept[1]}]{{1,0}}"
            reductions.append((f"reduce{dim}_{layout.replace(',', '')}",
                               [f"%p = {p} parameter(0)", "%z = f32[] constant(0)",
                                f"ROOT %r = {out} reduce(%p, %z), dimensions={{{dim}}}, "
                                "to_apply=%sum"], [p], out, _reducer("f32")))
    reductions.insert(0, ("base", base[1], base[2], base[3], ""))
    row, col = f"f32[{n},{n}]{{1,0}}", f"f32[{n},{n}]{{0,1}}"
    adds = [("base", [f"%a = {row} parameter(0)", f"%b = {row} parameter(1)",
                      "ROOT %s = f32[1,1]{1,0} slice(%a), slice={[0:1], [0:1]}"],
             [row, row], "f32[1,1]{1,0}", "")]
    for name, (x, y, z) in {"rrr": (row, row, row), "rcr": (row, col, row),
                            "ccr": (col, col, row), "rrc": (row, row, col),
                            "ccc": (col, col, col), "crc": (col, row, col)}.items():
        adds.append((f"add_{name}", [f"%a = {x} parameter(0)", f"%b = {y} parameter(1)",
                                     f"ROOT %r = {z} add(%a, %b)"], [x, y], z, ""))
    out = []
    for title, specs, size in (("3-D movement", movement, nbytes),
                               ("3-D reductions", reductions, nbytes),
                               ("mixed adds", adds, n * n * 4)):
        benches = tuple(Bench(kind if kind == "base" else "held_out", f"{title[:2]}_{kind}",
                              _module(f"held_{kind}", params, body, result, comps), size, "f32")
                        for kind, body, params, result, comps in specs)
        out.append(Group(title, benches))
    return out


def measure_held_out(platform: str, reps: int) -> list[dict]:
    """Each held-out module's text and median time (base modules included)."""
    rows = []
    for group in held_out_groups():
        found, _ = _group(group, reps, platform)
        rows += [{"group": group.name, "label": m.label, "kind": m.kind,
                  "median_ms": m.median_ms, "module": print_module(b.module)}
                 for m, b in zip(found, group.benches)]
    return rows

_COPY = """HloModule probe, entry_computation_layout={{(f32[1024,512]{{1,0}})->f32[1024,512]{{{out}}}}}
ENTRY %main {{
  %p = f32[1024,512]{{1,0}} parameter(0)
  ROOT %c = f32[1024,512]{{{out}}} copy(%p)
}}
"""


def _api() -> dict:
    """Which of the jax internals the path uses this jax has (a new jax may move them)."""
    import jax
    import jax.extend

    from service.xla import child

    found = {"jax": jax.__version__}
    try:
        mlir = child._private_jax().mlir
        found["mlir"] = sorted(n for n in dir(mlir) if not n.startswith("_"))
        found["hlo"] = hasattr(child._private_hlo(), "hlo_module_from_text")
        found["layout_classes"] = [c.__module__ for c in child._layout_classes()]
        found["swap_hook"] = hasattr(jax.extend, "xla")
    except Exception as err:  # a probe: report what broke
        found["error"] = f"{type(err).__name__}: {err}"
    return found


def probe(platform: str) -> dict:
    """What works on ``platform``: the pinned path and the swap, on a one-copy module."""
    reference = parse_module(_COPY.format(out="1,0"), "probe")
    moved = parse_module(_COPY.format(out="0,1"), "probe")
    found: dict = {"api": _api()}
    for how, keywords in (("pinned", {"pinned": ("ref", "moved")}), ("swap", {})):
        run = run_modules([("ref", reference), ("moved", moved)], reps=5, platform=platform,
                          timeout_s=180,
                          **keywords)
        match = run.matches(1)
        found[how] = {
            "jax": run.jax_version, "device": run.device,
            "refusals": [e.refusal for e in run.executions],
            "medians_ms": [e.median_ms for e in run.executions],
            "outputs_match": None if match is None else match.ok,
        }
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--platform", default="gpu")
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--held-out", type=Path, help="also measure the held-out modules")
    parser.add_argument("--only", action="append", default=[],
                        help="measure only the groups whose name contains this (repeat)")
    args = parser.parse_args(argv)
    print(json.dumps(probe(args.platform), indent=1), flush=True)
    start = time.perf_counter()

    def write(measured: list, machine: str) -> None:
        # After every group, unfitted: a run cut short keeps what it measured
        # (``calibrate --from`` fits it).
        args.out.write_text(json.dumps(record(args.platform, machine, measured, args.reps),
                                       indent=1))

    measured, machine = measure(
        platform=args.platform, reps=args.reps, quick=args.quick, each=write,
        only=(lambda group: any(part in group.name for part in args.only)) if args.only else None,
        progress=lambda name: print(f"{time.perf_counter() - start:7.1f} s  measuring {name}",
                                    flush=True))
    print(f"{len(measured)} measurements in {time.perf_counter() - start:.1f} s: "
          f"{args.out}", flush=True)
    if args.held_out is not None:
        rows = measure_held_out(args.platform, args.reps)
        args.held_out.write_text(json.dumps({"platform": args.platform, "reps": args.reps,
                                             "machine": machine, "modules": rows},
                                            indent=1))
        print(f"{len(rows)} held-out modules in {time.perf_counter() - start:.1f} s: "
              f"{args.held_out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
