"""Every layout-algebra fact of xla-cases/layout_strings/cases.json.

Only the kinds this algebra owns are read (linear_index, is_untiled_layout,
bitcast_rule, align_layouts); syntax kinds belong to the parser tests. The
file must contain each of these kinds, so a renamed kind cannot silently pass.
"""

from __future__ import annotations

import itertools
import json

import pytest

from conftest import shared_path
from hlo.bitcast import is_bitcast, reshape_output_layout_for_bitcast, transpose_is_bitcast
from hlo.parser import parse_shape
from hlo.shape import ArrayShape, Layout, Tile
from hlo.tiling import is_untiled_layout, linear_index, physical_size_bytes

KINDS = ("linear_index", "is_untiled_layout", "bitcast_rule", "align_layouts")
CASES = json.loads(shared_path("xla-cases", "layout_strings", "cases.json").read_text())
OURS = [c for c in CASES if c["kind"] in KINDS]


def ids(case) -> str:
    return case["source_test"].split("::")[-1].strip()


def test_every_owned_kind_is_present() -> None:
    assert {c["kind"] for c in OURS} == set(KINDS)
    assert len(OURS) == 10


@pytest.mark.parametrize("case", [c for c in OURS if c["kind"] == "linear_index"], ids=ids)
def test_linear_index(case) -> None:
    data = case["data"]
    if "cases" in data:
        for sub in data["cases"]:
            assert linear_index(parse_shape(sub["shape"]), sub["index"]) == sub["linear"]
        return
    shape = parse_shape(data["shape"])
    if "index_to_linear" in data:
        for index, linear in data["index_to_linear"].items():
            assert linear_index(shape, (int(index),)) == linear
        return
    if "linear_index_tiled" in data:
        assert linear_index(shape, data["index"]) == data["linear_index_tiled"]
        untiled = shape.with_layout(shape.layout.without_tiles())
        assert linear_index(untiled, data["index"]) == data["linear_index_untiled"]
    else:
        assert linear_index(shape, data["index"]) == data["linear_index"]


def test_is_untiled_layout() -> None:
    (case,) = [c for c in OURS if c["kind"] == "is_untiled_layout"]
    for sub in case["data"]["cases"]:
        rank = len(sub["dims"])
        layout = Layout(tuple(range(rank - 1, -1, -1)), tiles=tuple(Tile(tuple(t)) for t in sub["tiles"]))
        assert is_untiled_layout(ArrayShape("f32", tuple(sub["dims"]), layout)) == sub["untiled"], sub


def test_reshape_3x4_to_6x2_only_row_major() -> None:
    (case,) = [c for c in OURS if c["kind"] == "bitcast_rule" and "true_only_for" in c["data"]]
    assert case["data"]["true_only_for"] == "L_in={1,0} and L_out={1,0}"
    for a, b in itertools.product([(1, 0), (0, 1)], repeat=2):
        expected = a == (1, 0) and b == (1, 0)
        assert is_bitcast(ArrayShape("f32", (3, 4), Layout(a)), ArrayShape("f32", (6, 2), Layout(b))) == expected


@pytest.mark.parametrize("case", [c for c in OURS if c["kind"] == "bitcast_rule"
                                  and "true_only_for" not in c["data"]], ids=ids)
def test_bitcast_rules(case) -> None:
    data = case["data"]
    src, dst = parse_shape(data["input"]), parse_shape(data["output"])
    if "dimensions" in data:
        assert transpose_is_bitcast(src, dst, data["dimensions"]) == data["is_bitcast"]
        assert transpose_is_bitcast(src, dst, data["dimensions"], ignore_element_type=True) == \
            data["is_bitcast_ignoring_type"]
    else:
        assert is_bitcast(src, dst) == data["is_bitcast"]


def test_align_layouts() -> None:
    (case,) = [c for c in OURS if c["kind"] == "align_layouts"]
    data = case["data"]
    src = parse_shape(data["input"])
    for n in (1, 2):
        found = reshape_output_layout_for_bitcast(src, data[f"output_dims_{n}"])
        assert found is not None and found.minor_to_major == tuple(data[f"aligned_minor_to_major_{n}"])
    # ... and nothing when the input splits a common-factor group
    broken = src.with_layout(Layout((2, 3, 1, 0, 4)))
    assert reshape_output_layout_for_bitcast(broken, data["output_dims_1"]) is None


def test_tile_padding_counts_in_bytes() -> None:
    """We count tile padding (XLA's open-source ByteSizeOf does not)."""
    assert physical_size_bytes(parse_shape("f32[3,5]{1,0:T(2,2)}")) == 24 * 4
    assert physical_size_bytes(parse_shape("f32[2,3,4]{2,1,0:T(8,128)}")) == 2 * 8 * 128 * 4
    assert physical_size_bytes(parse_shape("s4[123,456]{1,0:T(2,128)E(4)}")) == 124 * 512 // 2
    assert physical_size_bytes(parse_shape("pred[8,8,8]{0,2,1:T(8,128)E(32)}")) == 8 * 8 * 128 * 4
    assert physical_size_bytes(parse_shape("f32[3]{0:L(8)}")) == 32
