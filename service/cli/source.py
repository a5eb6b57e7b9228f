"""Reading HLO input on the command line, with the exit-2 diagnostics every command shares.

``read_source``: a file (``.gz`` read transparently) or ``-`` for stdin; an unreadable
file is ``FILE: error: reason``. ``located``: an HLO error as ``FILE:LINE:COL: error:
message`` with the source line and a caret. ``load_module``: both, for one module.
``target_spec``: a built-in target name, or a target file read into an inline target.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import typer

from hlo.errors import HloError
from hlo.ir import Module
from hlo.parser import parse_module, read_text
from hlo.target import TargetError, read_target_file
from service.pipeline import InlineTarget


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
