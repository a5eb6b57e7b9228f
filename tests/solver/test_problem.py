"""Problem values: validation names the part at fault; evaluation and memory checks."""

from __future__ import annotations

import numpy as np
import pytest

from solver.problem import (
    FORBIDDEN, ProblemError, evaluate, make_problem, memory_feasible, peak_memory,
)


def test_docstring_example() -> None:
    problem = make_problem([[0, 5], [3, 0]], [(0, 1, [[0, 9], [9, 0]])])
    assert [evaluate(problem, x) for x in [(0, 0), (1, 1), (0, 1), (1, 0)]] == [3, 5, 9, 17]


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"unary": [[]]}, "node 0: has no candidate labels"),
        ({"unary": [[1, -1]]}, "node 0: unary costs"),
        ({"unary": [[1], ["x"]]}, "node 1"),
        ({"unary": [[1], [1]], "edges": [(0, 5, [[1]])]}, "edge 0 (0, 5): node 5"),
        ({"unary": [[1], [1]], "edges": [(0, 0, [[1]])]}, "edge 0 (0, 0): joins a node to itself"),
        ({"unary": [[1], [1, 2]], "edges": [(0, 1, [[1]])]}, "edge 0 (0, 1): table shape"),
        ({"unary": [[1], [1, 2]], "ties": [(0, 1)]}, "tie 0 (0, 1): an identity tie"),
        ({"unary": [[1, 2], [1, 2]], "ties": [(0, 1, [0])]}, "tie 0 (0, 1): mapping has 1"),
        ({"unary": [[1, 2], [1, 2]], "ties": [(0, 1, [0, 7])]}, "label 7 is not in 0..1"),
        ({"unary": [[1, 2]], "forbidden": [(0, 2)]}, "forbidden label of node 0"),
        ({"unary": [[1, 2]], "memory": [(0, 3, 1, [1, 1])]}, "memory use 0 of node 0"),
        ({"unary": [[1, 2]], "memory": [(0, 0, 1, [1])]}, "1 usages for 2 labels"),
        ({"unary": [[1, 2]], "memory_limit": -1}, "memory limit"),
    ],
)
def test_validation_names_the_part(kwargs: dict, fragment: str) -> None:
    with pytest.raises(ProblemError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        make_problem(**kwargs)


def test_values_are_frozen() -> None:
    problem = make_problem([[1, 2]], memory=[(0, 0, 2, [3, 4])], memory_limit=5)
    with pytest.raises(ValueError):
        problem.unary[0][0] = 7
    with pytest.raises(AttributeError):
        problem.memory_limit = 3  # type: ignore[misc]


def test_forbidden_and_ties_make_evaluation_none() -> None:
    problem = make_problem(
        [[1, 2, 3], [0, 0, 0]],
        [(0, 1, [[0, FORBIDDEN, 0], [0, 0, 0], [0, 0, 0]])],
        ties=[(0, 1, [0, 1, None])],
        forbidden=[(1, 1)],
    )
    assert evaluate(problem, (0, 0)) == 1
    assert evaluate(problem, (0, 1)) is None  # tie broken (and forbidden)
    assert evaluate(problem, (1, 1)) is None  # label 1 of node 1 forbidden
    assert evaluate(problem, (2, 2)) is None  # mapping None: label 2 of node 0 impossible


def test_memory_profile_against_numpy_timeline() -> None:
    rng = np.random.default_rng(3)
    uses = []
    for node in range(6):
        start = int(rng.integers(0, 8))
        uses.append((node, start, start + int(rng.integers(0, 5)), rng.integers(0, 9, 2).tolist()))
    problem = make_problem([[0, 0]] * 6, memory=uses, fixed_memory=[(2, 4, 5)], memory_limit=20)
    for labels in [(0,) * 6, (1,) * 6, (0, 1, 0, 1, 0, 1)]:
        timeline = np.zeros(20, np.int64)
        for node, start, end, usage in uses:
            timeline[start:end] += usage[labels[node]]
        timeline[2:4] += 5
        assert peak_memory(problem, labels) == timeline.max()
        assert memory_feasible(problem, labels) == (timeline.max() <= 20)


def test_trivial_bound_counts_the_smallest_allowed_entry_of_every_table() -> None:
    from solver.problem import trivial_bound

    problem = make_problem([[2, 5], [3, 1]], [(0, 1, [[4, 9], [FORBIDDEN, 6]])])
    assert trivial_bound(problem) == 2 + 1 + 4
    # Every assignment costs at least that (here (0, 1): 2 + 1 + 9 = 12, (0, 0): 9).
    assert min(evaluate(problem, (a, b)) or FORBIDDEN for a in (0, 1) for b in (0, 1)) >= 7
    blocked = make_problem([[0], [0]], [(0, 1, [[FORBIDDEN]])])
    assert trivial_bound(blocked) == FORBIDDEN
