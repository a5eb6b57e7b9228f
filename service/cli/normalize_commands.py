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

from hlo.passes import DEFAULT_PASSES, PASSES, PassError
from service.cli.source import outcome_of, read_source, source_name
from service.options import NormalizeOptions, NormalizePass
from service.pipeline import ModuleRequest, Operation


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
            named = NormalizePass.named(passes)
        except PassError as e:
            typer.echo(f"error: {e.message}", err=True)
            raise typer.Exit(code=2) from None
        if not named:
            typer.echo("error: --passes names no pass", err=True)
            raise typer.Exit(code=2)
        text = read_source(path)
        options = NormalizeOptions(passes=named, verify=verify, short=short)
        done = outcome_of(ModuleRequest(Operation.NORMALIZE, text, source, options=options),
                          {None: (path, text)})
        for note in done.data["notes"]:
            typer.echo(f"{source}: note: {note}", err=True)
        if done.data.get("verified") is False:
            for finding in done.data["findings"]:
                typer.echo(f"{source}: error: after pass '{done.data['failed_pass']}': {finding}",
                           err=True)
            raise typer.Exit(code=1)
        if output is None:
            typer.echo(done.hlo, nl=False)
        else:
            try:
                output.write_text(done.hlo or "")
            except OSError as e:
                typer.echo(f"{output}: error: {e.strerror or e}", err=True)
                raise typer.Exit(code=2) from None
