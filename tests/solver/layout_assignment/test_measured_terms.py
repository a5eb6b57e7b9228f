"""The cost terms XLA:CPU's measurements asked for: a standalone transpose against XLA's
bitcast-transpose + copy, and the slow form of a reduction. Numbers from the target file."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from hlo.parser import parse_module
from hlo.target import load_target
from solver.layout_assignment.assign import score

#: The coefficients these terms are checked against: the EPYC's calibration as it stood on
#: 2026-11-28 (the built-in ``cpu-epyc`` until its recalibration), kept fixed so that each
#: test's module stays in the regime it was sized for (its cache size, a major-only
#: transpose below XLA's form, a variadic column turning slow at 32 elements). The built-in
#: files' own terms are checked in tests/hlo/test_targets.py.
CPU = str(Path(__file__).resolve().parents[2] / "data" / "cpu-epyc-2026-11-28.toml")

STANDALONE = """HloModule t, entry_computation_layout={(f32[256,512]{1,0})->f32[512,256]{1,0}}
ENTRY e {
  p = f32[256,512]{1,0} parameter(0)
  ROOT t = f32[512,256]{1,0} transpose(p), dimensions={1,0}
}
"""
BITCAST_AND_COPY = """HloModule t, entry_computation_layout={(f32[256,512]{1,0})->f32[512,256]{1,0}}
ENTRY e {
  p = f32[256,512]{1,0} parameter(0)
  t = f32[512,256]{0,1} transpose(p), dimensions={1,0}
  ROOT c = f32[512,256]{1,0} copy(t)
}
"""
REDUCE = """HloModule r, entry_computation_layout={(f32[256,512]{1,0})->f32[OUT]{0}}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  p = f32[256,512]{1,0} parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[OUT]{0} reduce(p, z), dimensions={DIM}, to_apply=add
}
"""


def untiled(cpu, row_ns: float | None = None):
    """``cpu`` without the copy's blocked-transpose tiles (a copy pays per run instead:
    ``row_ns`` where given)."""
    update = {"tile_ns": 0.0} if row_ns is None else {"tile_ns": 0.0, "row_ns": row_ns}
    return cpu.model_copy(update={"copies": cpu.copies.model_copy(update=update)})


def test_a_standalone_transpose_costs_the_copys_passes_times_the_standalone_factor():
    # Its 256 reads, 2 KiB apart, fall on 2 of the cache's 64 sets: they do not stay cached.
    cpu = load_target(CPU)
    copy = score(parse_module(BITCAST_AND_COPY), cpu)
    passes = score(parse_module(BITCAST_AND_COPY), untiled(cpu, cpu.transpose.standalone_row_ns))
    standalone = score(parse_module(STANDALONE), cpu)
    # XLA's copy: a blocked transpose in 8x8 tiles (512 x 256 / 64 of them).
    assert abs(copy.total - (passes.total + 2048 * cpu.copies.tile_ns)) <= 2
    assert standalone.total == math.ceil(passes.total * cpu.transpose.standalone)
    assert "standalone transpose" in standalone.terms[0].reason


def column_passes(params: dict, stride: int, nbytes: int) -> float:
    """The rule's extra passes for a column reduction reading ``stride`` bytes apart over
    ``nbytes``, as the target's documentation states it: the ``stride_passes`` curve where
    it has one (its ends beyond it), else ``read_factor`` up to ``narrow_stride``,
    ``wide_factor`` from ``wide_stride`` on, linear in log2 of the stride between; times ``small_scale`` up to ``small_bytes``, 1 from ``large_bytes``, linear in
    log2 of the size between."""
    passes = params["read_factor"]
    curve = params.get("stride_passes")
    if curve:  # the measured points, linear in log2 of the stride between two of them
        xs = [math.log2(x) for x, _ in curve]
        passes = float(np.interp(math.log2(stride), xs, [y for _, y in curve]))
    elif "wide_factor" in params:
        lo, hi = math.log2(params["narrow_stride"]), math.log2(params["wide_stride"])
        t = min(1.0, max(0.0, (math.log2(stride) - lo) / (hi - lo)))
        passes += t * (params["wide_factor"] - params["read_factor"])
    if "small_scale" not in params:
        return passes
    lo, hi = math.log2(params["small_bytes"]), math.log2(params["large_bytes"])
    t = min(1.0, max(0.0, (math.log2(nbytes) - lo) / (hi - lo)))
    return passes * (params["small_scale"] + t * (1.0 - params["small_scale"]))


def test_the_slow_reduction_form_pays_its_extra_passes():
    cpu = load_target(CPU)
    rule = next(r for r in cpu.op_rules if r.kind == "reduction_minor")
    column = score(parse_module(REDUCE.replace("OUT", "512").replace("DIM", "0")), cpu)
    row = score(parse_module(REDUCE.replace("OUT", "256").replace("DIM", "1")), cpu)
    slow, fast = (column, row) if rule.params["slow"] == "kept" else (row, column)
    assert fast.total == 0
    # Each result element reads its 256 elements one row of 512 f32 apart.
    extra = int(column_passes(rule.params, 512 * 4, 256 * 512 * 4) * cpu.pass_ns(256 * 512 * 4))
    assert slow.total == extra > 0
    assert "the slow form" in slow.terms[0].reason


def test_a_column_reduction_pays_more_the_farther_apart_it_reads():
    # Measured (f32 sums of 1 MiB, extra passes over the row form, medians of three runs):
    # 14.5 at 128 bytes apart, 16.1 at 256, 25.1 at 512, 26.6 at 1 KiB, 38.5 at 2 KiB,
    # 47.4-50.6 at 4 and 8 KiB.
    cpu = load_target(CPU)
    rule = next(r for r in cpu.op_rules if r.kind == "reduction_minor")
    assert rule.params["wide_factor"] > rule.params["read_factor"] > 0
    totals = []
    for rows, cols in ((2048, 64), (1024, 128), (256, 512), (128, 1024), (64, 2048)):
        text = REDUCE.replace("256,512", f"{rows},{cols}").replace("OUT", str(cols)).replace(
            "DIM", "0")
        total = score(parse_module(text), cpu).total
        nbytes = rows * cols * 4
        passes = (column_passes(rule.params, cols * 4, nbytes)
                  if rows >= rule.params["min_extent"] else 0)
        assert total == int(passes * cpu.pass_ns(nbytes))
        totals.append(total)
    # Each doubling of the stride costs more, up to 4 KiB; 64 rows are below min_extent: free.
    assert totals[0] < totals[1] < totals[2] < totals[3] and totals[4] == 0


def test_a_column_reduction_past_the_cache_pays_its_passes_at_the_caches_bandwidth():
    # Measured extra ns per element at 512 bytes apart: 2.08 over 1 MiB, 2.19-2.33 over 4 MiB,
    # 3.12 over 8 MiB; a pass at the memory's bandwidth would make 8 MiB 11x dearer.
    cpu = load_target(CPU)
    rule = next(r for r in cpu.op_rules if r.kind == "reduction_minor")
    nbytes = 16384 * 128 * 4  # 8 MiB, rows 512 bytes apart
    assert nbytes > cpu.cache_bytes and cpu.memory_bandwidth_gb_per_s < cpu.cache_bandwidth_gb_per_s
    text = REDUCE.replace("256,512", "16384,128").replace("OUT", "128").replace("DIM", "0")
    total = score(parse_module(text), cpu).total
    assert total == int(column_passes(rule.params, 512, nbytes) * nbytes
                        / cpu.cache_bandwidth_gb_per_s)
    assert total < column_passes(rule.params, 512, nbytes) * cpu.pass_ns(nbytes) / 5


def test_a_column_reduction_over_an_operand_that_fits_nearer_the_core_pays_fewer_passes():
    # Measured (f32 sums, 2 KiB, 512 and 128 bytes apart): 31.5-35.0, 16.5-18.6 and 8.2-9.8
    # extra passes over 256 KiB against 38.5, 25.1 and 14.5 over 1 MiB.
    cpu = load_target(CPU)
    rule = next(r for r in cpu.op_rules if r.kind == "reduction_minor")
    assert 0 < rule.params["small_scale"] < 1
    assert rule.params["small_bytes"] == 256 * 1024 and rule.params["large_bytes"] == 1 << 20
    per_byte = []
    for rows in (128, 256, 512, 1024):  # rows of 512 f32, 2 KiB apart: 256 KiB .. 2 MiB
        text = REDUCE.replace("256,512", f"{rows},512").replace("OUT", "512").replace(
            "DIM", "0")
        per_byte.append(score(parse_module(text), cpu).total / cpu.pass_ns(rows * 2048))
    small, middle, large, larger = per_byte
    assert small == pytest.approx(rule.params["small_scale"] * large, rel=1e-3)
    assert small < middle < large == pytest.approx(larger, rel=1e-3)
    small_reason = score(parse_module(REDUCE.replace("256,512", "128,512").replace(
        "OUT", "512").replace("DIM", "0")), cpu).terms[0].reason
    assert f"x{rule.params['small_scale']:.2g} for an operand of 262144 bytes" in small_reason


MIXED_ADD = """HloModule m, entry_computation_layout={(f32[256,512]{1,0}, f32[256,512]{LAYOUT})->f32[256,512]{1,0}}
ENTRY e {
  a = f32[256,512]{1,0} parameter(0)
  b = f32[256,512]{LAYOUT} parameter(1)
  ROOT s = f32[256,512]{1,0} add(a, b)
}
"""
COPIED_ADD = """HloModule m, entry_computation_layout={(f32[256,512]{1,0}, f32[256,512]{0,1})->f32[256,512]{1,0}}
ENTRY e {
  a = f32[256,512]{1,0} parameter(0)
  b = f32[256,512]{0,1} parameter(1)
  c = f32[256,512]{1,0} copy(b)
  ROOT s = f32[256,512]{1,0} add(a, c)
}
"""


def test_an_add_reading_an_operand_in_another_layout_pays_the_inline_factor_on_the_copy():
    cpu = load_target(CPU)
    assert cpu.copies.inline_relayout > 1
    same = score(parse_module(MIXED_ADD.replace("LAYOUT", "1,0")), cpu)
    mixed = score(parse_module(MIXED_ADD.replace("LAYOUT", "0,1")), cpu)
    copied = score(parse_module(COPIED_ADD), cpu)
    assert same.total == 0 and copied.total > 0
    assert mixed.total == math.ceil(copied.total * cpu.copies.inline_relayout)
    assert mixed.terms[0].kind == "inline" and "no copy" in mixed.terms[0].reason


def test_assignment_still_inserts_the_copy_instead_of_reading_across_layouts():
    from solver.layout_assignment.assign import assign
    from solver.layout_assignment.options import AssignOptions

    module = parse_module(MIXED_ADD.replace("LAYOUT", "0,1"))
    result = assign(module, CPU, AssignOptions(time_limit_s=5))
    adds = [i for i in result.module.entry.instructions if i.opcode == "add"]
    operands = {n: i for i in result.module.entry.instructions for n in (i.name,)}
    assert all(operands[o].shape.layout == adds[0].shape.layout for o in adds[0].operands)
    assert result.objective == score(parse_module(COPIED_ADD), load_target(CPU)).total


def test_a_column_reduction_reading_few_elements_per_result_is_not_the_slow_form():
    cpu = load_target(CPU)
    rule = next(r for r in cpu.op_rules if r.kind == "reduction_minor")
    extent = int(rule.params.get("min_extent", 0))
    assert rule.params["slow"] == "kept" and extent > 16
    few = REDUCE.replace("256,512", f"{extent // 2},512").replace("OUT", "512").replace(
        "DIM", "0")
    many = REDUCE.replace("256,512", f"{extent},512").replace("OUT", "512").replace("DIM", "0")
    assert score(parse_module(few), cpu).total == 0
    assert score(parse_module(many), cpu).total > 0


RESHAPE = """HloModule r, entry_computation_layout={(f32[512,512]{0,1})->f32[512,4,128]{2,1,0}}
ENTRY e {
  p = f32[512,512]{0,1} parameter(0)
  ROOT r = f32[512,4,128]{2,1,0} reshape(p)
}
"""
#: The same reshape of 64 x 64: its innermost loop reads 64 x 4 = 256 bytes apart (measured:
#: 0.24x the copy's time; the 512 one, 2048 bytes apart, 7.7x).
RESHAPE_CLOSE = RESHAPE.replace("512", "64").replace("128", "16")


def test_a_reshape_that_moves_data_as_written_pays_the_reshape_factor():
    cpu = load_target(CPU)
    as_written = score(parse_module(RESHAPE), cpu)
    copy = score(parse_module(BITCAST_AND_COPY), cpu)
    assert cpu.transpose.reshape_standalone > 1
    assert "own elementwise loop" in as_written.terms[0].reason
    assert as_written.total > copy.total * 512 * 512 / (256 * 512)


def test_a_reshape_reading_close_elements_costs_the_copy():
    cpu = load_target(CPU)
    close = score(parse_module(RESHAPE_CLOSE), cpu)
    far = score(parse_module(RESHAPE), cpu)
    assert "256 bytes apart" in close.terms[0].reason
    # The same movement at 64x fewer bytes: the far one pays the reshape factor on top.
    per_byte_close, per_byte_far = close.total / (64 * 64), far.total / (512 * 512)
    assert per_byte_far > per_byte_close * cpu.transpose.reshape_standalone * 0.9


#: A copy whose result's minor dim has 3 elements, against one whose result's minor dim has 64:
#: the same bytes, both moving the minor dim (measured 0.107 against 0.017 ms).
ROWS = """HloModule c, entry_computation_layout={(f32[8,64,64,3]{2,3,1,0})->f32[8,64,64,3]{OUT}}
ENTRY e {
  p = f32[8,64,64,3]{2,3,1,0} parameter(0)
  ROOT c = f32[8,64,64,3]{OUT} copy(p)
}
"""


def test_a_copy_moving_the_minor_dim_pays_per_tile_of_its_blocked_transpose():
    # XLA:CPU's copy transposes in square tiles no wider than both minor dims: 2x2 ones
    # between 64 and 3 elements, the third element of each row one per tile (98304 * 2/3 / 4
    # + 32768 = 49152 tiles); 8x8 ones between 64 and 64 (98304 / 64 = 1536).
    cpu = load_target(CPU)
    assert cpu.copies.tile_ns > 0 and cpu.copies.tile_bytes == 32
    tiny = score(parse_module(ROWS.replace("OUT", "3,2,1,0")), cpu)
    wide = score(parse_module(ROWS.replace("OUT", "1,2,3,0")), cpu)
    assert abs((tiny.total - wide.total) - cpu.copies.tile_ns * (49152 - 1536)) <= 2
    assert "in 2x2 tiles, 32768 elements past whole tiles: 49152 tiles" in tiny.terms[0].reason
    # A 4-element minor dim fills 4x4 tiles (as fast as a wide copy, measured).
    four = score(parse_module(ROWS.replace("3]", "4]").replace("OUT", "3,2,1,0")), cpu)
    assert "in 4x4 tiles: 8192 tiles" in four.terms[0].reason
    # A plain copy (nothing moves) pays no tiles and no runs.
    same = score(parse_module(ROWS.replace("OUT", "2,3,1,0")), cpu)
    assert "runs" not in " ".join(t.reason for t in same.terms)
    assert "tiles" not in " ".join(t.reason for t in same.terms)


def test_a_copy_from_a_short_minor_dim_pays_the_input_factor_per_tile():
    cpu = load_target(CPU)
    text = ROWS.replace("{2,3,1,0}", "{3,2,1,0}")
    rev = score(parse_module(text.replace("OUT", "2,3,1,0")), cpu)
    passes = score(parse_module(text.replace("OUT", "2,3,1,0")), untiled(cpu))
    each = cpu.copies.tile_ns * cpu.copies.tile_input_factor
    assert 0 < cpu.copies.tile_input_factor < 1
    assert abs(rev.total - (passes.total - 8 * 64 * 3 * cpu.copies.row_ns + 49152 * each)) <= 2


def test_a_copy_keeping_its_minor_dim_pays_per_run():
    # Only major dims move: one memcpy per run of the 3-element minor dim (8 * 64 * 64 runs).
    cpu = load_target(CPU)
    text = ROWS.replace("{2,3,1,0}", "{3,2,1,0}")
    runs = score(parse_module(text.replace("OUT", "3,1,2,0")), cpu)
    one_pass = cpu.pass_ns(2 * 8 * 64 * 64 * 3 * 4) * cpu.transpose.major_only
    assert abs(runs.total - (one_pass + 8 * 64 * 64 * cpu.copies.row_ns)) <= 1
    assert "32768 runs of its result's minor dim (3 elements)" in runs.terms[0].reason


def test_assignment_rewrites_a_data_moving_reshape_as_copy_then_bitcast_reshape():
    from hlo.bitcast import is_bitcast
    from solver.layout_assignment.assign import assign
    from solver.layout_assignment.options import AssignOptions

    result = assign(parse_module(RESHAPE), CPU, AssignOptions(time_limit_s=5))
    by_name = {i.name: i for i in result.module.entry.instructions}
    reshape = by_name["r"]
    operand = by_name[reshape.operands[0]]
    assert operand.opcode == "copy" and str(operand.shape.layout) == "{1,0}"
    assert is_bitcast(operand.shape, reshape.shape)
    assert 0 < result.objective < score(parse_module(RESHAPE), load_target(CPU)).total
    assert any("a copy to the default layout makes it a bitcast" in c.why
               for c in result.inserted)


CONV = """HloModule c, entry_computation_layout={(f32[2,8,8,4]{LAYOUT}, f32[3,3,4,8]{3,2,1,0})->f32[2,8,8,8]{3,2,1,0}}
ENTRY e {
  x = f32[2,8,8,4]{LAYOUT} parameter(0)
  k = f32[3,3,4,8]{3,2,1,0} parameter(1)
  ROOT c = f32[2,8,8,8]{3,2,1,0} convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
}
"""


def test_a_convolution_in_another_layout_pays_the_naive_loop_per_flop():
    cpu = load_target(CPU)
    rule = next(r for r in cpu.rules_for("convolution") if r.kind == "default_layout")
    per_flop = float(rule.params["naive_ns_per_flop"])
    assert per_flop > 0
    flops = 2 * (2 * 8 * 8 * 8) * (3 * 3 * 4)  # 2 x result elements x kernel elements / 8
    assert score(parse_module(CONV.replace("LAYOUT", "3,2,1,0")), cpu).total == 0
    nchw = score(parse_module(CONV.replace("LAYOUT", "2,1,3,0")), cpu)
    assert nchw.total == int(flops * per_flop)
    assert "naive loop" in nchw.terms[0].reason


CONV3 = """HloModule c, entry_computation_layout={(f32[2,8,8,4]{X}, f32[3,3,4,8]{K})->f32[2,8,8,8]{R}}
ENTRY e {
  x = f32[2,8,8,4]{X} parameter(0)
  k = f32[3,3,4,8]{K} parameter(1)
  c = f32[2,8,8,8]{R} convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  ROOT n = f32[2,8,8,8]{R} negate(c)
}
"""


@pytest.mark.parametrize("x_off", [False, True])
@pytest.mark.parametrize("k_off", [False, True])
@pytest.mark.parametrize("r_off", [False, True])
def test_a_convolution_runs_its_naive_loop_once_whichever_arrays_miss(x_off, k_off, r_off):
    # Measured (bench/fidelity.py's random variants of flax_resnet_train): the extra time of a
    # variant follows the flops of its naive convolutions counted once each, not once per
    # array in another layout. A pairwise model prices it exactly in 7 of the 8 cases; with
    # the kernel and the result both off and the input not, it pays twice.
    cpu = load_target(CPU)
    rule = next(r for r in cpu.rules_for("convolution") if r.kind == "default_layout")
    naive = int(2 * (2 * 8 * 8 * 8) * (3 * 3 * 4) * float(rule.params["naive_ns_per_flop"]))
    text = (CONV3.replace("{X}", "{2,1,3,0}" if x_off else "{3,2,1,0}")
            .replace("{K}", "{2,3,1,0}" if k_off else "{3,2,1,0}")
            .replace("{R}", "{2,1,3,0}" if r_off else "{3,2,1,0}"))
    result = score(parse_module(text), cpu)
    loops = [t for t in result.terms if "naive loop" in t.reason]
    expected = 0 if not (x_off or k_off or r_off) else 2 if (k_off and r_off and not x_off) else 1
    assert sum(t.ns for t in loops) == expected * naive
    assert len(loops) == expected


#: The sum combiner of the reductions below.
ADD = """add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
"""
ORDER = """HloModule r, entry_computation_layout={(f32[64,32,128]{LAYOUT})->f32[128]{0}}
""" + ADD + """ENTRY e {
  p = f32[64,32,128]{LAYOUT} parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[128]{0} reduce(p, z), dimensions={DIMS}, to_apply=add
}
"""


def test_a_row_reduction_whose_minor_dim_is_not_the_vectorized_loop_pays_the_order_passes():
    # XLA:CPU nests the reduction loops in the listed order, the last innermost, and unrolls
    # an innermost loop of at most ``unroll_extent`` iterations whole. Measured: summed over
    # {0,1}, f32[64,32,128] took 0.03 ms as {0,1,2} and 0.23 ms as {1,0,2} (dim 1, 32, is
    # unrolled: dim 0's loop is the vectorized one); f32[32,32,256] summed over {0,2} 0.056 ms
    # as {2,1,0} and 0.088 ms as {0,2,1} (dim 2, 256, is not unrolled).
    cpu = load_target(CPU)
    rule = next(r for r in cpu.op_rules if r.kind == "reduction_minor")
    factor = rule.params["order_factor"]
    assert factor > 1 and 32 <= rule.params["unroll_extent"] < 256
    # One pass over a 1 MiB operand: it fits the cache, so at the cache's bandwidth.
    assert 64 * 32 * 128 * 4 <= cpu.cache_bytes
    expected = int(factor * (64 * 32 * 128 * 4) / cpu.cache_bandwidth_gb_per_s)

    def scored(text: str, layout: str, dims: str):
        return score(parse_module(text.replace("LAYOUT", layout).replace("DIMS", dims)), cpu)

    assert scored(ORDER, "0,1,2", "0,1").total == 0
    misordered = scored(ORDER, "1,0,2", "0,1")
    assert misordered.total == expected
    assert "whose loop XLA:CPU vectorizes" in misordered.terms[0].reason
    # Listed the other way round, dim 0 (64) is unrolled: dim 1 is the vectorized one.
    assert scored(ORDER, "1,0,2", "1,0").total == 0
    assert scored(ORDER, "0,1,2", "1,0").total == expected
    long_inner = ORDER.replace("64,32,128", "32,32,256").replace("f32[128]", "f32[32]")
    assert scored(long_inner, "2,1,0", "0,2").total == 0
    assert scored(long_inner, "0,2,1", "0,2").total == expected


def test_a_maximum_row_reduction_pays_no_order_term():
    # Measured: f32[32,64,128] max-reduced over {0,1} took 0.17 ms as {0,1,2} and 0.16 ms
    # as {1,0,2}: not vectorized, it runs scalar in either order.
    cpu = load_target(CPU)
    text = ORDER.replace("LAYOUT", "1,0,2").replace("DIMS", "0,1").replace(
        "ROOT s = f32[] add(a, b)", "ROOT s = f32[] maximum(a, b)")
    assert "maximum" in text
    assert score(parse_module(text), cpu).total == 0


def test_a_reduction_of_every_dim_pays_no_order_term():
    # Measured: f32[512,512] summed over {0,1} ran as fast as {1,0} and as {0,1}.
    full = REDUCE.replace("f32[OUT]{0}", "f32[]").replace("DIM", "0,1")
    assert score(parse_module(full.replace("256,512]{1,0}", "256,512]{0,1}")), load_target(CPU)).total == 0
    assert score(parse_module(full), load_target(CPU)).total == 0


def test_assignment_makes_the_first_listed_reduced_dim_minor():
    from solver.layout_assignment.assign import assign
    from solver.layout_assignment.options import AssignOptions

    # NHWC summed over H and W: row-major keeps C minor (a column reduction of 256 elements
    # per result element); the fast form copies the operand so that H, then W, are minor.
    text = """HloModule m, entry_computation_layout={(f32[4,16,16,16]{3,2,1,0})->f32[4,16]{1,0}}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  p = f32[4,16,16,16]{3,2,1,0} parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[4,16]{1,0} reduce(p, z), dimensions={1,2}, to_apply=add
}
"""
    result = assign(parse_module(text), CPU, AssignOptions(time_limit_s=5))
    names = {i.name: i for i in result.module.entry.instructions}
    reduce = next(i for i in result.module.entry.instructions if i.opcode == "reduce")
    operand = names[reduce.operands[0]].shape.layout.minor_to_major
    assert operand[:2] == (1, 2)


ARGMAX_COMBINER = """argmax {
  a = f32[] parameter(0)
  i = s32[] parameter(1)
  b = f32[] parameter(2)
  j = s32[] parameter(3)
  g = pred[] compare(a, b), direction=GE
  v = f32[] select(g, a, b)
  k = s32[] select(g, i, j)
  ROOT t = (f32[], s32[]) tuple(v, k)
}
"""
ARGMAX = """HloModule a, entry_computation_layout={(f32[1024,32]{0,1}, s32[1024,32]{0,1})->(f32[1024]{0}, s32[1024]{0})}
""" + ARGMAX_COMBINER + """ENTRY e {
  p = f32[1024,32]{0,1} parameter(0)
  q = s32[1024,32]{0,1} parameter(1)
  z = f32[] constant(0)
  y = s32[] constant(0)
  ROOT r = (f32[1024]{0}, s32[1024]{0}) reduce(p, q, z, y), dimensions={1}, to_apply=argmax
}
"""


def test_a_variadic_column_reduction_turns_slow_at_its_own_extent():
    # Kept dim 0 minor, 32 elements reduced per result, 4 KiB apart (spanning 128 KiB):
    # below a sum's min_extent (an add would be fast there), at an argmax's (measured: the
    # argmax column form 1.2-1.8x its row form from 32 elements per result, 0.4-0.7x at 8
    # and 16).
    cpu = load_target(CPU)
    rule = next(r for r in cpu.op_rules if r.kind == "reduction_minor")
    assert 16 < rule.params["variadic_min_extent"] <= 32 < rule.params["min_extent"]
    assert rule.params["variadic_min_span"] <= 32 * 4096
    assert rule.params["wide_stride"] <= 4096  # the widest reads: wide_factor passes
    nbytes = 1024 * 32 * 4  # 128 KiB: small_scale times the passes measured over 1 MiB
    expected = int(column_passes(rule.params, 4096, nbytes) * nbytes
                   / cpu.cache_bandwidth_gb_per_s)
    assert column_passes(rule.params, 4096, nbytes) == pytest.approx(
        rule.params["wide_factor"] * rule.params["small_scale"])
    scored = score(parse_module(ARGMAX), cpu)
    assert scored.total == expected
    assert "the slow form" in scored.terms[0].reason
    # 16 elements per result (8 KiB apart: spanning 128 KiB too): the column form is the
    # fast one.
    sixteen = ARGMAX.replace("1024", "2048").replace("2048,32]", "2048,16]")
    assert score(parse_module(sixteen), cpu).total == 0
    # Without the rule's variadic extent, a variadic column reduction is slow at any extent.
    params = {k: v for k, v in rule.params.items() if k != "variadic_min_extent"}
    rules = [r.model_copy(update={"params": params}) if r is rule else r for r in cpu.op_rules]
    plain = cpu.model_copy(update={"op_rules": rules})
    assert score(parse_module(sixteen), plain).total > 0


BATCHED_ARGMAX = """HloModule a, entry_computation_layout={(f32[B,32,K]{2,1,0}, s32[B,32,K]{2,1,0})->(f32[B,K]{1,0}, s32[B,K]{1,0})}
""" + ARGMAX_COMBINER + """ENTRY e {
  p = f32[B,32,K]{2,1,0} parameter(0)
  q = s32[B,32,K]{2,1,0} parameter(1)
  z = f32[] constant(0)
  y = s32[] constant(0)
  ROOT r = (f32[B,K]{1,0}, s32[B,K]{1,0}) reduce(p, q, z, y), dimensions={1}, to_apply=argmax
}
"""


def _batched_argmax(b: int, k: int) -> str:
    return BATCHED_ARGMAX.replace("B,", f"{b},").replace(",K]", f",{k}]")


def test_a_variadic_column_reduction_over_rows_close_together_is_not_slow():
    # An argmax over the middle dim of [B, 32, K], the kept dim K minor: its 32 rows lie
    # 4 K bytes apart. Measured (1 MiB, three runs): the column form 0.99-1.16 of the row
    # form while they span up to 64 KiB (K <= 512), 1.69-2.37 from 128 KiB (K >= 1024); and
    # read in place at K = 64-256 it ran 0.81-0.89 of the copy to the row form plus that form.
    cpu = load_target(CPU)
    rule = next(r for r in cpu.op_rules if r.kind == "reduction_minor")
    assert 64 * 1024 < rule.params["variadic_min_span"] <= 128 * 1024
    for k in (64, 128, 256, 512):
        assert score(parse_module(_batched_argmax(8192 // k, k)), cpu).total == 0
    for k in (1024, 2048):
        slow = score(parse_module(_batched_argmax(8192 // k, k)), cpu)
        assert slow.total > 0 and "the slow form" in slow.terms[0].reason
    # Without the rule's span, a variadic column reduction is slow at any span.
    params = {k: v for k, v in rule.params.items() if k != "variadic_min_span"}
    rules = [r.model_copy(update={"params": params}) if r is rule else r for r in cpu.op_rules]
    plain = cpu.model_copy(update={"op_rules": rules})
    assert score(parse_module(_batched_argmax(32, 256)), plain).total > 0


SMALL_STRIDE = """HloModule t, entry_computation_layout={(f32[64,8,3,64]{3,2,1,0})->f32[8,64,64,3]{3,2,1,0}}
ENTRY e {
  p = f32[64,8,3,64]{3,2,1,0} parameter(0)
  ROOT t = f32[8,64,64,3]{3,2,1,0} TRANSPOSE
}
"""


def _small_stride(cpu):
    standalone = score(parse_module(SMALL_STRIDE.replace(
        "TRANSPOSE", "transpose(p), dimensions={1,0,3,2}")), cpu)
    copy = score(parse_module(SMALL_STRIDE.replace(
        "TRANSPOSE", "copy(b)").replace(
        "  ROOT", "  b = f32[8,64,64,3]{2,3,0,1} transpose(p), dimensions={1,0,3,2}\n  ROOT")), cpu)
    return standalone, copy


def test_a_standalone_transpose_reading_close_elements_costs_the_copy_without_its_runs():
    # The result's minor dim (3) is the operand's dim 2, whose elements lie 64 x 4 = 256
    # bytes apart: measured 0.019-0.021 ms standalone against 0.14 ms for XLA's bitcast +
    # copy. Not a 2-D transpose, so no ``standalone_near`` (with a batch dim: 0.1-0.9x the
    # copy form, 2-D: 1.1-1.5x); the copy's 32,768 runs of 3 elements the standalone loop
    # does not pay (the calibration's standalone transposes to runs of 1-6 elements: no
    # cost per run).
    cpu = load_target(CPU)
    assert 256 < cpu.transpose.standalone_min_stride <= 2048
    assert cpu.transpose.standalone_row_ns == 0.0 < cpu.copies.row_ns
    standalone, copy = _small_stride(cpu)
    assert copy.total > 0
    # XLA's copy: 49152 blocked-transpose tiles (64- and 3-element minor dims).
    assert abs(standalone.total - (copy.total - 49152 * cpu.copies.tile_ns)) <= 1
    assert "256 bytes apart" in standalone.terms[0].reason


#: f32[256,64] transposed: the innermost loop reads 64 x 4 = 256 bytes apart (a 2-D transpose,
#: as in fft_1d; measured 1.2-1.5x XLA's bitcast + copy).
CLOSE_LONG = """HloModule t, entry_computation_layout={(f32[256,64]{1,0})->f32[64,256]{1,0}}
ENTRY e {
  p = f32[256,64]{1,0} parameter(0)
  ROOT t = f32[64,256]{1,0} TRANSPOSE
}
"""


def test_a_close_reading_2d_transpose_costs_more_than_xlas_form():
    cpu = load_target(CPU)
    assert cpu.transpose.standalone_near > 1
    standalone = score(parse_module(CLOSE_LONG.replace(
        "TRANSPOSE", "transpose(p), dimensions={1,0}")), cpu)
    copy = score(parse_module(CLOSE_LONG.replace("TRANSPOSE", "copy(b)").replace(
        "  ROOT", "  b = f32[64,256]{0,1} transpose(p), dimensions={1,0}\n  ROOT")), cpu)
    assert standalone.total == math.ceil(copy.total * cpu.transpose.standalone_near)
    assert standalone.total > copy.total > 0
    assert "2-D transpose reading 256 bytes apart" in standalone.terms[0].reason


def test_a_small_close_reading_2d_transpose_costs_the_copy():
    # f32[64,64] (16 KiB), reading 256 bytes apart: measured 0.6-0.9x XLA's form.
    cpu = load_target(CPU)
    assert 64 * 64 * 4 < cpu.transpose.standalone_near_min_bytes <= 256 * 64 * 4
    small = CLOSE_LONG.replace("256", "64")
    standalone = score(parse_module(small.replace("TRANSPOSE", "transpose(p), dimensions={1,0}")),
                       cpu)
    copy = small.replace("TRANSPOSE", "copy(b)").replace(
        "  ROOT", "  b = f32[64,64]{0,1} transpose(p), dimensions={1,0}\n  ROOT")
    # The copy's passes, not its tiles (the standalone loop does not tile, nor pay per run).
    assert cpu.transpose.standalone_row_ns == 0.0
    assert standalone.total == score(parse_module(copy), untiled(cpu, 0.0)).total > 0


def test_assignment_writes_xlas_form_of_a_transpose_only_where_it_is_priced_cheaper():
    from hlo.bitcast import transpose_is_bitcast
    from solver.layout_assignment.assign import assign
    from solver.layout_assignment.options import AssignOptions

    cpu = load_target(CPU)
    two_d = assign(parse_module(CLOSE_LONG.replace(
        "TRANSPOSE", "transpose(p), dimensions={1,0}")), CPU, AssignOptions(time_limit_s=5))
    # XLA's form: the transpose a bitcast of the parameter, then a copy to the result's layout.
    by_name = {i.name: i for i in two_d.module.entry.instructions}
    root = by_name[two_d.module.entry.root]
    assert by_name["t"].operands == ("p",) and str(by_name["t"].shape.layout) == "{0,1}"
    assert transpose_is_bitcast(by_name["p"].shape, by_name["t"].shape, (1, 0))
    assert root.opcode == "copy" and root.operands == ("t",) and str(root.shape.layout) == "{1,0}"
    assert [c.why.split(" (")[0] for c in two_d.inserted] == [
        "t moves data: written as a bitcast of its operand to {0,1} and a copy to {1,0} after "
        "it, XLA's form"]
    batched = assign(parse_module(SMALL_STRIDE.replace(
        "TRANSPOSE", "transpose(p), dimensions={1,0,3,2}")), CPU, AssignOptions(time_limit_s=5))
    assert [i.opcode for i in batched.module.entry.instructions] == ["parameter", "transpose"]
    assert batched.objective == _small_stride(cpu)[0].total


TWO_TRANSPOSES = """HloModule t, entry_computation_layout={(f32[256,64]{1,0})->(f32[64,256]{1,0}, f32[64,256]{1,0})}
ENTRY e {
  p = f32[256,64]{1,0} parameter(0)
  t1 = f32[64,256]{1,0} transpose(p), dimensions={1,0}
  t2 = f32[64,256]{1,0} transpose(p), dimensions={1,0}
  n = f32[64,256]{1,0} negate(t2)
  ROOT r = (f32[64,256]{1,0}, f32[64,256]{1,0}) tuple(t1, n)
}
"""


def test_a_copy_two_transposes_share_stays_before_them_and_the_report_says_it_is_shared():
    from solver.layout_assignment.assign import assign
    from solver.layout_assignment.options import AssignOptions

    result = assign(parse_module(TWO_TRANSPOSES), CPU, AssignOptions(time_limit_s=5))
    by_name = {i.name: i for i in result.module.entry.instructions}
    copies = [i for i in result.module.entry.instructions if i.opcode == "copy"]
    assert len(copies) == 1 and copies[0].operands == ("p",)
    assert by_name["t1"].operands == by_name["t2"].operands == (copies[0].name,)
    assert [(c.value, c.consumer, c.shared) for c in result.inserted] == [
        ("p", "t1", False), ("p", "t2", True)]


def test_a_standalone_transpose_below_the_full_stride_pays_in_proportion_to_its_stride():
    # f32[256,256]: the innermost loop reads 256 x 4 = 1 KiB apart, half the full stride
    # (measured 2.5x the copy form at 1 KiB, 7.7x at 2 KiB).
    cpu = load_target(CPU)
    assert cpu.transpose.standalone_full_stride == 2048
    square = """HloModule t, entry_computation_layout={(f32[256,256]{1,0})->f32[256,256]{1,0}}
