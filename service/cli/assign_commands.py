"""``assign`` and ``score``: layout assignment and the cost of existing layouts.

Exit codes: 0 ok; 1 the result failed layout verification; 2 bad input (the
text does not parse, an unknown target, hard rules no layout can meet).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from hlo.errors import HloError
from hlo.passes import DEFAULT_PASSES, PassError, passes_for_target
from service.cli.measure_commands import print_measured
from service.cli.progress_line import REDRAW_S, ProgressLine
from service.cli.source import outcome_of, read_source, source_name, target_spec
from service.measurement import exit_code
from service.options import AssignOptions, EntryLayout, MeasureOptions, NormalizePass
from service.pipeline import (
    MeasureRequest, ModuleRequest, Operation, OperationFailed, TargetSpec, load_target,
)
from solver.layout_assignment.report import summary
from solver.progress import throttled


def _normalization(flag: bool | None, passes: str | None, target: TargetSpec
                   ) -> tuple[NormalizePass, ...] | None:
    """``AssignOptions.normalize`` from the flags: ``--passes`` names them, ``--no-normalize``
    runs none, ``--normalize`` the target's passes (normalize-reductions where it asks for
    none), neither: the target's default (``None``)."""
    if passes is not None:
        if flag is False:
            raise PassError("--no-normalize and --passes contradict each other")
        named = NormalizePass.named(passes)
        if not named:
            raise PassError("--passes names no pass")
        return named
    if flag is None:
        return None
    if not flag:
        return ()
    try:
        loaded = load_target(target)
    except OperationFailed as exc:
        raise PassError(exc.failure.message) from None
    return NormalizePass.named(passes_for_target(loaded) or DEFAULT_PASSES)


def measured_report(path: Path, text: str, ours: str, target: TargetSpec,
                    baseline: Path | None, reps: int) -> dict:
    """The ``measured`` section: ours against XLA's own layouts, run in XLA:CPU (exit 2 when
    jax is missing or a module cannot run). XLA's layouts come from ``baseline`` or, without
    one, from XLA's layout-assignment pass on the input."""
    from service.xla.errors import XlaError
    from service.xla.layout_pass import xla_layout_assignment

    if baseline is not None:
        theirs, source = read_source(baseline), f"file {baseline}"
    else:
        canonical = outcome_of(ModuleRequest(Operation.FORMAT, text, source_name(path)),
                               {None: (path, text)}).hlo or ""
        try:
            theirs = xla_layout_assignment(canonical)
        except XlaError as err:
            typer.echo(f"error: {err.message}", err=True)
            raise typer.Exit(code=2) from None
        source = "XLA's layout-assignment pass"
    request = MeasureRequest((("xla", theirs), ("ours", ours)), target, MeasureOptions(reps=reps))
    where = (baseline, theirs) if baseline is not None else (path, text)
    return {**outcome_of(request, {None: where}).data, "baseline": source}


def register(app: typer.Typer) -> None:
    app.command("assign")(assign_command)
    app.command("score")(score_command)


