"""The equivalence criterion in both directions.

Must pass: rewrites that change only rounding (a reassociated sum whose result cancels to nearly
zero, as in a batch-norm backward pass; bf16 work done in f32; one ill-conditioned element among
many; a NaN where rounding decides whether a value leaves a function's domain). Must fail: real
mistakes planted into real XLA modules of the shared corpus and into small modules.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import shared_path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.planted_breaks import PLANTERS  # noqa: E402
from hlo.equivalence import compare_modules  # noqa: E402
from hlo.parser import parse_file, parse_module  # noqa: E402
from hlo.random_inputs import UNIT_INTERVAL, random_arguments  # noqa: E402

ADD = """add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
"""

# d/dbeta-like sums of centered activations: the exact answer is 0, each output is rounding noise.
BATCH_NORM_GRAD = ADD + """
ENTRY e {
  x = f32[512,64] parameter(0)
  g = f32[64] parameter(1)
  z = f32[] constant(0)
  n = f32[] constant(512)
  s = f32[64] reduce(x, z), dimensions={0}, to_apply=add
  nb = f32[64] broadcast(n), dimensions={}
  m = f32[64] divide(s, nb)
  mb = f32[512,64] broadcast(m), dimensions={1}
  c = f32[512,64] subtract(x, mb)
  gb = f32[512,64] broadcast(g), dimensions={1}
  p = f32[512,64] multiply(c, gb)
  ROOT r = f32[64] REDUCE_P
}
"""
WHOLE = "reduce(p, z), dimensions={0}, to_apply=add"
HALVES = """add(lo, hi)
  pl = f32[256,64] slice(p), slice={[0:256], [0:64]}
  ph = f32[256,64] slice(p), slice={[256:512], [0:64]}
  lo = f32[64] reduce(pl, z), dimensions={0}, to_apply=add
  hi = f32[64] reduce(ph, z), dimensions={0}, to_apply=add"""


def _halves_module() -> str:
    # The root must come last in the text for the parser's default root; write it explicitly.
    body = BATCH_NORM_GRAD.replace("  ROOT r = f32[64] REDUCE_P\n", "")
    tail = """  pl = f32[256,64] slice(p), slice={[0:256], [0:64]}
  ph = f32[256,64] slice(p), slice={[256:512], [0:64]}
  lo = f32[64] reduce(pl, z), dimensions={0}, to_apply=add
  hi = f32[64] reduce(ph, z), dimensions={0}, to_apply=add
  ROOT r = f32[64] add(lo, hi)
