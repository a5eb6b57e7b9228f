"""Shapes in physical order: the dims of an array listed major-to-minor.

The normalization passes rewrite arrays into their *physical-order shape*: the
same bytes, the dims permuted so that the layout becomes descending.
``f32[8,100,100,3]{3,0,2,1}`` (dim 1 slowest, dim 3 fastest) has physical order
``(1, 2, 0, 3)`` and physical-order shape ``f32[100,100,8,3]{3,2,1,0}``. Tiles and
the other layout properties stay: they describe physical positions, which the
permutation does not move, so a bitcast between the two shapes is always a
transpose that moves no bytes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from hlo.shape import ArrayShape, Shape, TupleShape, default_layout


def physical_order(shape: ArrayShape) -> tuple[int, ...]:
    """Logical dims from slowest to fastest (``{3,0,2,1}`` -> ``(1,2,0,3)``)."""
    return shape.effective_layout().major_to_minor()


def is_descending(shape: Shape) -> bool:
    """Every array leaf has the default layout (or none written, which means the same)."""
    if isinstance(shape, TupleShape):
        return all(is_descending(e) for e in shape.elements)
    if isinstance(shape, ArrayShape):
        return (
            shape.layout is None
            or shape.layout.minor_to_major == default_layout(shape.rank).minor_to_major
        )
    return True


def is_normalizable(shape: Shape) -> bool:
    """An array whose layout the passes know how to permute.

    Sparse layouts (``D(..)``), split configs and physical shapes tie extra data
    to dims; the passes leave such arrays alone.
    """
    if not isinstance(shape, ArrayShape):
        return False
    layout = shape.layout
    if layout is None:
        return True
    return not (layout.dim_levels or layout.split_configs or layout.physical_shape is not None)


def permute_dims(shape: ArrayShape, order: Sequence[int]) -> ArrayShape:
    """``shape`` with its dims listed in ``order`` and a descending layout.

    ``permute_dims(f32[2,3,4]{0,2,1}, (2,0,1))`` is ``f32[4,2,3]{2,1,0}``. The layout
    keeps its tiles and other properties; a shape without a layout stays without.
    """
    dims = tuple(shape.dims[d] for d in order)
    dynamic = tuple(shape.dynamic[d] for d in order) if shape.dynamic else ()
    layout = shape.layout
    if layout is not None:
        layout = dataclasses.replace(
            layout, minor_to_major=default_layout(shape.rank).minor_to_major
        )
    return ArrayShape(shape.element_type, dims, layout, dynamic)


def physical_shape(shape: ArrayShape) -> ArrayShape:
    """The physical-order shape (see the module docstring)."""
    return permute_dims(shape, physical_order(shape))


def with_minor_to_major(shape: ArrayShape, minor_to_major: Sequence[int]) -> ArrayShape:
    """``shape`` with another dim order, keeping the other layout properties."""
    layout = shape.effective_layout()
    return shape.with_layout(dataclasses.replace(layout, minor_to_major=tuple(minor_to_major)))


def inverse_permutation(perm: Sequence[int]) -> tuple[int, ...]:
    """``inverse[perm[i]] == i`` (``(2,0,1)`` -> ``(1,2,0)``)."""
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    return tuple(inverse)
