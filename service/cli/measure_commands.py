"""``measure``: run laid-out modules in XLA:CPU with exactly their layouts, time them, and set
the measured ratios beside the ones the cost model predicts.

Exit codes: 0 every module ran and its outputs match the reference's; 1 an output differs;
2 bad input, jax missing, or a module the XLA path cannot run (the reason is printed).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from service.cli.source import read_source, target_spec
from service.measurement import exit_code
from service.options import MeasureOptions
from service.pipeline import Failure, MeasureRequest, run


def labels_for(paths: list[Path]) -> list[str]:
    """Distinct labels for the files: their names, numbered when two are the same."""
    names = [p.name for p in paths]
    return [n if names.count(n) == 1 else f"{n}#{k}" for k, n in enumerate(names)]


def print_failure(failure: Failure) -> None:
    where = f"{failure.field}: " if failure.field else ""
    place = f"{failure.line}:{failure.column}: " if failure.line is not None else ""
    typer.echo(f"{where}{place}error: {failure.message}", err=True)


def print_measured(report: dict[str, Any], console: Console) -> None:
    """The ``measured`` report as a table: time, paired ratio, prediction, outputs, verdict."""
    noise = report.get("noise")
    runs = report.get("runs_per_sample", 1)
    sessions = report.get("sessions", 1)
    title = (f"XLA:CPU, pinned to cpu {report['pinned_cpu']}, {report['reps']} rounds"
             f"{f' of {runs} runs' if runs > 1 else ''}"
             f"{f' in {sessions} processes' if sessions > 1 else ''}, "
             f"load {report['load_average'][0]}")
    if noise:
        title += f"; A/A noise {noise['median']:.3f} [{noise['p25']:.3f}, {noise['p75']:.3f}]"
    table = Table(title=title)
    for column in ("module", "median ms", "min ms", "temp KiB", "measured ratio",
                   "predicted ratio", "outputs", "verdict"):
        table.add_column(column)
    for row in report["modules"]:
        ratio = row["ratio"]
        measured = (f"{ratio['median']:.3f} [{ratio['p25']:.3f}, {ratio['p75']:.3f}]"
                    if ratio else "-")
        predicted = "-" if row["predicted_ratio"] is None else f"{row['predicted_ratio']:.3f}"
        outputs = {True: "match", False: "DIFFER", None: "-"}[row.get("outputs_match")]
        temp = "-" if row.get("temp_bytes") is None else f"{row['temp_bytes'] / 1024:g}"
        table.add_row(row["label"], _ms(row["median_ms"]), _ms(row["min_ms"]), temp, measured,
                      predicted, outputs, row["verdict"])
    console.print(table)
    for row in report["modules"]:
        if row["refusal"]:
            typer.echo(f"{row['label']}: cannot run on the XLA path: {row['refusal']}", err=True)
        if row.get("difference"):
            typer.echo(f"{row['label']}: outputs differ: {row['difference']}", err=True)


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def register(app: typer.Typer) -> None:
    @app.command("measure")
    def measure(
        reference: Path = typer.Argument(..., help="The reference module (e.g. XLA's layouts)."),
        candidates: list[Path] = typer.Argument(..., help="Modules to compare with it."),
        reps: int = typer.Option(10, "--reps", min=0, help="Timed rounds (0: outputs only)."),
        warmup: int = typer.Option(2, "--warmup", min=0, help="Untimed rounds first."),
        seed: int = typer.Option(0, "--seed", min=0, help="Seed of the random inputs."),
        sessions: int = typer.Option(1, "--sessions", min=1, max=10,
                                     help="XLA processes the rounds are shared among, each "
                                          "compiling every module afresh."),
        target: str = typer.Option("cpu", "-t", "--target",
                                   help="Target whose cost model predicts the ratios."),
        as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    ) -> None:
        """Run REFERENCE and each CANDIDATE in XLA:CPU on the same inputs; compare outputs and
        paired times (one pinned CPU, interleaved rounds, the reference twice: A/B/A)."""
        paths = [reference, *candidates]
        texts = [read_source(p) for p in paths]
        request = MeasureRequest(
            tuple(zip(labels_for(paths), texts)), target_spec(target),
            MeasureOptions(seed=seed, reps=reps, warmup=warmup, sessions=sessions),
        )
        outcome = run(request)
        if isinstance(outcome, Failure):
            if outcome.field and outcome.field.startswith("modules."):
                k = int(outcome.field.split(".")[1])
                outcome = Failure(outcome.type, outcome.message, str(paths[k]), outcome.line,
                                  outcome.column)
            print_failure(outcome)
            raise typer.Exit(code=2)
        if as_json:
            typer.echo(json.dumps(outcome.data, indent=1))
        else:
            print_measured(outcome.data, Console(width=120))
        raise typer.Exit(code=exit_code(outcome.data))
