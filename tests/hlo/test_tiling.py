"""Tiled layouts against a deliberately slow oracle that materializes the buffer.

The oracle follows the seed document's definition literally with numpy:
transpose to physical order, then per tile: prepend size-1 dims, merge '*' dims
(row-major reshape), pad with -1, split each dim into (outer, inner), move the
inner parts minor; flatten; pad the tail to L(n). Every cell holds the logical
row-major number of the element stored there, or -1 for padding.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hlo.errors import LayoutError
from hlo.shape import COMBINED, ArrayShape, Layout, Tile, element_bits
from hlo.tiling import (
    dense_strides,
    is_untiled_layout,
    linear_index,
    logical_index,
    padding_bytes,
    physical_element_count,
    physical_offsets,
    physical_size_bytes,
    tiled_shape,
    tiling_plan,
)
from strategies import array_shapes

SETTINGS = settings(max_examples=200, deadline=None)


def oracle_buffer(shape: ArrayShape, values: np.ndarray | None = None) -> np.ndarray:
    """The physical buffer of ``shape`` holding ``values`` (default: each element's
    logical row-major number), -1 for padding."""
    layout = shape.effective_layout()
    count = int(np.prod(shape.dims, dtype=np.int64))
    logical = np.arange(count, dtype=np.int64).reshape(shape.dims) if values is None else values
    physical_order = list(reversed(layout.minor_to_major))
    buf = np.transpose(logical, physical_order) if shape.dims else logical
    for tile in layout.tiles:
        t = list(tile.dims)
        if len(t) > buf.ndim:
            buf = buf.reshape((1,) * (len(t) - buf.ndim) + buf.shape)
        head = list(buf.shape[: buf.ndim - len(t)])
        covered = list(buf.shape[buf.ndim - len(t) :])
        merged_dims, merged_tile, run = [], [], 1
        for d, v in zip(covered, t):
            run *= d
            if v != COMBINED:
                merged_dims.append(run)
                merged_tile.append(v)
                run = 1
        buf = buf.reshape(head + merged_dims)
        pads = [(0, 0)] * len(head) + [(0, (-d) % v) for d, v in zip(merged_dims, merged_tile)]
        buf = np.pad(buf, pads, constant_values=-1)
        split = head[:]
        for d, v in zip(merged_dims, merged_tile):
            split += [-(-d // v), v]
        buf = buf.reshape(split)
        h, m = len(head), len(merged_tile)
        perm = list(range(h)) + [h + 2 * i for i in range(m)] + [h + 2 * i + 1 for i in range(m)]
        buf = buf.transpose(perm)
    flat = buf.reshape(-1)
    align = layout.tail_padding_alignment
    return np.pad(flat, (0, (-flat.size) % align), constant_values=-1)


def oracle_bits(shape: ArrayShape) -> int:
    layout = shape.effective_layout()
    return layout.element_size_bits or element_bits(shape.element_type)


@SETTINGS
@given(array_shapes(allow_zero=True))
def test_physical_offsets_match_materialized_buffer(shape: ArrayShape) -> None:
    buf = oracle_buffer(shape)
    offsets = physical_offsets(shape)
    assert offsets.dtype == np.int64 and offsets.shape == shape.dims
    assert physical_element_count(shape) == buf.size
    # every element sits where the oracle put it, and nothing else is a value
    assert (buf[offsets.reshape(-1)] == np.arange(offsets.size)).all()
    assert (buf >= 0).sum() == offsets.size


@SETTINGS
@given(array_shapes(), st.data())
def test_linear_index_and_inverse(shape: ArrayShape, data) -> None:
    buf = oracle_buffer(shape)
    numbers = np.arange(buf.size)
    where = {int(v): int(p) for p, v in zip(numbers, buf) if v >= 0}
    for flat in range(shape.element_count):
        index = tuple(int(i) for i in np.unravel_index(flat, shape.dims)) if shape.dims else ()
        assert linear_index(shape, index) == where[flat]
    position = data.draw(st.integers(0, buf.size - 1))
    expected = buf[position]
    got = logical_index(shape, position)
    if expected < 0:
        assert got is None
    else:
        assert got == (tuple(int(i) for i in np.unravel_index(expected, shape.dims)) if shape.dims else ())


@SETTINGS
@given(array_shapes(allow_zero=True))
def test_byte_sizes(shape: ArrayShape) -> None:
    buf = oracle_buffer(shape)
    bits = oracle_bits(shape)
    assert physical_size_bytes(shape) == -(-buf.size * bits // 8)
    assert padding_bytes(shape) == -(-buf.size * bits // 8) - (-(-shape.element_count * bits // 8))


def test_tiles_that_undo_each_other_leave_the_layout_untiled() -> None:
    # Each T(3,*,1) moves elements of f32[1,3,3]{0,1,2}; the second moves them back.
    shape = ArrayShape("f32", (1, 3, 3), Layout((0, 1, 2), tiles=(Tile((3, COMBINED, 1)),) * 2))
    plain = shape.with_layout(shape.effective_layout().without_tiles())
    assert np.array_equal(oracle_buffer(shape), oracle_buffer(plain))
    assert is_untiled_layout(shape)
    once = shape.with_layout(Layout((0, 1, 2), tiles=(Tile((3, COMBINED, 1)),)))
    assert not np.array_equal(oracle_buffer(once), oracle_buffer(plain))
    assert not is_untiled_layout(once)


@SETTINGS
@given(array_shapes(allow_properties=False))
def test_is_untiled_layout_matches_untiled_buffer(shape: ArrayShape) -> None:
    plain = shape.with_layout(shape.effective_layout().without_tiles())
    assert is_untiled_layout(shape) == np.array_equal(oracle_buffer(shape), oracle_buffer(plain))


@SETTINGS
@given(array_shapes(tiled=False, allow_properties=False))
def test_dense_strides(shape: ArrayShape) -> None:
    strides = dense_strides(shape)
    offsets = physical_offsets(shape)
    for index in itertools.islice(np.ndindex(*shape.dims), 50):
        assert offsets[index] == sum(i * s for i, s in zip(index, strides))


@SETTINGS
@given(array_shapes(allow_properties=False))
def test_pad_reshape_transpose_view(shape: ArrayShape) -> None:
    """Each plan step, applied literally with numpy, rebuilds the oracle buffer."""
    layout = shape.effective_layout()
    logical = np.arange(shape.element_count).reshape(shape.dims)
    buf = np.transpose(logical, list(layout.major_to_minor())) if shape.dims else logical
    for step in tiling_plan(shape).steps:
        buf = buf.reshape((1,) * step.prepended + step.before)
        head = buf.shape[: step.head]
        buf = buf.reshape(head + step.merged)
        pads = [(0, 0)] * step.head + [(0, p - d) for p, d in zip(step.padded, step.merged)]
        buf = np.pad(buf, pads, constant_values=-1).reshape(head + step.split)
        perm = tuple(range(step.head)) + tuple(step.head + p for p in step.permutation)
        buf = buf.transpose(perm)
        assert buf.shape == step.after
    assert buf.shape == tiled_shape(shape)
    flat = oracle_buffer(shape)
    assert np.array_equal(buf.reshape(-1), flat[: buf.size])


# ---------------------------------------------------------------------------
# The seed document's worked examples
# ---------------------------------------------------------------------------


def tiled(element_type: str, dims, mtm, *tiles) -> ArrayShape:
    return ArrayShape(element_type, tuple(dims), Layout(tuple(mtm), tiles=tuple(Tile(t) for t in tiles)))


def test_figure_1_f32_3x5_tile_2x2() -> None:
    shape = tiled("f32", (3, 5), (1, 0), (2, 2))
    assert linear_index(shape, (2, 3)) == 17
    assert tiled_shape(shape) == (2, 3, 2, 2)
    assert logical_index(shape, 17) == (2, 3)
    # the padding column and row: 24 physical elements for 15 values
    assert physical_element_count(shape) == 24 and padding_bytes(shape) == 9 * 4


def test_figure_2_repeated_tiling_4x8() -> None:
    """(2,4)(2,1) on 4x8: pairs of rows interleave inside each 2x4 tile."""
    shape = tiled("bf16", (4, 8), (1, 0), (2, 4), (2, 1))
    got = np.array([[linear_index(shape, (i, j)) for j in range(8)] for i in range(4)])
    expected = np.array([
        [0, 2, 4, 6, 8, 10, 12, 14],
        [1, 3, 5, 7, 9, 11, 13, 15],
        [16, 18, 20, 22, 24, 26, 28, 30],
        [17, 19, 21, 23, 25, 27, 29, 31],
    ])
    assert np.array_equal(got, expected)


def test_bf16_1d_three_level_tiling() -> None:
    shape = tiled("bf16", (2048,), (0,), (1024,), (128,), (2, 1))
    assert tiled_shape(shape) == (2, 4, 128, 2, 1)
    assert linear_index(shape, (0,)) == 0
    assert linear_index(shape, (128,)) == 1
    assert linear_index(shape, (1,)) == 2


def test_combined_dims_merge_into_the_more_minor_dim() -> None:
    shape = tiled("f32", (2, 7, 8, 11, 10), (4, 3, 2, 1, 0), (COMBINED, COMBINED, 2, COMBINED, 3))
    step = tiling_plan(shape).steps[0]
    assert step.merged == (112, 110)
    flat = tiled("f32", (112, 110), (1, 0), (2, 3))
    a, b, c, d, e = 1, 5, 7, 9, 4
    assert linear_index(shape, (a, b, c, d, e)) == linear_index(flat, ((a * 7 + b) * 8 + c, d * 10 + e))


def test_bad_tiles_are_layout_errors() -> None:
    with pytest.raises(LayoutError, match="ends in"):
        linear_index(tiled("f32", (4, 4), (1, 0), (2, COMBINED)), (0, 0))
    with pytest.raises(LayoutError, match="outside"):
        linear_index(tiled("f32", (4, 4), (1, 0), (2, 2)), (4, 0))
