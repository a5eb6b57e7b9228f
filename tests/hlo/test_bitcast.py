"""Bitcast rules against materialized buffers (the slow oracle of test_tiling)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from hlo.bitcast import (
    common_factor_groups,
    is_bitcast,
    reshape_input_layout_for_bitcast,
    reshape_output_layout_for_bitcast,
    reshape_rule_holds,
    transpose_is_bitcast,
)
from hlo.errors import LayoutError
from hlo.shape import ArrayShape, Layout, Tile
from strategies import dims, layouts
from test_tiling import oracle_buffer

SETTINGS = settings(max_examples=120, deadline=None)


def same_bytes(src: ArrayShape, dst: ArrayShape, dst_values: np.ndarray | None = None) -> bool:
    """Brute force: the two materialized buffers are identical, padding included."""
    return np.array_equal(oracle_buffer(src), oracle_buffer(dst, dst_values))


@st.composite
def reshape_dims(draw, source: tuple[int, ...]):
    """Another dim list with the same element count: a regrouping or a random factorization."""
    primes = []
    for d in source:
        n, p = d, 2
        while n > 1:
            while n % p == 0:
                primes.append(p)
                n //= p
            p += 1
    if draw(st.booleans()):
        primes = draw(st.permutations(primes))
    cuts = sorted(draw(st.lists(st.integers(0, len(primes)), max_size=4)))
    out, start = [], 0
    for c in cuts + [len(primes)]:
        out.append(math.prod(primes[start:c]))
        start = c
    out = [d for d in out if d != 1]
    for _ in range(draw(st.integers(0, 2))):
        out.insert(draw(st.integers(0, len(out))), 1)
    return tuple(out)


@st.composite
def reshape_pairs(draw, tiled: bool):
    src_dims = draw(dims(max_rank=4, max_size=6))
    assume(math.prod(src_dims) > 0)
    dst_dims = draw(reshape_dims(src_dims))
    assume(len(dst_dims) <= 5)
    src_layout = draw(layouts(len(src_dims), tiled=tiled, allow_properties=False))
    dst_layout = draw(layouts(len(dst_dims), tiled=tiled, allow_properties=False))
    if tiled and draw(st.booleans()):
        dst_layout = Layout(dst_layout.minor_to_major, tiles=src_layout.tiles)
    return ArrayShape("f32", src_dims, src_layout), ArrayShape("f32", dst_dims, dst_layout)


def small(shape: ArrayShape) -> bool:
    from hlo.tiling import physical_element_count

    return physical_element_count(shape) <= 5000


@SETTINGS
@given(reshape_pairs(tiled=False))
def test_untiled_reshape_rule_matches_buffers(pair) -> None:
    src, dst = pair
    assert is_bitcast(src, dst) == same_bytes(src, dst)


@SETTINGS
@given(reshape_pairs(tiled=True))
def test_tiled_reshape_bitcast_matches_buffers(pair) -> None:
    src, dst = pair
    assume(small(src) and small(dst))
    assert is_bitcast(src, dst) == same_bytes(src, dst)


@SETTINGS
@given(dims(max_rank=4, max_size=5), st.data())
def test_transpose_bitcast_matches_buffers(src_dims, data) -> None:
    rank = len(src_dims)
    perm = data.draw(st.permutations(range(rank)))
    src = ArrayShape("f32", src_dims, data.draw(layouts(rank, allow_properties=False)))
    dst_layout = data.draw(layouts(rank, allow_properties=False))
    if data.draw(st.booleans()):
        dst_layout = Layout(dst_layout.minor_to_major, tiles=src.effective_layout().tiles)
    dst = ArrayShape("f32", tuple(src_dims[p] for p in perm), dst_layout)
    assume(small(src) and small(dst))
    moved = np.arange(src.element_count).reshape(src_dims).transpose(perm)
    assert transpose_is_bitcast(src, dst, perm) == same_bytes(src, dst, moved)


def all_layouts_like(dims_: tuple[int, ...], like: Layout):
    for mtm in itertools.permutations(range(len(dims_))):
        yield Layout(mtm, tiles=like.tiles)


@SETTINGS
@given(reshape_pairs(tiled=True))
def test_reshape_output_layout_finder(pair) -> None:
    src, dst = pair
    assume(small(src))
    found = reshape_output_layout_for_bitcast(src, dst.dims)
    if found is not None:
        assert same_bytes(src, ArrayShape("f32", dst.dims, found))
    else:
        for layout in all_layouts_like(dst.dims, src.effective_layout()):
            assert not same_bytes(src, ArrayShape("f32", dst.dims, layout)), layout


@SETTINGS
@given(reshape_pairs(tiled=True))
def test_reshape_input_layout_finder(pair) -> None:
    src, dst = pair
    assume(small(dst))
    found = reshape_input_layout_for_bitcast(src.dims, dst)
    if found is not None:
        assert same_bytes(ArrayShape("f32", src.dims, found), dst)
    else:
        for layout in all_layouts_like(src.dims, dst.effective_layout()):
            assert not same_bytes(ArrayShape("f32", src.dims, layout), dst), layout


# ---------------------------------------------------------------------------
# Named facts
# ---------------------------------------------------------------------------


def test_common_factor_groups() -> None:
    assert common_factor_groups([3, 8, 5, 7, 11], [4, 3, 2, 7, 5, 11]) == [
        ((0, 1), (0, 1, 2)), ((2, 3), (3, 4)), ((4,), (5,))]


def test_element_types_and_counts() -> None:
    f32 = ArrayShape("f32", (4, 2))
    assert not is_bitcast(f32, ArrayShape("s32", (8,)))
    assert is_bitcast(f32, ArrayShape("s32", (8,)), ignore_element_type=True)
    assert not is_bitcast(f32, ArrayShape("f32", (8,), Layout((0,), element_size_bits=16)))
    with pytest.raises(LayoutError, match="element count"):
        is_bitcast(f32, ArrayShape("f32", (9,)))


def test_tiled_bitcast_needs_same_tiles_and_padding() -> None:
    a = ArrayShape("f32", (16, 128), Layout((1, 0), tiles=(Tile((8, 128)),)))
    b = ArrayShape("f32", (2, 8, 128), Layout((2, 1, 0), tiles=(Tile((8, 128)),)))
    assert is_bitcast(a, b)
    c = ArrayShape("f32", (4, 4, 128), Layout((2, 1, 0), tiles=(Tile((8, 128)),)))
    assert not is_bitcast(a, c)  # (4,128) pads to (8,128): twice the bytes
    assert reshape_rule_holds((16, 128), (1, 0), (4, 4, 128), (2, 1, 0))
