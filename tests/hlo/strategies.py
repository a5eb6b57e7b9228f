"""Hypothesis strategies for shapes, layouts and tilings (small enough to brute-force)."""

from __future__ import annotations

from hypothesis import strategies as st

from hlo.shape import COMBINED, ArrayShape, Layout, Tile

ELEMENT_TYPES = ("f32", "bf16", "s8", "s4", "pred", "f64", "u16")


@st.composite
def dims(draw, min_rank: int = 0, max_rank: int = 4, max_size: int = 6, allow_zero: bool = False):
    rank = draw(st.integers(min_rank, max_rank))
    low = 0 if allow_zero else 1
    return tuple(draw(st.lists(st.integers(low, max_size), min_size=rank, max_size=rank)))


@st.composite
def minor_to_major(draw, rank: int):
    return tuple(draw(st.permutations(range(rank))))


@st.composite
def tile(draw, max_len: int, allow_combined: bool = True):
    """A tile of 1..max_len dims; '*' anywhere but last."""
    n = draw(st.integers(1, max_len))
    values = draw(st.lists(st.integers(1, 5), min_size=n, max_size=n))
    if allow_combined and n > 1:
        stars = draw(st.lists(st.booleans(), min_size=n - 1, max_size=n - 1))
        values = [COMBINED if s else v for v, s in zip(values[:-1], stars)] + values[-1:]
    return Tile(tuple(values))


@st.composite
def tiles(draw, rank: int, max_tiles: int = 3, allow_combined: bool = True):
    count = draw(st.integers(0, max_tiles))
    return tuple(draw(tile(rank + 2, allow_combined)) for _ in range(count))


@st.composite
def layouts(draw, rank: int, tiled: bool = True, allow_combined: bool = True,
            allow_properties: bool = True):
    mtm = draw(minor_to_major(rank))
    ts = draw(tiles(rank, allow_combined=allow_combined)) if tiled else ()
    align = draw(st.sampled_from((1, 1, 1, 3, 8))) if allow_properties else 1
    return Layout(mtm, tiles=ts, tail_padding_alignment=align)


@st.composite
def array_shapes(draw, tiled: bool = True, allow_combined: bool = True, allow_zero: bool = False,
                 max_rank: int = 4, element_types=ELEMENT_TYPES, allow_properties: bool = True):
    ds = draw(dims(max_rank=max_rank, allow_zero=allow_zero))
    element_type = draw(st.sampled_from(element_types))
    layout = draw(layouts(len(ds), tiled, allow_combined, allow_properties))
    shape = ArrayShape(element_type, ds, layout)
    # Keep the padded buffer small enough for the brute-force oracles.
    from hlo.tiling import physical_element_count

    if physical_element_count(shape) > 20_000:
        shape = ArrayShape(element_type, ds, layout.without_tiles())
    return shape
