"""Syntax facts of ``xla-cases/layout_strings``: how layouts and shapes print, parse and fail.

The linear-index, bitcast and other algebra facts of the same file belong to the
layout algebra's tests; they are filtered out here by kind, explicitly.
"""

from __future__ import annotations

import json

import pytest
from conftest import shared_path

from hlo.errors import ParseError
from hlo.parser import parse_attribute, parse_layout, parse_shape
from hlo.printer import print_attribute, print_layout, print_shape
from hlo.shape import COMBINED, UNBOUNDED, ArrayShape, Layout, SplitConfig, Tile, TupleShape

CASES = json.loads(shared_path("xla-cases", "layout_strings", "cases.json").read_text())
SYNTAX_KINDS = {"layout_to_string", "shape_to_string", "shape_parse_ok", "shape_parse_error", "attribute_grammar"}
ALGEBRA_KINDS = {"linear_index", "bitcast_rule", "layout_equality", "layout_delete_dimension",
                 "is_untiled_layout", "align_layouts"}


def _of(kind: str) -> list[dict]:
    return [c for c in CASES if c["kind"] == kind]


def _id(case: dict) -> str:
    return case["data"].get("text") or case["source_test"].split("::")[-1].strip()


def test_every_kind_is_either_syntax_or_algebra() -> None:
    assert {c["kind"] for c in CASES} == SYNTAX_KINDS | ALGEBRA_KINDS


def _layout_from_fields(fields: dict) -> Layout:
    return Layout(
        tuple(fields["minor_to_major"]),
        tiles=tuple(Tile(tuple(COMBINED if d == "*" else d for d in t)) for t in fields.get("tiles", ())),
        tail_padding_alignment=fields.get("tail_padding_alignment_in_elements", 1),
        index_type=fields.get("index_primitive_type"),
        pointer_type=fields.get("pointer_primitive_type"),
        element_size_bits=fields.get("element_size_in_bits", 0),
        memory_space=fields.get("memory_space", 0),
        split_configs=tuple(SplitConfig(d, tuple(i)) for d, i in fields.get("split_configs", ())),
        physical_shape=parse_shape(fields["physical_shape"]) if "physical_shape" in fields else None,
        dynamic_metadata_prefix_bytes=fields.get("dynamic_shape_metadata_prefix_bytes", 0),
    )


@pytest.mark.parametrize("case", _of("layout_to_string"), ids=_id)
def test_layout_to_string(case: dict) -> None:
    data = case["data"]
    if "layout_fields" not in data:  # the stream-out case: a tile and a plain layout
        assert str(Tile(tuple(data["tile"]))) == data["tile_text"]
        assert print_layout(Layout(tuple(data["layout"]))) == data["layout_text"]
        return
    layout = _layout_from_fields(data["layout_fields"])
    assert print_layout(layout) == data["text"]
    assert parse_layout(data["text"]) == layout


@pytest.mark.parametrize("case", _of("shape_to_string"), ids=_id)
def test_shape_to_string(case: dict) -> None:
    text = case["data"]["text"]
    assert print_shape(parse_shape(text)) == text


@pytest.mark.parametrize("case", _of("shape_parse_ok"), ids=_id)
def test_shape_parses(case: dict) -> None:
    shape = parse_shape(case["data"]["text"])
    assert parse_shape(print_shape(shape)) == shape


def test_shape_parse_details() -> None:
    unbounded = parse_shape("f32[?,784]")
    assert unbounded.dims == (UNBOUNDED, 784) and unbounded.dynamic == (True, False)
    bounded = parse_shape("f32[123,<=456]")
    assert bounded.dims == (123, 456) and bounded.dynamic == (False, True)
    assert parse_shape("f32[123,456]{0,1}").layout == Layout((0, 1))
    tiled = parse_shape("f32[123,456,789]{0,1,2:T(2, * , 128)}")
    assert tiled.layout.tiles == (Tile((2, COMBINED, 128)),)
    nested = parse_shape("(f32[1],(f32[2], token[]), opaque[], f32[3])")
    assert isinstance(nested, TupleShape) and len(nested.elements) == 4
    assert parse_shape("s4[123,456]{1,0:T(2,128)E(4)}").layout.element_size_bits == 4
    sc = parse_shape("pred[123,456]{1,0:S(3)SC(0:10)(1:4,5)}").layout
    assert sc.memory_space == 3 and sc.split_configs == (SplitConfig(0, (10,)), SplitConfig(1, (4, 5)))
    assert parse_shape("f32[123,456]{1,0:T(16,128)M(1024)}").layout.dynamic_metadata_prefix_bytes == 1024
    buffer = parse_shape("b(f32[8,16]{1,0})")
    assert buffer.array == ArrayShape("f32", (8, 16), Layout((1, 0)))


@pytest.mark.parametrize("case", _of("shape_parse_error"), ids=_id)
def test_shape_rejected(case: dict) -> None:
    with pytest.raises(ParseError) as info:
        parse_shape(case["data"]["text"])
    want = case["data"].get("error_substring")
    if want:
        assert want in info.value.message
    assert info.value.location is not None


def _attribute_name(case: dict) -> str:
    test = case["source_test"]
    for marker, name in (("Shard", "sharding"), ("Convolution", "dim_labels"),
                         ("Replica", "replica_groups"), ("DeviceList", "replica_groups"),
                         ("Padding", "padding"), ("Frontend", "frontend_attributes")):
        if marker in test:
            return name
    raise AssertionError(f"no attribute for {test}")


#: Texts the printer writes differently on purpose (the upstream test says so).
NORMALIZED = {"0_1x2_3_4": "0_1_0x2_3_4"}


@pytest.mark.parametrize("case", _of("attribute_grammar"), ids=_id)
def test_attribute_grammar(case: dict) -> None:
    name = _attribute_name(case)
    text = case["data"]["text"]
    value = parse_attribute(name, text)
    printed = print_attribute(name, value)
    assert printed == NORMALIZED.get(text, text)
    assert parse_attribute(name, printed) == value


def test_attribute_values_are_typed() -> None:
    labels = parse_attribute("dim_labels", "b0f_0io->b0f")
    assert (labels.input_batch, labels.input_feature, labels.input_spatial) == (0, 2, (1,))
    assert (labels.kernel_input_feature, labels.kernel_output_feature) == (1, 2)
    assert parse_attribute("replica_groups", "{{0,1},{2,3}}") == ((0, 1), (2, 3))
    padding = parse_attribute("padding", "0_1x2_3_4")
    assert [(d.low, d.high, d.interior) for d in padding.dims] == [(0, 1, 0), (2, 3, 4)]