"""
    return body.replace("  p = f32[512,64] multiply(c, gb)\n", "  p = f32[512,64] multiply(c, gb)\n" + tail)


def m(text: str):
    return parse_module(text, "m.hlo")


def test_cancellation_near_zero_in_a_reassociated_sum_passes():
    original = m(BATCH_NORM_GRAD.replace("REDUCE_P", WHOLE))
    rewritten = m(_halves_module())
    report = compare_modules(original, rewritten, trials=3)
    assert report.equivalent and not report.exact, report.difference
    assert report.unchecked == 0


def test_a_wrong_reduction_of_the_same_module_fails():
    original = m(BATCH_NORM_GRAD.replace("REDUCE_P", WHOLE))
    wrong = m(_halves_module().replace("ROOT r = f32[64] add(lo, hi)", "ROOT r = f32[64] add(lo, lo)"))
    assert not compare_modules(original, wrong).equivalent


LOOP = """body {
  s = (s32[], T[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  a = T[4] get-tuple-element(s), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  q = T[] constant(0.25)
  qb = T[4] broadcast(q), dimensions={}
  b = T[4] add(a, qb)
  ROOT t = (s32[], T[4]) tuple(j, b)
}

cond {
  s = (s32[], T[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(400)
  ROOT lt = pred[] compare(i, n), direction=LT
}

ENTRY e {
  p = bf16[4] parameter(0)
  zero = s32[] constant(0)
  start = T[4] CONVERT_IN
  init = (s32[], T[4]) tuple(zero, start)
  loop = (s32[], T[4]) while(init), condition=cond, body=body
  acc = T[4] get-tuple-element(loop), index=1
  ROOT r = bf16[4] CONVERT_OUT
}
"""


def test_bf16_work_done_in_f32_passes_although_bf16_stagnates():
    """bf16 adds 0.25 four hundred times and stops near 64; the f32 rewrite reaches about 100."""
    original = m(LOOP.replace("T[", "bf16[").replace("CONVERT_IN", "copy(p)").replace("CONVERT_OUT", "copy(acc)"))
    promoted = m(LOOP.replace("T[", "f32[").replace("CONVERT_IN", "convert(p)").replace("CONVERT_OUT", "convert(acc)"))
    report = compare_modules(original, promoted)
    assert report.equivalent, report.difference
    # ... and the values really are far apart: the old normwise rule failed here.
    args = random_arguments(original, np.random.default_rng([0, 0]))
    from hlo.interpreter import evaluate

    low, high = evaluate(original, args).astype(np.float64), evaluate(promoted, args).astype(np.float64)
    assert np.all(np.abs(high - low) > 20)


def test_bf16_rewrite_that_adds_the_wrong_step_fails():
    """The bound admits twice the original's own error (|64 - 100| here): a step of 0.5 for 0.25 is seen."""
    original = m(LOOP.replace("T[", "bf16[").replace("CONVERT_IN", "copy(p)").replace("CONVERT_OUT", "copy(acc)"))
    wrong = m(
        LOOP.replace("T[", "f32[").replace("CONVERT_IN", "convert(p)").replace("CONVERT_OUT", "convert(acc)")
        .replace("constant(0.25)", "constant(0.5)")
    )
    assert not compare_modules(original, wrong).equivalent


ONE_ELEMENT = """ENTRY e {
  a = f32[4096] parameter(0)
  big = f32[4096] constant({BIG})
  t = f32[4096] add(a, big)
  ROOT r = f32[4096] subtract(t, big)
}
"""


def _one_element(root: str) -> str:
    values = ["0"] * 4096
    values[1234] = "100000"
    return ONE_ELEMENT.replace("{BIG}", "{" + ",".join(values) + "}").replace(
        "ROOT r = f32[4096] subtract(t, big)", root
    )


def test_one_ill_conditioned_element_among_thousands_passes():
    """(a + 1e5) - 1e5 keeps only a few bits of ``a`` in one element; ``a`` itself is the exact answer."""
    original = m(_one_element("ROOT r = f32[4096] subtract(t, big)"))
    rewritten = m(_one_element("zero = f32[4096] subtract(big, big)\n  ROOT r = f32[4096] add(a, zero)"))
    report = compare_modules(original, rewritten, trials=2)
    assert report.equivalent and not report.exact, report.difference


def test_one_element_off_where_the_computation_is_well_conditioned_fails():
    original = m(_one_element("ROOT r = f32[4096] subtract(t, big)"))
    values = ["0"] * 4096
    values[7] = "0.001"
    nudged = _one_element("eps = f32[4096] constant({" + ",".join(values) + "})\n  u = f32[4096] subtract(t, big)\n"
                          "  ROOT r = f32[4096] add(u, eps)")
    report = compare_modules(original, m(nudged))
    assert not report.equivalent and report.difference.element_index == (7,)


SQRT_OF_CANCELLATION = ADD + """
ENTRY e {
  x = f32[64,256] parameter(0)
  z = f32[] constant(0)
  s = f32[64] reduce(x, z), dimensions={1}, to_apply=add
  S2
  d = f32[64] subtract(s, s2)
  ROOT r = f32[64] sqrt(d)
}
"""


def test_nan_where_rounding_decides_the_domain_passes():
    """sqrt(sum - sum'): 0 in the original, NaN or a tiny number where the rewrite sums differently."""
    original = m(SQRT_OF_CANCELLATION.replace("S2", "s2 = f32[64] reduce(x, z), dimensions={1}, to_apply=add"))
    halves = (
        "xl = f32[64,128] slice(x), slice={[0:64], [0:128]}\n  xh = f32[64,128] slice(x), slice={[0:64], [128:256]}\n"
        "  l = f32[64] reduce(xl, z), dimensions={1}, to_apply=add\n"
        "  h = f32[64] reduce(xh, z), dimensions={1}, to_apply=add\n  s2 = f32[64] add(l, h)"
    )
    rewritten = m(SQRT_OF_CANCELLATION.replace("S2", halves))
    from hlo.interpreter import evaluate

    got = evaluate(rewritten, random_arguments(rewritten, np.random.default_rng([0, 0])))
    assert np.isnan(got).any() and not np.isnan(got).all()  # the situation really arises
    report = compare_modules(original, rewritten)
    assert report.equivalent, report.difference


LOG = """ENTRY e {
  x = f32[32,8] parameter(0)
  y = f32[32,8] parameter(1)
  c = f32[32,8] constant(LITERAL)
  l = f32[32,8] log(x)
  DIVIDE
}
"""


def _log_module(divide: str) -> str:
    literal = "{" + ",".join("{" + ",".join(["3"] * 8) + "}" for _ in range(32)) + "}"
    return LOG.replace("LITERAL", literal).replace("DIVIDE", divide)


def test_inputs_feeding_a_log_are_drawn_inside_its_domain_and_judged():
    original = m(_log_module("unused = f32[32,8] add(y, y)\n  ROOT r = f32[32,8] divide(l, c)"))
    x, y = random_arguments(original, np.random.default_rng([0, 0]))
    assert UNIT_INTERVAL[0] <= x.min() and x.max() <= UNIT_INTERVAL[1]
    assert y.min() < 0  # a parameter that feeds no log keeps its normal distribution
    third = "0.333333343"
    rewritten = m(_log_module("k = f32[] constant(" + third + ")\n  t = f32[32,8] broadcast(k), dimensions={}\n"
                              "  ROOT r = f32[32,8] multiply(l, t)"))
    report = compare_modules(original, rewritten, trials=2)
    assert report.equivalent and not report.exact and report.unchecked == 0


def _corpus(name: str, stage: str):
    return parse_file(sorted(shared_path("corpus").glob(f"{name}.{stage}.hlo*"))[0])


PLANTED = {
    "mlp_train": ("swapped-operands", "broken-tie"),
    "layernorm_fwd": ("swapped-operands",),
    "transpose_reshape_chain": ("wrong-transpose", "missing-copy", "broken-tie"),
    "einsum_zoo": ("missing-copy",),
    "softmax_axes": ("swapped-operands", "broken-tie"),
}


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_breaks_planted_into_xla_answers_are_caught(name):
    pre, after = _corpus(name, "pre"), _corpus(name, "after_layout")
    assert compare_modules(pre, after).ok  # XLA's own answer passes
    for planter in PLANTED[name]:
        broken = PLANTERS[planter](after)
        assert broken is not None and broken != after, planter
        assert not compare_modules(pre, broken).ok, planter


BF16_SCALE = """ENTRY e {
  x = f32[256] parameter(0)
  c = f32[] constant(FACTOR)
  b = f32[256] broadcast(c), dimensions={}
  p = f32[256] multiply(x, b)
  ROOT r = bf16[256] convert(p)
}
"""


def test_a_change_below_bf16_rounding_noise_is_caught_in_f64():
    """x * 1.002 against x * 1.0, both rounded to bf16 (unit roundoff 2**-8, twice the change):
    at bf16 precision the two are within rounding noise; the rewritten function in f64 is not."""
    original, wrong = m(BF16_SCALE.replace("FACTOR", "1.002")), m(BF16_SCALE.replace("FACTOR", "1"))
    from hlo.interpreter import evaluate

    args = random_arguments(original, np.random.default_rng([0, 0]))
    low, high = evaluate(original, args).astype(np.float64), evaluate(wrong, args).astype(np.float64)
    assert (low != high).any() and np.all(np.abs(low - high) <= 2**-7 * np.abs(low))  # within bf16 noise
    assert compare_modules(original, wrong, f64_clause=False).equivalent  # bf16 noise hides it there
    report = compare_modules(original, wrong)
    assert not report.equivalent
    assert report.difference.rewritten_shadow is not None  # the f64 clause saw it
    assert "in f64 the original gives" in str(report.difference)

