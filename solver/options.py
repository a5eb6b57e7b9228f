"""Solve options: one frozen value, shared unchanged by the CLI and other front ends."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

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

    ``presolve``: ``"full"`` is CP-SAT's own default; ``"light"`` runs one
    presolve round without symmetry detection or probing, and interleaves the
    search in batches of 4 tasks. On models that a good hint and the LP bound
    settle (layout assignment of large modules), full presolve and the default
    batch were most of the solve.

    ``whole_model_labels``: above this many labels in the reduced problem, CP-SAT
    works on windows (:mod:`solver.lns`, with the dual bound) instead of the whole
    model, which would take too long to build, or whose LP bound would prove little.
    Layout assignment raises it: its problems have a few labels per node and CP-SAT
    proves them whole (BENCHMARKS.md, deep models).

    ``subsolvers``: CP-SAT's workers by name (``()``: its own choice for ``num_workers``).
    Layout assignment's exact problem names ``("core", "max_lp")``: from a start a few ns
    above the optimum, the default pair took 60 s to find and prove it on the 12-layer
    Llama-style step, these two 8 s (the LP proves the bound, core search finds the answer).
    """

    time_limit: float = 60.0
    num_workers: int = 2
    seed: int = 0
    deterministic: bool = True
    deterministic_time: float | None = None
    heuristic_time: float = 20.0
    passes: tuple[str, ...] = ALL_PASSES
    log_search: bool = False
    presolve: Literal["full", "light"] = "full"
    whole_model_labels: int = 30_000
    subsolvers: tuple[str, ...] = ()
