"""The HLO text parser: ``parse_module``, ``parse_modules``, ``parse_file``, ``parse_shape``, ``parse_layout``.

A hand-written lexer (:mod:`hlo.lexer`) feeds a recursive-descent parser split by
subject: shapes and layouts (:mod:`.shapes`), literals (:mod:`.literals`),
attribute values (:mod:`.attributes`), modules/computations/instructions
(:mod:`.module`). Only :class:`hlo.errors.ParseError` leaves this package, always
with a location (``name:line:col``).

Text is kept as written: layouts the text leaves out stay ``None`` unless
``fill_missing_layouts=True`` (XLA's parser default) asks for the descending
default; a module without ``entry_computation_layout`` gets one from its entry
computation, as XLA does.
"""

from __future__ import annotations

import gc
import gzip
import re
from pathlib import Path
from typing import Any

from hlo.errors import HloError, ParseError
from hlo.ir import Module
from hlo.parser.module import Parser
from hlo.shape import Layout, Shape

__all__ = [
    "ParseError", "parse_attribute", "parse_file", "parse_layout", "parse_module",
    "parse_modules", "parse_shape", "split_modules",
]

_SPLIT = re.compile(r"^// -----[^\n]*$", re.MULTILINE)


def _run(text: str, name: str, fn: Any, **options: Any) -> Any:
    parser = Parser(text, name, **options)
    # The parser allocates many small objects that all survive; generational GC passes
    # over them would only cost time (about a third of the parse of a large module).
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return fn(parser)
    except ParseError:
        raise
    except HloError as e:  # a value class rejected what the text describes
        raise parser.error(e.message) from None
    except RecursionError:
        raise parser.error("nesting too deep") from None
    finally:
        if was_enabled:
            gc.enable()


def parse_module(text: str, name: str = "<input>", *, fill_missing_layouts: bool = False) -> Module:
    """Parse exactly one module (a text holding several ``// -----`` parts is an error)."""

    def whole(p: Parser) -> Module:
        module = p.parse_module()
        p.expect_eof("the module")
        return module

    return _run(text, name, whole, fill_missing_layouts=fill_missing_layouts)


def split_modules(text: str) -> list[str]:
    """The ``// -----``-separated parts of ``text``, each padded with blank lines so
    that line numbers still refer to the whole text."""
    parts: list[str] = []
    begin = 0
    line = 0
    for m in _SPLIT.finditer(text):
        chunk = text[begin : m.start()]
        parts.append("\n" * line + chunk)
        line += chunk.count("\n") + text.count("\n", m.start(), m.end())
        begin = m.end()
    parts.append("\n" * line + text[begin:])
    return [p for p in parts if p.strip() and _has_code(p)]


def _has_code(text: str) -> bool:
    stripped = re.sub(r"//[^\n]*|/\*.*?\*/", "", text, flags=re.DOTALL)
    return bool(stripped.strip())


def parse_modules(text: str, name: str = "<input>", *, fill_missing_layouts: bool = False) -> list[Module]:
    """Every module of a text whose modules are separated by ``// -----`` lines."""
    return [parse_module(part, name, fill_missing_layouts=fill_missing_layouts) for part in split_modules(text)]


def read_text(path: str | Path) -> str:
    """The text of ``path``, gunzipped when it ends in ``.gz``; CRLF kept as written."""
    path = Path(path)
    if path.suffix == ".gz":
        with gzip.open(path, "rt", encoding="utf-8", newline="") as f:
            return f.read()
    with open(path, encoding="utf-8", newline="") as f:
        return f.read()


def parse_file(path: str | Path, *, fill_missing_layouts: bool = False) -> Module:
    """Parse the one module in ``path`` (``.gz`` read transparently); errors name the path."""
    return parse_module(read_text(path), str(path), fill_missing_layouts=fill_missing_layouts)


def parse_shape(text: str) -> Shape:
    """``"f32[2,3]{0,1}"`` -> ``ArrayShape``; tuples, ``token[]``, ``b(...)`` too."""

    def whole(p: Parser) -> Shape:
        shape = p.parse_shape()
        p.expect_eof("the shape")
        return shape

    return _run(text, "<shape>", whole)


def parse_layout(text: str) -> Layout:
    """``"{1,0:T(8,128)(2,1)}"`` -> ``Layout``."""

    def whole(p: Parser) -> Layout:
        layout = p.parse_layout()
        p.expect_eof("the layout")
        return layout

    return _run(text, "<layout>", whole)


def parse_attribute(name: str, text: str) -> Any:
    """The typed value of attribute ``name`` written as ``text`` (``"0_1x2_3"`` for ``padding``)."""

    def whole(p: Parser) -> Any:
        value = p.parse_attribute_value(name)
        p.expect_eof(f"the value of '{name}'")
        return value

    return _run(text, f"<{name}>", whole)
