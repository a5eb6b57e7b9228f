"""``graph``: the dependency graph of a module for other tools (GraphML, DOT or JSON).

``hlo-layout graph m.hlo --format graphml > m.graphml`` writes one node per instruction
(``computation/name``, with opcode, shape, layout and layout family) and the data, control
and call edges; ``--layouts`` first assigns layouts (``-t``, ``--time-limit``) and writes the
laid-out module's graph, with the cost of every instruction and the inserted conversions
(from, to, bytes, cost, why) on the copies and edges that carry them.
Exit 2 on input that does not parse or cannot be laid out.
"""

from __future__ import annotations

from pathlib import Path

import typer

from hlo.errors import HloError
from hlo.graph import GRAPH_FORMATS
from hlo.parser import parse_module
from service.cli.source import located, outcome_of, read_source, source_name, target_spec
from service.explorer.graph_export import export_graph
from service.options import AssignOptions
from service.pipeline import ModuleRequest, Operation


def register(app: typer.Typer) -> None:
    @app.command("graph")
    def graph_command(
        path: Path = typer.Argument(..., help="HLO text file (.hlo or .hlo.gz), or - for stdin."),
        fmt: str = typer.Option("graphml", "--format", "-f", help="graphml | dot | json"),
        layouts: bool = typer.Option(
            False, "--layouts", help="Assign layouts first; attach costs and conversions."),
        target: str = typer.Option("cpu", "-t", "--target", help="Target for --layouts."),
        time_limit: float = typer.Option(10.0, "--time-limit", help="Solve time limit (s)."),
        out: Path | None = typer.Option(None, "-o", "--out", help="Write here (default stdout)."),
    ) -> None:
        """Write the dependency graph of FILE with layouts as attributes."""
        if fmt not in GRAPH_FORMATS:
            typer.echo(f"error: --format must be one of {', '.join(GRAPH_FORMATS)}, not {fmt!r}",
                       err=True)
            raise typer.Exit(code=2)
        text = read_source(path)
        report = None
        if layouts:
            request = ModuleRequest(Operation.ASSIGN, text, source_name(path), target_spec(target),
                                    AssignOptions(time_limit_s=time_limit))
            done = outcome_of(request, {None: (path, text)})
            report, text = done.data, done.hlo or ""
        try:
            module = parse_module(text, source_name(path))
        except HloError as err:
            typer.echo(located(err, path, text), err=True)
            raise typer.Exit(code=2) from None
        document = export_graph(module, fmt, report)
        if out is not None:
            out.write_text(document)
        else:
            typer.echo(document, nl=False)
