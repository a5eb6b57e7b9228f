"""``normalize``: run the normalization passes on a laid-out module.

``hlo-layout normalize FILE [--passes normalize-reductions,normalize-layouts] [-o OUT]``
prints (or writes) the rewritten module. Exit codes: 0 done; 1 ``--verify``
found the output broken; 2 bad input (unreadable file, parse error, unknown
pass, a module the passes reject such as a variadic reduce whose inputs
disagree in layout), with ``FILE:LINE:COL: error: ...`` on stderr.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from hlo.errors import HloError
from hlo.ir import Module
from hlo.layout_verifier import verify_layouts
from hlo.parser import parse_module
from hlo.passes import DEFAULT_PASSES, PASSES, PassError, apply_passes, pass_names
from hlo.printer import print_module
from hlo.verifier import collect_errors
from service.cli.source import located, read_source, source_name


def register(app: typer.Typer) -> None:
    @app.command("normalize")
    def normalize(
        path: str = typer.Argument(
            ..., metavar="FILE", help="HLO text (.hlo or .hlo.gz); '-' reads stdin."
        ),
        passes: str = typer.Option(
            ",".join(DEFAULT_PASSES),
            "--passes",
            "-p",
            help=f"Comma-separated passes, run in order: {', '.join(PASSES)}.",
        ),
        output: Optional[Path] = typer.Option(
            None, "--output", "-o", help="Write here instead of stdout."
        ),
        verify: bool = typer.Option(
            False,
            "--verify",
            help="Verify structure and layouts after every pass (exit 1 on failure).",
        ),
        short: bool = typer.Option(False, "--short", help="Print bare names, no operand shapes."),
    ) -> None:
        """Rewrite FILE with the normalization passes (default: normalize-reductions)."""
        source = source_name(path)
        try:
            names = pass_names(passes)
        except PassError as e:
            typer.echo(f"error: {e.message}", err=True)
            raise typer.Exit(code=2) from None
        if not names:
            typer.echo("error: --passes names no pass", err=True)
            raise typer.Exit(code=2)
        text = read_source(path)
        try:
            module = parse_module(text, source)
            errors = collect_errors(module, source_name=source)
            if errors:
                for err in errors:
                    typer.echo(located(err, path, text), err=True)
                raise typer.Exit(code=2)
            for run in apply_passes(module, names):
                module = run.after
                for note in run.notes:
                    typer.echo(f"{source}: note: {note}", err=True)
                if verify and not _verified(module, run.name, source):
                    raise typer.Exit(code=1)
        except HloError as e:
            typer.echo(located(e, path, text), err=True)
            raise typer.Exit(code=2) from None
        printed = print_module(module, short=short)
        if output is None:
            typer.echo(printed, nl=False)
        else:
            try:
                output.write_text(printed)
            except OSError as e:
                typer.echo(f"{output}: error: {e.strerror or e}", err=True)
                raise typer.Exit(code=2) from None


def _verified(module: Module, name: str, source: str) -> bool:
    errors = collect_errors(module)
    violations = verify_layouts(module) if not errors else []
    for err in errors:
        typer.echo(f"{source}: error: after pass '{name}': {err.message}", err=True)
    for v in violations:
        typer.echo(f"{source}: error: after pass '{name}': {v}", err=True)
    return not errors and not violations
