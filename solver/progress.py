"""Progress of a long solve, as plain values for whoever watches (a terminal, an HTTP job).

A solve reports through a callback it is given, never by printing:

    def show(event: Progress) -> None:
        print(event.phase, event.best, event.bound, event.gap)

    assign(module, options, progress=show)

Events come in the order things happen: ``elapsed_s`` never decreases, and within one run
``bound`` never decreases and ``best`` never increases once known (both are about the same
cost: for layout assignment, the true cost of the returned module). A callback that raises
stops the solve with its exception.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Progress:
    """Where a solve stands: the step it is in, seconds since it began, the cheapest answer
    found so far and the best proven lower bound (``None`` while there is none)."""

    phase: str
    elapsed_s: float
    best: int | None = None
    bound: int | None = None

    @property
    def gap(self) -> float | None:
        """``(best - bound) / best`` (0 when both are 0), ``None`` while either is unknown."""
        if self.best is None or self.bound is None:
            return None
        if self.best <= 0:
            return 0.0
        return max(0.0, (self.best - self.bound) / self.best)

    def to_json(self) -> dict:
        return {"phase": self.phase, "elapsed_s": round(self.elapsed_s, 3), "best": self.best,
                "bound": self.bound, "gap": self.gap}


#: Receives every :class:`Progress` event of one solve.
ProgressCallback = Callable[[Progress], None]

#: What :func:`solver.solve.solve` reports while CP-SAT searches: a new best
#: objective or a better bound, on the problem solved (reductions undone), either
#: ``None`` when not known.
SearchCallback = Callable[[int | None, int | None], None]


def throttled(callback: ProgressCallback, seconds: float) -> ProgressCallback:
    """``callback``, called at most every ``seconds`` within one phase: the first event of
    each phase and the ``done`` event always pass (so the last word is never dropped)."""
    last: dict[str, float] = {}

    def forward(event: Progress) -> None:
        shown = last.get(event.phase)
        if shown is not None and event.elapsed_s - shown < seconds and event.phase != "done":
            return
        last[event.phase] = event.elapsed_s
        callback(event)

    return forward


class Tracker:
    """Keeps the best answer and bound of one run and tells ``callback`` (if any) of each
    step and each improvement; ``best`` only falls and ``bound`` only rises."""

    __slots__ = ("callback", "began", "phase", "best", "bound")

    def __init__(self, callback: ProgressCallback | None) -> None:
        self.callback = callback
        self.began = time.perf_counter()
        self.phase = ""
        self.best: int | None = None
        self.bound: int | None = None

    def enter(self, phase: str) -> None:
        """A new step begins."""
        self.phase = phase
        self._tell()

    def heard(self, best: int | None = None, bound: int | None = None) -> None:
        """A better answer or bound (others are ignored)."""
        better = False
        if best is not None and (self.best is None or best < self.best):
            self.best, better = best, True
        if bound is not None and (self.bound is None or bound > self.bound):
            self.bound, better = bound, True
        if better:
            self._tell()

    def _tell(self) -> None:
        if self.callback is not None:
            self.callback(Progress(self.phase, time.perf_counter() - self.began, self.best,
                                   self.bound))
