"""Opcode spellings: ``count-leading-zeros`` is XLA's name for clz and must parse, print,
verify and be accepted by XLA's own parser."""

from __future__ import annotations

import subprocess
import sys

import pytest

from hlo.errors import ParseError
from hlo.parser import parse_module
from hlo.parser.opcodes import is_opcode
from hlo.printer import print_module
from hlo.verifier import verify_module

TEXT = """HloModule clz_module, entry_computation_layout={(s32[4]{0})->s32[4]{0}}

ENTRY main {
  p = s32[4]{0} parameter(0)
  ROOT c = s32[4]{0} count-leading-zeros(p)
}
"""


def test_count_leading_zeros_parses_prints_and_verifies():
    module = parse_module(TEXT, "clz.hlo")
    instr = module.entry.root_instruction
    assert instr.opcode == "count-leading-zeros" and instr.operands == ("p",)
    printed = print_module(module, short=True)
    assert printed.rstrip() == TEXT.rstrip()
    assert parse_module(printed) == module
    verify_module(module)


def test_count_leading_zeros_result_shape_is_inferred():
    module = parse_module("HloModule m\nENTRY e {\n  p = u8[3] parameter(0)\n  ROOT c = count-leading-zeros(p)\n}\n")
    assert module.entry.root_instruction.shape.dims == (3,)
    assert module.entry.root_instruction.shape.element_type == "u8"


def test_unknown_spellings_are_still_rejected():
    assert is_opcode("count-leading-zeros") and not is_opcode("count-leading-ones")
    with pytest.raises(ParseError, match="count-trailing-zeros"):
        parse_module("HloModule m\nENTRY e {\n  p = s32[] parameter(0)\n  ROOT c = s32[] count-trailing-zeros(p)\n}\n")


_XLA_SIDE = r"""
import sys
from jaxlib import _hlo
m = _hlo.hlo_module_from_text(sys.stdin.read())
print([i.to_string() for c in m.computations() for i in c.instructions()])
"""


@pytest.mark.xla
def test_xla_parser_accepts_the_printed_spelling():
    printed = print_module(parse_module(TEXT))
    proc = subprocess.run([sys.executable, "-c", _XLA_SIDE], input=printed, capture_output=True,
                          text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "count-leading-zeros(" in proc.stdout  # XLA prints the same spelling back
