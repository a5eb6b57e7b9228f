"""The solver's one exception family: everything it raises is a ``SolverError``."""

from __future__ import annotations

import pytest

from solver import cpsat
from solver.errors import ModelInvalid, ProblemError, SolverError
from solver.options import SolveOptions
from solver.problem import Status, make_problem
from solver.reductions import reduce_problem
from solver.solve import solve


def test_model_invalid_is_raised_not_reported_as_unknown() -> None:
    built = cpsat.build_model(make_problem([[1, 2]]))
    built.model.new_int_var(5, 0, "empty")  # a variable with no value: CP-SAT refuses the model
    with pytest.raises(ModelInvalid, match="no domain"):
        cpsat.solve_model(built, SolveOptions(), 1.0)


def test_a_valid_model_still_solves() -> None:
    built = cpsat.build_model(make_problem([[3, 1], [2, 5]]))
    raw = cpsat.solve_model(built, SolveOptions(), 5.0)
    assert raw.status == Status.OPTIMAL and raw.labels == (1, 0) and raw.objective == 3


@pytest.mark.parametrize("call", [
    lambda: make_problem([[]]),
    lambda: reduce_problem(make_problem([[1]]), ("no-such-pass",)),
    lambda: solve(make_problem([[1]]), hint=(0, 0)),
])
def test_bad_arguments_are_problem_errors_in_the_family(call) -> None:
    with pytest.raises(ProblemError) as caught:
        call()
    assert isinstance(caught.value, SolverError) and not isinstance(caught.value, ValueError)
