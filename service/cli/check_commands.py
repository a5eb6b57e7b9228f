"""``check``: parse a module and verify it (structure, and layouts on request).

Exit codes: 0 the module is valid; 1 ``--layouts`` found violations; 2 the text
does not parse or breaks a structural rule (``FILE:LINE:COL: error: ...``).
"""

from __future__ import annotations

from pathlib import Path

import typer

from service.cli.source import outcome_of, read_source, source_name
from service.options import CheckOptions
from service.pipeline import ModuleRequest, Operation


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
        request = ModuleRequest(Operation.CHECK, text, source_name(path),
                                options=CheckOptions(layouts=layouts,
                                                     compare_tiles=not ignore_tiles))
        data = outcome_of(request, {None: (path, text)}).data
        summary = (f"{path}: OK: module '{data['module']}', {data['computations']} "
                   f"computations, {data['instructions']} instructions")
        violations = data.get("layout_violations", [])
        for v in violations:
            where = f"{path}:{v['line']}:{v['column']}" if v["line"] is not None else str(path)
            typer.echo(f"{where}: error: [{v['rule']}] computation '{v['computation']}', "
                       f"instruction '{v['instruction']}': {v['message']} (expected "
                       f"{v['expected']}, actual {v['actual']})", err=True)
        if violations:
            typer.echo(f"{path}: {len(violations)} layout violation(s)", err=True)
            raise typer.Exit(code=1)
        typer.echo(summary + (", layouts OK" if layouts else ""))