def assign_command(
    path: Path = typer.Argument(..., help="HLO text file (.hlo or .hlo.gz)."),
    target: str = typer.Option("cpu", "-t", "--target", help="Built-in target or a target file."),
    entry_layout: str = typer.Option("fixed", "--entry-layout", help="fixed | auto"),
    time_limit: float = typer.Option(
        10.0, "--time-limit", help="Wall-clock limit of the whole assignment (s)."),
    out: Path | None = typer.Option(None, "-o", "--out", help="Write the laid-out module here."),
    report: Path | None = typer.Option(None, "--report", help="Write the JSON report here."),
    html: Path | None = typer.Option(
        None, "--html", help="Write the report as one self-contained HTML page here (graph, "
                             "conversions, annotated module, memory-order pictures)."),
    emit_bitcasts: bool = typer.Option(False, "--emit-bitcasts",
                                       help="Write free transposes/reshapes as bitcast."),
    normalize: bool | None = typer.Option(
        None, "--normalize/--no-normalize",
        help="Run normalization passes on the result (default: what the target asks for; "
             "--normalize on a target that asks for none runs normalize-reductions)."),
    passes: str | None = typer.Option(
        None, "--passes", help="Comma-separated normalization passes to run, in order."),
    measure: bool = typer.Option(
        False, "--measure",
        help="Run the result and XLA's own layouts in XLA:CPU and add a 'measured' section "
             "(needs the xla extra)."),
    baseline: Path | None = typer.Option(
        None, "--baseline",
        help="XLA's layouts from this laid-out module instead of XLA's layout-assignment "
             "pass (implies --measure)."),
    reps: int = typer.Option(10, "--reps", min=1, help="Timed rounds for --measure."),
    progress: bool | None = typer.Option(
        None, "--progress/--no-progress",
        help="Show the step, the best cost so far, the bound and the gap on stderr while "
             "solving (default: when stderr is a terminal)."),
) -> None:
    """Assign layouts to FILE; print the module (or write it to -o) and a summary."""
    if entry_layout not in ("fixed", "auto"):
        typer.echo(f"error: --entry-layout must be fixed or auto, not {entry_layout!r}", err=True)
        raise typer.Exit(code=2)
    spec = target_spec(target)
    try:
        requested = _normalization(normalize, passes, spec)
    except HloError as err:
        typer.echo(f"error: {err.message}", err=True)
        raise typer.Exit(code=2) from None
    text = read_source(path)
    options = AssignOptions(entry_layout=EntryLayout(entry_layout), time_limit_s=time_limit,
                            emit_bitcasts=emit_bitcasts, normalize=requested)
    shown = progress if progress is not None else sys.stderr.isatty()
    watch = throttled(ProgressLine(sys.stderr), REDRAW_S) if shown else None
    done = outcome_of(ModuleRequest(Operation.ASSIGN, text, source_name(path), spec, options),
                      {None: (path, text)}, watch)
    data = {**done.data, "timings_ms": dict(done.timings_ms), "hlo": done.hlo}
    if measure or baseline is not None:
        data["measured"] = measured_report(path, text, done.hlo or "", spec, baseline, reps)
    _write_outputs(data, out, report, html)
    Console(stderr=out is None).print(_summary_table(data))
    if "measured" in data:
        print_measured(data["measured"], Console(stderr=out is None, width=120))
        code = exit_code(data["measured"])
        if code:
            raise typer.Exit(code=code)
    if data["violations"]:
        for v in data["violations"]:
            typer.echo(f"{path}: error: {v}", err=True)
        raise typer.Exit(code=1)


def score_command(
    path: Path = typer.Argument(..., help="A laid-out HLO module (e.g. XLA's after_layout)."),
    target: str = typer.Option(..., "-t", "--target", help="Built-in target or a target file."),
    as_json: bool = typer.Option(False, "--json", help="Print the full JSON breakdown."),
) -> None:
    """The cost of the layouts already in FILE under the target's cost model."""
    text = read_source(path)
    request = ModuleRequest(Operation.SCORE, text, source_name(path), target_spec(target))
    scored = outcome_of(request, {None: (path, text)}).data
    if as_json:
        typer.echo(json.dumps(scored, indent=1))
        return
    table = Table(title=f"{scored['module']} on {scored['target']}: {scored['cost']} ns")
    table.add_column("kind")
    table.add_column("ns", justify="right")
    for kind, ns in scored["breakdown"].items():
        table.add_row(kind, str(ns))
    Console().print(table)


def _write_outputs(data: dict[str, Any], out: Path | None, report: Path | None,
                   html: Path | None) -> None:
    """The laid-out module (to ``out`` or stdout), the JSON report and the HTML page."""
    if out is not None:
        out.write_text(data["hlo"])
    else:
        typer.echo(data["hlo"], nl=False)
    if report is not None:
        report.write_text(json.dumps(data, indent=1))
    if html is not None:
        from service.explorer.page import assign_report_html

        html.write_text(assign_report_html(data))


def _summary_table(report: dict[str, Any]) -> Table:
    s = summary(report)
    table = Table(title=f"{s['module']} on {s['target']}")
    for key in ("status", "objective_ns", "lower_bound_ns", "default_ns", "greedy_ns",
                "copies_inserted", "time_ms"):
        table.add_row(key, str(s[key]))
        if key == "lower_bound_ns" and s["gap"] is not None:
            table.add_row("gap", f"{100 * s['gap']:.2f} %")
    norm = report["normalization"]
    table.add_row("normalized", (", ".join(norm["passes"]) or "none") + (
        f" ({len(norm['reductions_normalized'])} reduces)" if norm["passes"] else ""))
    return table
