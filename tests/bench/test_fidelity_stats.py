"""The fidelity benchmark's rank statistics: plain tau-b against scipy's, the noise-aware one
against values worked out by hand from its definition."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import kendalltau

from bench.fidelity_stats import kendall_tau, kendall_tau_noise, noise_band


@pytest.mark.parametrize("seed", range(5))
def test_plain_tau_is_scipys_tau_b_ties_included(seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 4, 12).astype(float)  # many ties on both sides
    b = rng.integers(0, 5, 12).astype(float)
    assert kendall_tau(list(a), list(b)) == pytest.approx(kendalltau(a, b).statistic)


def test_measured_times_within_the_band_are_ties():
    # (10, 10.5) differ by 1.05 < 1.1: a tie; (10, 20) and (10.5, 20) concordant.
    # tau-b = (2 - 0) / sqrt((2 + 0) * (2 + 1)).
    assert kendall_tau_noise([1, 2, 3], [10, 10.5, 20], [1.1] * 3) == pytest.approx(2 / math.sqrt(6))
    assert kendall_tau([1, 2, 3], [10, 10.5, 20]) == 1.0
    # A discordant pair inside the band no longer counts against the model.
    assert kendall_tau([1, 2, 3], [10.5, 10, 20]) == pytest.approx(1 / 3)
    assert kendall_tau_noise([1, 2, 3], [10.5, 10, 20], [1.1] * 3) == pytest.approx(2 / math.sqrt(6))


def test_a_pair_from_two_runs_uses_the_wider_band():
    # 10 vs 11.5: a tie under 1.2 (the second run's band), not under 1.1.
    assert kendall_tau_noise([1, 2], [10, 11.5], [1.1, 1.2]) is None  # the only pair tied
    assert kendall_tau_noise([1, 2], [10, 11.5], [1.1, 1.1]) == 1.0


def test_the_band_is_the_aa_interquartile_range_made_symmetric():
    assert noise_band({"median": 1.0, "p25": 0.8, "p75": 1.1}) == pytest.approx(1.25)
    assert noise_band({"median": 1.0, "p25": 0.95, "p75": 1.3}) == pytest.approx(1.3)
    assert noise_band(None) is None


def _result(name: str, times: dict, predicted: dict, noise: dict) -> dict:
    rows = {label: {"median_ms": t, "min_ms": t, "predicted_ns": predicted[label],
                    "ratio": {"median": t / times["xla"], "p25": 1, "p75": 1, "rounds": 5},
                    "predicted_ratio": 1 + (predicted[label] - predicted["xla"]) / (times["xla"] * 1e6)}
            for label, t in times.items()}
    return {"module": name, "variants": rows, "tau": None, "noise": noise, "same_as_xla": False}


def test_the_summary_reports_unseen_modules_apart_with_both_taus():
    from bench.fidelity import summarize, unseen_modules

    names = unseen_modules(2)
    assert names[:2] == ["unseen_random_90001", "unseen_random_90002"] and len(names) == 4
    noise = {"median": 1.0, "p25": 0.95, "p75": 1.05}
    seen = _result("a", {"xla": 1.0, "ours": 1.02, "default": 2.0},
                   {"xla": 0, "ours": 10, "default": 100}, noise)
    unseen = _result(names[0], {"xla": 1.0, "ours": 0.5, "default": 2.0},
                     {"xla": 0, "ours": 10, "default": 100}, noise)
    s = summarize([seen, unseen])
    assert s["modules_measured"] == 1 and s["unseen"]["modules_measured"] == 1
    # Seen: xla 1.0 and ours 1.02 are within the band 1.0526 (a tie); the other two pairs
    # concordant: tau-b 2 / sqrt(3 * 2); the plain tau is 1.
    assert s["tau_mean_noise"] == pytest.approx(2 / math.sqrt(6))
    assert s["variant_pairs_resolved"] == [2, 3]
    # Unseen: ours is cheaper than XLA predicted dearer: one discordant pair of three.
    assert s["unseen"]["tau_mean_noise"] == pytest.approx(1 / 3)
    assert s["unseen"]["ours_faster_beyond_noise"] == [(names[0], 0.5, 1.053)]


def test_unseen_modules_can_start_at_seeds_and_a_depth_never_measured():
    from bench.fidelity import unseen_modules
    from bench.programs.deep import FAMILIES

    names = unseen_modules(2, seed=91001, depth=2)
    assert names[:2] == ["unseen_random_91001", "unseen_random_91002"]
    assert sorted(names[2:]) == sorted(f"unseen_{family}_2" for family in FAMILIES)
    assert unseen_modules(0, seed=91001, depth=2) == []


def test_same_program_ignores_how_a_scalar_layout_is_written():
    import dataclasses

    from bench.fidelity import same_program
    from hlo.parser import parse_module
    from hlo.shape import ArrayShape, Layout

    text = """HloModule m, entry_computation_layout={(f32[4,3]{1,0})->f32[]SCALAR}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  p = f32[4,3]{1,0} parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[] reduce(p, z), dimensions={0,1}, to_apply=add
}
"""
    plain = parse_module(text.replace("SCALAR", ""))
    entry = plain.attr("entry_computation_layout")
    # The same entry layouts with the scalar result's layout empty instead of absent (as
    # assignment writes it): the same program.
    empty = dataclasses.replace(plain, attributes=tuple(
        (k, dataclasses.replace(entry, result=ArrayShape("f32", (), Layout(()))))
        if k == "entry_computation_layout" else (k, v) for k, v in plain.attributes))
    assert repr(empty.attr("entry_computation_layout")) != repr(entry)
    assert same_program(plain, empty)
    other = parse_module(text.replace("SCALAR", "").replace("{(f32[4,3]{1,0})", "{(f32[4,3]{0,1})"))
    assert not same_program(plain, other)


def test_the_sign_test_orders_a_pair_only_when_a_coin_rarely_would():
    from bench.fidelity_stats import sign_test_resolved

    faster, slower = [1.0] * 9, [2.0] * 9
    # 8 of 9 rounds: two-sided p = 2 * (1 + 9) / 512 = 0.039 <= 0.05; 7 of 9: 2 * 46 / 512 = 0.18.
    assert sign_test_resolved([1.0] * 8 + [3.0], slower)
    assert not sign_test_resolved([1.0] * 7 + [3.0] * 2, slower)
    # 5 of 5: p = 2 / 32 = 0.0625: five rounds order nothing at 5 %.
    assert not sign_test_resolved(faster[:5], slower[:5])
    # Equal rounds are left out: 8 wins and 1 tie is 8 of 8, p = 2 / 256.
    assert sign_test_resolved([1.0] * 8 + [2.0], slower)
    assert not sign_test_resolved(faster, faster)


def test_a_module_with_round_times_is_tied_by_the_sign_test_not_the_band():
    from bench.fidelity import noise_aware

    # xla and ours differ by 1 % in every round (ordered by the sign test, although inside
    # the 5 % band); default is faster than both in 5 of 9 rounds only: tied with both,
    # although its median (0.5) lies far outside the band.
    xla = [1.00] * 9
    ours = [1.01] * 9
    default = [0.5] * 5 + [3.0] * 4
    rows = {label: {"median_ms": float(np.median(t)), "min_ms": min(t), "predicted_ns": p,
                    "times_ms": t}
            for label, t, p in (("xla", xla, 0), ("ours", ours, 10), ("default", default, 100))}
    out = noise_aware({"variants": rows, "noise": {"median": 1.0, "p25": 0.95, "p75": 1.05}})
    assert out["resolution"] == "sign test, 9 rounds"
    assert out["pairs_resolved"] == [1, 3]
    # One concordant pair (xla < ours, predicted 0 < 10), two ties on the measured side:
    # tau-b = 1 / sqrt(3 * 1).
    assert out["tau_noise"] == pytest.approx(1 / math.sqrt(3))


def test_agreement_over_resolved_pairs_counts_only_what_the_measurement_orders():
    from bench.fidelity_stats import resolved_agreement

    def never(i, j):
        return False

    # Pairs (0,1) agree, (0,2) agree, (1,2) disagree: (2 - 1) / 3.
    assert resolved_agreement([1, 2, 3], [10, 30, 20], never) == pytest.approx(1 / 3)
    # Pair (1,2) tied by the measurement: 2 of 2 agree.
    assert resolved_agreement([1, 2, 3], [10, 30, 20], lambda i, j: {i, j} == {1, 2}) == 1.0
    # A pair priced equal counts against: (1 - 0) / 2.
    assert resolved_agreement([1, 2, 2], [10, 20, 30],
                              lambda i, j: {i, j} == {0, 2}) == pytest.approx(0.5)
    assert resolved_agreement([1, 2], [10, 20], lambda i, j: True) is None


def test_variants_are_ranked_by_their_paired_ratios_not_their_own_medians():
    from bench.fidelity import _scored

    from service.xla.execution import PairedRatio

    # The rounds drift (1 ms, then 3 ms): "slower" is 10 % above XLA's layouts in 8 of 9
    # rounds, yet its own median (1.1) lies below XLA's (3.0). Predicted slower, it is.
    xla = [1.0] * 4 + [3.0] * 5
    slower = [1.1] * 5 + [3.3] * 4
    rows = {}
    for label, times, predicted in (("xla", xla, 0), ("slower", slower, 10),
                                    ("faster", [0.5 * t for t in xla], -5)):
        rows[label] = {"median_ms": float(np.median(times)), "min_ms": min(times),
                       "predicted_ns": predicted, "times_ms": times,
                       "ratio": PairedRatio.of(times, xla).to_json()}
    out = _scored({"variants": rows, "noise": {"median": 1.0, "p25": 0.98, "p75": 1.02}})
    assert rows["slower"]["ratio"]["median"] == pytest.approx(1.1)
    assert out["tau"] == pytest.approx(1.0)
    assert out["pairs_resolved"] == [3, 3] and out["agreement_resolved"] == 1.0


def test_a_ratio_left_inside_the_band_is_measured_again_and_the_goals_read_that():
    from bench.fidelity import _unresolved, noise_aware, ours_ratio, summarize

    noise = {"median": 1.0, "p25": 0.95, "p75": 1.05}  # band 1.0526
    # Predicted 3.2 % faster, measured 1.003: a sign the run cannot tell from noise.
    r = _result("m", {"xla": 1.0, "ours": 1.003, "default": 2.0},
                {"xla": 0, "ours": -32000, "default": 100}, noise)
    r.update(noise_aware(r))
    assert _unresolved(r)
    before = summarize([r])
    assert before["sign_agreement"] == "0/1" and before["resolved_again"] == []
    r["resolved"] = {"ratio": {"median": 0.962, "p25": 0.94, "p75": 1.02, "rounds": 100},
                     "sessions": 10, "reps": 100, "noise": None}
    assert ours_ratio(r) == 0.962
    after = summarize([r])
    assert after["sign_agreement"] == "1/1" and after["ours_faster_3pct_where_differ"] == 1
    assert after["resolved_again"] == [("m", 1.003, 0.962, 10)]
    # The same measured beyond the band, or where nothing reads it, is left as it is.
    far = _result("f", {"xla": 1.0, "ours": 1.2, "default": 2.0},
                  {"xla": 0, "ours": -32000, "default": 100}, noise)
    far.update(noise_aware(far))
    quiet = _result("q", {"xla": 1.0, "ours": 1.01, "default": 2.0},
                    {"xla": 0, "ours": 1000, "default": 100}, noise)
    quiet.update(noise_aware(quiet))
    twin = {**r, "variants": {**r["variants"],
                              "ours": {**r["variants"]["ours"], "same_program_as": "xla"}}}
    assert not _unresolved(far) and not _unresolved(quiet) and not _unresolved(twin)
    # XLA's instructions with its duplicate copies shared still ran as a program of its own.
    assert _unresolved({**r, "same_as_xla": True})
