"""Linear layouts over GF(2) against explicit tables and brute force."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hlo.errors import LayoutError
from hlo.linear_layout import (
    LinearLayout,
    blocked,
    identity1D,
    identity_standard,
    swizzled_shared,
    zeros1D,
)

SETTINGS = settings(max_examples=150, deadline=None)


@st.composite
def layouts(draw, ins=("i", "j"), outs=("o", "p")):
    in_bits = {n: draw(st.integers(0, 3)) for n in draw(st.lists(st.sampled_from(ins), min_size=1, max_size=2, unique=True))}
    out_bits = {n: draw(st.integers(0, 3)) for n in draw(st.lists(st.sampled_from(outs), min_size=1, max_size=2, unique=True))}
    bases = {n: [tuple(draw(st.integers(0, (1 << ob) - 1)) for ob in out_bits.values()) for _ in range(b)]
             for n, b in in_bits.items()}
    return LinearLayout.from_bases(bases, {n: 1 << b for n, b in out_bits.items()})


def test_seed_basis_example() -> None:
    layout = LinearLayout.from_bases({"t": [(1, 1), (2, 2)], "w": [(0, 1), (0, 2)]}, {"o0": 4, "o1": 4})
    assert layout.apply({"t": 1, "w": 3}) == (1, 2)


@SETTINGS
@given(layouts(), st.data())
def test_linearity(layout, data) -> None:
    sizes = [1 << b for _, b in layout.ins]
    x = [data.draw(st.integers(0, s - 1)) for s in sizes]
    y = [data.draw(st.integers(0, s - 1)) for s in sizes]
    xy = [a ^ b for a, b in zip(x, y)]
    assert layout.apply(xy) == tuple(a ^ b for a, b in zip(layout.apply(x), layout.apply(y)))


@SETTINGS
@given(layouts(), layouts())
def test_product_naming_rules(a, b) -> None:
    """Shared names merge with the left factor in the low bits; others concatenate."""
    prod = a * b
    a_in, b_in, a_out = dict(a.ins), dict(b.ins), dict(a.outs)
    for x in itertools.product(*[range(1 << bits) for _, bits in prod.ins]):
        named = dict(zip([n for n, _ in prod.ins], x))
        xa = {n: named[n] & ((1 << a_in[n]) - 1) for n in a_in}
        xb = {n: named[n] >> a_in.get(n, 0) for n in b_in}
        ya = dict(zip([n for n, _ in a.outs], a.apply(xa)))
        yb = dict(zip([n for n, _ in b.outs], b.apply(xb)))
        expected = tuple(ya.get(n, 0) | (yb.get(n, 0) << a_out.get(n, 0)) for n, _ in prod.outs)
        assert prod.apply(named) == expected


def test_seed_product_examples() -> None:
    div4 = zeros1D(4, "i", "o") * identity1D(2, "i", "o")
    mod4 = identity1D(4, "i", "o") * zeros1D(2, "i", "o")
    assert [div4.apply((x,))[0] for x in range(8)] == [x // 4 for x in range(8)]
    assert [mod4.apply((x,))[0] for x in range(8)] == [x % 4 for x in range(8)]
    split = identity1D(4, "i", "o1") * identity1D(8, "i", "o2")
    assert all(split.apply((x,)) == (x % 4, x // 4) for x in range(32))


@SETTINGS
@given(st.data())
def test_compose_and_invert(data) -> None:
    bits = data.draw(st.integers(1, 5))
    perm_cols = data.draw(st.permutations([1 << k for k in range(bits)]))
    # a random invertible matrix: permutation times random lower-unitriangular XORs
    cols = list(perm_cols)
    for k in range(bits):
        for m in range(k):
            if data.draw(st.booleans()):
                cols[k] ^= cols[m]
    a = LinearLayout((("x", bits),), (("y", bits),), (tuple((c,) for c in cols),))
    inv = a.invert()
    for x in range(1 << bits):
        assert inv.apply(a.apply((x,)))[0] == x
    twice = a.compose(LinearLayout((("w", bits),), (("x", bits),), a.bases))
    for x in range(1 << bits):
        assert twice.apply((x,)) == a.apply(a.apply((x,)))


def test_invert_rejects_singular() -> None:
    with pytest.raises(LayoutError, match="bijective"):
        (identity1D(4, "i", "o") * zeros1D(2, "i", "o")).invert()


SWIZZLE_8x4 = [
    [0, 1, 2, 3], [4, 5, 6, 7], [9, 8, 11, 10], [13, 12, 15, 14],
    [16, 17, 18, 19], [20, 21, 22, 23], [25, 24, 27, 26], [29, 28, 31, 30],
]
SWIZZLE_4x8 = [
    [0, 1, 2, 3, 4, 5, 6, 7],
    [10, 11, 8, 9, 14, 15, 12, 13],
    [20, 21, 22, 23, 16, 17, 18, 19],
    [30, 31, 28, 29, 26, 27, 24, 25],
]


@pytest.mark.parametrize(("shape", "vec", "per_phase", "max_phase", "table"),
                         [((8, 4), 1, 2, 2, SWIZZLE_8x4), ((4, 8), 2, 1, 4, SWIZZLE_4x8)])
def test_seed_swizzle_tables(shape, vec, per_phase, max_phase, table) -> None:
    layout = swizzled_shared(shape, vec, per_phase, max_phase)
    for offset in range(shape[0] * shape[1]):
        i, j = layout.apply((offset,))
        assert table[i][j] == offset


@SETTINGS
@given(st.sampled_from([2, 4, 8, 16]), st.sampled_from([2, 4, 8, 16]), st.sampled_from([1, 2, 4]),
       st.sampled_from([1, 2, 4]), st.sampled_from([1, 2, 4, 8]))
def test_swizzle_matches_formula(rows, cols, vec, per_phase, max_phase) -> None:
    layout = swizzled_shared((rows, cols), vec, per_phase, max_phase)
    for i in range(rows):
        phase = (i // per_phase) % max_phase
        for j in range(cols):
            k = i * cols + j % vec + (((phase ^ (j // vec)) * vec) % cols)
            assert layout.apply((k,)) == (i, j)


@SETTINGS
@given(st.data())
def test_blocked_matches_explicit_enumeration(data) -> None:
    rank = 2
    spt = [data.draw(st.sampled_from([1, 2, 4])) for _ in range(rank)]
    tpw = [data.draw(st.sampled_from([1, 2, 4, 8])) for _ in range(rank)]
    wpc = [data.draw(st.sampled_from([1, 2])) for _ in range(rank)]
    order = data.draw(st.permutations(range(rank)))
    layout = blocked(spt, tpw, wpc, order)

    def unravel(x, sizes):
        coords = [0] * rank
        for dim in order:  # order[0] fastest
            coords[dim] = x % sizes[dim]
            x //= sizes[dim]
        return coords

    for r, lane, w in itertools.product(range(np.prod(spt)), range(np.prod(tpw)), range(np.prod(wpc))):
        cr, cl, cw = unravel(r, spt), unravel(lane, tpw), unravel(w, wpc)
        expected = tuple(cw[d] * tpw[d] * spt[d] + cl[d] * spt[d] + cr[d] for d in range(rank))
        assert layout.apply({"register": r, "lane": lane, "warp": w}) == expected


def test_seed_blocked_example() -> None:
    layout = blocked((2, 2), (8, 4), (1, 2), (1, 0))
    owner = np.zeros((16, 16), dtype=int)
    for r, lane, w in itertools.product(range(4), range(32), range(2)):
        i, j = layout.apply({"register": r, "lane": lane, "warp": w})
        owner[i, j] = 32 * w + lane
    assert list(owner[0, :]) == [0, 0, 1, 1, 2, 2, 3, 3, 32, 32, 33, 33, 34, 34, 35, 35]
    assert list(owner[2, :8]) == [4, 4, 5, 5, 6, 6, 7, 7]
    assert list(owner[15, 8:]) == [60, 60, 61, 61, 62, 62, 63, 63]


def test_identity_standard_orders() -> None:
    col_major = identity_standard("offset", (4, 4), (0, 1))
    assert [col_major.apply((k,)) for k in range(5)] == [(0, 0), (1, 0), (2, 0), (3, 0), (0, 1)]

