"""Run the solver core on every public IOPDDL instance and compare with the published results.

Each instance runs in its own subprocess (so peak RSS is per instance) with the
contest's time limit (60 s by default). The table goes to the "Solver core
(IOPDDL)" section of BENCHMARKS.md (replacing only that section) and to a JSON
file beside it.

    python3 bench/iopddl.py [--time-limit 60] [--only B,G] [--no-write] [--portfolio]
    python3 bench/iopddl.py --first-only [--only A,K]   # only the quick first answer

``--first-only`` times :func:`solver.quick.quick_answer` alone (the first answer of
large problems) and prints its cost; it writes nothing.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "benchmarks" / "iopddl"
SECTION = "## Solver core (IOPDDL)"
#: The last generated line of the section; notes written below it are kept.
END_OF_TABLE = "Cheaper than XLA's solver on:"


def run_one(path: Path, time_limit: float, deterministic: bool) -> dict:
    """Solve one instance in this process and report (called in the subprocess)."""
    sys.path.insert(0, str(REPO))
    from solver.iopddl import read_instance
    from solver.options import SolveOptions
    from solver.solve import solve

    load_before = os.getloadavg()[0]
    began = time.perf_counter()
    problem = read_instance(path)
    read_s = time.perf_counter() - began
    result = solve(problem, SolveOptions(time_limit=time_limit, deterministic=deterministic))
    return {
        "nodes": problem.num_nodes,
        "edges": len(problem.edges),
        "status": result.status.value,
        "cost": result.objective,
        "memory_feasible": result.memory_feasible,
        "lower_bound": result.lower_bound,
        "gap": result.gap,
        "first_solution_s": None if result.first_solution_ms is None
        else result.first_solution_ms / 1000,
        "solve_s": sum(ms for _, ms in result.timings_ms) / 1000,
        "read_s": read_s,
        "timings_ms": dict(result.timings_ms),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "load": [load_before, os.getloadavg()[0]],
        "deterministic": deterministic,
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
    }


def first_one(path: Path) -> dict:
    """The quick first answer alone (called in the subprocess)."""
    sys.path.insert(0, str(REPO))
    from solver.iopddl import read_instance
    from solver.quick import quick_answer

    problem = read_instance(path)
    began = time.perf_counter()
    got = quick_answer(problem)
    return {"nodes": problem.num_nodes, "edges": len(problem.edges),
            "first_s": time.perf_counter() - began, "cost": None if got is None else got[1]}


def published() -> dict[str, dict[str, int]]:
    """Published final costs per instance and team (team01..03 and XLA's solver);
    a team without a result, or whose answer broke the memory limit (10**18 and
    above), is left out."""
    with open(DATA / "final_results.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    out: dict[str, dict[str, int]] = {}
    for name in rows[0]:
        if name == "TEAM #":
            continue
        out[name] = {row["TEAM #"]: int(row[name]) for row in rows
                     if row[name] and int(row[name]) < 10**18}
    return out


def published_bounds() -> dict[str, int]:
    """The best published lower bound per instance (``bench/iopddl_bounds.json``)."""
    data = json.loads((REPO / "bench" / "iopddl_bounds.json").read_text())
    return {name: entry["lower_bound"] for name, entry in data["instances"].items()}


def best_bound(ours: int | None, theirs: int | None) -> tuple[int | None, str]:
    """The higher of our certified bound and the published one, and whose it is."""
    known = {who: b for who, b in (("ours", ours), ("published", theirs)) if b is not None}
    if not known:
        return None, ""
    best = max(known.values())
    return best, "=".join(who for who, b in known.items() if b == best)


def from_optimum(cost: int | None, bound: int | None) -> str:
    """At most how far ``cost`` lies above the optimum, by ``bound``: 1 - bound / cost."""
    if cost is None or bound is None or cost <= 0:
        return "—"
    return f"{100 * max(0.0, 1 - bound / cost):.1f} %"


def best_published(costs: dict[str, int]) -> tuple[int | None, str]:
    """The lowest published cost and who holds it (teams joined by '=' on a tie)."""
    if not costs:
        return None, ""
    best = min(costs.values())
    return best, "=".join(who for who, cost in costs.items() if cost == best)


def ratio(ours: int | None, theirs: int | None) -> str:
    if ours is None or theirs is None or theirs >= 10**18:
        return "—"
    return f"{ours / theirs:.3f}"


def table(results: dict[str, dict], time_limit: float, command: str,
          deterministic: bool = True) -> str:
    """The section's text; the mode is each row's own (``deterministic`` for rows
    that do not say)."""
    pub, bounds = published(), published_bounds()
    modes = {r.get("deterministic", deterministic) for r in results.values() if "error" not in r}
    deterministic = modes != {False}
    dates = ", ".join(sorted({r["date"] for r in results.values() if "date" in r})) or "unknown"
    mode = ("the default mode: CP-SAT's interleaved (reproducible) search, 2 workers, seed 0"
            if deterministic else
            "CP-SAT's parallel portfolio (2 workers, seed 0; `--portfolio` in the CLI), so "
            "CP-SAT's part of an answer may differ between runs")
    lines = [
        SECTION,
        "",
        (f"Command: `{command}`. Machine: {platform.processor() or platform.machine()}, "
         f"2 cores, Python {platform.python_version()}, {platform.system()}. "
         f"Date: {dates}. Limit {time_limit:g} s per "
         "instance for the solve (quick answer, reduce, heuristic, model build, CP-SAT, "
         f"postsolve); reading the JSON is extra and listed separately. Mode: {mode}. "
         "Costs are re-evaluated from the returned labels, memory checked against the "
         "limit (`mem ok`). `best published` = the lowest published cost of the three teams "
         "and XLA's auto-sharding solver (`final_results.csv`; answers that broke the memory "
         "limit left out), `held by` = who published it; `ratio` = ours / theirs (below 1 = "
         "we are cheaper). `load` = the 1-minute load average before and after the instance "
         "(2 cores: above 2 the machine was shared). `best known bound` = the higher of our "
         "lower bound and the best published one (`bench/iopddl_bounds.json`: runs of hours "
         "to days, not re-checked here), `whose`; `from optimum` = 1 - that bound / our cost, "
         "how far our answer can at most lie above the optimum."),
        "",
        ("| instance | nodes | edges | our cost | mem ok | lower bound | gap | first answer s "
         "| solve s | read s | peak RSS MB | load | best published | held by | ratio | winner (team01) "
         "| ratio | XLA | ratio | best known bound | whose | from optimum | commit |"),
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
        "---|",
    ]
    beats, below, within = [], [], []
    for name, r in sorted(results.items()):
        costs = pub.get(name, {})
        best, holder = best_published(costs)
        if "error" in r:
            lines.append(f"| {name} | | | error: {r['error']} |" + " |" * 19)
            continue
        gap = "—" if r["gap"] is None else f"{100 * r['gap']:.1f} %"
        first = "—" if r["first_solution_s"] is None else f"{r['first_solution_s']:.1f}"
        load = r.get("load")
        load_text = "" if not load else f"{load[0]:.1f}–{load[1]:.1f}"
        bound, whose = best_bound(r["lower_bound"], bounds.get(name))
        lines.append(
            f"| {name} | {r['nodes']} | {r['edges']} | {r['cost']} | "
            f"{'yes' if r['memory_feasible'] else 'no'} | {r['lower_bound']} | {gap} | {first} | "
            f"{r['solve_s']:.1f} | {r['read_s']:.1f} | {r['peak_rss_mb']:.0f} | {load_text} | "
            f"{best or ''} | {holder} | {ratio(r['cost'], best)} | "
            f"{costs.get('team01') or ''} | {ratio(r['cost'], costs.get('team01'))} | "
            f"{costs.get('XLA') or ''} | {ratio(r['cost'], costs.get('XLA'))} | "
            f"{bound or ''} | {whose} | {from_optimum(r['cost'], bound)} | "
            f"{r.get('commit', '')} |"
        )
        if r["cost"] is not None and costs.get("XLA") and r["cost"] < costs["XLA"]:
            beats.append(name)
        if r["cost"] is not None and best:
            if r["cost"] < best:
                below.append(name)
            if r["cost"] <= 1.05 * best:
                within.append(name)
    lines += ["",
              f"Below the best published cost on: {', '.join(below) or 'none'}.",
              f"Within 1.05 times the best published cost on: {', '.join(within) or 'none'}.",
              f"{END_OF_TABLE} {', '.join(beats) or 'none'}.", ""]
    return "\n".join(lines)


def write_section(text: str) -> None:
    """Replace (or append) the generated part of our section of BENCHMARKS.md: from
    the heading to the line starting with ``END_OF_TABLE``; notes below it stay."""
    path = REPO / "BENCHMARKS.md"
    current = path.read_text()
    start = current.find(SECTION)
    if start < 0:
        path.write_text(current.rstrip("\n") + "\n\n" + text)
        return
    next_section = current.find("\n## ", start + len(SECTION))
    section_end = len(current) if next_section < 0 else next_section
    marker = current.find("\n" + END_OF_TABLE, start, section_end)
    if marker < 0:
        end = section_end
    else:
        line_end = current.find("\n", marker + 1)
        end = section_end if line_end < 0 else min(line_end, section_end)
    path.write_text(current[:start] + text.rstrip("\n") + current[end:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--only", default="", help="comma-separated instance letters")
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--portfolio", action="store_true",
                        help="CP-SAT's parallel portfolio instead of the default "
                             "reproducible mode (answers may differ between runs)")
    parser.add_argument("--first-only", action="store_true",
                        help="time only the quick first answer; writes nothing")
    parser.add_argument("--render", action="store_true",
                        help="write the table from bench/iopddl_results.json without running")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(first_one(Path(args.one)) if args.first_only
                         else run_one(Path(args.one), args.time_limit, not args.portfolio)))
        return
    wanted = {x.strip() for x in args.only.split(",") if x.strip()}
    files = sorted(DATA.glob("asplos-2025-iopddl-*.json.gz"))
    if args.first_only:
        pub = published()
        print("| instance | nodes | edges | first answer s | cost | best published | held by "
              "| ratio |")
        print("|---|---|---|---|---|---|---|---|")
        for path in files:
            name = path.name.removeprefix("asplos-2025-iopddl-").removesuffix(".json.gz")
            if wanted and name not in wanted:
                continue
            proc = subprocess.run([sys.executable, __file__, "--one", str(path), "--first-only"],
                                  capture_output=True, text=True, timeout=600, check=False)
            if proc.returncode != 0:
                print(f"| {name} | error: {(proc.stderr.strip().splitlines() or ['?'])[-1]} |")
                continue
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            best, holder = best_published(pub.get(name, {}))
            print(f"| {name} | {r['nodes']} | {r['edges']} | {r['first_s']:.2f} | "
                  f"{r['cost'] if r['cost'] is not None else 'none'} | {best or ''} | {holder} | "
                  f"{ratio(r['cost'], best)} |", flush=True)
        return
    out_json = REPO / "bench" / "iopddl_results.json"
    # With --only, re-run those instances and keep the other rows of the last run.
    results: dict[str, dict] = (json.loads(out_json.read_text())
                                if wanted and out_json.exists() else {})
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO,
                            capture_output=True, text=True, check=False).stdout.strip()
    if args.render:
        results = json.loads(out_json.read_text())
        files = []
    for path in files:
        name = path.name.removeprefix("asplos-2025-iopddl-").removesuffix(".json.gz")
        if wanted and name not in wanted:
            continue
        proc = subprocess.run(
            [sys.executable, __file__, "--one", str(path), "--time-limit", str(args.time_limit)]
            + (["--portfolio"] if args.portfolio else []),
            capture_output=True, text=True, timeout=args.time_limit * 4 + 300, check=False,
        )
        if proc.returncode != 0:
            results[name] = {"error": (proc.stderr.strip().splitlines() or ["?"])[-1]}
        else:
            results[name] = json.loads(proc.stdout.strip().splitlines()[-1])
        results[name]["commit"] = commit
        print(name, json.dumps(results[name]), flush=True)
        if not args.no_write:
            out_json.write_text(json.dumps(results, indent=1) + "\n")
    command = "python3 bench/iopddl.py" + (" --portfolio" if args.portfolio else "") + (
        f" --time-limit {args.time_limit:g}" if args.time_limit != 60 else "") + (
        f" --only {args.only}" if args.only else "")
    text = table(results, args.time_limit, command, not args.portfolio)
    print(text)
    if not args.no_write:
        write_section(text)


if __name__ == "__main__":
    main()
