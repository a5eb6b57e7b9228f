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


@pytest.mark.parametrize("attrs", [
    "lhs_batch_dims=3",                                 # a number where a list belongs
    "lhs_contracting_dims={7}, rhs_contracting_dims={0}",  # out of range
    "lhs_contracting_dims={1}, rhs_contracting_dims={true}",
])
def test_malformed_dot_dims_are_located_parse_errors(attrs: str) -> None:
    with pytest.raises(ParseError) as err:
        parse_module(DOT.format(attrs=attrs))
    assert err.value.location is not None and err.value.location.line == 5
    assert "cannot infer the shape of dot" in err.value.message


def test_malformed_transpose_dims_are_a_parse_error() -> None:
    text = "HloModule m\nENTRY e {\n a = f32[2,3] parameter(0)\n ROOT t = transpose(a), dimensions=5\n}\n"
    with pytest.raises(ParseError, match="cannot infer the shape of transpose"):
        parse_module(text)


def test_well_formed_dot_shape_is_inferred() -> None:
    module = parse_module(DOT.format(attrs="lhs_contracting_dims={1}, rhs_contracting_dims={0}"))
    root = module.entry.root_instruction
    assert (root.array_shape.element_type, root.array_shape.dims) == ("f32", (2, 4))
