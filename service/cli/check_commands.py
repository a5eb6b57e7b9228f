"""``check``: parse a module and verify it (structure, and layouts on request).

Exit codes: 0 the module is valid; 1 ``--layouts`` found violations; 2 the text
does not parse or breaks a structural rule (``FILE:LINE:COL: error: ...``).
"""

from __future__ import annotations

from pathlib import Path

import typer

from hlo.errors import HloError
from hlo.layout_verifier import verify_layouts
from hlo.parser import parse_module
from hlo.verifier import collect_errors
from service.cli.source import located, read_source


def register(app: typer.Typer) -> None:
    @app.command("check")
    def check(
        path: Path = typer.Argument(..., help="HLO text file (.hlo or .hlo.gz)."),
        layouts: bool = typer.Option(
            False, "--layouts", help="Also verify layout invariants (exit 1 on violations)."),
        ignore_tiles: bool = typer.Option(
            False, "--xla-ties",
            help="Compare tied layouts as XLA does (ignoring tiles)."),
    ) -> None:
        """Parse FILE and verify it; print a one-line summary when it is valid."""
        text = read_source(path)
        try:
            module = parse_module(text, str(path))
        except HloError as err:
            typer.echo(located(err, path, text), err=True)
            raise typer.Exit(code=2) from None
        errors = collect_errors(module, source_name=str(path))
        if errors:
            for err in errors:
                typer.echo(located(err, path, text), err=True)
            raise typer.Exit(code=2)
        count = sum(len(c.instructions) for c in module.computations)
        summary = (f"{path}: OK: module '{module.name}', {len(module.computations)} "
                   f"computations, {count} instructions")
        if layouts:
            violations = verify_layouts(module, compare_tiles=not ignore_tiles)
            if violations:
                for v in violations:
                    where = f"{path}:{v.line}:{v.column}" if v.line is not None else str(path)
                    typer.echo(f"{where}: error: [{v.rule}] computation '{v.computation}', "
                               f"instruction '{v.instruction}': {v.message} (expected "
                               f"{v.expected}, actual {v.actual})", err=True)
                typer.echo(f"{path}: {len(violations)} layout violation(s)", err=True)
                raise typer.Exit(code=1)
            summary += ", layouts OK"
        typer.echo(summary)
