"""The order of one timing round: the reference's two runs far apart in the rotated cycle."""

from __future__ import annotations

import pytest

from service.xla.execution import _round_order


def _gap(order: list[str]) -> int:
    """Cyclic distance between the reference's two runs."""
    a, b = order.index("m0"), order.index("m0#again")
    return min(abs(a - b), len(order) - abs(a - b))


@pytest.mark.parametrize("candidates", range(1, 10))
def test_every_module_runs_once_and_the_reference_twice(candidates):
    keys = [f"m{i}" for i in range(candidates + 1)]
    order = _round_order(keys)
    assert sorted(order) == sorted([*keys, "m0#again"])
    # Rotations of this cycle never run the reference twice in a row...
    assert _gap(order) >= (2 if candidates >= 2 else 1)
    # ...and, from four candidates on, not across two rounds' junction (runs two apart).
    if candidates >= 4:
        assert _gap(order) >= 3
