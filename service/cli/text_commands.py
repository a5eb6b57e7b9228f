"""``fmt``: parse an HLO text and print it in canonical form (the text front end on the command line)."""

from __future__ import annotations

import typer

from service.cli.source import outcome_of, read_source, source_name
from service.options import FormatOptions
from service.pipeline import ModuleRequest, Operation


def register(app: typer.Typer) -> None:
    @app.command("fmt")
    def fmt(
        path: str = typer.Argument(..., metavar="FILE", help="HLO text (.hlo or .hlo.gz); '-' reads stdin."),
        short: bool = typer.Option(False, "--short", help="Bare names, no operand shapes or signatures."),
    ) -> None:
        """Parse FILE and print it in canonical form (modules split by '// -----' stay split)."""
        text = read_source(path)
        request = ModuleRequest(Operation.FORMAT, text, source_name(path),
                                options=FormatOptions(short=short))
        printed = outcome_of(request, {None: (path, text)}).hlo or ""
        typer.echo(printed.rstrip("\n") + "\n", nl=False)
