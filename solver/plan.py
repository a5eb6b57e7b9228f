"""Planned work: how the reproducible mode sizes its stages without the clock.

A solve's answer must not depend on how fast the machine happens to run. So the
stages that could go on for as long as they are let (price rounds, penalty
rounds, windows, CP-SAT) do work fixed in advance: each step is priced in
*estimated seconds*, what a step of that kind and size took on the 2-core machine
of BENCHMARKS.md, computed from the problem's size and the step's own counts
(nodes, table entries, toulbar2's backtracks), never read from the clock. A
:class:`Plan` holds the estimated seconds a solve may spend and what its stages
have spent; a stage asks it how many more steps fit.

The clock still guards every stage (a safety net): on a machine much slower than
the one the estimates come from, a stage is cut at its share of the time left,
and then the answer does depend on the machine.

Example: ``Plan(45.0)`` with 30 estimated seconds spent by earlier stages fits
``plan.fitting(4.0, most=60) == 3`` windows of an estimated 4 s; ``plan.part(27.0)``
gives a stage 15 of them, and what that stage spends is spent here too.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class Plan:
    """``total`` estimated seconds a solve may spend on its searches, ``spent`` so far;
    a part of another plan (``parent``) spends there too."""

    total: float
    spent: float = 0.0
    parent: Plan | None = None

    def left(self) -> float:
        return max(0.0, self.total - self.spent)

    def spend(self, seconds: float) -> None:
        self.spent += seconds
        if self.parent is not None:
            self.parent.spend(seconds)

    def part(self, seconds: float) -> Plan:
        """A plan of at most ``seconds`` of what is left, whose spending counts here."""
        return Plan(min(seconds, self.left()), parent=self)

    def fitting(self, each: float, most: int, seconds: float | None = None) -> int:
        """How many steps of an estimated ``each`` seconds fit in what is left (in
        ``seconds`` of it when given): between 1 and ``most``."""
        room = self.left() if seconds is None else min(seconds, self.left())
        return max(1, min(most, int(room / max(each, 1e-9))))
