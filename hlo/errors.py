"""The one exception family of the ``hlo`` package.

Every error that leaves ``hlo`` is an :class:`HloError`. Errors tied to a place in
HLO text carry a :class:`Location` and render as ``name:line:col: error: message``
followed by the source line and a caret, the way compilers print diagnostics.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Location:
    """A position in a named text: 1-based line and column."""

    name: str
    line: int
    column: int
    source_line: str | None = None

    def __str__(self) -> str:
        return f"{self.name}:{self.line}:{self.column}"


class HloError(Exception):
    """Base of every error raised by the ``hlo`` package."""

    def __init__(self, message: str, location: Location | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.location = location

    def __str__(self) -> str:
        if self.location is None:
            return f"error: {self.message}"
        text = f"{self.location}: error: {self.message}"
        if self.location.source_line is not None:
            caret = " " * (self.location.column - 1) + "^"
            text += f"\n{self.location.source_line}\n{caret}"
        return text


class ParseError(HloError):
    """The text is not valid HLO (syntax, unknown names, malformed attributes)."""


class VerifyError(HloError):
    """The module parses but breaks a structural or shape rule."""


class LayoutError(HloError):
    """A layout (or a tiling, or a layout operation) is invalid for its shape."""


class LayoutDependentBitcast(LayoutError):
    """A ``bitcast`` in a module whose layouts are still to be chosen (DESIGN §6)."""
