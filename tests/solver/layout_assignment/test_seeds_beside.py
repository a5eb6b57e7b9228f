"""The seeds solved in a child process while the exact problem is stated and reduced give
the answer of the same steps one after the other."""

from __future__ import annotations

import pytest
from conftest import shared_path

from hlo.parser import parse_file
from solver.layout_assignment import assign as assign_module
from solver.layout_assignment.assign import assign
from solver.layout_assignment.options import AssignOptions


@pytest.mark.parametrize("name,target", [("transformer_block_train", "tpu"),
                                         ("flax_resnet_train", "cpu")])
def test_seeds_beside_give_the_answer_of_one_after_the_other(
        name: str, target: str, monkeypatch: pytest.MonkeyPatch) -> None:
    module = parse_file(shared_path("corpus", f"{name}.before_layout.hlo"))
    options = AssignOptions(time_limit_s=30.0)
    monkeypatch.setattr(assign_module, "BESIDE_INSTRUCTIONS", 10**9)
    alone = assign(module, target, options)
    assert "seeds_wait" not in alone.timings_ms
    monkeypatch.setattr(assign_module, "BESIDE_INSTRUCTIONS", 0)
    monkeypatch.setattr(assign_module, "core_free", lambda: True)
    overlapped = assign(module, target, options)
    assert "seeds_wait" in overlapped.timings_ms
    assert alone.status == overlapped.status == "OPTIMAL"
    assert (overlapped.objective, overlapped.lower_bound) == (alone.objective, alone.lower_bound)
    assert overlapped.layouts == alone.layouts
    assert overlapped.baselines == alone.baselines
