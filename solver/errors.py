"""The one exception family of the ``solver`` package.

Every error that leaves ``solver`` is a :class:`SolverError`:

* :class:`ProblemError`: an invalid problem or argument (names what is at fault);
* :class:`AssignmentError`: no layout assignment meets the hard rules;
* :class:`ModelInvalid`: CP-SAT rejected the model it was given (a bug in the model
  builder, never a property of the input);
* :class:`SolveError`: an internal inconsistency, e.g. an answer that failed its
  re-evaluation.

Inside the package, :class:`BuildTimeout` and :class:`Infeasible` steer control flow
and are caught by their callers; they never leave ``solver``.
"""

from __future__ import annotations


class SolverError(Exception):
    """Base of every error raised by the ``solver`` package."""


class ProblemError(SolverError):
    """An invalid problem or argument: names the node, edge, tie or option at fault."""


class AssignmentError(SolverError):
    """No assignment satisfies the hard rules (names the instructions involved)."""


class ModelInvalid(SolverError):
    """CP-SAT answered ``MODEL_INVALID``: the model builder wrote a bad model."""


class SolveError(SolverError):
    """An internal inconsistency: a returned assignment failed re-evaluation."""


class BuildTimeout(SolverError):
    """Building the model did not finish before the deadline (caught inside ``solver``)."""


class Infeasible(SolverError):
    """A hard rule cannot be met, found inside the reductions (caught there)."""
