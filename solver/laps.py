"""Timings of the named steps of one run: each lap lasts from the end of the last one.

    laps = Laps()
    reduce(...)
    laps.lap("reduce")          # ("reduce", ms since Laps() was made)
    search(...)
    laps.lap("search")          # ("search", ms since the "reduce" lap)
    laps.timings()              # (("reduce", 12.5), ("search", 80.25))
"""

from __future__ import annotations

import time


class Laps:
    """A stopwatch with named laps, in milliseconds rounded to microseconds."""

    __slots__ = ("began", "mark", "_laps")

    def __init__(self) -> None:
        self.began = self.mark = time.perf_counter()
        self._laps: list[tuple[str, float]] = []

    def lap(self, name: str) -> float:
        """Record ``name`` as lasting since the last lap; returns the time now."""
        now = time.perf_counter()
        self._laps.append((name, round((now - self.mark) * 1000, 3)))
        self.mark = now
        return now

    def skip(self) -> None:
        """Start the next lap now, without recording the time since the last one."""
        self.mark = time.perf_counter()

    def add(self, laps: tuple[tuple[str, float], ...], prefix: str = "") -> None:
        """Record laps timed elsewhere (``prefix`` before each name)."""
        self._laps.extend((prefix + name, ms) for name, ms in laps)

    def elapsed_ms(self) -> float:
        """Milliseconds since the stopwatch was made."""
        return (time.perf_counter() - self.began) * 1000

    def timings(self) -> tuple[tuple[str, float], ...]:
        return tuple(self._laps)
