"""``verify``: prove a rewritten module computes what the original computes.

Both modules run through the reference interpreter on the same random inputs;
the rewritten module's layouts are checked by the layout verifier. Exit codes:
0 equivalent and the layouts verify; 1 a differing output element (the first
one is reported) or layout violations; 2 bad input (unreadable file, parse
error, modules that cannot be compared or executed).
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from hlo.equivalence import EquivalenceReport, compare_modules
from hlo.errors import HloError
from service.cli.source import load_module


def _summary(report: EquivalenceReport) -> list[str]:
    lines = []
    if report.equivalent:
        how = "bit for bit" if report.exact else (
            f"within tolerance (max normwise error {report.max_relative_error:.3g})"
        )
        lines.append(f"equivalent on {report.trials} random input set(s), seed {report.seed}: {how}")
    else:
        lines.append(f"NOT equivalent: {report.difference}")
    if report.violations:
        lines.append(f"layouts: {len(report.violations)} violation(s)")
        lines.extend(f"  {v}" for v in report.violations)
    else:
        lines.append("layouts: verified")
    return lines


def register(app: typer.Typer) -> None:
    @app.command("verify")
    def verify(
        original: Path = typer.Argument(..., help="The module before the rewrite (.hlo or .hlo.gz)."),
        rewritten: Path = typer.Argument(..., help="The rewritten module."),
        seed: int = typer.Option(0, "--seed", help="Seed of the random inputs."),
        trials: int = typer.Option(1, "--trials", min=1, help="Number of random input sets."),
        exact: bool = typer.Option(False, "--exact", help="Require bit-identical floats."),
        as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    ) -> None:
        """Run ORIGINAL and REWRITTEN on the same random inputs and compare every output."""
        first = load_module(original)
        second = load_module(rewritten)
        try:
            report = compare_modules(first, second, seed=seed, trials=trials, exact=exact)
        except HloError as err:
            typer.echo(f"{rewritten}: error: {err.message}", err=True)
            raise typer.Exit(code=2) from None
        if as_json:
            typer.echo(json.dumps(report.to_json(), indent=2))
        else:
            for line in _summary(report):
                typer.echo(line)
        raise typer.Exit(code=0 if report.ok else 1)
