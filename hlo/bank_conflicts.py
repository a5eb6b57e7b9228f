"""Shared-memory bank conflicts of a GPU tiled transpose, and what they cost.

Shared memory has 32 banks of 4-byte words: ``bank = (address / 4) mod 32``.
One warp access is served in as many passes ("ways") as the largest number of
*distinct* words any one bank must deliver (threads reading the same word
share it). A 2-D transpose through shared memory writes a tile by rows
(coalesced global reads) and reads it by columns (coalesced global writes):

* plain ``32×32`` f32 tile: a column lives in one bank -> 32-way conflicts;
* padded ``32×33`` (XLA's ``tensor<32x1x33xf32>``): row ``i`` shifts by ``i``
  banks -> conflict-free;
* XOR-swizzled (``j ↦ i ⊕ j``, a :func:`hlo.linear_layout.swizzled_shared`
  layout): every column hits 32 different banks -> conflict-free, no padding.

Worked table (32×32 tile, passes taken over passes needed, :attr:`TransposeConflicts.slowdown`):

=============  ======  ======  ======  ======  ======
element bytes     1       2       4       8      16
=============  ======  ======  ======  ======  ======
no padding      4.5     8.5    16.5     8.5     4.5
+1 padding      1.375   1.25    1.0     1.0     1.0
=============  ======  ======  ======  ======  ======

The gpu target prices a transpose that moves the minor dims through its
:class:`hlo.target.SharedStaging` (:func:`staging_factor`): the staging takes
``slowdown`` times the shared-memory passes its bytes need, which costs time only where that
makes shared memory slower than global memory.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache

from hlo.linear_layout import LinearLayout, swizzled_shared
from hlo.target import SharedStaging

BANKS = 32
BANK_BYTES = 4
WARP = 32


def access_ways(addresses: Iterable[int], element_bytes: int = 4, banks: int = BANKS,
                bank_bytes: int = BANK_BYTES) -> int:
    """Passes one warp access needs: max over banks of distinct words in that bank
    (an element wider than a word occupies several consecutive words)."""
    words_per_bank: dict[int, set[int]] = {}
    for address in addresses:
        for word in range(address // bank_bytes, (address + element_bytes - 1) // bank_bytes + 1):
            words_per_bank.setdefault(word % banks, set()).add(word)
    return max((len(w) for w in words_per_bank.values()), default=0)


@dataclass(frozen=True, slots=True)
class TransposeConflicts:
    """Worst and total passes of the row writes and the column reads of one tile, and the
    passes those accesses need at the least (a warp access of more bytes than one pass of
    all banks delivers needs several however it is laid out: 32 lanes of f64 need 2)."""

    write_ways: int
    read_ways: int
    write_passes: int
    read_passes: int
    shared_bytes: int
    ideal_passes: int = 0

    @property
    def conflict_free(self) -> bool:
        return self.write_passes + self.read_passes <= self.ideal_passes

    @property
    def slowdown(self) -> float:
        """Passes taken over passes needed: 1.0 when conflict-free; 16.5 for a plain 32×32
        f32 tile, whose 32 row writes take one pass each and 32 column reads 32 each:
        ``(32 + 32·32) / (32 + 32)``."""
        return (self.write_passes + self.read_passes) / self.ideal_passes


def _tile_conflicts(rows: int, cols: int, element_bytes: int,
                    address: Callable[[int, int], int], shared_bytes: int, *, warp: int = WARP,
                    banks: int = BANKS, bank_bytes: int = BANK_BYTES) -> TransposeConflicts:
    # one warp access = ``warp`` consecutive elements of a row (write) or a column (read)
    def ways(points: list[tuple[int, int]]) -> int:
        return access_ways((address(i, j) for i, j in points), element_bytes, banks, bank_bytes)

    def needed(lanes: int) -> int:
        return -(-lanes * element_bytes // (banks * bank_bytes))

    row_accesses = [[(i, j) for j in range(j0, min(j0 + warp, cols))]
                    for i in range(rows) for j0 in range(0, cols, warp)]
    column_accesses = [[(i, j) for i in range(i0, min(i0 + warp, rows))]
                       for j in range(cols) for i0 in range(0, rows, warp)]
    writes = [ways(a) for a in row_accesses]
    reads = [ways(a) for a in column_accesses]
    ideal = sum(needed(len(a)) for a in row_accesses + column_accesses)
    return TransposeConflicts(max(writes), max(reads), sum(writes), sum(reads), shared_bytes,
                              ideal)


def transpose_conflicts(rows: int = 32, cols: int = 32, element_bytes: int = 4, *,
                        padding: int = 0, warp: int = WARP, banks: int = BANKS,
                        bank_bytes: int = BANK_BYTES) -> TransposeConflicts:
    """A row-major shared tile with ``padding`` extra elements per row (``+1`` in XLA)."""
    pitch = cols + padding
    return _tile_conflicts(rows, cols, element_bytes, lambda i, j: (i * pitch + j) * element_bytes,
                           rows * pitch * element_bytes, warp=warp, banks=banks,
                           bank_bytes=bank_bytes)


def swizzled_transpose_conflicts(layout: LinearLayout, element_bytes: int = 4, *,
                                 warp: int = WARP, banks: int = BANKS,
                                 bank_bytes: int = BANK_BYTES) -> TransposeConflicts:
    """A shared tile placed by a swizzled layout (``offset`` -> ``(dim0, dim1)``)."""
    placement = layout.invert()  # (dim0, dim1) -> offset
    rows, cols = layout.out_size("dim0"), layout.out_size("dim1")
    return _tile_conflicts(rows, cols, element_bytes,
                           lambda i, j: placement.apply((i, j))[0] * element_bytes,
                           rows * cols * element_bytes, warp=warp, banks=banks,
                           bank_bytes=bank_bytes)


@lru_cache(maxsize=256)
def staging_conflicts(staging: SharedStaging, element_bytes: int) -> TransposeConflicts:
    """The conflicts of a target's shared-memory staging (:class:`hlo.target.SharedStaging`)
    for elements of ``element_bytes``."""
    if staging.swizzle_phases:
        layout = swizzled_shared((staging.rows, staging.cols), vec=1, per_phase=1,
                                 max_phase=staging.swizzle_phases)
        return swizzled_transpose_conflicts(layout, element_bytes, warp=staging.warp,
                                            banks=staging.banks, bank_bytes=staging.bank_bytes)
    return transpose_conflicts(staging.rows, staging.cols, element_bytes,
                               padding=staging.padding, warp=staging.warp, banks=staging.banks,
                               bank_bytes=staging.bank_bytes)


def staging_factor(staging: SharedStaging, element_bytes: int,
                   memory_bandwidth_gb_per_s: float) -> tuple[float, TransposeConflicts]:
    """How many times a transpose staged through ``staging`` costs its global-memory pass:
    the staging's shared-memory time, ``slowdown`` passes at shared-memory bandwidth, over
    the pass at ``memory_bandwidth_gb_per_s``, and at least 1 (the two overlap; the slower
    one bounds the kernel). Example: a plain 32×32 f32 tile on a GPU whose shared memory is
    8.84 times as fast as its HBM: ``16.5 / 8.84 = 1.87``."""
    conflicts = staging_conflicts(staging, element_bytes)
    ratio = memory_bandwidth_gb_per_s / staging.bandwidth_gb_per_s
    return max(1.0, conflicts.slowdown * ratio), conflicts
