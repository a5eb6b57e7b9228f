"""The fidelity benchmark runs each distinct program once: variants that print as the same
module share one measurement."""

from __future__ import annotations

from bench.fidelity import program_twins
from hlo.parser import parse_module

TEXT = """HloModule m, entry_computation_layout={(f32[4,8]{1,0})->f32[4,8]{LAYOUT}}
ENTRY e {
  p = f32[4,8]{1,0} parameter(0)
  ROOT n = f32[4,8]{LAYOUT} negate(p)
}
"""


def test_variants_printing_the_same_module_are_one_program():
    row, column = TEXT.replace("LAYOUT", "1,0"), TEXT.replace("LAYOUT", "0,1")
    variants = {"xla": parse_module(row), "ours": parse_module(column),
                "default": parse_module(row), "random-0": parse_module(column),
                "random-1": parse_module(row.replace("negate", "abs"))}
    assert program_twins(variants) == {"xla": "xla", "ours": "ours", "default": "xla",
                                       "random-0": "ours", "random-1": "random-1"}
