"""The explorer's two computations as plain-data answers, shared by the HTTP routes and the
HTML report: a module's graph view and a memory-order picture. Bad input is a
:class:`ViewFailed` carrying the status and JSON body to answer with (the HLO line and column
where there is one), never a traceback."""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hlo.errors import HloError, ParseError
from hlo.shape import ArrayShape
from service.explorer.graph_view import graph_view
from service.explorer.pictures import (
    PictureError,
    fractal_picture,
    linear_picture,
    parse_blocked,
    tiled_picture,
    to_svg,
)

__all__ = ["PictureRequest", "ViewFailed", "picture_answer", "view_answer"]


class ViewFailed(Exception):
    def __init__(self, status: int, body: dict[str, Any]) -> None:
        super().__init__(body.get("message", ""))
        self.status = status
        self.body = body


def _hlo_failure(err: HloError, kind: str, field: str) -> ViewFailed:
    body: dict[str, Any] = {"type": kind, "message": err.message, "field": field}
    location = getattr(err, "location", None)
    if location is not None:
        body["line"], body["column"] = location.line, location.column
    return ViewFailed(400, body)


def _finite_terms(terms: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [t for t in terms if isinstance(t, Mapping)
            and isinstance(t.get("ns"), (int, float)) and math.isfinite(t["ns"])]


def view_answer(hlo: str, inserted: Sequence[Mapping[str, Any]] = (),
                terms: Sequence[Mapping[str, Any]] = (),
                timings: dict[str, float] | None = None) -> dict[str, Any]:
    """The graph view of ``hlo``; ``timings`` (when given) receives the milliseconds spent
    parsing, verifying and laying the graph out."""
    from hlo.parser import parse_module
    from hlo.verifier import verify_module

    clock = _Clock(timings)
    try:
        module = parse_module(hlo, "hlo")
    except ParseError as err:
        raise _hlo_failure(err, "parse_error", "hlo") from None
    except HloError as err:
        raise _hlo_failure(err, "layout_error", "hlo") from None
    clock.lap("parse")
    # Verifying and laying out make tens of thousands of small objects that live until the
    # answer is written: generational GC passes over them cost about a quarter of the time
    # (as in the parser, which pauses it the same way).
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        try:
            verify_module(module)
        except HloError as err:
            raise _hlo_failure(err, "verify_error", "hlo") from None
        clock.lap("verify")
        inserted = [e for e in inserted if isinstance(e, Mapping)]
        view = graph_view(module, inserted, _finite_terms(terms))
    finally:
        if was_enabled:
            gc.enable()
    clock.lap("layout")
    return view


class _Clock:
    """Milliseconds between laps, written into ``into`` (nothing when it is None)."""

    def __init__(self, into: dict[str, float] | None) -> None:
        self.into = into
        self.last = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        if self.into is not None:
            self.into[name] = round((now - self.last) * 1000.0, 1)
        self.last = now


@dataclass(frozen=True, slots=True)
class PictureRequest:
    shape: str
    format: str | None = None
    blocked: str | None = None


def picture_answer(request: PictureRequest) -> dict[str, Any]:
    """``{"svg": ..., "picture": ...}`` for one shape; 400 for a shape that does not parse,
    422 for a picture that cannot be drawn (too large, not a power of two, ...)."""
    from hlo.parser import parse_shape

    try:
        shape = parse_shape(request.shape)
    except HloError as err:
        raise _hlo_failure(err, "parse_error", "shape") from None
    if not isinstance(shape, ArrayShape):
        raise ViewFailed(422, {"type": "invalid_request", "field": "shape",
                               "message": f"a picture needs an array shape, not {shape}"})
    try:
        if request.format is not None and request.blocked is not None:
            raise PictureError("format and blocked picture different things: give one")
        if request.format is not None:
            picture = fractal_picture(shape, request.format)
        elif request.blocked is not None:
            picture = linear_picture(shape, *parse_blocked(request.blocked))
        else:
            picture = tiled_picture(shape)
    except HloError as err:
        field = "blocked" if request.blocked is not None else (
            "format" if request.format is not None else "shape")
        raise ViewFailed(422, {"type": "invalid_request", "field": field,
                               "message": err.message}) from None
    return {"svg": to_svg(picture), "picture": picture.to_json()}
