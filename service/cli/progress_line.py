"""Live progress of ``assign`` on stderr: one line, rewritten in place on a terminal.

    [   12.4 s] exact problem     best 2407830  bound 2401120  gap 0.28 %

Give it to ``assign`` through :func:`solver.progress.throttled` (a redraw at most every
fraction of a second within a phase). On a terminal the line is redrawn in place; elsewhere
(a log file, a pipe) each event is a line of its own.
"""

from __future__ import annotations

from typing import TextIO

from solver.progress import Progress

#: Least seconds between two redraws within one step.
REDRAW_S = 0.25


def describe(event: Progress) -> str:
    """One event as text: elapsed time, phase, best cost, bound, gap."""
    parts = [f"[{event.elapsed_s:7.1f} s] {event.phase:<16}"]
    if event.best is not None:
        parts.append(f"best {event.best}")
    if event.bound is not None:
        parts.append(f"bound {event.bound}")
    if event.gap is not None:
        parts.append(f"gap {100 * event.gap:.2f} %")
    return "  ".join(parts)


class ProgressLine:
    """A :data:`solver.progress.ProgressCallback` that writes to ``stream``."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.terminal = stream.isatty()
        self.width = 0

    def __call__(self, event: Progress) -> None:
        text = describe(event)
        if self.terminal:
            self.stream.write("\r" + text.ljust(self.width))
            self.width = len(text)
            if event.phase == "done":
                self.stream.write("\n")
        else:
            self.stream.write(text + "\n")
        self.stream.flush()
