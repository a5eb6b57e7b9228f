"""The accelerator benchmarks' own logic: the held-out modules run on the pinned path, and the
held-out tau is worked out by hand from its definition (and is scipy's tau-a without ties)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import kendalltau

from bench.calibrate_device import held_out_groups
from bench.device_fidelity import tau
from service.xla.refusals import pinned_reason


def test_the_held_out_modules_can_be_pinned_and_share_their_group_parameters():
    for group in held_out_groups((4, 8, 16), 32):
        dims = {tuple(p.shape.dims for p in b.module.entry.parameter_instructions())
                for b in group.benches}
        assert len(dims) == 1, group.name
        assert [b.kind for b in group.benches].count("base") == 1
        for bench in group.benches:
            assert pinned_reason(bench.module) is None, bench.label


def test_tau_by_hand():
    # pairs ordered by the measurement: (a,b) 10 vs 20 agree, (a,c) 10 vs 30 agree,
    # (b,c) 20 vs 30: the model ties them (neither); 3 pairs, 2 agree -> 2/3
    assert tau([1, 2, 2], [10, 20, 30], tie=0.0) == (pytest.approx(2 / 3), 3)
    # a measured tie (within 5 %) is not counted at all
    assert tau([1, 2, 3], [100, 103, 50], tie=0.05) == (pytest.approx(-1.0), 2)


@pytest.mark.parametrize("seed", range(3))
def test_tau_without_ties_is_scipys(seed):
    rng = np.random.default_rng(seed)
    a, b = rng.permutation(10).astype(float), rng.permutation(10).astype(float)
    value, pairs = tau(list(a), list(b), tie=0.0)
    assert pairs == 45 and value == pytest.approx(kendalltau(a, b).statistic)
