"""bench.planted_breaks.change: which planted changes count as breaks of the function."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.planted_breaks import change  # noqa: E402
from hlo.equivalence import compare_modules  # noqa: E402
from hlo.parser import parse_module  # noqa: E402

ADD = """add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
"""

# Two rows centered over their mean: c = (v0 - m, v1 - m) = ±(v0 - v1)/2, where v is a divide
# (DIVIDE, written with its operands one way or swapped).
CENTERED_ROWS = """  x = f32[2,4] parameter(0)
  one = f32[] constant(1)
  ones = f32[2,4] broadcast(one), dimensions={}
  a = f32[2,4] abs(x)
  d = f32[2,4] add(a, ones)
  v = f32[2,4] DIVIDE
  z = f32[] constant(0)
  s = f32[4] reduce(v, z), dimensions={0}, to_apply=add
  h = f32[] constant(0.5)
  hb = f32[4] broadcast(h), dimensions={}
  m = f32[4] multiply(s, hb)
  mb = f32[2,4] broadcast(m), dimensions={1}
  c = f32[2,4] subtract(v, mb)
"""

# s + reverse(s) of rows centered over two rows, (v0 - m, v1 - m): zero in exact arithmetic for
# every input, so whatever feeds v (here a divide, then with its operands swapped) is invisible.
IDENTICALLY_ZERO = ADD + """
ENTRY e {
""" + CENTERED_ROWS + """  r = f32[2,4] reverse(c), dimensions={0}
  ROOT o = f32[2,4] add(c, r)
}
"""

# sqrt(|v - m|) of the same two centered rows: equal in exact arithmetic, so argmax over the rows
# is decided by rounding at every precision, and the index it adds moves the output by 1.
ARGMAX_OF_A_TIE = ADD + """
max_index {
  a = f32[] parameter(0)
  i = s32[] parameter(1)
  b = f32[] parameter(2)
  j = s32[] parameter(3)
  gt = pred[] compare(a, b), direction=GT
  eq = pred[] compare(a, b), direction=EQ
  lt = pred[] compare(i, j), direction=LT
  first = pred[] and(eq, lt)
  keep = pred[] or(gt, first)
  va = f32[] select(keep, a, b)
  vi = s32[] select(keep, i, j)
  ROOT t = (f32[], s32[]) tuple(va, vi)
}

ENTRY e {
""" + CENTERED_ROWS + """  ac = f32[2,4] abs(c)
  q = f32[2,4] sqrt(ac)
  io = s32[2,4] iota(), iota_dimension=0
  ninf = f32[] constant(-inf)
  zi = s32[] constant(0)
  am = (f32[4], s32[4]) reduce(q, io, ninf, zi), dimensions={0}, to_apply=max_index
  idx = s32[4] get-tuple-element(am), index=1
  fi = f32[4] convert(idx)
  fb = f32[2,4] broadcast(fi), dimensions={1}
  ROOT o = f32[2,4] add(q, fb)
}
"""


def _pair(text: str):
    return (parse_module(text.replace("DIVIDE", "divide(x, d)"), "m.hlo"),
            parse_module(text.replace("DIVIDE", "divide(d, x)"), "m.hlo"))


def test_a_change_feeding_an_identically_zero_function_is_no_change():
    assert change(*_pair(IDENTICALLY_ZERO)) == "no change"


def test_a_change_behind_an_argmax_of_an_exact_tie_is_decided_by_rounding_or_caught():
    """Where f64 rounding flips the tie in every element the break moves, the break is not counted;
    where it does not, the break counts and verify catches it (on the same inputs)."""
    original, broken = _pair(ARGMAX_OF_A_TIE)
    verdicts = {seed: change(original, broken, seed) for seed in range(8)}
    assert set(verdicts.values()) == {"decided by rounding", "changed"}, verdicts
    for seed, verdict in verdicts.items():
        if verdict == "changed":
            assert not compare_modules(original, broken, seed=seed).equivalent, seed


def test_a_swapped_divide_elsewhere_is_a_change():
    text = IDENTICALLY_ZERO.replace("ROOT o = f32[2,4] add(c, r)", "ROOT o = f32[2,4] add(c, ones)")
    assert change(*_pair(text)) == "changed"
