"""Options of each operation: one frozen value shared by the HTTP schema, the CLI flags and batch.

The same dataclass is the JSON schema of ``options`` in a request body (pydantic reads the
``Annotated`` constraints and ``__pydantic_config__``), the set of query parameters of a
``text/plain`` request and the flags of the command line, so the front doors cannot drift
apart. ``assign``'s options are the layout engine's own
(:class:`solver.layout_assignment.options.AssignOptions`): the engine reads the very value a
request carries. Values are frozen and hold tuples, so an options value can go into a cache
key and across a process boundary unchanged.

Example: ``NormalizeOptions(passes=(NormalizePass.REDUCTIONS, NormalizePass.LAYOUTS))``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from annotated_types import Ge, Le, MaxLen

from solver.layout_assignment.options import (
    MAX_TIME_LIMIT_S,
    STRICT,
    AssignOptions,
    EntryLayout,
    NormalizePass,
    options_to_json,
)

__all__ = [
    "AssignOptions", "CheckOptions", "EntryLayout", "FormatOptions", "MAX_TIME_LIMIT_S",
    "MeasureOptions", "NormalizeOptions", "NormalizePass", "Options", "ScoreOptions",
    "VerifyOptions", "options_to_json",
]


@dataclass(frozen=True, slots=True)
class ScoreOptions:
    """``score`` (the cost of the layouts already written in the module) has no options."""

    __pydantic_config__ = STRICT


@dataclass(frozen=True, slots=True)
class NormalizeOptions:
    """Options of ``normalize``: which passes to run, in the order given; ``verify`` runs the
    structural and the layout verifier after every pass and stops at the first pass whose
    output fails them (the answer then names it and holds no module); ``short`` prints the
    result in short form."""

    __pydantic_config__ = STRICT

    passes: Annotated[tuple[NormalizePass, ...], MaxLen(len(NormalizePass))] = (
        NormalizePass.REDUCTIONS,
    )
    verify: bool = False
    short: bool = False


@dataclass(frozen=True, slots=True)
class FormatOptions:
    """Options of ``format``: ``short`` drops metadata the way XLA's short form does."""

    __pydantic_config__ = STRICT

    short: bool = False


@dataclass(frozen=True, slots=True)
class CheckOptions:
    """Options of ``check``: ``layouts`` also runs the layout verifier (its findings are the
    answer's ``layout_violations``); ``compare_tiles`` off compares tied layouts as XLA does,
    ignoring tiles."""

    __pydantic_config__ = STRICT

    layouts: bool = False
    compare_tiles: bool = True


@dataclass(frozen=True, slots=True)
class VerifyOptions:
    """Options of ``verify``: the random inputs used to compare the two modules; ``exact``
    requires bit-identical floats; ``xla`` also runs the rewritten module in XLA:CPU with
    exactly its layouts against XLA's execution of the original (needs the xla extra)."""

    __pydantic_config__ = STRICT

    seed: Annotated[int, Ge(0), Le(2**31 - 1)] = 0
    trials: Annotated[int, Ge(1), Le(64)] = 3
    #: The interpreter refuses modules whose buffers may exceed this (MiB); a server caps it.
    memory_limit_mb: Annotated[int, Ge(1), Le(2**30)] = 4096
    exact: bool = False
    xla: bool = False


@dataclass(frozen=True, slots=True)
class MeasureOptions:
    """Options of ``measure``: the seeded inputs, how many timed rounds (0: outputs only),
    and among how many XLA processes, each compiling every module afresh, they are shared."""

    __pydantic_config__ = STRICT

    seed: Annotated[int, Ge(0), Le(2**31 - 1)] = 0
    reps: Annotated[int, Ge(0), Le(1000)] = 10
    warmup: Annotated[int, Ge(0), Le(100)] = 2
    sessions: Annotated[int, Ge(1), Le(10)] = 1


Options = (
    AssignOptions | ScoreOptions | NormalizeOptions | FormatOptions | CheckOptions | VerifyOptions
    | MeasureOptions
)

