"""Named module passes (``Module -> Module``) and a runner.

``PASSES`` maps kebab-case names, usable as CLI flags, to pure functions:

* ``normalize-reductions`` — every ``reduce`` reads its inputs in physical
  order (:mod:`hlo.passes.normalize_reductions`);
* ``group-reductions`` — canonical reduces become row/column reductions by
  merging adjacent dims of the same kind (:mod:`hlo.passes.group_reductions`);
* ``normalize-layouts`` — every array in descending layout, bitcasts at the
  edges (:mod:`hlo.passes.normalize_layouts`).

``run_passes(module, ["normalize-layouts", "normalize-reductions"])`` applies
them in the order given; :func:`apply_passes` is the one loop that applies passes, and yields
each pass's :class:`PassRun`: its notes (what it had to leave as it was, and why) and the
instructions it reports rewriting. A pass that reports them is listed in ``TRACED`` (its
traced form); the others report nothing. ``passes_for_target(target)`` says which ones a
target's rules ask for after layout assignment.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

from hlo.errors import HloError
from hlo.ir import Module

# Imported under other names so that ``hlo.passes.normalize_layouts`` stays the module.
from hlo.passes.group_reductions import group_reductions as _group_reductions
from hlo.passes.normalize_layouts import normalize_layouts as _normalize_layouts
from hlo.passes.normalize_reductions import normalize_reductions as _normalize_reductions
from hlo.passes.normalize_reductions import normalize_reductions_with_notes

Pass = Callable[[Module], Module]

PASSES: Final[dict[str, Pass]] = {
    "normalize-reductions": _normalize_reductions,
    "group-reductions": _group_reductions,
    "normalize-layouts": _normalize_layouts,
}

#: What ``hlo-layout normalize`` runs when no ``--passes`` are given.
DEFAULT_PASSES: Final[tuple[str, ...]] = ("normalize-reductions",)

#: Short names accepted for the passes (the service's option values).
ALIASES: Final[dict[str, str]] = {
    "reductions": "normalize-reductions",
    "grouping": "group-reductions",
    "layouts": "normalize-layouts",
}


@dataclass(frozen=True, slots=True)
class PassNote:
    """An instruction a pass left as it was, and why."""

    computation: str
    instruction: str
    reason: str
    #: What kind of instruction (``reduce``), for messages.
    kind: str

    def __str__(self) -> str:
        return f"{self.kind} left as it is: {self.computation}/{self.instruction}: {self.reason}"


@dataclass(frozen=True, slots=True)
class Traced:
    """A pass's result with what it reports: notes, and the instructions it rewrote."""

    module: Module
    notes: tuple[PassNote, ...] = ()
    rewritten: tuple[tuple[str, str], ...] = ()


def _reductions_traced(module: Module) -> Traced:
    out, skipped, rewritten = normalize_reductions_with_notes(module)
    notes = tuple(PassNote(s.computation, s.instruction, s.reason, "reduce") for s in skipped)
    return Traced(out, notes, rewritten)


#: The passes that report notes and rewrites, by name: their traced form.
TRACED: Final[dict[str, Callable[[Module], Traced]]] = {
    "normalize-reductions": _reductions_traced,
}


def _apply(module: Module, name: str) -> Traced:
    traced = TRACED.get(name)
    return traced(module) if traced is not None else Traced(PASSES[name](module))


class PassError(HloError):
    """An unknown pass name, or a pass whose output failed verification."""


def pass_names(names: str | Iterable[str]) -> tuple[str, ...]:
    """Canonical names from ``"a,b"`` or an iterable; unknown names raise :class:`PassError`."""
    items = (
        [n.strip() for n in names.split(",")]
        if isinstance(names, str)
        else [n.strip() for n in names]
    )
    out = []
    for name in items:
        if not name:
            continue
        name = ALIASES.get(name, name)
        if name not in PASSES:
            raise PassError(f"unknown pass '{name}': known passes are {', '.join(PASSES)}")
        out.append(name)
    return tuple(out)


@dataclass(frozen=True, slots=True, eq=False)
class PassRun:
    """One pass applied: the module before and after it, its notes and its time."""

    name: str
    before: Module
    after: Module
    notes: tuple[PassNote, ...]
    ms: float
    #: ``(computation, instruction)`` the pass reports rewriting (see ``TRACED``).
    rewritten: tuple[tuple[str, str], ...] = ()


def apply_passes(module: Module, names: str | Iterable[str]) -> Iterator[PassRun]:
    """The one loop that applies passes: the named ones in order, each on the result of
    the one before, yielded as it finishes (unknown names raise :class:`PassError` before
    any pass runs)."""
    for name in pass_names(names):
        began = time.perf_counter()
        traced = _apply(module, name)
        yield PassRun(name, module, traced.module, traced.notes,
                      round((time.perf_counter() - began) * 1000, 3), traced.rewritten)
        module = traced.module


def run_passes(module: Module, names: str | Sequence[str], *, verify: bool = False) -> Module:
    """Apply the named passes in order. With ``verify``, the structural verifier
    and the layout verifier run after every pass (a failure raises :class:`PassError`
    naming the pass)."""
    for run in apply_passes(module, names):
        if verify:
            _verify(run.after, run.name)
        module = run.after
    return module


def findings(module: Module) -> tuple[str, ...]:
    """What the verifiers find wrong with a pass's output: every structural error, or, when
    the structure holds, every layout violation; ``()`` when the output verifies."""
    from hlo.layout_verifier import verify_layouts
    from hlo.verifier import collect_errors

    errors = collect_errors(module)
    if errors:
        return tuple(e.message for e in errors)
    return tuple(str(v) for v in verify_layouts(module))


def _verify(module: Module, name: str) -> None:
    found = findings(module)
    if found:
        raise PassError(f"after pass '{name}': {len(found)} finding(s), first: {found[0]}")


def passes_for_target(target: Any) -> tuple[str, ...]:
    """The normalization passes a target's rules ask for after layout assignment.

    A target with a ``row_reduction`` rule on ``reduce`` (the GPU family) wants
    canonical reductions grouped into rows and columns; others want none.
    """
    rules = target.rules_for("reduce") if hasattr(target, "rules_for") else ()
    if any(getattr(r, "kind", None) == "row_reduction" for r in rules):
        return ("normalize-reductions", "group-reductions")
    return ()
