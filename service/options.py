"""Options of each operation: one frozen value shared by the HTTP schema, the CLI flags and batch.

The same dataclass is the JSON schema of ``options`` in a request body (pydantic reads the
``Annotated`` constraints), the set of query parameters of a ``text/plain`` request and the
flags of ``hlo-layout batch``, so the three front doors cannot drift apart. Values are frozen
and hold tuples, so an options value can go into a cache key and across a process boundary
unchanged.

Example: ``AssignOptions(time_limit_s=5.0, entry_layout=EntryLayout.AUTO)`` asks for a
5-second solve that may also choose the entry computation's parameter and result layouts.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass
from typing import Annotated, Any

from annotated_types import Ge, Gt, Le, MaxLen
from pydantic import ConfigDict, with_config

# Unknown option names are an error (422 naming the field), never silently ignored.
_STRICT = with_config(ConfigDict(extra="forbid"))

# A solve may ask for at most this much time; the server caps it further by its settings.
MAX_TIME_LIMIT_S = 3600.0

NORMALIZE_PASSES = ("reductions", "grouping", "layouts")
"""Pass names of ``normalize`` (short names of ``hlo.passes``): canonical reductions (DESIGN §8),
row/column grouping of canonical reductions, and full layout normalization."""

# Candidate layouts per buffer the solver may consider (its own default is 6).
MAX_CANDIDATES = 64


class EntryLayout(str, enum.Enum):
    """Who chooses the entry computation's layouts: the module's ``entry_computation_layout``
    (``fixed``) or the solver, which then reports the layouts the caller should feed (``auto``)."""

    FIXED = "fixed"
    AUTO = "auto"


class NormalizePass(str, enum.Enum):
    """A normalization pass by its short name (``hlo.passes.ALIASES`` gives the full one)."""

    REDUCTIONS = "reductions"
    GROUPING = "grouping"
    LAYOUTS = "layouts"


@_STRICT
@dataclass(frozen=True, slots=True)
class AssignOptions:
    """Options of ``assign``: solve budget, entry layouts, how the result is written, and the
    normalization passes run on the result: left out (``None``), the ones the target asks for
    (the GPU family normalizes and groups reductions), as ``hlo-layout assign`` does; an
    empty list, none; else the passes named, in order.

    ``time_limit_s`` left out of an HTTP request takes the server's ``default_time_limit_s``;
    every time limit is capped by the server's ``max_time_limit_s``.
    ``emit_bitcasts`` writes transposes and reshapes that became free as ``bitcast``;
    ``max_candidates`` bounds the layouts considered per buffer; ``verify`` runs the layout
    verifier on the result (its findings are the report's ``violations``).
    """

    time_limit_s: Annotated[float, Gt(0), Le(MAX_TIME_LIMIT_S)] = 10.0
    entry_layout: EntryLayout = EntryLayout.FIXED
    normalize: Annotated[tuple[NormalizePass, ...], MaxLen(len(NORMALIZE_PASSES))] | None = None
    seed: Annotated[int, Ge(0), Le(2**31 - 1)] = 0
    emit_bitcasts: bool = False
    max_candidates: Annotated[int, Ge(1), Le(MAX_CANDIDATES)] = 6
    verify: bool = True


@_STRICT
@dataclass(frozen=True, slots=True)
class ScoreOptions:
    """``score`` (the cost of the layouts already written in the module) has no options."""


@_STRICT
@dataclass(frozen=True, slots=True)
class NormalizeOptions:
    """Options of ``normalize``: which passes to run, in the order given."""

    passes: Annotated[tuple[NormalizePass, ...], MaxLen(len(NORMALIZE_PASSES))] = (
        NormalizePass.REDUCTIONS,
    )


@_STRICT
@dataclass(frozen=True, slots=True)
class FormatOptions:
    """Options of ``format``: ``short`` drops metadata the way XLA's short form does."""

    short: bool = False


@_STRICT
@dataclass(frozen=True, slots=True)
class CheckOptions:
    """``check`` has no options; the value exists so every operation has one."""


@_STRICT
@dataclass(frozen=True, slots=True)
class VerifyOptions:
    """Options of ``verify``: the random inputs used to compare the two modules."""

    seed: Annotated[int, Ge(0), Le(2**31 - 1)] = 0
    trials: Annotated[int, Ge(1), Le(64)] = 3
    #: The interpreter refuses modules whose buffers may exceed this (MiB); a server caps it.
    memory_limit_mb: Annotated[int, Ge(1), Le(2**30)] = 4096


@_STRICT
@dataclass(frozen=True, slots=True)
class MeasureOptions:
    """Options of ``measure``: the seeded inputs and how many timed rounds (0: outputs only)."""

    seed: Annotated[int, Ge(0), Le(2**31 - 1)] = 0
    reps: Annotated[int, Ge(0), Le(1000)] = 10
    warmup: Annotated[int, Ge(0), Le(100)] = 2


Options = (
    AssignOptions | ScoreOptions | NormalizeOptions | FormatOptions | CheckOptions | VerifyOptions
    | MeasureOptions
)


def options_to_json(options: Options) -> dict[str, Any]:
    """Plain JSON data of an options value (enums as their strings, tuples as lists).

    >>> options_to_json(FormatOptions(short=True))
    {'short': True}
    """
    out: dict[str, Any] = {}
    for f in dataclasses.fields(options):
        value = getattr(options, f.name)
        if isinstance(value, enum.Enum):
            value = value.value
        elif isinstance(value, tuple):
            value = [v.value if isinstance(v, enum.Enum) else v for v in value]
        out[f.name] = value
    return out
