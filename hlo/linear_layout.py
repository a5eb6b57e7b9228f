"""Linear layouts over GF(2).

**Definition.** For power-of-two sizes, write every coordinate in binary. A
*linear layout* ``L`` maps named input coordinates (hardware: ``register``,
``lane``, ``warp``, or a memory ``offset``) to named output coordinates
(logical dims ``dim0``, ``dim1``, ...) and is linear under XOR:

    L(x ⊕ y) = L(x) ⊕ L(y).

So ``L`` is fixed by the images of the basis vectors ``x = 2^k`` of each
input; any other input is the XOR of the images of its set bits. Bit vectors
are Python ints throughout.

**Worked table** (the seed's example, inputs ``(t, w)`` in ``[0,4)²``)::

    L(0,1) = (0,1)    L(0,2) = (0,2)    L(1,0) = (1,1)    L(2,0) = (2,2)
    L(1,3) = L(1,0) ⊕ L(0,1) ⊕ L(0,2) = (1,1) ⊕ (0,1) ⊕ (0,2) = (1,2)

**Direction.** ``L`` goes from hardware (or address) to logical index. A
conversion between two layouts with the same outputs is ``L_dst⁻¹ ∘ L_src``:
source address bits to destination address bits.

**Products.** ``L1 * L2`` concatenates bits; where an input (output) name is
shared, ``L1`` takes the low bits and ``L2`` the high bits of the merged
coordinate: ``identity1D(4,"i","o") * zeros1D(2,"i","o")`` is ``x ↦ x mod 4``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from hlo.errors import LayoutError


def _log2(size: int, what: str) -> int:
    if size < 1 or size & (size - 1):
        raise LayoutError(f"{what} size {size} is not a power of two")
    return size.bit_length() - 1


@dataclass(frozen=True, slots=True)
class LinearLayout:
    """``bases[i][k]`` is the image of bit ``k`` of input ``ins[i]``: one int per output.

    ``ins``/``outs`` are ``(name, log2 size)`` pairs in order; the first
    input/output holds the low bits when everything is flattened.
    """

    ins: tuple[tuple[str, int], ...]
    outs: tuple[tuple[str, int], ...]
    bases: tuple[tuple[tuple[int, ...], ...], ...]

    def __post_init__(self) -> None:
        if len(self.bases) != len(self.ins):
            raise LayoutError("one list of bases per input dim is needed")
        for (name, bits), images in zip(self.ins, self.bases):
            if len(images) != bits:
                raise LayoutError(f"input '{name}' has {bits} bits but {len(images)} bases")
            for image in images:
                if len(image) != len(self.outs):
                    raise LayoutError(f"a basis image of '{name}' has {len(image)} values for "
                                      f"{len(self.outs)} outputs")
                for value, (out, out_bits) in zip(image, self.outs):
                    if not 0 <= value < (1 << out_bits):
                        raise LayoutError(f"basis value {value} is outside output '{out}' "
                                          f"of size {1 << out_bits}")

    # -- construction ------------------------------------------------------

    @staticmethod
    def from_bases(bases: Mapping[str, Sequence[Sequence[int]]],
                   out_sizes: Mapping[str, int]) -> LinearLayout:
        """``from_bases({"in1": [(1,0),(5,1),(2,2)]}, {"out1": 8, "out2": 4})``."""
        ins = tuple((name, len(images)) for name, images in bases.items())
        outs = tuple((name, _log2(size, f"output '{name}'")) for name, size in out_sizes.items())
        return LinearLayout(ins, outs, tuple(tuple(tuple(v) for v in images) for images in bases.values()))

    @staticmethod
    def empty() -> LinearLayout:
        return LinearLayout((), (), ())

    # -- reading -----------------------------------------------------------

    def in_size(self, name: str) -> int:
        return 1 << dict(self.ins)[name]

    def out_size(self, name: str) -> int:
        return 1 << dict(self.outs)[name]

    @property
    def total_in_bits(self) -> int:
        return sum(b for _, b in self.ins)

    @property
    def total_out_bits(self) -> int:
        return sum(b for _, b in self.outs)

    def apply(self, inputs: Mapping[str, int] | Sequence[int]) -> tuple[int, ...]:
        """``L(x)``: XOR of the images of the set bits of every input."""
        values = [inputs[name] for name, _ in self.ins] if isinstance(inputs, Mapping) else list(inputs)
        out = [0] * len(self.outs)
        for x, (name, bits), images in zip(values, self.ins, self.bases):
            if not 0 <= x < (1 << bits):
                raise LayoutError(f"input {name}={x} is outside [0, {1 << bits})")
            for k in range(bits):
                if x >> k & 1:
                    out = [o ^ v for o, v in zip(out, images[k])]
        return tuple(out)

    # -- the flattened matrix ----------------------------------------------

    def columns(self) -> list[int]:
        """The images of all input bits, flattened (first output = low bits)."""
        cols = []
        for images in self.bases:
            for image in images:
                flat, shift = 0, 0
                for value, (_, bits) in zip(image, self.outs):
                    flat |= value << shift
                    shift += bits
                cols.append(flat)
        return cols

    def apply_flat(self, x: int) -> int:
        y = 0
        for k, col in enumerate(self.columns()):
            if x >> k & 1:
                y ^= col
        return y

    def rank(self) -> int:
        return _rank(self.columns())

    def is_surjective(self) -> bool:
        return self.rank() == self.total_out_bits

    def is_injective(self) -> bool:
        return self.rank() == self.total_in_bits

    @staticmethod
    def _from_columns(ins, outs, cols: Sequence[int]) -> LinearLayout:
        bases, it = [], iter(cols)
        for _, bits in ins:
            images = []
            for _ in range(bits):
                flat = next(it)
                image = []
                for _, ob in outs:
                    image.append(flat & ((1 << ob) - 1))
                    flat >>= ob
                images.append(tuple(image))
            bases.append(tuple(images))
        return LinearLayout(tuple(ins), tuple(outs), tuple(bases))

    # -- algebra -----------------------------------------------------------

    def __mul__(self, other: LinearLayout) -> LinearLayout:
        """The product: concatenate bits; shared names merge, ``self`` low, ``other`` high."""
        ins = list(self.ins) + [(n, b) for n, b in other.ins if n not in dict(self.ins)]
        outs = list(self.outs) + [(n, b) for n, b in other.outs if n not in dict(self.outs)]
        in_bits = {n: dict(self.ins).get(n, 0) + dict(other.ins).get(n, 0) for n, _ in ins}
        out_bits = {n: dict(self.outs).get(n, 0) + dict(other.outs).get(n, 0) for n, _ in outs}
        shift = {n: dict(self.outs).get(n, 0) for n, _ in outs}
        mine = dict(zip((n for n, _ in self.ins), self.bases))
        theirs = dict(zip((n for n, _ in other.ins), other.bases))
        other_out = [n for n, _ in other.outs]
        self_out = [n for n, _ in self.outs]
        bases = []
        for name, _ in ins:
            images = []
            for image in mine.get(name, ()):
                vals = dict(zip(self_out, image))
                images.append(tuple(vals.get(n, 0) for n, _ in outs))
            for image in theirs.get(name, ()):
                vals = dict(zip(other_out, image))
                images.append(tuple(vals.get(n, 0) << shift[n] if n in vals else 0 for n, _ in outs))
            bases.append(tuple(images))
        return LinearLayout(tuple((n, in_bits[n]) for n, _ in ins),
                            tuple((n, out_bits[n]) for n, _ in outs), tuple(bases))

    def compose(self, inner: LinearLayout) -> LinearLayout:
        """``self ∘ inner``: ``inner``'s outputs must be ``self``'s inputs (names and sizes)."""
        if tuple(inner.outs) != tuple(self.ins):
            raise LayoutError(f"cannot compose: {inner.outs} feeds {self.ins}")
        cols = [self.apply_flat(c) for c in inner.columns()]
        return LinearLayout._from_columns(inner.ins, self.outs, cols)

    def invert(self) -> LinearLayout:
        """``L⁻¹`` of a bijective layout (outputs become inputs)."""
        cols = self.columns()
        n = self.total_in_bits
        if n != self.total_out_bits or _rank(cols) != n:
            raise LayoutError("only a bijective layout (square, full rank) has an inverse")
        # Solve L·x = e_j for every output bit j by Gaussian elimination over GF(2).
        rows = []  # row i: (bits of output i over the inputs, identity part)
        for i in range(n):
            row = 0
            for k, c in enumerate(cols):
                row |= (c >> i & 1) << k
            rows.append([row, 1 << i])
        for k in range(n):
            pivot = next(r for r in range(k, n) if rows[r][0] >> k & 1)
            rows[k], rows[pivot] = rows[pivot], rows[k]
            for r in range(n):
                if r != k and rows[r][0] >> k & 1:
                    rows[r][0] ^= rows[k][0]
                    rows[r][1] ^= rows[k][1]
        # rows[k] now says: input bit k = XOR of output bits in rows[k][1]
        inv_cols = []
        for j in range(n):
            col = 0
            for k in range(n):
                col |= (rows[k][1] >> j & 1) << k
            inv_cols.append(col)
        return LinearLayout._from_columns(self.outs, self.ins, inv_cols)

    def transpose_outs(self, names: Sequence[str]) -> LinearLayout:
        """The same map with its outputs reordered (changes only the flattening order)."""
        order = [[n for n, _ in self.outs].index(name) for name in names]
        outs = tuple(self.outs[i] for i in order)
        bases = tuple(tuple(tuple(img[i] for i in order) for img in images) for images in self.bases)
        return LinearLayout(self.ins, outs, bases)

    def table(self) -> dict[tuple[int, ...], tuple[int, ...]]:
        """Every input tuple -> output tuple (for small layouts and tests)."""
        import itertools

        ranges = [range(1 << b) for _, b in self.ins]
        return {x: self.apply(x) for x in itertools.product(*ranges)}


def _rank(vectors: Iterable[int]) -> int:
    basis: list[int] = []
    for v in vectors:
        for b in basis:
            v = min(v, v ^ b)
        if v:
            basis.append(v)
    return len(basis)


# ---------------------------------------------------------------------------
# The two atoms and the standard constructions
# ---------------------------------------------------------------------------


def identity1D(size: int, in_name: str, out_name: str) -> LinearLayout:
    """``x ↦ x`` on ``[0, size)``."""
    bits = _log2(size, "identity1D")
    return LinearLayout(((in_name, bits),), ((out_name, bits),), (tuple((1 << k,) for k in range(bits)),))


def zeros1D(size: int, in_name: str, out_name: str) -> LinearLayout:
    """``x ↦ 0`` on ``[0, size)``: an output of size 1 that ignores the input."""
    bits = _log2(size, "zeros1D")
    return LinearLayout(((in_name, bits),), ((out_name, 0),), (tuple((0,) for _ in range(bits)),))


def dim_names(rank: int) -> tuple[str, ...]:
    return tuple(f"dim{i}" for i in range(rank))


def identity_standard(in_name: str, shape: Sequence[int], order: Sequence[int]) -> LinearLayout:
    """Row/column-major enumeration of ``shape``: ``order[0]`` is the fastest dim."""
    names = dim_names(len(shape))
    out = LinearLayout.empty()
    for dim in order:
        out = out * identity1D(shape[dim], in_name, names[dim])
    return out.transpose_outs([n for n in names if n in dict(out.outs)])


def blocked(size_per_thread: Sequence[int], threads_per_warp: Sequence[int],
            warps_per_cta: Sequence[int], order: Sequence[int],
            shape: Sequence[int] | None = None) -> LinearLayout:
    """Triton's blocked layout: ``register × lane × warp`` -> ``dim0..``.

    With ``shape``, a tensor larger than one block repeats it in more register
    bits (wrap-around); a smaller one broadcasts (the surplus bits map to 0).
    """
    names = dim_names(len(order))
    layout = (identity_standard("register", size_per_thread, order)
              * identity_standard("lane", threads_per_warp, order)
              * identity_standard("warp", warps_per_cta, order))
    layout = layout.transpose_outs(names)
    if shape is not None:
        layout = fit_to_shape(layout, shape, order)
    return layout


def fit_to_shape(layout: LinearLayout, shape: Sequence[int], order: Sequence[int]) -> LinearLayout:
    """Wrap (more ``register`` bits) or broadcast (bits past the shape dropped) to ``shape``."""
    names = dim_names(len(shape))
    for dim in order:
        have = layout.out_size(names[dim])
        if shape[dim] > have:
            layout = layout * identity1D(shape[dim] // have, "register", names[dim])
    layout = layout.transpose_outs(names)
    limits = [_log2(s, "shape") for s in shape]
    bases = tuple(tuple(tuple(v & ((1 << lim) - 1) for v, lim in zip(img, limits)) for img in images)
                  for images in layout.bases)
    return LinearLayout(layout.ins, tuple((n, lim) for n, lim in zip(names, limits)), bases)


def swizzled_shared(shape: Sequence[int], vec: int, per_phase: int, max_phase: int,
                    order: Sequence[int] = (1, 0)) -> LinearLayout:
    """Shared-memory ``offset`` -> ``(dim0, dim1, ..)`` with XOR swizzling.

    Row ``i`` has phase ``⌊i/perPhase⌋ mod maxPhase``; column ``j`` is stored at
    ``(phase ⊕ ⌊j/vec⌋)·vec + j mod vec``. Dims beyond the first two of
    ``order`` are plain identity (outermost).
    """
    col_dim, row_dim = order[0], order[1]
    rows, cols = shape[row_dim], shape[col_dim]
    names = dim_names(len(shape))
    images = [(0, 1 << k) for k in range(_log2(cols, "columns"))]
    for k in range(_log2(rows, "rows")):
        row = 1 << k
        images.append((row, (vec * ((row // per_phase) % max_phase)) % cols))
    layout = LinearLayout((("offset", len(images)),),
                          ((names[row_dim], _log2(rows, "rows")), (names[col_dim], _log2(cols, "columns"))),
                          (tuple(images),))
    for dim in order[2:]:
        layout = layout * identity1D(shape[dim], "offset", names[dim])
    return layout.transpose_outs(names)
