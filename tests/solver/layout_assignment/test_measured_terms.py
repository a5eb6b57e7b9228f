"""The cost terms XLA:CPU's measurements asked for: a standalone transpose against XLA's
bitcast-transpose + copy, and the slow form of a reduction. Numbers from the target file."""

from __future__ import annotations

import math

from hlo.parser import parse_module
from hlo.target import load_target
from solver.layout_assignment.assign import score

STANDALONE = """HloModule t, entry_computation_layout={(f32[256,512]{1,0})->f32[512,256]{1,0}}
ENTRY e {
  p = f32[256,512]{1,0} parameter(0)
  ROOT t = f32[512,256]{1,0} transpose(p), dimensions={1,0}
}
"""
BITCAST_AND_COPY = """HloModule t, entry_computation_layout={(f32[256,512]{1,0})->f32[512,256]{1,0}}
ENTRY e {
  p = f32[256,512]{1,0} parameter(0)
  t = f32[512,256]{0,1} transpose(p), dimensions={1,0}
  ROOT c = f32[512,256]{1,0} copy(t)
}
"""
REDUCE = """HloModule r, entry_computation_layout={(f32[256,512]{1,0})->f32[OUT]{0}}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  p = f32[256,512]{1,0} parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[OUT]{0} reduce(p, z), dimensions={DIM}, to_apply=add
}
"""


def test_a_standalone_transpose_costs_the_copy_times_the_standalone_factor():
    cpu = load_target("cpu")
    copy = score(parse_module(BITCAST_AND_COPY), cpu)
    standalone = score(parse_module(STANDALONE), cpu)
    assert copy.total > 0
    assert standalone.total == math.ceil(copy.total * cpu.transpose.standalone)
    assert "standalone transpose" in standalone.terms[0].reason


def test_the_slow_reduction_form_pays_its_extra_passes():
    cpu = load_target("cpu")
    rule = next(r for r in cpu.op_rules if r.kind == "reduction_minor")
    column = score(parse_module(REDUCE.replace("OUT", "512").replace("DIM", "0")), cpu)
    row = score(parse_module(REDUCE.replace("OUT", "256").replace("DIM", "1")), cpu)
    slow, fast = (column, row) if rule.params["slow"] == "kept" else (row, column)
    assert fast.total == 0
    extra = int(rule.params["read_factor"] * cpu.pass_ns(256 * 512 * 4))
    assert slow.total == extra > 0
    assert "the slow form" in slow.terms[0].reason
