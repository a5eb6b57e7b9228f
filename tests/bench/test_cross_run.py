"""bench/cross_run.py: the programs two fidelity runs both measured, matched by their text."""

from __future__ import annotations

import json

import pytest

from bench.cross_run import agreement, measured


def run(tmp_path, name: str, rows: dict[str, tuple[str, float, float]]):
    """A results file and its variants folder: label -> (program text, measured, predicted)."""
    folder = tmp_path / name
    (folder / "m").mkdir(parents=True)
    variants = {}
    for label, (text, ratio, predicted) in rows.items():
        (folder / "m" / f"{label}.hlo").write_text(text)
        variants[label] = {"ratio": {"median": ratio}, "predicted_ratio": predicted}
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"results": [{"module": "m", "variants": variants}]}))
    return measured(path, folder)


def test_programs_measured_in_both_runs_are_matched_by_text_and_xlas_is_left_out(tmp_path):
    a = run(tmp_path, "a", {"xla": ("X", 1.0, 1.0), "ours": ("P", 0.9, 0.95),
                            "random-0": ("Q, metadata={op_name=\"q\"}", 1.3, 1.2),
                            "random-1": ("R", 2.0, 1.5), "random-2": ("only in a", 1.1, 1.1)})
    # Run b labels the programs differently (the labels of a run are not its programs).
    b = run(tmp_path, "b", {"xla": ("X", 1.0, 1.0), "greedy": ("P", 0.92, 0.95),
                            "random-3": ("Q", 1.25, 1.2), "random-4": ("R", 2.2, 1.5)})
    found = agreement(a, b, near=0.05)
    assert found["programs"] == 3  # P, Q (metadata aside), R; neither X nor "only in a"
    assert found["runs"] == pytest.approx(1.0) and found["model_vs_a"] == pytest.approx(1.0)
    assert found["near"] == 0 and found["rest"] == 3


def test_runs_that_order_the_programs_the_other_way_disagree(tmp_path):
    a = run(tmp_path, "a", {"p": ("P", 0.97, 1.0), "q": ("Q", 1.02, 1.1), "r": ("R", 1.5, 1.4)})
    b = run(tmp_path, "b", {"p": ("P", 1.03, 1.0), "q": ("Q", 0.99, 1.1), "r": ("R", 1.4, 1.4)})
    found = agreement(a, b, near=0.05)
    # Of the three pairs, P-Q is ordered the other way: (2 - 1) / 3.
    assert found["runs"] == pytest.approx(1 / 3)
    assert (found["near"], found["rest"]) == (2, 1)
    assert found["runs_near"] == pytest.approx(-1.0)
    assert found["model_vs_a"] == pytest.approx(1.0) and found["model_vs_b"] == pytest.approx(1 / 3)
