"""The published lower bounds ``bench/iopddl.py`` puts beside our answers: each lies at
or below every feasible published answer and every answer of ours (a lower bound above a
feasible cost would be wrong data, or a wrong evaluation on our side), and the table's
arithmetic on them."""

from __future__ import annotations

import json

from bench.iopddl import REPO, best_bound, from_optimum, published, published_bounds


def test_published_bounds_lie_below_every_feasible_answer() -> None:
    bounds = published_bounds()
    answers = published()
    ours = json.loads((REPO / "bench" / "iopddl_results.json").read_text())
    assert set(bounds) == set(ours) and len(bounds) == 16
    for name, bound in bounds.items():
        assert answers[name], name
        assert all(bound <= cost for cost in answers[name].values()), name
        assert bound <= ours[name]["cost"], name
        if ours[name]["lower_bound"] is not None:
            # Two valid bounds of one problem: neither may exceed the other's answer.
            assert ours[name]["lower_bound"] <= min(answers[name].values()), name


def test_v_is_proven_optimal_at_the_published_bound() -> None:
    data = json.loads((REPO / "bench" / "iopddl_bounds.json").read_text())
    v = data["instances"]["V"]
    assert v["optimal"] and v["lower_bound"] == 1617084


def test_best_bound_and_distance_from_the_optimum() -> None:
    assert best_bound(10, 12) == (12, "published")
    assert best_bound(12, 10) == (12, "ours")
    assert best_bound(7, 7) == (7, "ours=published")
    assert best_bound(None, 5) == (5, "published")
    assert best_bound(None, None) == (None, "")
    assert from_optimum(200, 150) == "25.0 %"
    assert from_optimum(100, 100) == "0.0 %"
    assert from_optimum(None, 5) == "—"
