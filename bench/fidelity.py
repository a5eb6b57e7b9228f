"""Does the cost model follow time? Layout variants of real modules, run in XLA:CPU.

    python3 bench/fidelity.py --reps 5 --out bench/fidelity_results.json
    python3 bench/fidelity.py --modules attention_fwd,gen_cnn_train --reps 3
    python3 bench/fidelity.py --table bench/fidelity_results.json   # BENCHMARKS.md's table

For every module (corpus modules whose XLA layouts the execution path runs, plus programs from
``bench/programs/fidelity.py`` lowered by JAX here): the variants are XLA's own layouts
(``after_layout``), ours (``assign`` on ``before_layout``), all-default, greedy and ``--random``
random consistent assignments (``solver.layout_assignment.variants``). All run in one
``run_modules`` call: the same inputs, one pinned CPU, interleaved rounds, XLA's layouts as the
reference (run twice per round for the A/A noise); with ``--sessions S`` the rounds are shared
out among S children, each compiling every variant afresh. Variants that print as the same
module, their instruction names and metadata aside, are one program: it runs once and they
share its times (``same_program_as``), so that
noise does not rank a program against itself. Every variant's outputs are compared with
XLA's normal execution of the ``pre`` module (its whole pipeline).

Per module: Kendall's tau between predicted cost (the target's model) and measured time (each
variant's paired ratio to XLA's layouts, the median over rounds: a drift between rounds
cancels, as it does not in the median of its own times), ours/XLA paired ratio and the
predicted one (``1 + (cost_ours - cost_xla) / measured_xla``).
Overall: tau pooled over all variants (predicted against measured ratio to XLA), how many
modules ours is no slower (<= 1.02) / faster by 3 % or more, total time, sign agreement.
``--compare-target FILE`` also scores the variants with another target (the old model).

Every tau comes twice (:mod:`bench.fidelity_stats`): plain (every pair of measured times
ordered by value) and noise-aware (``tau_noise``: tau-b with the pairs whose measured times
differ by less than the run's A/A interquartile band counted as ties), with how many variant
pairs the run resolved at all.

``--resolve S`` measures again, XLA's layouts against ours alone with the rounds shared out
among ``S`` fresh processes, every module whose ours/XLA ratio the run left inside its A/A
band while a goal reads it: ours ran as a program of its own, and the predicted ratio
differs from 1 by more than 3 % or the measured one by more than 2 %, in either direction
(``resolved``: that ratio, which the summary's sign agreement and no-slower / faster counts
read where there is one; totals stay the first run's); ``--resolve-run OUT.json`` does the
same for a finished run, on the variants its ``--variants-dir`` saved. A process keeps a
speed of its own for its life, so a small module's ratio over 3 processes can sit inside a
5 % band that 10 resolve.

Unseen modules (``--unseen N``, default 3): ``N`` random programs of
``bench/programs/random_programs.py`` at seeds from 90001 (the differential benchmark ran
0-499) and the GPT-2 and ResNet training steps of ``bench/programs/deep.py`` at depth 1,
lowered by JAX at run time, measured after the others the same way and summarized apart
(``summary["unseen"]``): none of them was measured before the model was fitted. Those
defaults have been measured in runs since; ``--unseen-seed S`` and ``--unseen-depth D`` pick
random programs and every deep family at seeds and a depth no run has measured.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
SHARED = Path(os.environ.get("HLO_LAYOUT_SHARED", REPO.parent / "shared"))

from bench.fidelity_stats import (kendall_tau, kendall_tau_noise, noise_band,  # noqa: E402
                                  resolved_agreement, sign_test_resolved, within)
from hlo.equivalence import compare_normwise  # noqa: E402
from hlo.parser import parse_module  # noqa: E402
from hlo.target import resolved_name  # noqa: E402
from service.layout_operations import model_cost  # noqa: E402
from service.xla.execution import run_modules  # noqa: E402
from service.xla.refusals import refusal_reason  # noqa: E402
from solver.layout_assignment.assign import assign  # noqa: E402
from solver.layout_assignment.options import AssignOptions  # noqa: E402
from solver.layout_assignment.variants import layout_variants  # noqa: E402


def _read(path: Path) -> str:
    return gzip.open(path, "rt").read() if path.suffix == ".gz" else path.read_text()


def _corpus_file(name: str, stage: str) -> Path:
    plain = SHARED / "corpus" / f"{name}.{stage}.hlo"
    return plain if plain.exists() else plain.with_suffix(".hlo.gz")


def corpus_modules() -> list[str]:
    names = sorted({p.name.split(".")[0] for p in (SHARED / "corpus").glob("*.after_layout.hlo*")})
    return names


#: First seed of the unseen random programs: the differential benchmark ran seeds 0-499, and
#: neither the calibration nor any tuning ran these.
UNSEEN_SEED = 90001
#: Unseen models of :mod:`bench.programs.deep` (family, depth) at small depth.
UNSEEN_DEEP = (("gpt2", 1), ("resnet", 1))


def unseen_modules(count: int, seed: int = UNSEEN_SEED, depth: int = 0) -> list[str]:
    """Names of the unseen modules: ``count`` random programs from ``seed`` on, then the deep
    models' families at small depth (``depth``: every family of :mod:`bench.programs.deep` at
    that depth instead). The defaults have been measured in earlier runs; a run that must see
    modules no model change ever saw passes seeds and a depth not used before."""
    if count <= 0:
        return []
    if depth:
        from bench.programs.deep import FAMILIES

        deep = [(family, depth) for family in sorted(FAMILIES)]
    else:
        deep = list(UNSEEN_DEEP)
    return ([f"unseen_random_{seed + k}" for k in range(count)]
            + [f"unseen_{family}_{d}" for family, d in deep])


def _unseen_program(name: str):
    """``(function, args)`` of an unseen module's name."""
    _, kind, number = name.split("_")
    if kind == "random":
        from bench.programs.random_programs import random_program

        program = random_program(int(number))
        return program.function, program.args
    from bench.programs.deep import FAMILIES

    return FAMILIES[kind](int(number))


