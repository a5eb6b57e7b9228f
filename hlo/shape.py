"""Shapes and layouts as immutable, validated values.

Vocabulary (used everywhere in the project):

* ``dim`` is a *logical* dimension of an array, ``position`` a *physical* one.
* ``minor_to_major`` lists logical dims from the fastest-varying to the slowest,
  exactly as the HLO text prints it. ``f32[8,100,100,3]{3,0,2,1}``: dim 3 is
  fastest, then dim 0, then dim 2, and dim 1 is slowest.
* The default layout is descending: ``{r-1, ..., 1, 0}`` (row-major).

A :class:`Layout` carries every property of the text syntax, in the fixed print
order ``{mtm:D(..)T(..)..L(n)#(t)*(t)E(n)S(n)SC(..)P(shape)M(n)}``. Validation
against a shape (rank, permutation, tile rules) happens in
:func:`ArrayShape.__post_init__`; the layout alone only checks what it can know
without a shape.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from hlo.errors import LayoutError

# ---------------------------------------------------------------------------
# Element types
# ---------------------------------------------------------------------------

#: Storage width in bits of every array element type the text format knows.
#: ``pred`` occupies a byte in memory (as in XLA); sub-byte types pack unless a
#: layout's ``E(n)`` says otherwise.
ELEMENT_BITS: Final[dict[str, int]] = {
    "pred": 8,
    "s1": 1, "s2": 2, "s4": 4, "s8": 8, "s16": 16, "s32": 32, "s64": 64,
    "u1": 1, "u2": 2, "u4": 4, "u8": 8, "u16": 16, "u32": 32, "u64": 64,
    "f16": 16, "bf16": 16, "f32": 32, "f64": 64,
    "c64": 64, "c128": 128,
    "f4e2m1fn": 4,
    "f8e3m4": 8, "f8e4m3": 8, "f8e4m3fn": 8, "f8e4m3b11fnuz": 8,
    "f8e4m3fnuz": 8, "f8e5m2": 8, "f8e5m2fnuz": 8, "f8e8m0fnu": 8,
}

#: Integer element types (for index-typed layout properties ``#(..)``/``*(..)``).
INTEGER_TYPES: Final[frozenset[str]] = frozenset(
    t for t in ELEMENT_BITS if t[0] in "su" and t[1:].isdigit()
)


def element_bits(element_type: str) -> int:
    """Storage width of ``element_type`` in bits (``bf16`` -> 16)."""
    try:
        return ELEMENT_BITS[element_type]
    except KeyError:
        raise LayoutError(f"unknown element type '{element_type}'") from None


def element_bytes(element_type: str) -> int:
    """Bytes one element of ``element_type`` takes in a stride, at least 1 (``pred`` -> 1)."""
    return max(1, element_bits(element_type) // 8)


#: The largest byte size of an array: XLA's shape validation requires the element count, and that
#: count times the element's byte width, to fit in int64 (``ShapeUtil::ValidateShape``: "size may
#: overflow int64_t"); every size and cost computed from such a shape then fits too.
MAX_ARRAY_BYTES: Final[int] = 2**63 - 1


def _check_size(shape: ArrayShape) -> None:
    """Reject ``shape`` when its element count or byte size would overflow int64, as XLA does.

    Bounded dynamic dims count at their bound; unbounded ones (``?``) are skipped. The byte width of
    a sub-byte type is one byte here, as in XLA's check.
    """
    count = 1
    for i, d in enumerate(shape.dims):
        if d == UNBOUNDED and shape.is_dynamic(i):
            continue
        count *= d
    width = max(1, (element_bits(shape.element_type) + 7) // 8)
    if count > MAX_ARRAY_BYTES or count * width > MAX_ARRAY_BYTES:
        dims = ",".join(str(d) for d in shape.dims)
        raise LayoutError(f"shape {shape.element_type}[{dims}] size may overflow int64 "
                          f"({count} elements of {width} byte(s); at most {MAX_ARRAY_BYTES} bytes)")


# ---------------------------------------------------------------------------
# Layout properties
# ---------------------------------------------------------------------------

#: The combined-dimension marker ``*`` inside a tile: ``T(2,*,128)``. Such a dim
#: is merged into the next more-minor dim before tiling.
COMBINED: Final[int] = -1


@dataclass(frozen=True, slots=True)
class Tile:
    """One tile of a tiled layout, e.g. ``(8,128)``; ``COMBINED`` stands for ``*``.

    Tile dims cover the most-minor *physical* positions, in major-to-minor order
    like shape dims: ``T(8,128)`` tiles the second-minor position by 8 and the
    minor position by 128.
    """

    dims: tuple[int, ...]

    def __post_init__(self) -> None:
        if not self.dims:
            raise LayoutError("a tile needs at least one dimension")
        for d in self.dims:
            if d != COMBINED and d < 1:
                raise LayoutError(f"tile dimension {d} in {self.dims} must be positive or '*'")

    def __str__(self) -> str:
        return "(" + ",".join("*" if d == COMBINED else str(d) for d in self.dims) + ")"


@dataclass(frozen=True, slots=True)
class SplitConfig:
    """``SC(dim:i,j)``: physical ``dimension`` is split at ``split_indices``."""

    dimension: int
    split_indices: tuple[int, ...]

    def __str__(self) -> str:
        return f"({self.dimension}:{','.join(map(str, self.split_indices))})"


#: Sparse dim level types: dense, compressed, singleton, loose-compressed.
DIM_LEVEL_TYPES: Final[frozenset[str]] = frozenset({"D", "C", "S", "H"})


@dataclass(frozen=True, slots=True)
class DimLevel:
    """One entry of ``D(..)``: a level type with ``+`` (not unique) / ``~`` (not ordered)."""

    kind: str
    unique: bool = True
    ordered: bool = True

    def __post_init__(self) -> None:
        if self.kind not in DIM_LEVEL_TYPES:
            raise LayoutError(f"unknown dim level type '{self.kind}'")

    def __str__(self) -> str:
        return self.kind + ("" if self.unique else "+") + ("" if self.ordered else "~")


@dataclass(frozen=True, slots=True)
class Layout:
    """A physical layout: dimension order plus the optional layout properties.

    ``Layout((1, 0))`` is ``{1,0}``; ``Layout((1, 0), tiles=(Tile((8, 128)), Tile((2, 1))))``
    is the TPU bf16 format ``{1,0:T(8,128)(2,1)}``.
    """

    minor_to_major: tuple[int, ...]
    dim_levels: tuple[DimLevel, ...] = ()
    tiles: tuple[Tile, ...] = ()
    tail_padding_alignment: int = 1
    index_type: str | None = None
    pointer_type: str | None = None
    element_size_bits: int = 0
    memory_space: int = 0
    split_configs: tuple[SplitConfig, ...] = ()
    physical_shape: ArrayShape | None = None
    dynamic_metadata_prefix_bytes: int = 0

    def __post_init__(self) -> None:
        mtm = self.minor_to_major
        if sorted(mtm) != list(range(len(mtm))):
            raise LayoutError(
                f"minor_to_major {{{','.join(map(str, mtm))}}} is not a permutation "
                f"of 0..{len(mtm) - 1}"
            )
        if self.tail_padding_alignment < 1:
            raise LayoutError(f"L({self.tail_padding_alignment}) must be at least 1")
        if self.element_size_bits < 0:
            raise LayoutError(f"E({self.element_size_bits}) must not be negative")
        if self.memory_space < 0:
            raise LayoutError(f"S({self.memory_space}) must not be negative")
        if self.dynamic_metadata_prefix_bytes < 0:
            raise LayoutError(f"M({self.dynamic_metadata_prefix_bytes}) must not be negative")
        for name, t in (("#", self.index_type), ("*", self.pointer_type)):
            if t is not None and t not in INTEGER_TYPES:
                raise LayoutError(f"{name}({t}) must name an integer type")
        if self.dim_levels and len(self.dim_levels) != len(mtm):
            raise LayoutError(
                f"D(..) has {len(self.dim_levels)} entries for a rank-{len(mtm)} layout"
            )

    @property
    def rank(self) -> int:
        return len(self.minor_to_major)

    @property
    def is_sparse(self) -> bool:
        return any(level.kind != "D" for level in self.dim_levels)

    @property
    def is_tiled(self) -> bool:
        return bool(self.tiles)

    def major_to_minor(self) -> tuple[int, ...]:
        """Logical dims from slowest to fastest (``{3,0,2,1}`` -> ``(1,2,0,3)``)."""
        return tuple(reversed(self.minor_to_major))

    def without_tiles(self) -> Layout:
        return Layout(self.minor_to_major)

    def __str__(self) -> str:
        text = ",".join(map(str, self.minor_to_major))
        props = []
        if self.dim_levels:
            props.append("D(" + ",".join(map(str, self.dim_levels)) + ")")
        if self.tiles:
            props.append("T" + "".join(map(str, self.tiles)))
        if self.tail_padding_alignment != 1:
            props.append(f"L({self.tail_padding_alignment})")
        if self.index_type is not None:
            props.append(f"#({self.index_type})")
        if self.pointer_type is not None:
            props.append(f"*({self.pointer_type})")
        if self.element_size_bits:
            props.append(f"E({self.element_size_bits})")
        if self.memory_space:
            props.append(f"S({self.memory_space})")
        if self.split_configs:
            props.append("SC" + "".join(map(str, self.split_configs)))
        if self.physical_shape is not None:
            props.append(f"P({self.physical_shape})")
        if self.dynamic_metadata_prefix_bytes:
            props.append(f"M({self.dynamic_metadata_prefix_bytes})")
        if props:
            text += ":" + "".join(props)
        return "{" + text + "}"


def default_layout(rank: int) -> Layout:
    """The descending (row-major) layout: ``default_layout(3)`` is ``{2,1,0}``."""
    return Layout(tuple(range(rank - 1, -1, -1)))


def minor_to_major_from_major_to_minor(order: tuple[int, ...] | list[int]) -> tuple[int, ...]:
    """Turn a slowest-first dim order into ``minor_to_major`` (``(1,2,0,3)`` -> ``(3,0,2,1)``)."""
    return tuple(reversed(tuple(order)))


# ---------------------------------------------------------------------------
# Shapes
# ---------------------------------------------------------------------------

#: Size of an unbounded dynamic dimension ``?`` (its bound is unknown).
UNBOUNDED: Final[int] = -1


@dataclass(frozen=True, slots=True)
class ArrayShape:
    """A dense (or sparse) array: ``f32[8,<=16,?]{2,1,0}``.

    ``dims`` holds sizes; a bounded dynamic dim ``<=N`` has size ``N`` and
    ``dynamic[i]`` set; an unbounded one ``?`` has size :data:`UNBOUNDED`.
    ``layout`` is ``None`` when the text wrote none (for an entry layout, AUTO).
    """

    element_type: str
    dims: tuple[int, ...]
    layout: Layout | None = None
    dynamic: tuple[bool, ...] = field(default=())

    def __post_init__(self) -> None:
        element_bits(self.element_type)
        if self.dynamic and len(self.dynamic) != len(self.dims):
            raise LayoutError("dynamic flags must match the number of dims")
        for i, d in enumerate(self.dims):
            if d == UNBOUNDED and self.is_dynamic(i):
                continue
            if d < 0:
                raise LayoutError(f"dimension {i} of {self.element_type} has negative size {d}")
        _check_size(self)
        if self.layout is not None and self.layout.rank != len(self.dims):
            raise LayoutError(
                f"Dimensions size is {len(self.dims)}, but minor to major size is "
                f"{self.layout.rank}."
            )
        if self.layout is not None and self.layout.physical_shape is not None and not self.layout.is_sparse:
            # As XLA's shape validation: a layout may carry P(..), a valid dense shape may not.
            raise LayoutError("Layout has physical shape, but is not for a sparse array")

    @property
    def rank(self) -> int:
        return len(self.dims)

    def is_dynamic(self, dim: int) -> bool:
        return bool(self.dynamic) and self.dynamic[dim]

    @property
    def element_count(self) -> int:
        n = 1
        for d in self.dims:
            n *= max(d, 0)
        return n

    def effective_layout(self) -> Layout:
        """The written layout, or the default one when none was written."""
        return self.layout if self.layout is not None else default_layout(self.rank)

    def with_layout(self, layout: Layout | None) -> ArrayShape:
        return ArrayShape(self.element_type, self.dims, layout, self.dynamic)

    def dims_text(self) -> str:
        parts = []
        for i, d in enumerate(self.dims):
            if d == UNBOUNDED and self.is_dynamic(i):
                parts.append("?")
            elif self.is_dynamic(i):
                parts.append(f"<={d}")
            else:
                parts.append(str(d))
        return f"{self.element_type}[{','.join(parts)}]"

    def __str__(self) -> str:
        # XLA omits the layout of scalars; everything else prints it when present.
        if self.layout is None or (self.rank == 0 and str(self.layout) == "{}"):
            return self.dims_text()
        return self.dims_text() + str(self.layout)


@dataclass(frozen=True, slots=True)
class TupleShape:
    """``(f32[2], (s32[], token[]))``."""

    elements: tuple[Shape, ...]

    def __str__(self) -> str:
        # XLA marks every fifth element with its index so long tuples stay readable.
        parts = [
            (f"/*index={i}*/" if i and i % 5 == 0 else "") + str(e)
            for i, e in enumerate(self.elements)
        ]
        return "(" + ", ".join(parts) + ")"


@dataclass(frozen=True, slots=True)
class TokenShape:
    def __str__(self) -> str:
        return "token[]"


@dataclass(frozen=True, slots=True)
class OpaqueShape:
    def __str__(self) -> str:
        return "opaque[]"


@dataclass(frozen=True, slots=True)
class BufferShape:
    """``b(f32[8,16]{1,0})``: an array viewed as a buffer."""

    array: ArrayShape

    def __str__(self) -> str:
        return f"b({self.array})"


Shape = ArrayShape | TupleShape | TokenShape | OpaqueShape | BufferShape


def leaf_arrays(shape: Shape) -> list[tuple[tuple[int, ...], ArrayShape]]:
    """Every array inside ``shape`` with its tuple index path, in order."""
    if isinstance(shape, ArrayShape):
        return [((), shape)]
    if isinstance(shape, TupleShape):
        out: list[tuple[tuple[int, ...], ArrayShape]] = []
        for i, element in enumerate(shape.elements):
            out.extend(((i, *path), a) for path, a in leaf_arrays(element))
        return out
    if isinstance(shape, BufferShape):
        return [((), shape.array)]
    return []


def subshape(shape: Shape, index: tuple[int, ...]) -> Shape:
    """The shape at tuple ``index`` (``()`` is the shape itself)."""
    for i in index:
        if not isinstance(shape, TupleShape) or not 0 <= i < len(shape.elements):
            raise LayoutError(f"tuple index {index} does not exist in {shape}")
        shape = shape.elements[i]
    return shape
