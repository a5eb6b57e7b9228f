"""Instructions written without a result shape: malformed dimension attributes are parse errors."""

from __future__ import annotations

import pytest

from hlo.errors import ParseError
from hlo.parser import parse_module

DOT = """HloModule m
ENTRY e {{
  a = f32[2,3] parameter(0)
  b = f32[3,4] parameter(1)
  ROOT d = dot(a, b), {attrs}
}}
"""


@pytest.mark.parametrize("attrs, message", [
    ("lhs_batch_dims=3", "cannot infer the shape of dot"),  # a number where a list belongs
    ("lhs_contracting_dims={7}, rhs_contracting_dims={0}", "cannot infer the shape of dot"),
    # refused where written, by the attribute parser
    ("lhs_contracting_dims={1}, rhs_contracting_dims={true}", "expects a list of dimension"),
])
def test_malformed_dot_dims_are_located_parse_errors(attrs: str, message: str) -> None:
    with pytest.raises(ParseError) as err:
        parse_module(DOT.format(attrs=attrs))
    assert err.value.location is not None and err.value.location.line == 5
    assert message in err.value.message


def test_malformed_transpose_dims_are_a_parse_error() -> None:
    text = "HloModule m\nENTRY e {\n a = f32[2,3] parameter(0)\n ROOT t = transpose(a), dimensions=5\n}\n"
    with pytest.raises(ParseError, match="cannot infer the shape of transpose"):
        parse_module(text)


def test_well_formed_dot_shape_is_inferred() -> None:
    module = parse_module(DOT.format(attrs="lhs_contracting_dims={1}, rhs_contracting_dims={0}"))
    root = module.entry.root_instruction
    assert (root.array_shape.element_type, root.array_shape.dims) == ("f32", (2, 4))


@pytest.mark.parametrize("op, operands, expected", [
    # XLA's ShapeInference: the magnitude and the parts of a complex number are real.
    ("abs", "c", "f32[4]"),
    ("real", "c", "f32[4]"),
    ("imag", "c", "f32[4]"),
    ("complex", "x, x", "c64[4]"),
    ("compare", "x, x), direction=LT, (x", None),  # written below with its attribute
    ("add", "x, x", "f32[4]"),
])
def test_inferred_element_types_follow_xla(op: str, operands: str, expected: str | None) -> None:
    call = "compare(x, x), direction=LT" if op == "compare" else f"{op}({operands})"
    text = ("HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n  c = c64[4] parameter(1)\n"
            f"  ROOT r = {call}\n}}\n")
    root = parse_module(text).entry.root_instruction
    assert str(root.shape) == (expected or "pred[4]")
    assert root.array_shape.layout is None