def stages_of(name: str) -> tuple[str, str, str]:
    """(pre, before_layout, after_layout) texts of a corpus module or a generated program."""
    if name.startswith("unseen_"):
        from service.xla.stages import dump_stages

        f, args = _unseen_program(name)
        s = dump_stages(f, *args, name=name)
        return s.pre, s.before_layout, s.after_layout
    if name.startswith("gen_"):
        from bench.programs.fidelity import PROGRAMS
        from service.xla.stages import dump_stages

        f, args = PROGRAMS[name]()
        s = dump_stages(f, *args, name=name)
        return s.pre, s.before_layout, s.after_layout
    return tuple(_read(_corpus_file(name, stage))  # type: ignore[return-value]
                 for stage in ("pre", "before_layout", "after_layout"))


def build_variants(name: str, args):
    """``(pre_text, ours, variants, assign_s)`` of a module, or a refusal reason (str): XLA's
    layouts, ours, all-default, greedy and the random ones, in that order."""
    pre_text, before_text, after_text = stages_of(name)
    xla = parse_module(after_text, name)
    reason = refusal_reason(xla)
    if reason is not None:
        return reason
    before = parse_module(before_text, name)
    options = AssignOptions(time_limit_s=args.time_limit)
    began = time.perf_counter()
    ours = assign(before, args.target, options)
    assign_s = time.perf_counter() - began
    variants = {"xla": xla, "ours": ours.module,
                **layout_variants(before, args.target, options, count=args.random, seed=args.seed)}
    return pre_text, ours, variants, assign_s


