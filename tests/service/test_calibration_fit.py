"""The calibration fit recovers known coefficients from synthetic measurements."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from conftest import written_target

from service.calibration.fit import FitError, Sample, _standalone_rows, fit

TRUE = {"bandwidth": 12.5, "fixed": 800.0, "minor": 3.5, "major": 1.25, "standalone": 4.0,
        "read": 0.45, "row": 0.09, "reshape": 6.0, "inline": 2.5}


def synthetic(noise: float = 0.0, seed: int = 0) -> list[Sample]:
    rng = np.random.default_rng(seed)
    per_byte = 1.0 / TRUE["bandwidth"]
    cost = {
        "copy": lambda x: TRUE["fixed"] + 2 * x * per_byte,
        "copy3d": lambda x: TRUE["fixed"] + 2 * x * per_byte,
        "copy_minor": lambda x: TRUE["fixed"] + 2 * x * per_byte * TRUE["minor"],
        "copy_major": lambda x: TRUE["fixed"] + 2 * x * per_byte * TRUE["major"],
        "transpose": lambda x: TRUE["fixed"] + 2 * x * per_byte * TRUE["minor"] * TRUE["standalone"],
        "reduce_minor": lambda x: x * TRUE["row"],
        "reduce_major": lambda x: x * (TRUE["row"] + TRUE["read"] * per_byte),
        "reshape_moving": lambda x: TRUE["fixed"] + 2 * x * per_byte * TRUE["minor"] * TRUE["reshape"],
        "add_same": lambda x: 3 * x * per_byte,
        # the mixed add pays ``inline`` copies of its operand (2x bytes at the minor factor)
        "add_mixed": lambda x: 3 * x * per_byte + TRUE["inline"] * 2 * x * per_byte * TRUE["minor"],
    }
    out = []
    for kind, f in cost.items():
        for x in (65536, 1 << 20, 1 << 24):
            out.append(Sample(kind, x, f(x) * (1 + noise * rng.standard_normal())))
    return out


def test_exact_samples_give_the_coefficients_back():
    c = fit(synthetic())
    assert c.bandwidth_gb_per_s == pytest.approx(TRUE["bandwidth"])
    assert c.cache_bandwidth_gb_per_s == pytest.approx(TRUE["bandwidth"])
    assert c.fixed_ns == pytest.approx(TRUE["fixed"])
    assert c.minor_moving == pytest.approx(TRUE["minor"])
    assert c.major_only == pytest.approx(TRUE["major"])
    assert c.standalone == pytest.approx(TRUE["standalone"])
    assert c.reduce_read_factor == pytest.approx(TRUE["read"])
    assert c.reduce_slow == "kept"
    assert c.reshape_standalone == pytest.approx(TRUE["reshape"])
    assert c.inline_relayout == pytest.approx(TRUE["inline"])
    assert c.reduce_min_extent == 0  # no column group: every column reduction is slow


def column_group(slow_from: int, extra_passes: float,
                 wide_passes: float | None = None) -> list[Sample]:
    """Row and column reductions of 1 MiB: the column ones ``extra_passes`` slower from
    ``slow_from`` reduced elements on, as fast below; with ``wide_passes``, those reading
    4 KiB apart or more (``R`` <= 256) that much slower instead."""
    out = []
    for r in (16, 64, 256, 1024, 4096):
        row = 1e5
        passes = wide_passes if wide_passes is not None and (1 << 20) // r >= 4096 else extra_passes
        column = row + (passes * (1 << 20) / TRUE["bandwidth"] if r >= slow_from else -1e3)
        out += [Sample(f"row_{r}", 1 << 20, row), Sample(f"column_{r}", 1 << 20, column)]
    return out


def test_the_column_group_gives_where_column_reductions_turn_slow_and_by_how_much():
    c = fit(synthetic() + column_group(256, 12.0))
    assert c.reduce_min_extent == 256
    assert c.reduce_read_factor == pytest.approx(12.0)


def test_the_column_group_gives_the_passes_near_and_far_apart_separately():
    # R = 4096 reads 256 bytes apart (near), R = 256 4 KiB (far), R = 1024 1 KiB (neither).
    c = fit(synthetic() + column_group(256, 9.0, 33.0))
    assert c.reduce_min_extent == 256
    assert c.reduce_read_factor == pytest.approx(9.0)
    assert c.reduce_wide_factor == pytest.approx(33.0)
    # And every slow pair at its own stride, the curve the model reads.
    assert [x for x, _ in c.reduce_stride_passes] == [256, 1024, 4096]
    assert [y for _, y in c.reduce_stride_passes] == pytest.approx([9.0, 9.0, 33.0])


def test_a_column_form_a_little_slower_than_its_row_form_is_not_the_slow_one():
    # At 64 elements per result the column form ran 1.18-1.22x its row form (measured): more
    # than one pass over the operand here, far from the 12-20x from 128 elements on.
    samples = [s for s in column_group(256, 12.0) if s.kind not in ("row_64", "column_64")]
    samples += [Sample("row_64", 1 << 20, 1e6), Sample("column_64", 1 << 20, 1.2e6)]
    c = fit(synthetic() + samples)
    assert c.reduce_min_extent == 256
    assert c.reduce_read_factor == pytest.approx(12.0)


def test_a_column_group_that_is_never_slow_prices_no_column_reduction():
    c = fit(synthetic() + column_group(1 << 20, 12.0))
    assert c.reduce_read_factor == 0.0 and c.reduce_min_extent > 4096


def test_a_convolution_that_runs_as_a_naive_loop_gives_its_ns_per_flop():
    flops = 10_000_000
    samples = synthetic() + [Sample("conv_default", flops, 1e6)] + [
        Sample("conv_naive", flops, 1e6 + extra * flops) for extra in (1.5, 2.0, 2.5)]
    assert fit(samples).conv_naive_ns_per_flop == pytest.approx(2.0)
    assert fit(synthetic()).conv_naive_ns_per_flop == 0.0


def test_a_slower_row_reduction_is_the_slow_form():
    swapped = [Sample({"reduce_minor": "reduce_major", "reduce_major": "reduce_minor"}.get(
        s.kind, s.kind), s.bytes, s.ns) for s in synthetic()]
    c = fit(swapped)
    assert c.reduce_slow == "reduced"
    assert c.reduce_read_factor == pytest.approx(TRUE["read"])


def test_noisy_samples_give_them_back_within_the_noise():
    c = fit(synthetic(noise=0.02, seed=4))
    assert c.bandwidth_gb_per_s == pytest.approx(TRUE["bandwidth"], rel=0.06)
    assert c.minor_moving == pytest.approx(TRUE["minor"], rel=0.08)
    assert c.standalone == pytest.approx(TRUE["standalone"], rel=0.1)


def test_a_missing_kind_is_an_error_naming_it():
    with pytest.raises(FitError, match="'transpose'"):
        fit([s for s in synthetic() if s.kind != "transpose"])


def test_cache_resident_copies_give_the_cache_bandwidth():
    samples = [s for s in synthetic() if s.kind != "copy"]
    for x, gb_per_s in ((65536, 40.0), (1 << 20, 40.0), (1 << 24, 10.0)):
        samples.append(Sample("copy", x, TRUE["fixed"] + 2 * x / gb_per_s))
    c = fit(samples)
    assert c.cache_bandwidth_gb_per_s == pytest.approx(40.0, rel=0.02)
    assert c.bandwidth_gb_per_s < 12.0


def test_the_written_target_file_loads_and_carries_the_coefficients(tmp_path):
    from hlo.target import load_target, read_target_file
    from service.calibration.run import Calibration, Measured
    from service.calibration.target_file import target_toml

    c = fit(synthetic()).rounded()
    calibration = Calibration("cpu", "test machine", "2026-01-01 00:00 UTC", (1.0, 2.0, 3.0), 5, c,
                              (Measured("copy_f32", "copy", "f32", 65536, 0.01, 5000.0),))
    path = tmp_path / "cpu.toml"
    path.write_text(target_toml(calibration))
    target = load_target(read_target_file(path))
    assert target.memory_bandwidth_gb_per_s == c.bandwidth_gb_per_s
    assert target.transpose.standalone == c.standalone
    assert "test machine" in target.calibration and "2026-01-01" in target.calibration
    rule = next(r for r in target.op_rules if r.kind == "reduction_minor")
    assert rule.params == {"slow": c.reduce_slow, "read_factor": c.reduce_read_factor}
    assert target.transpose.reshape_standalone == c.reshape_standalone
    assert target.copies.inline_relayout == c.inline_relayout
    # Not fitted from the microbenchmarks (measured inside modules): written as it is.
    assert target.copies.cache_bytes == 2 << 20 < target.cache_bytes
    with_extent = fit(synthetic() + column_group(256, 12.0)).rounded()
    path.write_text(target_toml(dataclasses.replace(calibration, coefficients=with_extent)))
    rule = next(r for r in load_target(read_target_file(path)).op_rules
                if r.kind == "reduction_minor")
    # Slow from R = 256 on: R = 256, 1024, 4096 read 4096, 1024, 256 bytes apart.
    assert rule.params == {"slow": "kept", "read_factor": 12.0, "wide_factor": 12.0,
                           "narrow_stride": 128, "wide_stride": 4096,
                           "stride_passes": [[256, 12.0], [1024, 12.0], [4096, 12.0]],
                           "min_extent": 256}
    with_small = fit(synthetic() + column_group(256, 12.0) + small_pairs(6.0)).rounded()
    path.write_text(target_toml(dataclasses.replace(calibration, coefficients=with_small)))
    rule = next(r for r in load_target(read_target_file(path)).op_rules
                if r.kind == "reduction_minor")
    assert rule.params["small_scale"] == 0.5
    assert (rule.params["small_bytes"], rule.params["large_bytes"]) == (1 << 18, 1 << 20)


def small_pairs(extra_passes: float, extents=(128, 512, 2048)) -> list[Sample]:
    """Row and column reductions of 256 KiB, the column ones ``extra_passes`` slower."""
    one_pass = (1 << 18) / TRUE["bandwidth"]
    out = []
    for r in extents:
        out += [Sample(f"srow_{r}", 1 << 18, 1e4),
                Sample(f"scolumn_{r}", 1 << 18, 1e4 + extra_passes * one_pass)]
    return out


def test_the_small_pairs_give_the_share_of_the_passes_a_smaller_operand_pays():
    # The 1 MiB pairs: 12 extra passes at every stride from 256 elements per result on; over
    # 256 KiB 6, 3 and 9: median 6.
    samples = synthetic() + column_group(256, 12.0)
    assert fit(samples).reduce_small_scale == 1.0  # without the small pairs
    mixed = (small_pairs(6.0, (512,)) + small_pairs(3.0, (2048,)) + small_pairs(9.0, (256,)))
    assert fit(samples + mixed).reduce_small_scale == pytest.approx(0.5)
    # Pairs below the extent where column reductions turn slow say nothing about the passes.
    assert fit(samples + small_pairs(6.0, (512,)) + small_pairs(100.0, (128,))
               ).reduce_small_scale == pytest.approx(0.5)


def test_the_reduction_order_factor_is_the_extra_passes_of_the_misordered_row_reduction(tmp_path):
    # 1 MiB operands (the synthetic cache bandwidth is the memory's, 12.5 GB/s: one pass is
    # 83886.08 ns); one group's misordered reduction takes 7 passes more, the other's 9.
    one_pass = (1 << 20) / TRUE["bandwidth"]
    order = [Sample("row_ordered", 1 << 20, 3e4), Sample("row_misordered", 1 << 20, 3e4 + 7 * one_pass),
             Sample("row_ordered", 1 << 20, 5e4), Sample("row_misordered", 1 << 20, 5e4 + 9 * one_pass)]
    assert fit(synthetic()).reduce_order_factor == 0.0  # no group: no term
    c = fit(synthetic() + order).rounded()
    # Paired in order (one of each per group): 7 and 9 extra passes -> median 8.
    assert c.reduce_order_factor == pytest.approx(8.0)
    rule = next(r for r in written_target(tmp_path, c).op_rules if r.kind == "reduction_minor")
    assert rule.params["order_factor"] == 8.0


#: Blocked-transpose tiles of the copy-rows and copy-runs groups' copies of f32[8,64,64,C],
#: counted by hand: 2x2 tiles between 64 and 2 or 3 elements (the third of 3 one per tile),
#: 4x4 between 64 and 4 or 6 (the last 2 of 6 one per tile), 8x8 between 64 and 64.
TILES = {2: 16384, 3: 32768 * 3 * 2 // 3 // 4 + 32768, 4: 8192, 6: 32768 * 6 * 4 // 6 // 16 + 65536}
WIDE_TILES = {c: 32768 * c // 64 for c in TILES}


def test_the_copy_tile_cost_is_the_extra_time_per_tile_of_the_blocked_transpose():
    # 4 ns per tile in three groups; a 40 ns outlier does not move the median of four.
    from service.calibration.fit import _copy_tiles

    samples = []
    for c, each in ((2, 4.0), (3, 4.0), (4, 40.0), (6, 4.0)):
        nbytes = 32768 * c * 4
        samples += [Sample(f"copy_wide_{c}", nbytes, 1e4),
                    Sample(f"copy_rows_{c}", nbytes, 1e4 + each * (TILES[c] - WIDE_TILES[c]))]
    assert _copy_tiles(samples, "copy_rows") == pytest.approx(4.0)
    assert _copy_tiles([], "copy_rows") == 0.0
    # Tiles bounded by the source's short minor dim cost a quarter as much.
    rev = samples + [Sample(f"copy_rev_{c}", 32768 * c * 4,
                            1e4 + 1.0 * (TILES[c] - WIDE_TILES[c])) for c in (2, 3, 6)]
    assert _copy_tiles(rev, "copy_rev", 4.0) == pytest.approx(0.25)
    assert _copy_tiles(samples, "copy_rev", 4.0) == 1.0
    c = fit(synthetic() + rev)
    assert (c.copy_tile_ns, c.copy_tile_input_factor) == (pytest.approx(4.0), pytest.approx(0.25))


def test_the_copy_run_cost_is_the_extra_time_per_memcpy_run():
    # 8 x 64 x 64 runs of C elements; each costs 3 ns more than the wide copy's share (exact).
    from service.calibration.fit import _copy_runs

    samples = []
    for c in (2, 3, 4, 6):
        nbytes = 32768 * c * 4
        samples += [Sample(f"copy_wide_{c}", nbytes, 1e4),
                    Sample(f"copy_runs_{c}", nbytes, 1e4 + 3.0 * 32768)]
    assert _copy_runs(samples) == pytest.approx(3.0)
    assert _copy_runs([]) == 0.0
    assert fit(synthetic()).copy_row_ns == 0.0


def test_a_fitted_target_keeps_the_copy_tiles(tmp_path):
    c = dataclasses.replace(fit(synthetic()), copy_tile_ns=3.5, copy_tile_input_factor=0.3,
                            copy_row_ns=2.5)
    copies = written_target(tmp_path, c).copies
    assert (copies.tile_ns, copies.tile_input_factor, copies.tile_bytes, copies.row_ns) == (
        3.5, 0.3, 32, 2.5)


def test_the_scalar_row_factor_is_the_extra_passes_of_a_maximum_row_reduction():
    from service.calibration.fit import _scalar_rows

    one_pass = (1 << 20) / TRUE["bandwidth"]  # 1 MiB beyond the cache at this bandwidth
    nbytes = 1 << 20
    samples = []
    for r, extra in ((16, 0.0), (256, 5.0), (1024, 7.0)):
        samples += [Sample(f"row_{r}", nbytes, 1e4), Sample(f"rowmax_{r}", nbytes,
                                                          1e4 + extra * one_pass)]
    # cache bandwidth = bandwidth here, so a pass is the same either way: median of 0, 5, 7.
    assert _scalar_rows(samples, TRUE["bandwidth"], TRUE["bandwidth"]) == pytest.approx(5.0)
    # Only where column reductions turn slow (from 256 elements on): median of 5 and 7.
    assert _scalar_rows(samples, TRUE["bandwidth"], TRUE["bandwidth"], 256) == pytest.approx(6.0)
    assert _scalar_rows([], 1.0, 1.0) == 0.0


def test_the_close_read_transpose_factor_is_the_median_over_shapes_and_reaches_the_target(
        tmp_path):
    from hlo.target import load_target
    from service.calibration.microbenchmarks import NEAR_SHAPES, near_transpose_group

    # Three shapes, the standalone transpose 1.2x, 1.4x and 3x XLA's form: the median is 1.4.
    samples = []
    for (n, m), ratio in zip(NEAR_SHAPES, (1.2, 1.4, 3.0)):
        samples += [Sample(f"form_{n}x{m}", n * m * 4, 1e4), Sample(f"near_{n}x{m}", n * m * 4,
                                                                   1e4 * ratio)]
    assert fit(synthetic()).standalone_near == 1.0  # no group: no term
    c = fit(synthetic() + samples).rounded()
    assert c.standalone_near == pytest.approx(1.4)
    written = written_target(tmp_path, c).transpose
    assert written.standalone_near == 1.4
    assert 0 < written.standalone_near_min_bytes <= min(4 * n * m for n, m in NEAR_SHAPES)
    # The group's kinds are the ones the fit pairs, and its transposes read close.
    group = near_transpose_group(*NEAR_SHAPES[0])
    assert [b.kind for b in group.benches] == ["base", f"form_{NEAR_SHAPES[0][0]}x{NEAR_SHAPES[0][1]}",
                                               f"near_{NEAR_SHAPES[0][0]}x{NEAR_SHAPES[0][1]}"]
    assert all(4 * m < load_target("cpu").transpose.standalone_min_stride for _, m in NEAR_SHAPES)


def test_the_variadic_span_is_where_the_argmax_column_form_stays_clearly_slower(tmp_path):
    from service.calibration.fit import SLOWER, _variadic_span
    from service.calibration.microbenchmarks import SPAN_EXTENT, variadic_span_group

    # Column over row 1.1 at 8 KiB, 1.4 at 16 KiB (noise), 1.1 at 32 KiB, then clearly slower
    # at every larger span: the span is the first from which every larger one is, 64 KiB.
    ratios = {8192: 1.1, 16384: 1.4, 32768: 1.1, 65536: 1.7, 131072: 2.0}
    assert all((r > SLOWER) == (span in (16384, 65536, 131072)) for span, r in ratios.items())
    samples = []
    for span, ratio in ratios.items():
        samples += [Sample(f"argspanrow_{span}", 1 << 20, 1e5),
                    Sample(f"argspancol_{span}", 1 << 20, 1e5 * ratio)]
    assert _variadic_span(samples) == 65536
    assert _variadic_span([]) == 0  # no pairs: slow at any span
    fast = [Sample(x.kind, x.bytes, 1e5) for x in samples]
    assert _variadic_span(fast) == 262144  # never slower: beyond the largest measured
    fitted_c = fit(synthetic() + samples).rounded()
    assert fitted_c.reduce_variadic_min_span == 65536
    rule = next(r for r in written_target(tmp_path, fitted_c).op_rules
                if r.kind == "reduction_minor")
    assert rule.params["variadic_min_span"] == 65536
    # A group: the argmax over 32 rows in the two layouts, its kinds named by the span.
    group = variadic_span_group(256)
    assert [b.kind for b in group.benches] == ["argspancol_32768", "argspanrow_32768"]
    column, row = (b.module.entry for b in group.benches)
    reduce = next(i for i in column.instructions if i.opcode == "reduce")
    assert len(reduce.operands) == 4 and reduce.attr("dimensions") == (1,)
    assert column.parameter_instructions()[0].shape.dims[1] == SPAN_EXTENT
    assert column.parameter_instructions()[0].shape.layout.minor_to_major == (2, 1, 0)
    assert row.parameter_instructions()[0].shape.layout.minor_to_major == (1, 2, 0)


def test_the_variadic_extent_is_where_the_argmax_column_form_stays_slower(tmp_path):
    from service.calibration.fit import _variadic_extent
    from service.calibration.microbenchmarks import reduction_group

    # Column over row 0.5 at 16, 1.5 at 32, 0.9 at 64 (noise), then slower at every larger R:
    # the extent is the first R from which every larger one is slow, 128.
    ratios = {16: 0.5, 32: 1.5, 64: 0.9, 128: 1.4, 256: 1.6}
    samples = []
    for r, ratio in ratios.items():
        samples += [Sample(f"argrow_{r}", 1 << 20, 1e5), Sample(f"argcol_{r}", 1 << 20, 1e5 * ratio)]
    assert _variadic_extent(samples) == 128
    assert _variadic_extent([]) == 0  # no pairs: slow at any extent
    fast = [Sample(x.kind, x.bytes, 1.0) if x.kind.startswith("argcol") else x for x in samples]
    assert _variadic_extent(fast) == 512  # never slower: beyond the largest measured
    fitted_c = fit(synthetic() + samples).rounded()
    assert fitted_c.reduce_variadic_min_extent == 128
    rule = next(r for r in written_target(tmp_path, fitted_c).op_rules
                if r.kind == "reduction_minor")
    assert rule.params["variadic_min_extent"] == 128
    # The groups run the argmax pair beside the sums, in the two layouts.
    kinds = [b.kind for b in reduction_group(32).benches]
    assert "argcol_32" in kinds and "argrow_32" in kinds
    argcol = next(b for b in reduction_group(32).benches if b.kind == "argcol_32").module
    reduce = next(i for i in argcol.entry.instructions if i.opcode == "reduce")
    assert len(reduce.operands) == 4


def test_the_major_only_transpose_factor_is_the_median_over_shapes_and_reaches_the_target(
        tmp_path):
    from hlo.bitcast import transpose_is_bitcast
    from service.calibration.microbenchmarks import MAJOR_SHAPES, major_transpose_group

    # Three shapes, the standalone transpose 0.2x, 0.5x and 0.9x XLA's form: the median is 0.5.
    samples = []
    for (a, b, c), ratio in zip(MAJOR_SHAPES, (0.2, 0.5, 0.9)):
        shape, nbytes = f"{a}x{b}x{c}", a * b * c * 4
        samples += [Sample(f"mform_{shape}", nbytes, 1e4),
                    Sample(f"major_{shape}", nbytes, 1e4 * ratio)]
    assert fit(synthetic()).standalone_major == 1.0  # no group: no term
    fitted_c = fit(synthetic() + samples).rounded()
    assert fitted_c.standalone_major == pytest.approx(0.5)
    assert written_target(tmp_path, fitted_c).transpose.standalone_major == 0.5
    # The group pairs the kinds the fit reads: XLA's form is a bitcast transpose and a copy
    # permuting major dims, the standalone transpose moves the same two major dims.
    a, b, c = MAJOR_SHAPES[0]
    group = major_transpose_group(a, b, c)
    assert [x.kind for x in group.benches] == ["base", f"mform_{a}x{b}x{c}", f"major_{a}x{b}x{c}"]
    form = group.benches[1].module.entry.instructions
    assert [i.opcode for i in form] == ["parameter", "transpose", "copy"]
    assert transpose_is_bitcast(form[0].shape, form[1].shape, (1, 0, 2))
    alone = group.benches[2].module.entry.instructions
    assert [i.opcode for i in alone] == ["parameter", "transpose"]
    assert alone[1].shape == form[2].shape and not transpose_is_bitcast(
        alone[0].shape, alone[1].shape, (1, 0, 2))


def test_the_standalone_transposes_give_their_own_cost_per_run():
    samples = []
    for c in (2, 3, 4):
        nbytes = 4 * c * 32768
        # a standalone loop to runs of C: 0.25 ns per run more than to runs of 64
        samples += [Sample(f"transpose_wide_{c}", nbytes, 2e4),
                    Sample(f"transpose_rows_{c}", nbytes, 2e4 + 0.25 * 32768 * (1 - c / 64)),
                    Sample(f"copy_wide_{c}", nbytes, 1e4), Sample(f"copy_rows_{c}", nbytes, 9e4)]
    assert _standalone_rows(samples) == pytest.approx(0.25 * (1 - 3 / 64))
    # faster to short runs than to long ones: no cost per run, never a negative one
    faster = [Sample(k.kind, k.bytes, 1e3) if k.kind.startswith("transpose_rows") else k
              for k in samples]
    assert _standalone_rows(faster) == 0.0
    assert _standalone_rows([s for s in samples if s.kind.startswith("copy")]) is None


def test_the_in_place_price_is_the_extra_time_per_element_and_reaches_the_target(tmp_path):
    from service.calibration.microbenchmarks import in_place_group
    from solver.layout_assignment.in_place import in_place_reads

    # 65,536 elements: tanh 3 ns more per element in place, exponential 0.5, add 0.05 (under
    # the noise floor: no price), and a sqrt without its fresh module (no pair: no price).
    n = 256 * 256
    samples = [Sample("fresh_tanh", 4 * n, 1e5), Sample("inplace_tanh", 4 * n, 1e5 + 3 * n),
               Sample("fresh_exponential", 4 * n, 1e5),
               Sample("inplace_exponential", 4 * n, 1e5 + 0.5 * n),
               Sample("fresh_add", 4 * n, 1e5), Sample("inplace_add", 4 * n, 1e5 + 0.05 * n),
               Sample("inplace_sqrt", 4 * n, 1e6)]
    assert fit(synthetic()).in_place == ()
    fitted_c = fit(synthetic() + samples).rounded()
    assert dict(fitted_c.in_place) == {"tanh": 3.0, "exponential": 0.5}
    target = written_target(tmp_path, fitted_c)
    assert target.in_place.price("tanh") == 3.0 and target.in_place.price("add") == 0.0
    # The pair does the same work; only the in-place module overwrites the operand (as
    # the replay of XLA's buffer assignment predicts it).
    fresh, inplace = (b.module for b in in_place_group("tanh").benches)
    assert [i.opcode for i in fresh.entry.instructions][:4] == [
        i.opcode for i in inplace.entry.instructions]
    assert "e" not in in_place_reads(fresh.entry)
    assert in_place_reads(inplace.entry)["e"].name == "a"


@pytest.mark.xla
@pytest.mark.parametrize("op", ["select", "erf"])
def test_each_in_place_pair_is_what_xla_buffer_assignment_makes_of_it(op):
    """XLA's own buffer assignment (not our replay) writes the measured op over its operand
    in the ``inplace`` module and into a fresh buffer in the ``fresh`` one; ``select`` (its
    predicate computed in both alike) too."""
    from service.calibration.microbenchmarks import in_place_group
    from service.xla.buffer_assignment import xla_in_place

    fresh, inplace = (b.module for b in in_place_group(op).benches)
    assert xla_in_place(inplace)["e"] == ["a"]
    assert xla_in_place(fresh)["e"] == []


def test_the_copy_overhead_is_the_chain_s_extra_time_per_copy_and_reaches_the_target(tmp_path):
    """``copies_chain`` over ``copies_none`` per copy: what a copy costs beyond its bytes,
    the target's ``copies.fixed_ns``; without the pair, the copy line's intercept."""
    from service.calibration.fit import OVERHEAD_COPIES
    from service.calibration.microbenchmarks import copy_overhead_group

    none, chain = copy_overhead_group().benches
    copies = [i for i in chain.module.entry.instructions if i.opcode == "copy"]
    assert len(copies) == OVERHEAD_COPIES and not any(
        i.opcode == "copy" for i in none.module.entry.instructions)
    by = {i.name: i for i in chain.module.entry.instructions}
    for c in copies:  # each moves the minor dim: none is a no-op XLA could drop
        assert c.shape.layout != by[c.operands[0]].shape.layout
    samples = [Sample("copies_none", 128, 2e4), Sample("copies_chain", 128, 2e4 + 75.0 * OVERHEAD_COPIES)]
    assert fit(synthetic()).fixed_ns == pytest.approx(TRUE["fixed"], rel=0.05)
    fitted_c = fit(synthetic() + samples).rounded()
    assert fitted_c.fixed_ns == pytest.approx(75.0)
    assert written_target(tmp_path, fitted_c).copies.fixed_ns == pytest.approx(75.0)
    faster = [samples[0], Sample("copies_chain", 128, 1e4)]  # noise: never a negative cost
    assert fit(synthetic() + faster).fixed_ns == 0.0


def test_a_standalone_loop_scales_a_copy_s_movement_not_its_fixed_cost():
    """A far-reading standalone transpose pays ``standalone`` x the copy's movement and the
    op's fixed cost once; an elementwise op reading another layout itself (no op of its
    own) pays the movement alone."""
    from hlo.parser import parse_module
    from hlo.target import load_target, read_target_file
    from solver.layout_assignment.assign import score

    root = Path(__file__).resolve().parents[2]
    data = read_target_file(root / "hlo" / "targets" / "cpu-xeon.toml")
    prices = {}
    for fixed in (0.0, 500.0):
        target = load_target(dict(data, copies=dict(data["copies"], fixed_ns=fixed)))
        text = ("HloModule t\nENTRY %main (p: f32[1024,1024]) -> f32[1024,1024] {\n"
                "  %p = f32[1024,1024]{1,0} parameter(0)\n"
                "  ROOT %t = f32[1024,1024]{1,0} transpose(%p), dimensions={1,0}\n}\n")
        mixed = ("HloModule m\nENTRY %main (p: f32[256,256], q: f32[256,256]) -> f32[256,256] {\n"
                 "  %p = f32[256,256]{1,0} parameter(0)\n  %q = f32[256,256]{0,1} parameter(1)\n"
                 "  ROOT %a = f32[256,256]{1,0} add(%p, %q)\n}\n")
        prices[fixed] = [sum(t.ns for t in score(parse_module(m), target).terms)
                         for m in (text, mixed)]
    assert prices[500.0][0] - prices[0.0][0] == pytest.approx(500.0, abs=2)
    assert prices[500.0][1] == pytest.approx(prices[0.0][1], abs=2) and prices[0.0][1] > 0


def test_the_dot_forms_give_the_extra_ns_per_flop_and_reach_the_target(tmp_path):
    from service.calibration.fit import DOT_OPERAND_NS_PER_FLOP, DOT_RESULT_NS_PER_FLOP
    from service.calibration.microbenchmarks import dot_form_group

    # Two shapes (paired by their flops): an operand off the nn form 0.002 and 0.004 ns per
    # flop more (median 0.003), the result 0.01.
    samples = []
    for flops in (4_000_000, 8_000_000):
        samples += [Sample("dot_nn", flops, 1e5), Sample("dot_result", flops, 1e5 + 0.01 * flops)]
        samples += [Sample("dot_operand", flops, 1e5 + extra * flops) for extra in (0.002, 0.004)]
    fitted_c = fit(synthetic() + samples).rounded()
    assert fitted_c.dot_operand_ns_per_flop == pytest.approx(0.003)
    assert fitted_c.dot_result_ns_per_flop == pytest.approx(0.01)
    unmeasured = fit(synthetic())
    assert (unmeasured.dot_operand_ns_per_flop, unmeasured.dot_result_ns_per_flop) == (
        DOT_OPERAND_NS_PER_FLOP, DOT_RESULT_NS_PER_FLOP)
    rule = next(r for r in written_target(tmp_path, fitted_c).rules_for("dot")
                if r.kind == "dot_nn")
    assert rule.params == {"ns_per_flop": 0.003, "result_ns_per_flop": 0.01}
    # The group: the nn form first, then the lhs, the rhs and the result in the other layout.
    group = dot_form_group(64, 256, 256)
    forms = [tuple(i.shape.layout.minor_to_major for i in b.module.entry.instructions)
             for b in group.benches]
    assert forms == [((1, 0), (1, 0), (1, 0)), ((0, 1), (1, 0), (1, 0)),
                     ((1, 0), (0, 1), (1, 0)), ((1, 0), (1, 0), (0, 1))]
    assert {b.bytes for b in group.benches} == {2 * 64 * 256 * 256}


def _cache_dir(root, index: int, **fields) -> None:
    folder = root / f"index{index}"
    folder.mkdir(parents=True)
    for name, value in fields.items():
        (folder / name).write_text(f"{value}\n")


def test_the_host_cache_is_read_from_the_system_description(tmp_path):
    from service.calibration.run import cache_geometry

    _cache_dir(tmp_path, 0, level=1, type="Instruction", number_of_sets=128,
               ways_of_associativity=4, coherency_line_size=64)
    _cache_dir(tmp_path, 1, level=1, type="Data", number_of_sets=64,
               ways_of_associativity=12, coherency_line_size=64)
    _cache_dir(tmp_path, 2, level=2, type="Unified", number_of_sets=2048,
               ways_of_associativity=16, coherency_line_size=64)
    assert cache_geometry(str(tmp_path)) == (64, 12, 64)
    assert cache_geometry(str(tmp_path), level=2) == (2048, 16, 64)
    assert cache_geometry(str(tmp_path / "absent")) is None
    broken = tmp_path / "broken"
    _cache_dir(broken, 0, level=1, type="Data", number_of_sets="many",
               ways_of_associativity=8, coherency_line_size=64)
    assert cache_geometry(str(broken)) is None


def test_a_fitted_target_keeps_the_host_cache_and_reads_it_back(tmp_path):
    from hlo.target import load_target, read_target_file
    from service.calibration.run import Calibration, from_json, to_json
    from service.calibration.target_file import target_toml

    calibration = Calibration("cpu", "m", "2026-01-01 00:00 UTC", (1.0, 1.0, 1.0), 5,
                              fit(synthetic()), (), cache=(64, 12, 64))
    path = tmp_path / "cpu.toml"
    path.write_text(target_toml(calibration))
    cache = load_target(read_target_file(path)).transpose.cache
    assert (cache.sets, cache.ways, cache.line_bytes) == (64, 12, 64)
    path.write_text(target_toml(dataclasses.replace(calibration, cache=None)))
    assert load_target(read_target_file(path)).transpose.cache is None
    data = to_json(calibration)
    assert data["cache"] == [64, 12, 64]
    data["cache"] = [64, 0, 64]
    with pytest.raises(ValueError, match="not sets, ways and line bytes"):
        from_json(data)


def test_the_window_groups_give_the_extra_ns_per_window_element_and_reach_the_target(tmp_path):
    from service.calibration.microbenchmarks import WINDOW_CASES, window_group

    # Three groups (paired by the elements their windows read): 0.2, 0.3 and 0.5 ns more per
    # element with a windowed dim minor; the median is 0.3. A group measured faster in the
    # slow form does not make the price negative.
    samples = []
    for reads, extra in ((1_000_000, 0.2), (500_000, 0.3), (200_000, 0.5)):
        samples += [Sample("window_plain", reads, 1e5),
                    Sample("window_minor", reads, 1e5 + extra * reads)]
    fitted_c = fit(synthetic() + samples).rounded()
    assert fitted_c.window_minor_ns == pytest.approx(0.3)
    assert fit(synthetic()).window_minor_ns == 0.0
    faster = [Sample("window_plain", 1000, 500.0), Sample("window_minor", 1000, 400.0)]
    assert fit(synthetic() + faster).window_minor_ns == 0.0
    rule = next(r for r in written_target(tmp_path, fitted_c).rules_for("reduce-window")
                if r.kind == "window_minor")
    assert rule.params == {"ns_per_element": 0.3}
    # Each group: the same windows, a dim without a window minor and then a windowed one;
    # the groups' work differs, so the pairing by elements read cannot cross groups.
    reads = []
    for case in WINDOW_CASES:
        plain, minor = window_group(*case).benches
        sizes = case[1]
        for bench, windowed in ((plain, False), (minor, True)):
            root = bench.module.entry.instructions[-1]
            assert root.opcode == "reduce-window"
            first = next(d for d in root.shape.layout.minor_to_major if root.shape.dims[d] > 1)
            assert (sizes[first] > 1) is windowed
        assert plain.bytes == minor.bytes
        reads.append(plain.bytes)
    assert len(set(reads)) == len(reads)


def test_the_built_in_xeon_target_is_the_fit_of_its_three_recorded_runs(tmp_path):
    """``hlo/targets/cpu-xeon.toml`` is what ``calibrate --from`` writes for the three full
    runs kept in ``bench/cpu_xeon_calibration_{8,9,10}.json`` (each microbenchmark's median
    over the runs): no number in it was written by hand, and it names the CPU the built-in
    ``cpu`` picks it for."""
    from typer.testing import CliRunner

    from hlo.target import HostCpu, load_target
    from service.cli import build_app

    root = Path(__file__).resolve().parents[2]
    runs = [arg for i in (8, 9, 10)
            for arg in ("--from", str(root / "bench" / f"cpu_xeon_calibration_{i}.json"))]
    out = tmp_path / "cpu-xeon.toml"
    result = CliRunner().invoke(build_app(), ["calibrate", *runs, "--name", "cpu-xeon", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_text() == (root / "hlo" / "targets" / "cpu-xeon.toml").read_text()
    assert load_target("cpu-xeon").host == HostCpu(vendor="GenuineIntel",
                                                   model="Intel(R) Xeon(R) Processor @ 2.80GHz")


def test_copies_and_transposes_that_stay_in_the_cache_get_their_own_factors():
    """Cached copies moving the minor dim 1.5x a plain cached copy, 3x beyond the cache;
    cached transposes 3x that copy, 4x beyond: the cached fit gives back 1.5 and 3 where the
    slopes through every size follow the largest sizes (3 and 4)."""
    from service.calibration.fit import CACHE_BYTES, _cached_movement, _slope

    cache_per_byte, per_byte = 1.0 / 20.0, 1.0 / 10.0
    samples = []
    for nbytes in (65536, 1048576, 16777216, 67108864):
        cached = 2 * nbytes <= CACHE_BYTES
        moved = 2 * nbytes * (cache_per_byte if cached else per_byte)
        minor, standalone = (1.5, 3.0) if cached else (3.0, 4.0)
        samples += [Sample("copy", nbytes, moved), Sample("copy_minor", nbytes, moved * minor),
                    Sample("transpose", nbytes, moved * minor * standalone)]
    assert _cached_movement(samples, 0.0, cache_per_byte) == pytest.approx((1.5, 3.0))
    assert _slope(samples, "copy_minor", 0.0, 2.0) / per_byte == pytest.approx(3.0, rel=0.01)
    beyond = [s for s in samples if 2 * s.bytes > CACHE_BYTES or s.kind == "copy"]
    assert _cached_movement(beyond, 0.0, cache_per_byte) == (None, None)  # one factor then


def test_a_copy_in_the_cache_is_priced_with_the_cached_factor(tmp_path):
    """``minor_moving_cached`` prices a relayout whose bytes stay in the cache (at most the
    copy limit inside a module), ``minor_moving`` a larger one; ``standalone_cached`` a
    standalone transpose in the cache."""
    from pathlib import Path

    from hlo.parser import parse_shape
    from hlo.target import load_target, read_target_file
    from solver.layout_assignment.costs import CostModel

    data = read_target_file(Path(__file__).resolve().parents[2] / "hlo" / "targets" / "cpu-xeon.toml")
    target = load_target(data)
    cost = CostModel(target)
    small = (parse_shape("f32[256,512]{1,0}"), parse_shape("f32[256,512]{0,1}"))
    large = (parse_shape("f32[1024,1024]{1,0}"), parse_shape("f32[1024,1024]{0,1}"))
    assert target.copy_cached(2 * 256 * 512 * 4) and not target.copy_cached(2 * 1024 * 1024 * 4)
    _, why_small = cost.conversion(small[0], "", small[1], "")
    _, why_large = cost.conversion(large[0], "", large[1], "")
    assert f"x{target.transpose.minor_moving_cached:g}: moves the minor" in why_small
    assert f"x{target.transpose.minor_moving:g}: moves the minor" in why_large
    assert target.transpose.minor_moving_cached < target.transpose.minor_moving
    assert target.transpose.standalone_factor(True) == target.transpose.standalone_cached
    assert target.transpose.standalone_factor(False) == target.transpose.standalone
    plain = dict(data, transpose={k: v for k, v in data["transpose"].items()
                                  if k not in ("minor_moving_cached", "standalone_cached")})
    _, why_plain = CostModel(load_target(plain)).conversion(small[0], "", small[1], "")
    assert f"x{target.transpose.minor_moving:g}: moves the minor" in why_plain  # unset: one factor


@pytest.mark.parametrize(("n", "cached"), [(512, True), (1024, False)])
def test_a_standalone_transpose_in_the_cache_is_priced_with_the_cached_factors(n, cached):
    """``score`` of a module that is one far-reading standalone transpose on ``cpu-xeon``: 2 MiB
    moved stays in the cache and pays ``minor_moving_cached`` x ``standalone_cached``; 8 MiB
    pays ``minor_moving`` x ``standalone``."""
    from hlo.parser import parse_module
    from hlo.target import load_target
    from solver.layout_assignment.assign import score

    text = (f"HloModule t\nENTRY %main (p: f32[{n},{n}]) -> f32[{n},{n}] {{\n"
            f"  %p = f32[{n},{n}]{{1,0}} parameter(0)\n"
            f"  ROOT %t = f32[{n},{n}]{{1,0}} transpose(f32[{n},{n}]{{1,0}} %p), dimensions={{1,0}}\n}}\n")
    target = load_target("cpu-xeon")
    transpose = target.transpose
    (term,) = score(parse_module(text), target).terms
    minor = transpose.minor_moving_cached if cached else transpose.minor_moving
    standalone = transpose.standalone_cached if cached else transpose.standalone
    assert f"x{minor:g}: moves the minor/tiled dims; x{standalone:.3g}: a standalone" in term.reason
    # The movement scaled; the op's fixed cost once.
    expected = target.copy_pass_ns(2 * n * n * 4) * minor * standalone + target.copies.fixed_ns
    # The copy's price rounds up to whole ns, and that rounding is scaled with the movement;
    # the scaled price rounds up again.
    assert term.ns == pytest.approx(expected, abs=standalone + 1)
