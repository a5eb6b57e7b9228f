"""The opcode facts table (hlo/opcode_facts.py) and the places that read it."""

from __future__ import annotations

import pytest

import hlo.interpreter  # noqa: F401  (the op modules fill HANDLERS)
from hlo import opcode_facts as facts
from hlo.errors import HloError
from hlo.interpreter.machine import HANDLERS
from hlo.layout_verifier import verify_layouts
from hlo.parser import parse_module
from hlo.shape_inference import KNOWN_OPCODES as SHAPE_RULES
from hlo.verifier import verify_module
from solver.layout_assignment.assign import assign
from solver.layout_assignment.options import AssignOptions

_GE = "ge {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT c = pred[] compare(x, y), direction=GE\n}\n"
_ADD = "add {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}\n"


def _select_and_scatter(operand: str, source: str, result: str) -> str:
    return (f"HloModule m\n{_GE}{_ADD}ENTRY e {{\n"
            f"  a = {operand} parameter(0)\n  s = {source} parameter(1)\n"
            "  z = f32[] constant(0)\n"
            f"  ROOT r = {result} select-and-scatter(a, s, z), "
            "window={size=2x2 stride=2x2}, select=ge, scatter=add\n}\n")


def test_select_and_scatter_is_tied_but_not_variadic() -> None:
    # XLA's InferSelectAndScatterShape: exactly (operand, source, init) and an array result
    # of the operand's shape; InstructionCanChangeLayout is false for it.
    assert "select-and-scatter" in facts.TIED
    assert "select-and-scatter" not in facts.VARIADIC_TIED


def test_select_and_scatter_with_a_tuple_result_is_refused() -> None:
    module = parse_module(_select_and_scatter("f32[4,6]", "f32[2,3]", "(f32[4,6], f32[4,6])"))
    with pytest.raises(HloError, match="select-and-scatter|shape"):
        verify_module(module)


def test_verifier_and_assignment_agree_on_the_tie() -> None:
    broken = parse_module(_select_and_scatter("f32[4,6]{0,1}", "f32[2,3]{1,0}", "f32[4,6]{0,1}"))
    [violation] = verify_layouts(broken)
    assert (violation.instruction, violation.rule, violation.actual) == ("r", "tie", "{1,0}")
    tied = parse_module(_select_and_scatter("f32[4,6]{0,1}", "f32[2,3]{0,1}", "f32[4,6]{0,1}"))
    assert verify_layouts(tied) == []
    result = assign(parse_module(_select_and_scatter("f32[4,6]", "f32[2,3]", "f32[4,6]")),
                    "cpu", AssignOptions(time_limit_s=5))
    assert result.violations == ()
    entry = result.module.entry
    layouts = {entry.instruction(n).shape.layout.minor_to_major for n in ("a", "s", "r")
               if entry.instruction(n).opcode != "copy"}
    assert len(layouts) == 1


def test_the_tables_nest() -> None:
    assert facts.ELEMENTWISE <= facts.TIED
    assert facts.VARIADIC_TIED <= facts.TIED
    for table in (facts.ELEMENTWISE, facts.TIED, facts.VARIADIC_TIED, facts.SHARED_LAYOUT,
                  facts.LAYOUT_FREE):
        assert table <= facts.OPCODES, table - facts.OPCODES
    assert not facts.TIED & facts.LAYOUT_FREE - {"while", "opt-barrier", "add-dependency",
                                                  "bitcast-convert"}


def test_every_elementwise_op_has_a_shape_rule_and_a_handler() -> None:
    assert facts.ELEMENTWISE_UNARY | facts.ELEMENTWISE_BINARY | facts.ELEMENTWISE <= set(SHAPE_RULES)
    assert facts.ELEMENTWISE - {"stochastic-convert"} <= set(HANDLERS)
