"""Split-permute layouts: Ascend formats by definition, XLA layouts through tiling's oracle."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings

from hlo.shape import ArrayShape, Layout, Tile
from hlo.split_layout import c0_for, fractal_nz, fractal_z, from_shape, nc1hwc0, to_xla_layout
from hlo.tiling import physical_element_count, physical_offsets
from strategies import array_shapes
from test_tiling import oracle_buffer

SETTINGS = settings(max_examples=200, deadline=None)


def test_c0_is_32_bytes() -> None:
    assert (c0_for("f16"), c0_for("f32"), c0_for("s8"), c0_for("bf16")) == (16, 8, 32, 16)


def test_nc1hwc0_by_definition_and_as_an_xla_tile() -> None:
    n, c, h, w = 2, 20, 3, 5
    split = nc1hwc0((n, c, h, w), "f16")
    c0, c1 = 16, 2
    offsets = split.offsets()
    for e in itertools.product(range(n), range(c), range(h), range(w)):
        a, b, y, x = e
        assert offsets[e] == (((a * c1 + b // c0) * h + y) * w + x) * c0 + b % c0
    assert split.element_count == n * c1 * h * w * c0
    layout = to_xla_layout(split, "f16")
    assert str(layout) == "{3,2,1,0:T(16,1,1)}"
    xla = ArrayShape("f16", (n, c, h, w), layout)
    assert np.array_equal(physical_offsets(xla), offsets)
    assert physical_element_count(xla) == split.element_count


def test_fractal_z_by_definition() -> None:
    n, c, h, w = 20, 10, 2, 3
    split = fractal_z((n, c, h, w), "f32")   # C0 = 8, N0 = 16
    c0, c1, n0, n1 = 8, 2, 16, 2
    offsets = split.offsets()
    for e in itertools.product(range(n), range(c), range(h), range(w)):
        a, b, y, x = e
        row = (b // c0) * h * w + y * w + x             # C1·H·W
        assert offsets[e] == ((row * n1 + a // n0) * n0 + a % n0) * c0 + b % c0
    assert split.element_count == c1 * h * w * n1 * n0 * c0
    assert to_xla_layout(split, "f32") is None


def test_fractal_nz_by_definition() -> None:
    b, m, n = 2, 20, 40
    split = fractal_nz((b, m, n), "f16")   # M0 = 16, N0 = 16
    m1, n1 = 2, 3
    offsets = split.offsets()
    for e in itertools.product(range(b), range(m), range(n)):
        z, i, j = e
        assert offsets[e] == (((z * n1 + j // 16) * m1 + i // 16) * 16 + i % 16) * 16 + j % 16
    assert to_xla_layout(split, "f16") is None


@SETTINGS
@given(array_shapes(allow_zero=True))
def test_from_shape_matches_the_buffer(shape: ArrayShape) -> None:
    split = from_shape(shape)
    if split is None:
        return
    buf = oracle_buffer(shape)
    offsets = split.offsets()
    assert split.element_count == buf.size
    assert (buf[offsets.reshape(-1)] == np.arange(offsets.size)).all()
    for index in itertools.islice(np.ndindex(*shape.dims), 20):
        assert split.linear_index(index) == offsets[index]


@SETTINGS
@given(array_shapes(allow_combined=False, allow_properties=False))
def test_to_xla_round_trip(shape: ArrayShape) -> None:
    split = from_shape(shape)
    if split is None:
        return
    layout = to_xla_layout(split, shape.element_type)
    if layout is not None:
        assert np.array_equal(physical_offsets(ArrayShape(shape.element_type, shape.dims, layout)),
                              physical_offsets(shape))


def test_from_shape_refuses_inner_padding_and_combined_dims() -> None:
    # (4)(3): the second tile pads the inner digit of size 4
    inner = ArrayShape("f32", (8,), Layout((0,), tiles=(Tile((4,)), Tile((3,)))))
    assert from_shape(inner) is None
    assert from_shape(ArrayShape("f32", (2, 3), Layout((1, 0), tiles=(Tile((-1, 4)),)))) is None
    simple = from_shape(ArrayShape("f32", (3, 5), Layout((1, 0), tiles=(Tile((2, 2)),))))
    assert simple.factors == ((2, 2), (3, 2)) and simple.order == ((0, 0), (1, 0), (0, 1), (1, 1))