def measure_module(name: str, args, compare_target) -> dict:
    built = build_variants(name, args)
    if isinstance(built, str):
        return {"module": name, "skipped": built}
    pre_text, ours, variants, assign_s = built
    xla = variants["xla"]
    labels = list(variants)
    _save_variants(args.variants_dir, name, variants)
    twin = program_twins(variants)
    distinct = [lab for lab in labels if twin[lab] == lab]
    load_before = os.getloadavg()[0]
    run = run_modules([*((lab, variants[lab]) for lab in distinct),
                       ("semantics", parse_module(pre_text, name))],
                      reps=args.reps, warmup=1, seed=args.seed, plain={"semantics"},
                      sessions=args.sessions)
    load_after = os.getloadavg()[0]
    semantics = run.executions[-1]
    rows = {}
    for k, label in enumerate(distinct):
        e = run.executions[k]
        row = {"refusal": e.refusal, "median_ms": e.median_ms, "min_ms": e.min_ms,
               "temp_bytes": e.temp_bytes, "predicted_ns": model_cost(variants[label], args.target),
               "times_ms": [round(t, 5) for t in _round_times(run, k)]}
        if compare_target is not None:
            row["predicted_ns_compare"] = model_cost(variants[label], compare_target)
        if e.ran and semantics.ran:
            diff, _, err = compare_normwise(tuple(semantics.outputs), tuple(e.outputs),
                                            rtol=run.rtol)
            row["outputs_match"] = diff is None
            row["difference"] = None if diff is None else str(diff)
        ratio = run.ratio(k) if e.ran and run.executions[0].ran else None
        row["ratio"] = None if ratio is None else ratio.to_json()
        rows[label] = row
    for label in labels:
        if twin[label] != label:  # the same program: its twin's measurement, its own price
            rows[label] = {**rows[twin[label]], "same_program_as": twin[label],
                           "predicted_ns": model_cost(variants[label], args.target)}
            if compare_target is not None:
                rows[label]["predicted_ns_compare"] = model_cost(variants[label],
                                                                 compare_target)
    rows = {label: rows[label] for label in labels}
    ran = [lab for lab in labels
           if rows[lab]["median_ms"] is not None and rows[lab]["predicted_ns"] is not None]
    xla_min = rows["xla"]["min_ms"]
    for label in ran:
        if xla_min:
            rows[label]["min_ratio"] = rows[label]["min_ms"] / xla_min
    out = _scored({"module": name, "unseen": name.startswith("unseen_"), "variants": rows,
                   "same_as_xla": same_program(xla, ours.module), "assign_s": round(assign_s, 2),
                   "status": ours.status, "noise": run.noise().to_json() if run.noise() else None,
                   "semantics_refusal": semantics.refusal, "load": [load_before, load_after],
                   "runs_per_sample": run.runs_per_sample, "sessions": run.sessions,
                   "programs_measured": len(distinct)})
    if getattr(args, "resolve", 0) and _unresolved(out):
        resolve(out, variants, args)
    if compare_target is not None and len(ran) > 2 and all(
            rows[lab]["predicted_ns_compare"] is not None for lab in ran):
        out["tau_compare"] = kendall_tau([rows[lab]["predicted_ns_compare"] for lab in ran],
                                         [measured(rows[lab]) for lab in ran])
    return out


def resolve(result: dict, variants: dict, args) -> None:
    """Measure XLA's layouts against ours again, the rounds shared out among ``args.resolve``
    fresh processes; the ratio goes to ``result["resolved"]``."""
    again = run_modules([("xla", variants["xla"]), ("ours", variants["ours"])],
                        reps=args.reps, warmup=1, seed=args.seed, outputs=False,
                        sessions=args.resolve)
    ratio = again.ratio(1) if again.executions[1].ran else None
    result["resolved"] = {"ratio": None if ratio is None else ratio.to_json(),
                          "sessions": args.resolve, "reps": args.reps,
                          "noise": again.noise().to_json() if again.noise() else None}


def resolve_run(results: list[dict], args) -> list[dict]:
    """``--resolve`` over a finished run (``--resolve-run``): each module it left unresolved
    and not yet measured again, on the variants its ``--variants-dir`` holds."""
    for r in results:
        if "variants" not in r or r.get("resolved") or not _unresolved(r):
            continue
        variants = _saved_variants(args.variants_dir, r["module"], ["xla", "ours"])
        if variants is None:
            print(f"{r['module']}: no saved variants to measure again", flush=True)
            continue
        resolve(r, variants, args)
        print(f"{r['module']}: {r['variants']['ours']['ratio']['median']} -> "
              f"{ours_ratio(r)} in {args.resolve} processes", flush=True)
    return results


def _unresolved(result: dict) -> bool:
    """Whether a goal reads ours/XLA's ratio of ``result`` while its run left it inside the A/A
    band (see the module docstring's ``--resolve``)."""
    ours = result["variants"]["ours"]
    band = result.get("band", noise_band(result.get("noise")))
    if ours.get("same_program_as") == "xla" or not ours.get("ratio") or band is None:
        return False  # one program: it ran once, its ratio is 1
    p, m = ours.get("predicted_ratio"), ours["ratio"]["median"]
    read = abs(m - 1) > 0.02 or (p is not None and abs(p - 1) > 0.03)
    return read and within(m, 1.0, band)


def ours_ratio(result: dict) -> float:
    """Ours/XLA's paired median: the ``--resolve`` measurement's where there is one."""
    again = (result.get("resolved") or {}).get("ratio")
    return again["median"] if again else result["variants"]["ours"]["ratio"]["median"]


