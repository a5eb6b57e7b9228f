"""Solve options: one frozen value, shared unchanged by the CLI and other front ends."""

from __future__ import annotations

from dataclasses import dataclass

#: Every optional reduction pass (ties and forbidden labels are always handled).
ALL_PASSES = ("functional-ties", "reparametrize", "memory", "dominated-labels", "eliminate", "components")


@dataclass(frozen=True, slots=True)
class SolveOptions:
    """How to solve.

    ``time_limit`` bounds the whole solve (seconds, wall clock). ``deterministic``
    makes CP-SAT's parallel search reproducible (interleaved workers, fixed
    seed): the same input and options give the same labels when the search ends
    by proof or by the ``deterministic_time`` budget (CP-SAT's machine-independent
    work units); a wall-clock stop can land anywhere.
    """

    time_limit: float = 60.0
    num_workers: int = 2
    seed: int = 0
    deterministic: bool = True
    deterministic_time: float | None = None
    heuristic_time: float = 20.0
    passes: tuple[str, ...] = ALL_PASSES
    log_search: bool = False
