"""``fmt`` and ``check``: the HLO text front end on the command line."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    @app.command("fmt")
    def fmt(path: str, short: bool = typer.Option(False, "--short")) -> None:
        """Parse FILE and print it in canonical form."""
        raise typer.Exit(code=2)