ENTRY e {
  p = f32[256,256]{1,0} parameter(0)
  ROOT t = f32[256,256]{1,0} BODY
}
"""
    standalone = score(parse_module(square.replace("BODY", "transpose(p), dimensions={1,0}")),
                       cpu)
    copy = score(parse_module(square.replace("BODY", "copy(b)").replace(
        "  ROOT", "  b = f32[256,256]{0,1} transpose(p), dimensions={1,0}\n  ROOT")),
        untiled(cpu, 0.0))
    factor = cpu.transpose.standalone * 1024 / 2048
    assert abs(standalone.total - copy.total * factor) <= 1


def test_a_maximum_column_reduction_pays_less_than_an_add_one():
    # Measured (1 MiB, ms): the column form costs the same for add and maximum (0.230/0.218,
    # 0.773/0.759, 0.399/0.374); the maximum row form runs scalar (0.12-0.16 against 0.02-0.03).
    cpu = load_target(CPU)
    rule = next(r for r in cpu.op_rules if r.kind == "reduction_minor")
    assert rule.params["scalar"] == ["maximum"] and rule.params["scalar_factor"] > 0
    column = REDUCE.replace("OUT", "512").replace("DIM", "0")
    add = score(parse_module(column), cpu)
    maximum = score(parse_module(column.replace("] add(a, b)", "] maximum(a, b)")), cpu)
    passes = column_passes(rule.params, 512 * 4, 256 * 512 * 4) - rule.params["scalar_factor"]
    assert maximum.total == int(passes * cpu.pass_ns(256 * 512 * 4)) < add.total
    assert "scalar maximum row reduction" in maximum.terms[0].reason


UNIT_MINOR_COPY = """HloModule u, entry_computation_layout={(f32[512,512,1]SRC)->f32[512,512,1]DST}
ENTRY e {
  p = f32[512,512,1]SRC parameter(0)
  ROOT c = f32[512,512,1]DST copy(p)
}
"""


def test_a_copy_to_a_size_1_minor_dim_pays_a_tile_per_element():
    # Measured: f32[512,512,1] copied from {1,2,0} to {2,1,0} (the same bytes in the same
    # order) 0.386 ms, 1.47 ns per element; a plain copy 0.025; the other way round 0.025
    # (f32[8,64,64,1] the same way, 2026-11-28: 4.6-4.8 ns per element).
    cpu = load_target(CPU)
    plain = score(parse_module(UNIT_MINOR_COPY.replace("SRC", "{2,1,0}").replace(
        "DST", "{2,1,0}")), cpu)
    to_unit = score(parse_module(UNIT_MINOR_COPY.replace("SRC", "{1,2,0}").replace(
        "DST", "{2,1,0}")), cpu)
    from_unit = score(parse_module(UNIT_MINOR_COPY.replace("SRC", "{2,1,0}").replace(
        "DST", "{1,2,0}")), cpu)
    # A copy that moves no element: one pass read + written, as every plain copy is priced.
    one_pass = cpu.pass_ns(2 * 512 * 512 * 4)
    assert abs(from_unit.total - one_pass) <= 1
    assert abs(to_unit.total - (one_pass + 512 * 512 * cpu.copies.tile_ns)) <= 1
    assert "in 1x1 tiles: 262144 tiles" in to_unit.terms[0].reason
    assert plain.total <= from_unit.total



#: f32[16,8,32] -> [8,16,32]: only the two major dims move; the standalone loop reads rows of
#: 32 floats contiguously (gen_einsum_heavy's transpose: measured 0.93x XLA's form there,
#: 0.12-0.77x on 64 KiB-1 MiB operands).
MAJOR_ONLY = """HloModule t, entry_computation_layout={(f32[16,8,32]{2,1,0})->f32[8,16,32]{2,1,0}}
ENTRY e {
  p = f32[16,8,32]{2,1,0} parameter(0)
  ROOT t = f32[8,16,32]{2,1,0} TRANSPOSE
}
"""


def _major_only(cpu):
    standalone = score(parse_module(MAJOR_ONLY.replace(
        "TRANSPOSE", "transpose(p), dimensions={1,0,2}")), cpu)
    copy = score(parse_module(MAJOR_ONLY.replace("TRANSPOSE", "copy(b)").replace(
        "  ROOT", "  b = f32[8,16,32]{2,0,1} transpose(p), dimensions={1,0,2}\n  ROOT")), cpu)
    return standalone, copy


def test_a_standalone_transpose_moving_only_major_dims_costs_the_factor_times_xlas_form():
    cpu = load_target(CPU)
    assert 0 < cpu.transpose.standalone_major < 1
    standalone, copy = _major_only(cpu)
    assert copy.total > 0
    assert standalone.total == math.ceil(copy.total * cpu.transpose.standalone_major)
    assert "moving only major dims" in standalone.terms[0].reason
    # A transpose that moves the minor dim is not priced by it (the 4-D case above).
    assert "moving only major dims" not in _small_stride(cpu)[0].terms[0].reason
    # Without the term (a target whose factor is 1) the two forms cost the same passes; the
    # copy pays its 8 x 16 memcpy runs of 32 elements, the standalone loop does not.
    same = cpu.model_copy(update={"transpose": cpu.transpose.model_copy(
        update={"standalone_major": 1.0})})
    plain, form = _major_only(same)
    assert form.total == copy.total
    assert abs(form.total - plain.total - 128 * cpu.copies.row_ns) <= 1


def test_assignment_writes_a_major_only_transpose_standalone():
    from solver.layout_assignment.assign import assign
    from solver.layout_assignment.options import AssignOptions

    cpu = load_target(CPU)
    found = assign(parse_module(MAJOR_ONLY.replace(
        "TRANSPOSE", "transpose(p), dimensions={1,0,2}")), CPU, AssignOptions(time_limit_s=5))
    assert [i.opcode for i in found.module.entry.instructions] == ["parameter", "transpose"]
    assert found.objective == _major_only(cpu)[0].total < _major_only(cpu)[1].total


DOT = """HloModule d, entry_computation_layout={(f32[64,256]{LHS}, f32[RHS_DIMS]{RHS})->f32[64,256]{OUT}}
ENTRY e {
  a = f32[64,256]{LHS} parameter(0)
  b = f32[RHS_DIMS]{RHS} parameter(1)
  ROOT d = f32[64,256]{OUT} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={RC}
}
"""


def _dot(lhs: str, rhs: str, out: str, rc: int) -> str:
    return (DOT.replace("LHS", lhs).replace("RHS_DIMS", "256,256").replace("RHS", rhs)
            .replace("OUT", out).replace("RC", str(rc)))


def test_a_dot_off_its_physical_nn_form_pays_a_slower_kernel_per_flop():
    # Measured (bench/dot_forms.py): XLA:CPU runs f32[64,256] x f32[256,256] in 0.15 ms with
    # the lhs contracting dim minor, the rhs free dim minor and the result row-major, and
    # x @ w.T (rhs contracted on its minor dim 1, XLA's own layouts) in 0.26-0.28 ms; with w
    # stored column-major (its contracting dim major: the nn form again) 0.17 ms.
    cpu = load_target(CPU)
    rule = next(r for r in cpu.rules_for("dot") if r.kind == "dot_nn")
    operand, result = rule.params["ns_per_flop"], rule.params["result_ns_per_flop"]
    assert 0 < operand < result
    flops = 2 * 64 * 256 * 256
    assert score(parse_module(_dot("1,0", "1,0", "1,0", 0)), cpu).total == 0
    nt = score(parse_module(_dot("1,0", "1,0", "1,0", 1)), cpu)
    assert nt.total == int(flops * operand) and "slower kernel" in nt.terms[0].reason
    assert score(parse_module(_dot("1,0", "0,1", "1,0", 1)), cpu).total == 0
    # The result written transposed picks the mirror image (C^T = B^T A^T: the lhs with its
    # free dim minor, the rhs with its contracting dim minor), measured as fast as the nn
    # form (ccc 0.97-1.05x rrr); a form with one operand off costs what that operand off the
    # other orientation costs (measured: rcr as crc, crr as rcc, rrc as ccr).
    assert score(parse_module(_dot("0,1", "0,1", "0,1", 0)), cpu).total == 0
    column_result = score(parse_module(_dot("1,0", "1,0", "0,1", 0)), cpu)
    assert column_result.total == 2 * int(flops * operand)
    assert "mirror image" in column_result.terms[0].reason
    layout = {"r": "1,0", "c": "0,1"}

    def form(text: str) -> int:
        return score(parse_module(_dot(*(layout[x] for x in text), 0)), cpu).total

    assert form("rcr") == form("crc") == form("crr") == form("rcc") == int(flops * operand)
    assert form("ccr") == form("rrc") == 2 * int(flops * operand)
    # A result in neither form (its two lhs-free dims swapped) pays the result's price too.
    split = """HloModule s, entry_computation_layout={(f32[8,8,256]{2,1,0}, f32[256,256]{1,0})->f32[8,8,256]{OUT}}
