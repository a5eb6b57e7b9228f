"""Shared-memory bank conflicts of a GPU tiled transpose.

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
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from hlo.linear_layout import LinearLayout

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
    """Worst and total passes of the row writes and the column reads of one tile."""

    write_ways: int
    read_ways: int
    write_passes: int
    read_passes: int
    shared_bytes: int

    @property
    def conflict_free(self) -> bool:
        return self.write_ways <= 1 and self.read_ways <= 1


def _tile_conflicts(rows: int, cols: int, element_bytes: int,
                    address: Callable[[int, int], int], shared_bytes: int) -> TransposeConflicts:
    # one warp access = WARP consecutive elements of a row (write) or a column (read)
    writes = [access_ways((address(i, j) for j in range(j0, min(j0 + WARP, cols))), element_bytes)
              for i in range(rows) for j0 in range(0, cols, WARP)]
    reads = [access_ways((address(i, j) for i in range(i0, min(i0 + WARP, rows))), element_bytes)
             for j in range(cols) for i0 in range(0, rows, WARP)]
    return TransposeConflicts(max(writes), max(reads), sum(writes), sum(reads), shared_bytes)


def transpose_conflicts(rows: int = 32, cols: int = 32, element_bytes: int = 4, *,
                        padding: int = 0) -> TransposeConflicts:
    """A row-major shared tile with ``padding`` extra elements per row (``+1`` in XLA)."""
    pitch = cols + padding
    return _tile_conflicts(rows, cols, element_bytes, lambda i, j: (i * pitch + j) * element_bytes,
                           rows * pitch * element_bytes)


def swizzled_transpose_conflicts(layout: LinearLayout, element_bytes: int = 4) -> TransposeConflicts:
    """A shared tile placed by a swizzled layout (``offset`` -> ``(dim0, dim1)``)."""
    placement = layout.invert()  # (dim0, dim1) -> offset
    rows, cols = layout.out_size("dim0"), layout.out_size("dim1")
    return _tile_conflicts(rows, cols, element_bytes,
                           lambda i, j: placement.apply((i, j))[0] * element_bytes,
                           rows * cols * element_bytes)
