"""``fmt``: parse an HLO text and print it in canonical form (the text front end on the command line)."""

from __future__ import annotations

import typer

from hlo.errors import HloError
from hlo.parser import parse_modules
from hlo.printer import print_module
from service.cli.source import read_source, source_name


def register(app: typer.Typer) -> None:
    @app.command("fmt")
    def fmt(
        path: str = typer.Argument(..., metavar="FILE", help="HLO text (.hlo or .hlo.gz); '-' reads stdin."),
        short: bool = typer.Option(False, "--short", help="Bare names, no operand shapes or signatures."),
    ) -> None:
        """Parse FILE and print it in canonical form (modules split by '// -----' stay split)."""
        text = read_source(path)
        try:
            modules = parse_modules(text, source_name(path))
        except HloError as e:
            typer.echo(str(e), err=True)
            raise typer.Exit(code=2) from None
        if not modules:
            typer.echo(f"{path}: error: no HLO module found", err=True)
            raise typer.Exit(code=2)
        printed = [print_module(m, short=short).rstrip("\n") + "\n" for m in modules]
        typer.echo("\n// -----\n\n".join(printed), nl=False)