def rescore(results: list[dict], args, new_target) -> list[dict]:
    """The measured variants of an ``--out`` file priced by another target, measurements
    untouched. Each module's variants are read from ``--variants-dir`` where the run wrote
    them, else rebuilt as the run built them (``--target``, ``--random``, ``--seed``,
    ``--time-limit`` as in that run). ``rebuilt`` says whether every variant's price under
    ``--target`` is the one the file recorded (the same modules, priced by the same model:
    False after a model change, where only the saved texts are the measured modules). Then
    priced by ``new_target``; predicted ratios and every tau are recomputed."""
    out = []
    for r in results:
        if "variants" not in r:
            out.append(r)
            continue
        rows = {label: dict(row) for label, row in r["variants"].items()}
        variants = _saved_variants(args.variants_dir, r["module"], list(rows))
        if variants is None:
            built = build_variants(r["module"], args)
            if isinstance(built, str) or list(built[2]) != list(rows):
                out.append({**r, "rebuilt": False})
                continue
            variants = built[2]
        rebuilt = all(model_cost(variants[lab], args.target) == rows[lab]["predicted_ns"]
                      for lab in rows)
        for lab in rows:
            rows[lab]["predicted_ns_run"] = rows[lab]["predicted_ns"]
            rows[lab]["predicted_ns"] = model_cost(variants[lab], new_target)
        out.append(_scored({**r, "variants": rows, "rebuilt": rebuilt}))
    return out


def _saved_variants(folder: Path | None, name: str, labels: list[str]) -> dict | None:
    """The variants of ``name`` as a run wrote them (``--variants-dir``), or None."""
    if folder is None or not all((folder / name / f"{lab}.hlo").exists() for lab in labels):
        return None
    return {lab: parse_module((folder / name / f"{lab}.hlo").read_text(), name)
            for lab in labels}


def _save_variants(folder: Path | None, name: str, variants: dict) -> None:
    if folder is None:
        return
    from hlo.printer import print_module

    (folder / name).mkdir(parents=True, exist_ok=True)
    for label, module in variants.items():
        (folder / name / f"{label}.hlo").write_text(print_module(module))


def _scored(r: dict) -> dict:
    """``r`` with its predicted ratios and taus recomputed from its rows' prices and times."""
    rows = r["variants"]
    ran = [lab for lab in rows
           if rows[lab]["median_ms"] is not None and rows[lab]["predicted_ns"] is not None]
    xla = rows["xla"]
    for lab in ran:
        if xla["median_ms"] and xla["predicted_ns"] is not None:
            rows[lab]["predicted_ratio"] = 1 + (rows[lab]["predicted_ns"] - xla["predicted_ns"]) / (
                xla["median_ms"] * 1e6)
    r = {**r, "tau": kendall_tau([rows[lab]["predicted_ns"] for lab in ran],
                                 [measured(rows[lab]) for lab in ran]) if len(ran) > 2 else None,
         "tau_min": kendall_tau([rows[lab]["predicted_ns"] for lab in ran],
                                [rows[lab]["min_ms"] for lab in ran]) if len(ran) > 2 else None}
    return {**r, **noise_aware(r)}


def measured(row: dict) -> float:
    """A variant's measured time for ranking within its module: its paired ratio to XLA's
    layouts (median over rounds), or its median time where it has none. Rounds on these
    machines drift (``rng_dropout_init`` alternated 1.2 and 1.9 ms), so medians of two
    variants' own times can order them against every round's pair."""
    ratio = row.get("ratio")
    return ratio["median"] if ratio else row["median_ms"]


def _round_times(run, index: int) -> list[float]:
    """Module ``index``'s time per round; the reference's is the mean of its two runs in the
    round (A/B/A), as its paired ratios use it."""
    times = run.executions[index].times_ms
    again = run.reference_again_ms
    if index == 0 and len(again) == len(times):
        return [(a + b) / 2 for a, b in zip(times, again)]
    return list(times)


def _paired_rounds(rows: dict, labels: list[str]) -> list[list[float]] | None:
    """The variants' per-round times where every one kept them, over the same rounds."""
    times = [rows[lab].get("times_ms") or [] for lab in labels]
    if not times or not times[0] or any(len(t) != len(times[0]) for t in times):
        return None
    return times