ENTRY e {
  a = f32[8,8,256]{2,1,0} parameter(0)
  b = f32[256,256]{1,0} parameter(1)
  ROOT d = f32[8,8,256]{OUT} dot(a, b), lhs_contracting_dims={2}, rhs_contracting_dims={0}
}
"""
    assert score(parse_module(split.replace("OUT", "2,1,0")), cpu).total == 0
    mirror = split.replace("OUT", "1,0,2").replace("{2,1,0}", "{1,0,2}").replace(
        "256]{1,0}", "256]{0,1}")
    assert score(parse_module(mirror), cpu).total == 0
    # The mirror result with the operands in the nn form: both off the mirror image.
    assert score(parse_module(split.replace("OUT", "1,0,2")), cpu).total == 2 * int(
        flops * operand)
    neither = score(parse_module(split.replace("OUT", "2,0,1")), cpu)
    assert neither.total == int(flops * result)


#: ``f32[n, m]`` transposed: the innermost loop reads ``n`` elements ``4 m`` bytes apart.
FAR = """HloModule t, entry_computation_layout={(f32[_N,_M]{1,0})->f32[_M,_N]{1,0}}
ENTRY e {
  p = f32[_N,_M]{1,0} parameter(0)
  ROOT t = f32[_M,_N]{1,0} transpose(p), dimensions={1,0}
}
"""


def test_a_far_reading_transpose_streams_where_its_reads_fit_the_cache_sets():
    # Measured (bench/transpose_forms.py): [3, 87381] 0.09x XLA's bitcast transpose + copy,
    # [24, 10922] 0.26x, [8, 32768] 0.41x: their reads fit the 8 ways of the level-1 cache's
    # sets; [64, 4096] (64 reads 16 KiB apart, all in one set) 1.5-1.6x.
    cpu = load_target(CPU)
    cache = cpu.transpose.cache
    assert (cache.sets, cache.ways, cache.line_bytes) == (64, 8, 64)
    passes = untiled(cpu, 0.0)

    def prices(n, m):
        text = FAR.replace("_N", str(n)).replace("_M", str(m))
        form = text.replace("transpose(p), dimensions={1,0}", "copy(b)").replace(
            "  ROOT", f"  b = f32[{m},{n}]{{0,1}} transpose(p), dimensions={{1,0}}\n  ROOT")
        return (score(parse_module(text), cpu), score(parse_module(form), passes).total)

    for n, m in ((3, 87381), (24, 10922), (8, 32768)):
        standalone, copy_passes = prices(n, m)
        assert standalone.total == copy_passes, (n, m)
        assert f"its innermost loop's {n} reads, {4 * m} bytes apart, fit the cache" in (
            standalone.terms[0].reason)
    standalone, copy_passes = prices(64, 4096)
    assert standalone.total == math.ceil(copy_passes * cpu.transpose.standalone)
    # Without a cache geometry every far read pays the factor.
    bare = cpu.model_copy(update={"transpose": cpu.transpose.model_copy(update={"cache": None})})
    text = FAR.replace("_N", "3").replace("_M", "87381")
    assert score(parse_module(text), bare).total > 5 * prices(3, 87381)[0].total


#: ``jnp.cumsum``'s reduce-window form: a sum over the last 16 elements of a dim, padded low.
CUMSUM = """HloModule c, entry_computation_layout={(f32[128,4,16]{LAYOUT})->f32[128,4,16]{LAYOUT}}
""" + ADD + """ENTRY e {
  p = f32[128,4,16]{LAYOUT} parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[128,4,16]{LAYOUT} reduce-window(p, z), window={size=1x1x16 pad=0_0x0_0x15_0}, to_apply=add
}
"""
POOL = """HloModule p, entry_computation_layout={(f32[8,32,32,16]{LAYOUT})->f32[8,32,32,16]{LAYOUT}}
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
ENTRY e {
  p = f32[8,32,32,16]{LAYOUT} parameter(0)
  z = f32[] constant(-inf)
  ROOT r = f32[8,32,32,16]{LAYOUT} reduce-window(p, z), window={size=1x3x3x1 pad=0_0x1_1x1_1x0_0}, to_apply=max
}
"""


def test_a_reduce_window_with_a_windowed_dim_minor_pays_per_window_element():
    # Measured (the calibration's reduce-window groups, 2026-11-28): a cumulative sum of 16
    # along the minor dim of f32[256,256] 0.44-0.46 ms against 0.15 ms along the major dim;
    # an NHWC 3x3 max pool with W minor 1.1-1.4 ms against 0.25-0.27 ms with C minor.
    cpu = load_target(CPU)
    ns = next(r for r in cpu.rules_for("reduce-window") if r.kind == "window_minor"
              ).params["ns_per_element"]
    assert ns > 0
    minor = score(parse_module(CUMSUM.replace("LAYOUT", "2,1,0")), cpu)
    assert minor.total == int(128 * 4 * 16 * 16 * ns)
    assert "physically minor dim 2 has a window of 16" in minor.terms[0].reason
    for layout in ("0,2,1", "1,0,2", "0,1,2"):
        assert score(parse_module(CUMSUM.replace("LAYOUT", layout)), cpu).total == 0, layout
    # NHWC pooling windows H and W: C minor is the fast form, W minor the slow one.
    assert score(parse_module(POOL.replace("LAYOUT", "3,2,1,0")), cpu).total == 0
    pool = score(parse_module(POOL.replace("LAYOUT", "2,1,0,3")), cpu)
    assert pool.total == int(8 * 32 * 32 * 16 * 9 * ns)


def test_assignment_moves_a_cumulative_sum_window_off_the_minor_dim():
    from solver.layout_assignment.assign import assign
    from solver.layout_assignment.options import AssignOptions

    # Row-major in and out: two copies of 32 KiB cost less than the windows read with their
    # dim minor, so the reduce-window runs with another dim minor between two copies.
    result = assign(parse_module(CUMSUM.replace("LAYOUT", "2,1,0")), CPU,
                    AssignOptions(time_limit_s=5))
    window = next(i for i in result.module.entry.instructions if i.opcode == "reduce-window")
    assert window.shape.layout.minor_to_major[0] != 2
    assert sum(i.opcode == "copy" for i in result.module.entry.instructions) == 2
    assert score(result.module, load_target(CPU)).total < score(
        parse_module(CUMSUM.replace("LAYOUT", "2,1,0")), load_target(CPU)).total


@pytest.mark.xla
def test_both_window_forms_compute_the_cumulative_sum_numpy_computes():
    from service.calibration.microbenchmarks import WINDOW_CASES, window_group
    from service.xla.execution import run_modules

    dims, sizes = WINDOW_CASES[0][0], WINDOW_CASES[0][1]
    x = np.random.default_rng(3).standard_normal(dims).astype(np.float32)
    run = run_modules([(b.kind, b.module) for b in window_group(*WINDOW_CASES[0]).benches],
                      inputs=[x])
    padded = np.concatenate([np.zeros((dims[0], sizes[1] - 1), np.float32), x], axis=1)
    want = sum(padded[:, k:k + dims[1]] for k in range(sizes[1]))
    for execution in run.executions:
        assert execution.refusal is None
        np.testing.assert_allclose(execution.outputs[0], want, rtol=1e-5, atol=1e-4)


def test_assignment_keeps_a_dot_whose_arrays_are_all_column_major_as_written():
    from solver.layout_assignment.assign import assign
    from solver.layout_assignment.options import AssignOptions

    # Every array column-major: the product transposed, a form XLA:CPU runs as fast as the
    # nn one, so no copy is worth its cost.
    text = _dot("0,1", "0,1", "0,1", 0)
    result = assign(parse_module(text), CPU, AssignOptions(time_limit_s=5))
    assert [i.opcode for i in result.module.entry.instructions] == [
        "parameter", "parameter", "dot"]
    assert result.objective == 0


def test_a_dot_form_rule_prices_only_the_element_types_and_operands_it_names():
    cpu = load_target(CPU)
    rule = next(r for r in cpu.rules_for("dot") if r.kind == "dot_nn")
    flops = 2 * 64 * 256 * 256
    ns = rule.params["ns_per_flop"]

    def priced(**restriction) -> int:
        changed = rule.model_copy(update=restriction)
        target = cpu.model_copy(update={"op_rules": tuple(
            changed if r is rule else r for r in cpu.op_rules)})
        return score(parse_module(_dot("0,1", "0,1", "1,0", 0)), target).total  # both off

    assert priced() == 2 * int(flops * ns)
    assert priced(element_types=("bf16",)) == 0
    assert priced(operands=(1,)) == int(flops * ns)


NEST_TRANSPOSE = """HloModule n
ENTRY e {
  p = f32[K,16,256]{2,1,0} parameter(0)
  ROOT t = f32[256,K,16]{2,1,0} transpose(p), dimensions={2,0,1}
}
"""
NEST_FORM = """HloModule n
ENTRY e {
  p = f32[K,16,256]{2,1,0} parameter(0)
  t = f32[256,K,16]{0,2,1} transpose(p), dimensions={2,0,1}
  ROOT c = f32[256,K,16]{2,1,0} copy(t)
}
"""


def test_a_standalone_transpose_whose_loop_nest_overflows_the_cache_pays_for_the_evictions():
    # [k, 16, 256] -> [256, k, 16]: the innermost loop's 16 reads (1 KiB apart) fit the
    # cache's sets, but a line is read again only when the outer loop over the operand's
    # minor dim moves on, after 16 k reads, all in 4 of the 64 sets. Measured against XLA's
    # form: 1.64x at k = 8 (128 KiB), 1.94x at 16, 2.14x at 32.
    cpu = load_target(CPU)
    assert cpu.transpose.cache is not None and cpu.transpose.nest_min_bytes == 128 * 1024
    plain = cpu.model_copy(update={"transpose": cpu.transpose.model_copy(
        update={"nest_min_bytes": 0})})
    # The standalone factor at reads 1 KiB apart (in proportion to the stride below the full
    # one), paid on the share of lines evicted.
    t = cpu.transpose
    factor = max(1.0, t.standalone * 1024 / t.standalone_full_stride)
    for k, evicted in ((8, 0.75), (16, 0.875), (32, 0.9375)):
        standalone = score(parse_module(NEST_TRANSPOSE.replace("K", str(k))), cpu)
        streaming = score(parse_module(NEST_TRANSPOSE.replace("K", str(k))), plain)
        form = score(parse_module(NEST_FORM.replace("K", str(k))), cpu)
        assert cpu.transpose.cache.overflow(((1024, 16), (16384, k))) == evicted
        assert abs(standalone.total - streaming.total * (1 + (factor - 1) * evicted)) <= 1
        assert standalone.total > form.total > streaming.total
        assert f"{evicted:.0%} of the lines its loops read are evicted" in standalone.terms[0].reason
    # Below nest_min_bytes (k = 4, 64 KiB) the innermost loop's reads alone decide: they fit.
    small = score(parse_module(NEST_TRANSPOSE.replace("K", "4")), cpu)
    assert "it streams" in small.terms[0].reason
    # Without the rule's size the same transposes stream at every size.
    assert "it streams" in score(parse_module(NEST_TRANSPOSE.replace("K", "32")), plain
                                 ).terms[0].reason



MOVED = """HloModule m, entry_computation_layout={(f32[512,COLS]{1,0})->f32[512,COLS]{0,1}}
ENTRY e {
  p = f32[512,COLS]{1,0} parameter(0)
  ROOT c = f32[512,COLS]{0,1} copy(p)
}
"""


@pytest.mark.parametrize("columns", [512, 1024])
def test_a_copy_inside_a_module_streams_at_the_caches_bandwidth_only_up_to_its_own_limit(columns):
    # Timed alone, a copy moving 4 MiB streams at the cache's bandwidth (its buffers stay
    # cached from run to run); inside modules it runs at the memory's (BENCHMARKS.md). The
    # same copy priced with and without copies.cache_bytes: 2 MiB moved the same, 4 MiB
    # moved at the memory's bandwidth, every other part of the price (tiles) unchanged.
    cpu = load_target(CPU)
    alone = cpu.model_copy(update={"copies": cpu.copies.model_copy(update={"cache_bytes": None})})
    moved = 2 * 512 * columns * 4
    assert moved <= cpu.cache_bytes
    text = MOVED.replace("COLS", str(columns))
    inside, timed_alone = score(parse_module(text), cpu).total, score(parse_module(text), alone).total
    if moved <= cpu.copies.cache_bytes:
        assert inside == timed_alone
    else:
        extra = (moved * cpu.transpose.minor_factor("f32") * cpu.copies.factor
                 * (1 / cpu.memory_bandwidth_gb_per_s - 1 / cpu.cache_bandwidth_gb_per_s))
        assert abs(inside - timed_alone - extra) <= 2
        assert inside > 3 * timed_alone


def test_a_column_reduction_pays_the_passes_measured_at_its_stride():
    """The built-in ``cpu-epyc`` carries the column reductions' passes at each stride its
    calibration measured (flat to 512 bytes apart, steep beyond): a column sum of 1 MiB pays
    the point at its stride, and between two points their log2-of-stride mix."""
    cpu = load_target("cpu-epyc")
    rule = next(r for r in cpu.op_rules if r.kind == "reduction_minor")
    curve = dict((int(x), float(y)) for x, y in rule.params["stride_passes"])
    assert curve[512] < 1.5 * curve[128] and curve[4096] > 3 * curve[512]

    def total(rows: int, cols: int) -> int:
        text = REDUCE.replace("256,512", f"{rows},{cols}").replace("OUT", str(cols)).replace(
            "DIM", "0")
        return score(parse_module(text), cpu).total

    nbytes = 1 << 20
    assert total(2048, 128) == int(curve[512] * cpu.cache_pass_ns(nbytes))
    # 192 columns: 768 bytes apart, log2(768 / 512) of the way from 512 to 1024 bytes; 1366
    # rows make it 1 MiB or more (no small-operand scale).
    mixed = curve[512] + (curve[1024] - curve[512]) * math.log2(768 / 512)
    assert 1366 * 192 * 4 >= rule.params["large_bytes"]
    assert total(1366, 192) == int(mixed * cpu.cache_pass_ns(1366 * 192 * 4))


def test_a_target_file_may_give_the_stride_curve_alone_in_any_order():
    """A target that states only ``stride_passes`` (no ``read_factor``/``wide_factor`` ends),
    its points in any order, prices a column reduction as the sorted curve does."""
    cpu = load_target("cpu-epyc")
    data = cpu.model_dump()
    rule = next(r for r in data["op_rules"] if r["kind"] == "reduction_minor")
    curve = rule["params"]["stride_passes"]
    rule["params"] = {key: value for key, value in rule["params"].items()
                      if key not in ("read_factor", "wide_factor", "narrow_stride", "wide_stride")}
    rule["params"]["stride_passes"] = list(reversed(curve))
    alone = load_target(data)
    for rows, cols in ((2048, 128), (1366, 192), (256, 1024)):
        text = REDUCE.replace("256,512", f"{rows},{cols}").replace("OUT", str(cols)).replace(
            "DIM", "0")
        assert score(parse_module(text), alone).total == score(parse_module(text), cpu).total > 0
