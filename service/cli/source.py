"""Reading HLO input on the command line, with the exit-2 diagnostics every command shares.

``read_source``: a file (``.gz`` read transparently) or ``-`` for stdin; an unreadable
file is ``FILE: error: reason``. ``located``: an HLO error as ``FILE:LINE:COL: error:
message`` with the source line and a caret. ``load_module``: both, for one module.
``target_spec``: a built-in target name, or a target file read into an inline target.
``outcome_of``: run a request through :func:`service.pipeline.run`, and, when it fails, print
the failure as compilers do and exit 2: every command is argument parsing, that call, and
rendering of the success.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import typer

from typing import NoReturn

from hlo.errors import HloError, Location
from hlo.ir import Module
from hlo.parser import parse_module, read_text
from hlo.target import TargetError, read_target_file
from service.pipeline import Failure, FailureType, InlineTarget, Request, Success, run
from solver.progress import ProgressCallback


def read_source(path: str | Path) -> str:
    """The text of ``path`` (``-``: stdin); exit 2 naming the file when it cannot be read."""
    try:
        return sys.stdin.read() if str(path) == "-" else read_text(path)
    except OSError as err:
        typer.echo(f"{path}: error: {err.strerror or err}", err=True)
        raise typer.Exit(code=2) from None
    except UnicodeDecodeError as err:
        typer.echo(f"{path}: error: {err}", err=True)
        raise typer.Exit(code=2) from None


def source_name(path: str | Path) -> str:
    """How diagnostics name ``path``."""
    return "<stdin>" if str(path) == "-" else str(path)


def located(err: HloError, path: str | Path, text: str) -> str:
    """``FILE:LINE:COL: error: message`` plus the source line and a caret."""
    loc = err.location
    if loc is None:
        return f"{source_name(path)}: error: {err.message}"
    # Line numbers count '\n' only, as the lexer does.
    lines = text.split("\n")
    if loc.source_line is None and 0 < loc.line <= len(lines):
        loc = dataclasses.replace(loc, source_line=lines[loc.line - 1].rstrip("\r"))
    return str(type(err)(err.message, dataclasses.replace(loc, name=source_name(path))))


def load_module(path: str | Path) -> Module:
    """Parse the one module in ``path``; exit 2 with a located error when it is not HLO."""
    text = read_source(path)
    try:
        return parse_module(text, source_name(path))
    except HloError as err:
        typer.echo(located(err, path, text), err=True)
        raise typer.Exit(code=2) from None


def target_spec(value: str) -> str | InlineTarget:
    """A built-in target name, or a JSON/TOML target file read into an inline target (exit 2 if bad)."""
    path = Path(value)
    if path.suffix in (".json", ".toml") and path.is_file():
        try:
            return InlineTarget.from_data(read_target_file(path))
        except TargetError as exc:
            typer.echo(f"error: {exc.message}", err=True)
            raise typer.Exit(code=2) from None
    return value


def outcome_of(request: Request, sources: dict[str | None, tuple[str | Path, str]],
               progress: ProgressCallback | None = None) -> Success:
    """``run(request)``'s success; a failure is printed and exits 2.

    ``sources`` maps a request field (``hlo``, ``original``, ``rewritten``) to the file and
    the text it came from; the entry ``None`` names the file of errors without a field.
    """
    outcome = run(request, progress)
    if isinstance(outcome, Success):
        return outcome
    fail(outcome, sources)


def fail(failure: Failure, sources: dict[str | None, tuple[str | Path, str]]) -> NoReturn:
    """Print ``failure`` (each of its ``details``) as ``FILE:LINE:COL: error: ...`` with the
    source line and a caret, or ``FILE: error: ...`` where it has no place; exit 2."""
    for each in failure.details or (failure,):
        typer.echo(_diagnostic(each, sources), err=True)
    raise typer.Exit(code=2)


def _diagnostic(failure: Failure, sources: dict[str | None, tuple[str | Path, str]]) -> str:
    if failure.type is FailureType.NOT_AVAILABLE:  # about this installation, not a file
        return f"error: {failure.message}"
    path, text = sources.get(failure.field) or sources[None]
    if failure.line is None or failure.column is None:
        return f"{source_name(path)}: error: {failure.message}"
    where = Location(source_name(path), failure.line, failure.column)
    return located(HloError(failure.message, where), path, text)
