"""Bank conflicts of a 32x32 transpose: plain, +1 padded (XLA's 32x1x33), XOR-swizzled; checked
against a brute-force count, and priced in the gpu target's transposes."""

from __future__ import annotations

import math
import tomllib
from importlib import resources

import pytest

from hlo.bank_conflicts import (
    access_ways,
    staging_conflicts,
    swizzled_transpose_conflicts,
    transpose_conflicts,
)
from hlo.linear_layout import swizzled_shared
from hlo.parser import parse_shape
from hlo.target import SharedStaging, Target, load_target
from solver.layout_assignment.costs import CostModel


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


# ---------------------------------------------------------------------------
# Against a brute-force count, and priced in the gpu target's transposes
# ---------------------------------------------------------------------------


def _brute_force(rows: int, cols: int, ebytes: int, place) -> tuple[int, int]:
    """(passes taken, passes needed) of writing the tile by rows and reading it by columns,
    32 lanes per warp access, 32 banks of 4 bytes: per access, each bank serves its distinct
    4-byte words one per pass (lanes reading the same word share it); an access of B bytes
    needs ceil(B / 128) passes at least. Every byte of every element is visited."""
    taken = needed = 0
    accesses = [[(i, j) for j in range(j0, min(j0 + 32, cols))]
                for i in range(rows) for j0 in range(0, cols, 32)]
    accesses += [[(i, j) for i in range(i0, min(i0 + 32, rows))]
                 for j in range(cols) for i0 in range(0, rows, 32)]
    for access in accesses:
        words = {byte // 4 for i, j in access
                 for byte in range(place(i, j) * ebytes, (place(i, j) + 1) * ebytes)}
        per_bank = [sum(1 for w in words if w % 32 == bank) for bank in range(32)]
        taken += max(per_bank)
        needed += -(-len(access) * ebytes // 128)
    return taken, needed


@pytest.mark.parametrize("ebytes", [1, 2, 4, 8])
@pytest.mark.parametrize("padding", [0, 1, 2])
def test_padded_tiles_match_a_brute_force_count(ebytes: int, padding: int) -> None:
    counted = transpose_conflicts(32, 32, ebytes, padding=padding)
    taken, needed = _brute_force(32, 32, ebytes, lambda i, j: i * (32 + padding) + j)
    assert (counted.write_passes + counted.read_passes, counted.ideal_passes) == (taken, needed)


@pytest.mark.parametrize("phases", [2, 8, 32])
def test_swizzled_staging_matches_a_brute_force_count(phases: int) -> None:
    staging = SharedStaging(swizzle_phases=phases, bandwidth_gb_per_s=1.0)
    counted = staging_conflicts(staging, 4)
    # Row i keeps its place; column j goes to (i mod phases) XOR j within the row.
    taken, needed = _brute_force(32, 32, 4, lambda i, j: i * 32 + ((i % phases) ^ j))
    assert (counted.write_passes + counted.read_passes, counted.ideal_passes) == (taken, needed)


def _gpu_with(**staging: object) -> Target:
    data = tomllib.loads((resources.files("hlo") / "targets" / "gpu.toml").read_text())
    data["transpose"]["shared_staging"].update(staging)
    return load_target(data)


def test_bank_conflicts_raise_the_cost_of_a_gpu_transpose() -> None:
    src, dst = parse_shape("f32[1024,1024]{1,0}"), parse_shape("f32[1024,1024]{0,1}")
    builtin = load_target("gpu")
    padded_ns, padded_why = CostModel(builtin).conversion(src, "", dst, "")
    plain = _gpu_with(padding=0)
    plain_ns, plain_why = CostModel(plain).conversion(src, "", dst, "")
    nbytes = 2 * 1024 * 1024 * 4
    taken, needed = _brute_force(32, 32, 4, lambda i, j: i * 32 + j)
    staging = plain.transpose.shared_staging
    slower = taken / needed * plain.memory_bandwidth_gb_per_s / staging.bandwidth_gb_per_s
    assert slower > 1.5
    one_pass = builtin.pass_ns(nbytes) * builtin.copies.factor
    assert padded_ns == math.ceil(one_pass * builtin.transpose.minor_moving
                                  + builtin.copies.fixed_ns)
    assert plain_ns == math.ceil(one_pass * builtin.transpose.minor_moving * slower
                                 + builtin.copies.fixed_ns)
    assert "bank" not in padded_why
    assert "32-way bank conflicts" in plain_why and "32x32 shared-memory tile" in plain_why


def test_conflicts_within_shared_bandwidth_cost_nothing() -> None:
    # bf16 through XLA's padded tile is 2-way on some columns (1.25 passes per pass needed),
    # far below shared memory's bandwidth over HBM: the price of the transpose is unchanged.
    assert transpose_conflicts(32, 32, 2, padding=1).read_ways == 2
    src, dst = parse_shape("bf16[512,512]{1,0}"), parse_shape("bf16[512,512]{0,1}")
    slow_shared = _gpu_with(bandwidth_gb_per_s=3350.0)  # as slow as HBM: 1.25 x
    ns, why = CostModel(load_target("gpu")).conversion(src, "", dst, "")
    slow_ns, slow_why = CostModel(slow_shared).conversion(src, "", dst, "")
    assert "bank" not in why and "2-way bank conflicts" in slow_why and slow_ns > ns
