"""Run the solver core on every public IOPDDL instance and compare with the published results.

Each instance runs in its own subprocess (so peak RSS is per instance) with the
contest's time limit (60 s by default). The table goes to the "Solver core
(IOPDDL)" section of BENCHMARKS.md (replacing only that section) and to a JSON
file beside it.

    python3 bench/iopddl.py [--time-limit 60] [--only B,G] [--no-write]
    python3 bench/iopddl.py --first-only [--only A,K]   # only the quick first answer

``--first-only`` times :func:`solver.quick.quick_answer` alone (the first answer of
large problems) and prints its cost; it writes nothing.
"""

from __future__ import annotations

import argparse
import csv
import json
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "benchmarks" / "iopddl"
SECTION = "## Solver core (IOPDDL)"


def run_one(path: Path, time_limit: float, deterministic: bool) -> dict:
    """Solve one instance in this process and report (called in the subprocess)."""
    sys.path.insert(0, str(REPO))
    from solver.iopddl import read_instance
    from solver.options import SolveOptions
    from solver.solve import solve

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


def published() -> dict[str, dict[str, int | None]]:
    """Published final costs per instance: the winner (team01) and XLA's solver."""
    with open(DATA / "final_results.csv", newline="") as handle:
        rows = {row["TEAM #"]: row for row in csv.DictReader(handle)}
    out = {}
    for name in rows["team01"]:
        if name == "TEAM #":
            continue
        out[name] = {who: int(rows[who][name]) if rows[who][name] else None
                     for who in ("team01", "XLA")}
    return out


def ratio(ours: int | None, theirs: int | None) -> str:
    if ours is None or theirs is None or theirs >= 10**18:
        return "—"
    return f"{ours / theirs:.3f}"


def table(results: dict[str, dict], time_limit: float, command: str) -> str:
    pub = published()
    lines = [
        SECTION,
        "",
        (f"Command: `{command}`. Machine: {platform.processor() or platform.machine()}, "
         f"2 cores, Python {platform.python_version()}, {platform.system()}; shared with other "
         f"jobs at the time. Date: 2026-11-21. Limit {time_limit:g} s per instance for the "
         "solve (quick answer, reduce, heuristic, model build, CP-SAT, postsolve); reading the "
         "JSON is extra and listed separately. CP-SAT runs its parallel portfolio (2 workers, "
         "seed 0; `--portfolio` in the CLI), so CP-SAT's part of an answer may differ between "
         "runs; the library and CLI default is the reproducible interleaved mode "
         "(`--deterministic` here). The quick answer and the heuristic are deterministic "
         "(fixed numbers of sweeps and rounds). Costs are re-evaluated from the returned "
         "labels; `ratio` = ours / theirs (below 1 = we are cheaper). Published costs: "
         "`final_results.csv` (team01 = winner, XLA = XLA's auto-sharding solver; blank = "
         "no result)."),
        "",
        ("| instance | nodes | edges | our cost | mem ok | lower bound | gap | first answer s "
         "| solve s | read s | peak RSS MB | winner | ratio | XLA | ratio | commit |"),
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    beats = []
    for name, r in sorted(results.items()):
        if "error" in r:
            lines.append(f"| {name} | | | error: {r['error']} |" + " |" * 12)
            continue
        p = pub.get(name, {})
        gap = "—" if r["gap"] is None else f"{100 * r['gap']:.1f} %"
        first = "—" if r["first_solution_s"] is None else f"{r['first_solution_s']:.1f}"
        lines.append(
            f"| {name} | {r['nodes']} | {r['edges']} | {r['cost']} | "
            f"{'yes' if r['memory_feasible'] else 'no'} | {r['lower_bound']} | {gap} | {first} | "
            f"{r['solve_s']:.1f} | {r['read_s']:.1f} | {r['peak_rss_mb']:.0f} | "
            f"{p.get('team01') or ''} | {ratio(r['cost'], p.get('team01'))} | "
            f"{p.get('XLA') or ''} | {ratio(r['cost'], p.get('XLA'))} | {r.get('commit', '')} |"
        )
        if r["cost"] is not None and p.get("XLA") and r["cost"] < p["XLA"]:
            beats.append(name)
    lines += ["", f"Cheaper than XLA's solver on: {', '.join(beats) or 'none'}.", ""]
    return "\n".join(lines)


def write_section(text: str) -> None:
    """Replace (or append) only our section of BENCHMARKS.md."""
    path = REPO / "BENCHMARKS.md"
    current = path.read_text()
    start = current.find(SECTION)
    if start < 0:
        path.write_text(current.rstrip("\n") + "\n\n" + text)
        return
    end = current.find("\n## ", start + len(SECTION))
    rest = "" if end < 0 else current[end:]
    path.write_text(current[:start] + text.rstrip("\n") + "\n" + rest)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--only", default="", help="comma-separated instance letters")
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--deterministic", action="store_true",
                        help="interleaved (reproducible) CP-SAT search; slower to improve")
    parser.add_argument("--first-only", action="store_true",
                        help="time only the quick first answer; writes nothing")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(first_one(Path(args.one)) if args.first_only
                         else run_one(Path(args.one), args.time_limit, args.deterministic)))
        return
    wanted = {x.strip() for x in args.only.split(",") if x.strip()}
    files = sorted(DATA.glob("asplos-2025-iopddl-*.json.gz"))
    if args.first_only:
        pub = published()
        print("| instance | nodes | edges | first answer s | cost | winner | ratio |")
        print("|---|---|---|---|---|---|---|")
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
            winner = pub.get(name, {}).get("team01")
            print(f"| {name} | {r['nodes']} | {r['edges']} | {r['first_s']:.2f} | "
                  f"{r['cost'] if r['cost'] is not None else 'none'} | {winner or ''} | "
                  f"{ratio(r['cost'], winner)} |", flush=True)
        return
    out_json = REPO / "bench" / "iopddl_results.json"
    # With --only, re-run those instances and keep the other rows of the last run.
    results: dict[str, dict] = (json.loads(out_json.read_text())
                                if wanted and out_json.exists() else {})
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO,
                            capture_output=True, text=True, check=False).stdout.strip()
    for path in files:
        name = path.name.removeprefix("asplos-2025-iopddl-").removesuffix(".json.gz")
        if wanted and name not in wanted:
            continue
        proc = subprocess.run(
            [sys.executable, __file__, "--one", str(path), "--time-limit", str(args.time_limit)]
            + (["--deterministic"] if args.deterministic else []),
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
    command = "python3 bench/iopddl.py" + (" --deterministic" if args.deterministic else "") + (
        f" --time-limit {args.time_limit:g}" if args.time_limit != 60 else "") + (
        f" --only {args.only}" if args.only else "")
    text = table(results, args.time_limit, command)
    print(text)
    if not args.no_write:
        write_section(text)


if __name__ == "__main__":
    main()