def noise_aware(result: dict) -> dict:
    """A module's noise-aware numbers (:mod:`bench.fidelity_stats`), from its rows and its A/A:
    ``band`` (the factor within which its times are ties), ``tau_noise``/``tau_noise_min``
    (tau-b against medians/minimums with those ties), ``pairs_resolved`` (variant pairs whose
    medians differ by more than the band, of all pairs)."""
    band = noise_band(result.get("noise"))
    rows = result["variants"]
    ran = [lab for lab in rows
           if rows[lab]["median_ms"] is not None and rows[lab]["predicted_ns"] is not None]
    if band is None or len(ran) <= 2:
        return {"band": band, "tau_noise": None, "tau_noise_min": None, "pairs_resolved": None}
    predicted = [rows[lab]["predicted_ns"] for lab in ran]
    medians = [measured(rows[lab]) for lab in ran]
    minimums = [rows[lab]["min_ms"] for lab in ran]
    pairs = [(i, j) for i in range(len(ran)) for j in range(i + 1, len(ran))]
    rounds = _paired_rounds(rows, ran)
    if rounds is not None:
        def tied(i: int, j: int) -> bool:
            return not sign_test_resolved(rounds[i], rounds[j])

        resolved = sum(not tied(i, j) for i, j in pairs)
        return {"band": band, "resolution": f"sign test, {len(rounds[0])} rounds",
                "tau_noise": kendall_tau(predicted, medians, tied),
                "tau_noise_min": kendall_tau(predicted, minimums, tied),
                "agreement_resolved": resolved_agreement(predicted, medians, tied),
                "pairs_resolved": [resolved, len(pairs)]}

    def in_band(i: int, j: int) -> bool:
        return within(medians[i], medians[j], band)  # type: ignore[arg-type]

    bands = [band] * len(ran)
    resolved = sum(not in_band(i, j) for i, j in pairs)
    return {"band": band, "resolution": "A/A band",
            "tau_noise": kendall_tau_noise(predicted, medians, bands),
            "tau_noise_min": kendall_tau_noise(predicted, minimums, bands),
            "agreement_resolved": resolved_agreement(predicted, medians, in_band),
            "pairs_resolved": [resolved, len(pairs)]}


def program_twins(variants: dict) -> dict[str, str]:
    """Each variant's first label (in order) whose module prints the same text, its names and
    metadata aside (:func:`program_text`): one program, run once (two runs of one program
    differ by noise alone, which would rank it against itself)."""
    first: dict[str, str] = {}
    return {label: first.setdefault(program_text(module), label)
            for label, module in variants.items()}


_METADATA = re.compile(r", metadata=\{[^{}]*\}")
_NAME = re.compile(r"%[\w.\-]+")


def program_text(module) -> str:
    """``module`` printed with its metadata left out and every ``%name`` replaced by its rank
    of first appearance: what XLA compiles, which neither names (ours calls a relayout copy
    ``x.relayout`` where XLA's is ``copy``) nor metadata change."""
    from hlo.printer import print_module

    names: dict[str, str] = {}
    text = _METADATA.sub("", print_module(module))
    return _NAME.sub(lambda m: names.setdefault(m.group(0), f"%{len(names)}"), text)


def same_program(a, b) -> bool:
    """Whether two modules hold the same instructions with the same layouts, names and order
    aside (ours often is XLA's module with its duplicate copies shared): the multiset of
    (opcode, result shape, operand shapes) of every computation, layouts compared on the dims
    of size > 1 (the physical order), copies that move nothing left out, and the entry
    layouts."""
    from hlo.printer import print_attribute
    from hlo.shape import leaf_arrays

    def physical(shape) -> str:
        return ";".join(f"{x.element_type}{x.dims}" + str(tuple(
            d for d in (x.layout.minor_to_major if x.layout else ()) if x.dims[d] != 1))
            for _, x in leaf_arrays(shape))

    def signature(module):
        out, copies = [], set()
        for comp in module.computations:
            shapes = {i.name: physical(i.shape) for i in comp.instructions}
            for i in comp.instructions:
                operands = tuple(shapes.get(o, "") for o in i.operands)
                if i.opcode == "copy":
                    if operands != (shapes[i.name],):
                        copies.add((shapes[i.name], operands))
                    continue
                out.append((i.opcode, shapes[i.name], operands))
        # Printed: a scalar's layout may be absent in one and empty in the other.
        return sorted(out), sorted(copies), print_attribute(
            "entry_computation_layout", module.attr("entry_computation_layout"))
    return signature(a) == signature(b)


def summarize(results: list[dict]) -> dict:
    """The corpus-and-generated summary, with the unseen modules' own under ``unseen``."""
    seen = [r for r in results if not r.get("unseen") and not r["module"].startswith("unseen_")]
    out = _summary(seen)
    unseen = [r for r in results if r not in seen]
    if unseen:
        out["unseen"] = _summary(unseen)
    return out


