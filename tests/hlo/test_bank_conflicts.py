"""Bank conflicts of a 32x32 f32 transpose: plain, +1 padded (XLA's 32x1x33), XOR-swizzled."""

from __future__ import annotations

from hlo.bank_conflicts import access_ways, swizzled_transpose_conflicts, transpose_conflicts
from hlo.linear_layout import swizzled_shared


def test_access_ways_counts_distinct_words_per_bank() -> None:
    assert access_ways([0, 4, 8]) == 1
    assert access_ways([0, 128, 256]) == 3          # same bank, three words
    assert access_ways([0, 0, 1, 2]) == 1           # same word: broadcast
    assert access_ways([]) == 0


def test_plain_tile_column_reads_are_32_way() -> None:
    plain = transpose_conflicts(32, 32, 4)
    assert plain.write_ways == 1 and plain.read_ways == 32
    assert plain.read_passes == 32 * 32


def test_padded_tile_is_conflict_free() -> None:
    padded = transpose_conflicts(32, 32, 4, padding=1)
    assert padded.conflict_free and padded.read_passes == 32
    assert padded.shared_bytes == 32 * 33 * 4      # tensor<32x1x33xf32>


def test_swizzled_tile_is_conflict_free_without_padding() -> None:
    swizzled = swizzled_transpose_conflicts(swizzled_shared((32, 32), vec=1, per_phase=1, max_phase=32))
    assert swizzled.conflict_free and swizzled.shared_bytes == 32 * 32 * 4


def test_a_weak_swizzle_only_divides_the_conflicts() -> None:
    # 4 phases: a column visits 4 distinct banks, 8 words each
    weak = swizzled_transpose_conflicts(swizzled_shared((32, 32), vec=1, per_phase=1, max_phase=4))
    assert weak.read_ways == 8 and weak.write_ways == 1


def test_wide_tiles_are_accessed_warp_by_warp() -> None:
    # f64 (8 bytes): a row of 32 spans 64 words -> 2-way on writes even unpadded;
    # a column's elements all start in bank 0 -> 32-way; +1 padding shifts by 2 banks
    wide = transpose_conflicts(32, 32, 8)
    assert wide.write_ways == 2 and wide.read_ways == 32
    assert transpose_conflicts(32, 32, 8, padding=1).read_ways == 2
    # 64 rows are read by two warps, each conflict-free when padded
    tall = transpose_conflicts(64, 32, 4, padding=1)
    assert tall.read_ways == 1 and tall.read_passes == 64
