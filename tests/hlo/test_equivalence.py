"""compare_modules: equal, mutated, tolerance and input rules."""

from __future__ import annotations

import numpy as np
import pytest

from hlo.equivalence import compare_modules, compare_values, random_arguments
from hlo.interpreter import InterpretError
from hlo.parser import parse_module

BASE = """HloModule m

ENTRY e {
  a = f32[4,6]{1,0} parameter(0)
  i = s32[] parameter(1)
  t = f32[6,4]{1,0} transpose(a), dimensions={1,0}
  d = f32[2,4]{1,0} dynamic-slice(t, i, i), dynamic_slice_sizes={2,4}
  c = f32[] constant(3)
  b = f32[2,4]{1,0} broadcast(c), dimensions={}
  q = f32[2,4]{1,0} divide(d, b)
  ROOT r = (f32[2,4]{1,0}, f32[6,4]{1,0}) tuple(q, t)
}
"""


def module(text: str):
    return parse_module(text, "m.hlo")


def test_identical_modules_are_exactly_equivalent():
    report = compare_modules(module(BASE), module(BASE), trials=3)
    assert report.ok and report.exact and report.difference is None


def test_bitcast_rewrite_of_transpose_is_equivalent():
    rewritten = BASE.replace(
        "t = f32[6,4]{1,0} transpose(a), dimensions={1,0}",
        "tb = f32[6,4]{0,1} bitcast(a)\n  t = f32[6,4]{1,0} copy(tb)",
    )
    report = compare_modules(module(BASE), module(rewritten))
    assert report.equivalent and report.exact


def test_mutation_reports_the_first_differing_element():
    mutated = BASE.replace(
        "ROOT r = (f32[2,4]{1,0}, f32[6,4]{1,0}) tuple(q, t)",
        "one = f32[] constant(1)\n  ob = f32[6,4]{1,0} broadcast(one), dimensions={}\n"
        "  tt = f32[6,4]{1,0} add(t, ob)\n  ROOT r = (f32[2,4]{1,0}, f32[6,4]{1,0}) tuple(q, tt)",
    )
    report = compare_modules(module(BASE), module(mutated))
    assert not report.equivalent and not report.ok
    diff = report.difference
    assert diff.output_index == (1,) and diff.element_index == (0, 0)
    assert diff.mismatches == 24 and diff.elements == 24
    assert float(diff.rewritten) == pytest.approx(float(diff.original) + 1)
    assert report.to_json()["first_difference"]["output_index"] == [1]


def test_reassociation_is_within_tolerance_but_not_exact():
    rewritten = BASE.replace(
        "c = f32[] constant(3)\n  b = f32[2,4]{1,0} broadcast(c), dimensions={}\n  q = f32[2,4]{1,0} divide(d, b)",
        "c = f32[] constant(0.333333343)\n  b = f32[2,4]{1,0} broadcast(c), dimensions={}\n  q = f32[2,4]{1,0} multiply(d, b)",
    )
    loose = compare_modules(module(BASE), module(rewritten), trials=4)
    assert loose.equivalent and not loose.exact and 0 < loose.worst_ratio <= 1
    strict = compare_modules(module(BASE), module(rewritten), trials=4, exact=True)
    assert not strict.equivalent


def test_nan_matches_nan_but_not_a_number():
    a = np.array([np.nan, 1.0], np.float32)
    assert compare_values(a, a.copy(), exact=True) is None
    diff = compare_values(a, np.array([1.0, 1.0], np.float32), exact=False)
    assert diff is not None and diff.element_index == (0,)


def test_random_inputs_are_deterministic_and_index_safe():
    m = module(BASE)
    one = random_arguments(m, np.random.default_rng([0, 0]))
    two = random_arguments(m, np.random.default_rng([0, 0]))
    assert all(np.array_equal(x, y) for x, y in zip(one, two))
    assert one[1].dtype == np.int32 and 0 <= int(one[1]) < 8


def test_incompatible_signatures_are_rejected():
    other = BASE.replace("a = f32[4,6]{1,0} parameter(0)", "a = f32[4,7]{1,0} parameter(0)")
    with pytest.raises(InterpretError, match="entry parameters differ"):
        compare_modules(module(BASE), module(other))


def test_layout_violations_are_reported():
    # An elementwise op whose operand layout differs from its result layout.
    bad = BASE.replace("q = f32[2,4]{1,0} divide(d, b)", "q = f32[2,4]{0,1} divide(d, b)")
    report = compare_modules(module(BASE), module(bad))
    assert report.verifier == "ran"
    assert report.equivalent and report.violations and not report.ok
