"""The options of layout assignment: one frozen value for the engine and every front door.

The same dataclass is what :func:`solver.layout_assignment.assign.assign` reads, the JSON
schema of ``options`` in an HTTP request body (pydantic reads the ``Annotated`` constraints
and ``__pydantic_config__``), the query parameters of a ``text/plain`` request, the flags of
``hlo-layout assign`` and ``hlo-layout batch``, and the ``options`` echoed in the report, so
the doors cannot drift apart. Values are frozen and hold tuples, so an options value can go
into a cache key and across a process boundary unchanged.

Example: ``AssignOptions(time_limit_s=5.0, entry_layout=EntryLayout.AUTO)`` asks for a
5-second solve that may also choose the entry computation's parameter and result layouts.
The target is not an option: it is the second argument of ``assign`` (a request's own field).
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass
from typing import Annotated, Any

from annotated_types import Ge, Gt, Le, MaxLen

from hlo.passes import ALIASES, pass_names

__all__ = [
    "AssignOptions", "EntryLayout", "MAX_CANDIDATES", "MAX_TIME_LIMIT_S", "NormalizePass",
    "STRICT", "options_to_json",
]

#: Unknown option names are an error (a 422 naming the field over HTTP), never ignored. Read
#: by pydantic as the dataclass's ``__pydantic_config__``; the solver needs no pydantic.
STRICT = {"extra": "forbid"}

#: A solve may ask for at most this much time; a server caps it further by its settings.
MAX_TIME_LIMIT_S = 3600.0

#: Candidate layouts per buffer the solver may consider (its default is 6).
MAX_CANDIDATES = 64


class EntryLayout(str, enum.Enum):
    """Who chooses the entry computation's layouts: the module's ``entry_computation_layout``
    (``fixed``; entries it leaves without a layout are free) or the solver, which then
    reports the layouts the caller should feed (``auto``)."""

    FIXED = "fixed"
    AUTO = "auto"


class NormalizePass(str, enum.Enum):
    """A normalization pass by its short name (``hlo.passes.ALIASES`` gives the full one)."""

    REDUCTIONS = "reductions"
    GROUPING = "grouping"
    LAYOUTS = "layouts"

    @property
    def pass_name(self) -> str:
        """The full ``hlo.passes`` name: ``NormalizePass.REDUCTIONS.pass_name ==
        'normalize-reductions'``."""
        return ALIASES[self.value]

    @classmethod
    def named(cls, names: str | tuple[str, ...]) -> tuple[NormalizePass, ...]:
        """Passes from full or short names (``"normalize-reductions,layouts"``); an unknown
        name raises :class:`hlo.passes.PassError`."""
        short = {full: alias for alias, full in ALIASES.items()}
        return tuple(cls(short[name]) for name in pass_names(names))


@dataclass(frozen=True, slots=True)
class AssignOptions:
    """How to assign layouts.

    ``time_limit_s``: seconds for all solves together (the relaxed problem and the per-use
    model, then the exact shared-copy problem), each taking a share of what is left; over
    HTTP, left out, the server's ``default_time_limit_s``, and always capped by its
    ``max_time_limit_s``. The in-place descent after the solves scores a number of rewrites
    sized to about a fifth of it (a count, :func:`.assign.in_place_trials`).
    ``entry_layout``: see :class:`EntryLayout`.
    ``normalize``: the normalization passes run on the result, in order; ``None`` runs what
    the target asks for (:func:`hlo.passes.passes_for_target`: the GPU family normalizes
    and groups reductions), ``()`` runs none.
    ``seed``: CP-SAT's random seed (the search is deterministic for a given seed).
    ``emit_bitcasts``: write transposes and reshapes that became free as ``bitcast``.
    ``max_candidates``: layouts considered per buffer.
    ``verify``: run the layout verifier on the result (its findings are ``violations``).
    """

    __pydantic_config__ = STRICT

    time_limit_s: Annotated[float, Gt(0), Le(MAX_TIME_LIMIT_S)] = 10.0
    entry_layout: EntryLayout = EntryLayout.FIXED
    normalize: Annotated[tuple[NormalizePass, ...], MaxLen(len(NormalizePass))] | None = None
    seed: Annotated[int, Ge(0), Le(2**31 - 1)] = 0
    emit_bitcasts: bool = False
    max_candidates: Annotated[int, Ge(1), Le(MAX_CANDIDATES)] = 6
    verify: bool = True


def options_to_json(options: Any) -> dict[str, Any]:
    """Plain JSON data of a frozen options value (enums as their strings, tuples as lists).

    >>> options_to_json(AssignOptions(normalize=(NormalizePass.REDUCTIONS,)))["normalize"]
    ['reductions']
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
