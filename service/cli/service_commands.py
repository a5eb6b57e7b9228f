"""``serve`` (the HTTP API) and ``batch`` (many modules, resumable, local pool or Ray)."""

from __future__ import annotations

import asyncio
from enum import Enum
from pathlib import Path
from typing import Any, Optional

import typer
from pydantic import TypeAdapter, ValidationError

from service.cli.source import target_spec
from service.pipeline import (
    NEEDS_TARGET, OPTIONS_OF, InlineTarget, Operation, default_batch_operation,
)


class EngineName(str, Enum):
    LOCAL = "local"
    RAY = "ray"


def _settings(**overrides: Any) -> Any:
    from service.settings import Settings

    try:
        return Settings(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as exc:
        for err in exc.errors():
            field = ".".join(str(p) for p in err["loc"]) or "settings"
            typer.echo(f"error: invalid setting {field}: {err['msg']}", err=True)
        raise typer.Exit(code=2) from None


def _target(value: str | None) -> str | InlineTarget | None:
    """A built-in name, or a JSON/TOML target file given by path (read here, on the CLI only)."""
    return None if value is None else target_spec(value)


def _options(operation: Operation, given: dict[str, Any]) -> Any:
    options_type = OPTIONS_OF[operation]
    fields = set(getattr(options_type, "__dataclass_fields__", {}))
    if operation is Operation.NORMALIZE and "normalize" in given:
        given["passes"] = given.pop("normalize")
    unknown = sorted(k for k in given if k not in fields)
    if unknown:
        flags = ", ".join("--" + k.replace("_s", "").replace("_", "-") for k in unknown)
        typer.echo(f"error: {flags} does not apply to {operation.value}", err=True)
        raise typer.Exit(code=2)
    try:
        return TypeAdapter(options_type).validate_python(given)
    except ValidationError as exc:
        for err in exc.errors():
            typer.echo(f"error: option {'.'.join(map(str, err['loc']))}: {err['msg']}", err=True)
        raise typer.Exit(code=2) from None


def register(app: typer.Typer) -> None:
    app.command("serve")(serve)
    app.command("batch")(batch)


def serve(
    host: Optional[str] = typer.Option(None, help="Address to bind [default: 127.0.0.1]."),
    port: Optional[int] = typer.Option(None, help="Port [default: 8000]."),
    workers: Optional[int] = typer.Option(None, help="Solver processes [default: CPUs]."),
) -> None:
    """Serve the HTTP API (settings also from HLO_LAYOUT_* variables)."""
    import uvicorn

    from service.app import create_app

    settings = _settings(host=host, port=port, workers=workers)
    uvicorn.run(
        create_app(settings), host=settings.host, port=settings.port, log_level="info"
    )


def batch(
    inputs: list[str] = typer.Argument(..., help="Files, directories or globs (.hlo, .hlo.gz)."),
    out: Path = typer.Option(..., "--out", "-o", help="Output directory."),
    operation: Optional[Operation] = typer.Option(
        None, "--operation", help="assign (default), score, normalize, check, format."
    ),
    target: Optional[str] = typer.Option(
        None, "-t", "--target", help="Target name or file [assign/score default: cpu]."
    ),
    workers: Optional[int] = typer.Option(None, "--workers", help="Local worker processes."),
    engine: EngineName = typer.Option(EngineName.LOCAL, "--engine"),
    address: Optional[str] = typer.Option(None, "--address", help="Ray cluster address."),
    time_limit: Optional[float] = typer.Option(None, "--time-limit", help="Seconds per solve."),
    entry_layout: Optional[str] = typer.Option(None, "--entry-layout", help="fixed or auto."),
    normalize: Optional[list[str]] = typer.Option(None, "--normalize", help="Pass (repeat)."),
    seed: Optional[int] = typer.Option(None, "--seed"),
    emit_bitcasts: Optional[bool] = typer.Option(
        None, "--emit-bitcasts", help="assign: write free transposes/reshapes as bitcast."
    ),
    max_candidates: Optional[int] = typer.Option(
        None, "--max-candidates", help="assign: layouts considered per buffer."
    ),
    verify: Optional[bool] = typer.Option(
        None, "--verify/--no-verify", help="assign: run the layout verifier on the result."
    ),
    short: Optional[bool] = typer.Option(None, "--short/--long", help="format: short form."),
    cache: bool = typer.Option(True, "--cache/--no-cache", help="Use the result cache."),
) -> None:
    """Run one operation over many modules: a result per module and a summary; re-running
    skips finished modules."""
    from rich.console import Console

    from service.batch import BatchSpec

    settings = _settings(workers=workers)
    op = operation or default_batch_operation()
    given = {
        "time_limit_s": time_limit, "entry_layout": entry_layout, "normalize": normalize,
        "seed": seed, "short": short, "emit_bitcasts": emit_bitcasts,
        "max_candidates": max_candidates, "verify": verify,
    }
    options = _options(op, {k: v for k, v in given.items() if v is not None})
    # The same default target as ``hlo-layout assign``.
    spec_target = _target(target or "cpu") if op in NEEDS_TARGET else _target(target)
    if op in (Operation.VERIFY, Operation.MEASURE):
        typer.echo(f"error: {op.value} compares modules; use 'hlo-layout {op.value}'", err=True)
        raise typer.Exit(code=2)
    run = _run_batch(inputs, out, BatchSpec(op, options, spec_target,
                                            timeout_s=settings.request_timeout_s),
                     settings, engine, address, cache)
    Console(stderr=True).print(
        f"{op.value}: {run.total} modules, {run.total - run.failed} ok, {run.failed} failed "
        f"({run.computed} computed, {run.skipped} already done, {run.cached} cached) "
        f"-> {run.summary_path}"
    )
    if run.failed:
        raise typer.Exit(code=1)


def _run_batch(inputs: list[str], out: Path, spec: Any, settings: Any, engine: EngineName,
               address: str | None, cache: bool) -> Any:
    """The batch run with a progress bar on stderr (exit 2 for bad inputs)."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
    from rich.progress import TimeElapsedColumn

    from service.batch import BatchError, BatchProgress, LocalEngine, collect_inputs, run_batch
    from service.cache import ResultCache

    op = spec.operation
    try:
        modules = collect_inputs(inputs)
    except BatchError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(code=2) from None
    if engine is EngineName.RAY:
        from service.batch_ray import RayEngine

        runner: Any = RayEngine(address)
    else:
        runner = LocalEngine(settings.workers)
    result_cache = (
        ResultCache(settings.cache_path) if cache and settings.cache_path is not None else None
    )
    console = Console(stderr=True)
    with Progress(
        TextColumn(f"{op.value}"), BarColumn(), MofNCompleteColumn(),
        TextColumn("failed {task.fields[failed]}"), TimeElapsedColumn(),
        TextColumn("{task.fields[last]}"), console=console,
    ) as progress:
        task = progress.add_task(op.value, total=len(modules), failed=0, last="")

        def show(p: BatchProgress) -> None:
            progress.update(task, completed=p.finished, failed=p.failed, last=p.last or "")

        try:
            run = asyncio.run(
                run_batch(modules, spec, out, runner, cache=result_cache, on_progress=show)
            )
        except BatchError as exc:
            progress.stop()
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(code=2) from None
    if result_cache is not None:
        result_cache.close()
    return run
