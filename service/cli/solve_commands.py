"""``solve-problem``: the generic solver core on an IOPDDL-format instance."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from solver.iopddl import read_instance, write_answer
from solver.options import SolveOptions
from solver.errors import ProblemError
from solver.solve import solve


def register(app: typer.Typer) -> None:
    @app.command("solve-problem")
    def solve_problem(
        path: Path = typer.Argument(..., help="IOPDDL instance, FILE.json or FILE.json.gz"),
        time_limit: float = typer.Option(60.0, "--time-limit", min=0.1, help="seconds"),
        as_json: bool = typer.Option(False, "--json", help="print a JSON report"),
        out: Path | None = typer.Option(None, "--out", help="write one label per node here"),
        deterministic: bool = typer.Option(
            True, "--deterministic/--portfolio",
            help="reproducible interleaved CP-SAT search, or the faster-improving parallel portfolio"),
    ) -> None:
        """Solve a labeling problem: cost, memory feasibility, lower bound, gap, time."""
        try:
            problem = read_instance(path)
        except ProblemError as err:
            print(f"{path}: error: {err}", file=sys.stderr)
            raise typer.Exit(code=2) from None
        result = solve(problem, SolveOptions(time_limit=time_limit, deterministic=deterministic))
        total_ms = sum(ms for _, ms in result.timings_ms)
        report = {
            "file": str(path),
            "nodes": problem.num_nodes,
            "edges": len(problem.edges),
            "status": result.status.value,
            "objective": result.objective,
            "memory_feasible": result.memory_feasible,
            "peak_memory": result.peak_memory,
            "memory_limit": problem.memory_limit,
            "lower_bound": result.lower_bound,
            "gap": result.gap,
            "time_ms": round(total_ms, 1),
            "first_solution_ms": result.first_solution_ms,
            "timings_ms": dict(result.timings_ms),
            "message": result.message,
        }
        if out is not None and result.labels is not None:
            write_answer(out, result.labels)
        if as_json:
            typer.echo(json.dumps(report, indent=2))
        else:
            table = Table(title=str(path), show_header=False)
            for key, value in report.items():
                if key != "timings_ms":
                    table.add_row(key, "" if value is None else str(value))
            table.add_row("timings_ms", ", ".join(f"{k} {v:.0f}" for k, v in result.timings_ms))
            Console().print(table)
        if result.labels is None:
            raise typer.Exit(code=1)
