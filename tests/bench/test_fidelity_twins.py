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


def test_names_and_metadata_do_not_make_another_program():
    """XLA compiles neither: ours naming a relayout copy ``p.relayout`` where XLA's is
    ``copy``, or leaving out its metadata, is XLA's program, measured once."""
    copy = """HloModule m, entry_computation_layout={(f32[4,8]{0,1})->f32[4,8]{1,0}}
ENTRY e {
  p = f32[4,8]{0,1} parameter(0)
  NAME = f32[4,8]{1,0} copy(p)META
  ROOT n = f32[4,8]{1,0} negate(NAME)
}
"""
    xla = copy.replace("NAME", "copy").replace("META", ', metadata={op_name="b"}')
    ours = copy.replace("NAME", "p.relayout").replace("META", "")
    other = xla.replace("negate", "abs")
    variants = {"xla": parse_module(xla), "ours": parse_module(ours),
                "random-0": parse_module(other)}
    assert program_twins(variants) == {"xla": "xla", "ours": "xla", "random-0": "random-0"}