def _mean(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def _summary(results: list[dict]) -> dict:
    done = [r for r in results if "variants" in r and r["variants"]["ours"]["ratio"]]
    for r in done:
        if "agreement_resolved" not in r:  # a file written before these numbers
            r.update(noise_aware(r))
    pred, meas, meas_min, bands, taus_compare = [], [], [], [], []
    origin: list[tuple[int, list[float] | None]] = []  # (module, its per-round times)
    for m, r in enumerate(done):
        for row in r["variants"].values():
            if row.get("ratio") and row.get("predicted_ratio") is not None:
                pred.append(row["predicted_ratio"])
                meas.append(row["ratio"]["median"])
                meas_min.append(row.get("min_ratio", row["ratio"]["median"]))
                bands.append(r["band"])
                origin.append((m, row.get("times_ms") or None))
        if r.get("tau_compare") is not None:
            taus_compare.append(r["tau_compare"])
    ours = [r["variants"]["ours"] for r in done]
    differ = [r for r, o in zip(done, ours)
              if o["predicted_ns"] != r["variants"]["xla"]["predicted_ns"]]
    agree = total = 0
    disagree = []
    for r, o in zip(done, ours):
        p, m = o.get("predicted_ratio"), ours_ratio(r)
        if p is None or (abs(p - 1) <= 0.03 and abs(m - 1) <= 0.03):
            continue
        total += 1
        agree += (p - 1) * (m - 1) > 0
        if (p - 1) * (m - 1) <= 0:
            band = r["band"]
            disagree.append((r["module"], round(p, 3), m, None if band is None else round(band, 3),
                             "measured within its A/A band" if band and within(m, 1.0, band)
                             else "measured beyond its A/A band"))
    beyond = [(r, o) for r, o in zip(done, ours)
              if r["band"] is not None and not within(o["ratio"]["median"], 1.0, r["band"])]
    pairs = [r["pairs_resolved"] for r in done if r.get("pairs_resolved")]
    return {
        "modules_measured": len(done),
        "modules_skipped": [(r["module"], r["skipped"]) for r in results if "skipped" in r],
        "tau_overall": kendall_tau(pred, meas),
        "tau_overall_min": kendall_tau(pred, meas_min),
        "tau_overall_noise": _pooled_noise_tau(pred, meas, bands, origin),
        "tau_overall_noise_min": _pooled_noise_tau(pred, meas_min, bands, origin),
        "agreement_resolved_overall": _pooled_noise_tau(pred, meas, bands, origin,
                                                        resolved_agreement),
        "agreement_resolved_mean": _mean([r.get("agreement_resolved") for r in done]),
        "tau_mean": _mean([r["tau"] for r in done]),
        "tau_mean_min": _mean([r.get("tau_min") for r in done]),
        "tau_mean_noise": _mean([r["tau_noise"] for r in done]),
        "tau_mean_noise_min": _mean([r["tau_noise_min"] for r in done]),
        "variant_pairs_resolved": [sum(p[0] for p in pairs), sum(p[1] for p in pairs)],
        "tau_mean_compare": _mean(taus_compare),
        "ours_no_slower": sum(ours_ratio(r) <= 1.02 for r in done),
        "resolved_again": [(r["module"], r["variants"]["ours"]["ratio"]["median"],
                            ours_ratio(r), r["resolved"]["sessions"])
                           for r in done if (r.get("resolved") or {}).get("ratio")],
        "ours_no_slower_by_min": sum(o.get("min_ratio", 9) <= 1.02 for o in ours),
        "ours_slower_beyond_noise": [(r["module"], o["ratio"]["median"], round(r["band"], 3))
                                     for r, o in beyond if o["ratio"]["median"] > 1],
        "ours_faster_beyond_noise": [(r["module"], o["ratio"]["median"], round(r["band"], 3))
                                     for r, o in beyond if o["ratio"]["median"] < 1],
        "ours_same_program_as_xla": sum(bool(r.get("same_as_xla")) for r in done),
        "ours_slower_where_different": [
            (r["module"], ours_ratio(r), round(o.get("min_ratio", 0), 3))
            for r, o in zip(done, ours) if not r.get("same_as_xla") and ours_ratio(r) > 1.02],
        "total_min_ms_ours": sum(o["min_ms"] for o in ours),
        "total_min_ms_xla": sum(r["variants"]["xla"]["min_ms"] for r in done),
        "ours_differ_from_xla": len(differ),
        "ours_faster_3pct_where_differ": sum(ours_ratio(r) <= 0.97 for r in differ),
        "total_ms_ours": sum(o["median_ms"] for o in ours),
        "total_ms_xla": sum(r["variants"]["xla"]["median_ms"] for r in done),
        "sign_agreement": f"{agree}/{total}",
        "sign_disagreements": disagree,
        "outputs_all_match": all(row.get("outputs_match", True) for r in done
                                 for row in r["variants"].values() if row["median_ms"]),
    }


def _pooled_noise_tau(pred: list, meas: list, bands: list, origin: list,
                      statistic=kendall_tau) -> float | None:
    """Noise-aware tau (or ``statistic``) over every module's variants: two variants of one
    module that kept their per-round times are tied unless the sign test orders them; any
    other pair unless their measured ratios differ by more than the wider of their modules'
    A/A bands."""
    if any(b is None for b in bands):
        return None

    def tied(i: int, j: int) -> bool:
        (mi, ti), (mj, tj) = origin[i], origin[j]
        if mi == mj and ti and tj and len(ti) == len(tj):
            return not sign_test_resolved(ti, tj)
        return within(meas[i], meas[j], max(bands[i], bands[j]))

    return statistic(pred, meas, tied)


def _cell(value, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def table(results: list[dict]) -> str:
    """The module-by-module markdown tables of BENCHMARKS.md: the corpus and generated
    modules, then the unseen ones. ``tau-b noise``: Kendall's tau-b with the variant pairs the
    run does not order as ties (the sign test over rounds where the rows kept their round
    times, else the A/A band: :mod:`bench.fidelity_stats`); ``resolved``: the pairs it orders,
    of all pairs; ``agreement (resolved)``: over those pairs only, (agreeing - disagreeing) /
    pairs."""
    head = ["| module | variants run | tau (median) | tau (min) | tau-b noise (median) | "
            "tau-b noise (min) | A/A band | pairs resolved | agreement (resolved) | "
            "ours/XLA paired median [p25, p75] "
            "| ours/XLA min | predicted | A/A noise | same program | outputs |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    seen = [r for r in results if not r["module"].startswith("unseen_")]
    unseen = [r for r in results if r["module"].startswith("unseen_")]
    lines = head + [_row(r) for r in seen]
    if unseen:
        lines += ["", "Unseen modules (generated at run time; never used to fit or tune the "
                  "model):", ""] + head + [_row(r) for r in unseen]
    return "\n".join(lines)


def _row(r: dict) -> str:
    if "variants" not in r:
        return f"| {r['module']} | refused: {r['skipped'][:90]} ||||||||||||||"
    if "agreement_resolved" not in r:
        r = {**r, **noise_aware(r)}
    v = r["variants"]
    ran = sum(row["median_ms"] is not None for row in v.values())
    ours = v["ours"]
    ratio = ours.get("ratio") or {}
    paired = (f"{ratio['median']:.3f} [{ratio['p25']:.3f}, {ratio['p75']:.3f}]"
              if ratio else "-")
    again = (r.get("resolved") or {}).get("ratio")
    if again:
        paired += (f"; again in {r['resolved']['sessions']} processes {again['median']:.3f} "
                   f"[{again['p25']:.3f}, {again['p75']:.3f}]")
    outputs = "match" if all(row.get("outputs_match", True) for row in v.values()
                             if row["median_ms"]) else "DIFFER"
    resolved = r.get("pairs_resolved")
    return (f"| {r['module']} | {ran}/{len(v)} | {_cell(r.get('tau'), 2)} | "
            f"{_cell(r.get('tau_min'), 2)} | {_cell(r.get('tau_noise'), 2)} | "
            f"{_cell(r.get('tau_noise_min'), 2)} | {_cell(r.get('band'), 2)} | "
            f"{f'{resolved[0]}/{resolved[1]}' if resolved else '-'} | "
            f"{_cell(r.get('agreement_resolved'), 2)} | {paired} | "
            f"{_cell(ours.get('min_ratio'))} | {_cell(ours.get('predicted_ratio'))} | "
            f"{_cell((r.get('noise') or {}).get('median'))} | "
            f"{'yes' if r.get('same_as_xla') else 'no'} | {outputs} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--modules", default="", help="comma-separated (default: all)")
    parser.add_argument("--target", default="cpu")
    parser.add_argument("--compare-target", default=None)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--sessions", type=int, default=1,
                        help="XLA processes each module's rounds are shared among, each "
                             "compiling every variant afresh (an executable keeps a speed of its "
                             "own for its process's life)")
    parser.add_argument("--random", type=int, default=5)
    parser.add_argument("--time-limit", type=float, default=5.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--skip", default="gpt_train_12l",
                        help="comma-separated modules left out (default: the 12-layer model, "
                             "minutes per variant unfused)")
    parser.add_argument("--unseen", type=int, default=3,
                        help="random programs at fixed seeds never used before, measured after "
                             "the others with the deep models at small depth and reported "
                             "apart (0: none)")
    parser.add_argument("--unseen-seed", type=int, default=UNSEEN_SEED,
                        help="the first seed of the unseen random programs (the default's have "
                             "been measured before: pass one never used for modules never seen)")
    parser.add_argument("--unseen-depth", type=int, default=0,
                        help="every deep family (llama, gpt2, resnet, scan) at this depth as "
                             "unseen modules, instead of gpt2 and resnet at depth 1")
    parser.add_argument("--resolve", type=int, default=0,
                        help="measure ours against XLA's again in this many fresh processes "
                             "where a goal reads a ratio the run left inside its A/A band "
                             "(0: never)")
    parser.add_argument("--resolve-run", type=Path, default=None,
                        help="apply --resolve to the --out file of a finished run, on the "
                             "variants its --variants-dir holds; write the summary to --out")
    parser.add_argument("--table", type=Path, default=None,
                        help="print the markdown table of an --out file and stop")
    parser.add_argument("--rescore", type=Path, default=None,
                        help="price the measured variants of an --out file (built with --target, "
                             "--random, --seed, --time-limit as that run) by --compare-target, "
                             "measure nothing, print the summary (and write --out)")
    parser.add_argument("--variants-dir", type=Path, default=None,
                        help="where a run writes each variant's text (DIR/MODULE/LABEL.hlo) and "
                             "--rescore reads them (so a model change is scored on the very "
                             "modules that were measured; without it --rescore rebuilds them)")
    args = parser.parse_args()
    if args.table:
        print(table(json.loads(args.table.read_text())["results"]))
        return
    if args.resolve_run:
        results = resolve_run(json.loads(args.resolve_run.read_text())["results"], args)
        _report(results, args, {"target": resolved_name(args.target)})
        return
    if args.rescore:
        from hlo.target import load_target, read_target_file

        new = load_target(read_target_file(Path(args.compare_target)))
        results = json.loads(args.rescore.read_text())["results"]
        if args.modules:
            results = [r for r in results if r["module"] in args.modules.split(",")]
        results = rescore(results, args, new)
        for r in results:
            print(f"{r['module']}: rebuilt {r.get('rebuilt')}, tau {_cell(r.get('tau'), 2)}, "
                  f"noise-aware {_cell(r.get('tau_noise'), 2)}", flush=True)
        _report(results, args)
        return
    from bench.programs.fidelity import PROGRAMS

    names = (args.modules.split(",") if args.modules
             else corpus_modules() + list(PROGRAMS)
             + unseen_modules(args.unseen, args.unseen_seed, args.unseen_depth))
    names = [n for n in names if n not in args.skip.split(",")]
    compare = None
    if args.compare_target:
        from hlo.target import load_target, read_target_file
        compare = load_target(read_target_file(Path(args.compare_target)))
    results = []
    for name in names:
        began = time.perf_counter()
        try:
            result = measure_module(name, args, compare)
        except Exception as exc:  # a benchmark row, not a crash: say what failed
            result = {"module": name, "skipped": f"{type(exc).__name__}: {exc}"[:300]}
        results.append(result)
        ours = result.get("variants", {}).get("ours", {})
        print(f"{name}: {time.perf_counter() - began:.1f} s, tau {result.get('tau')}, "
              f"ours/xla {(ours.get('ratio') or {}).get('median')} (min {ours.get('min_ratio')}, "
              f"same program {result.get('same_as_xla')}), "
              f"predicted {ours.get('predicted_ratio')} {result.get('skipped', '')}", flush=True)
    _report(results, args, {"target": resolved_name(args.target)})


def _report(results: list[dict], args, head: dict | None = None) -> None:
    """Print the summary of ``results`` (after ``head``) and write both to ``--out``."""
    summary = {**(head or {}), **summarize(results)}
    print(json.dumps(summary, indent=1))
    if args.out:
        args.out.write_text(json.dumps({"summary": summary, "results": results}, indent=1))


if __name__ == "__main__":
    main()
