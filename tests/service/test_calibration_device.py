"""An accelerator's calibration: the device fit recovers known coefficients from synthetic
measurements, the gpu target it writes loads and prices what was measured, and the built-in
gpu target is exactly what the recorded H200 measurements fit to."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import written_target
from typer.testing import CliRunner

from service.calibration.fit import Sample, fit_device

ROOT = Path(__file__).resolve().parents[2]
RECORDED = ROOT / "bench" / "gpu_calibration.json"

TRUE = {"bandwidth": 4000.0, "kernel": 4500.0, "minor": 1.2, "major": 1.05,
        "lhs_per_flop": 1.5e-6, "conv": 1.3, "column": 0.5, "inline": 0.1}


def _transpose_ns(nbytes: float) -> float:
    """The model's relayout of ``nbytes`` (what the device fit divides by)."""
    return 2 * nbytes / TRUE["bandwidth"] * TRUE["minor"] + TRUE["kernel"]


def device_samples() -> list[Sample]:
    """What an accelerator with :data:`TRUE`'s coefficients would measure (own times, ns)."""
    per_byte = 1.0 / TRUE["bandwidth"]
    out = [Sample("kernel_one", 4096, 3000.0), Sample("kernel_two", 4096, 3000.0 + TRUE["kernel"])]
    for n in (4096, 8192):
        x = n * n * 4
        out += [Sample("copy", x, 2 * x * per_byte), Sample("copy3d", x, 2 * x * per_byte),
                Sample("copy_minor", x, 2 * x * per_byte * TRUE["minor"]),
                Sample("copy_major", x, 2 * x * per_byte * TRUE["major"]),
                Sample("transpose", x, 2 * x * per_byte * TRUE["minor"]),
                Sample("reshape_moving", x, 2 * x * per_byte * TRUE["minor"]),
                Sample("reduce_minor", x, x * per_byte),
                Sample("reduce_major", x, x * per_byte + TRUE["column"] * _transpose_ns(x)),
                Sample("add_same", x, 3 * x * per_byte),
                Sample("add_mixed", x, 3 * x * per_byte
                       + TRUE["inline"] * (_transpose_ns(x) - TRUE["kernel"])),
                Sample("dot_nn", x, 2 * n ** 3 * 1e-5),
                Sample("dot_tn", x, 2 * n ** 3 * (1e-5 + TRUE["lhs_per_flop"])),
                Sample("dot_nt", x, 2 * n ** 3 * 1e-5)]
        for t, width in (("bf16", 2), ("s8", 1)):
            y = n * n * width
            out += [Sample("copy", y, 2 * y * per_byte, t),
                    Sample("copy_minor", y, 2 * y * per_byte * 1.5, t),
                    Sample("dot_nn", y, 2 * n ** 3 * 5e-6, t), Sample("dot_tn", y, 2 * n ** 3 * 5e-6, t)]
    for t, nbytes, factor in (("f32", 1 << 25, TRUE["conv"]), ("bf16", 1 << 24, -0.5)):
        out += [Sample("conv_nhwc", nbytes, 1e5, t),
                Sample("conv_nchw", nbytes, 1e5 + factor * _transpose_ns(nbytes), t)]
    return out


def test_device_fit_gives_the_coefficients_back():
    d = fit_device(device_samples())
    assert d.base.bandwidth_gb_per_s == pytest.approx(TRUE["bandwidth"])
    assert d.base.minor_moving == pytest.approx(TRUE["minor"])
    assert d.base.major_only == pytest.approx(TRUE["major"])
    assert d.base.inline_relayout == pytest.approx(TRUE["inline"])
    assert d.kernel_ns == pytest.approx(TRUE["kernel"])
    assert d.minor_by_dtype == {"bf16": 1.5, "f32": 1.2, "s8": 1.5}
    assert d.row_reduction_factor == pytest.approx(TRUE["column"])
    assert d.conv_factor == {"bf16": -0.5, "f32": TRUE["conv"]}
    assert d.dot_lhs_ns_per_flop["f32"] == pytest.approx(TRUE["lhs_per_flop"], rel=1e-2)
    assert d.dot_lhs_ns_per_flop["bf16"] == 0.0
    assert d.dot_ratio["f32"]["dot_nt"] == 1.0 and d.dot_ratio["f32"]["dot_tn"] > 1.1


def test_device_fit_keeps_a_free_mixed_read_positive_and_a_faster_column_form_at_zero():
    samples = device_samples()
    same = {s.bytes: s.ns for s in samples if s.kind == "add_same"}
    row = {s.bytes: s.ns for s in samples if s.kind == "reduce_minor"}
    # the mixed add as fast as the plain one; the column reduction twice as fast as the row
    samples = [Sample(s.kind, s.bytes, same[s.bytes], s.dtype) if s.kind == "add_mixed" else
               Sample(s.kind, s.bytes, row[s.bytes] / 2, s.dtype) if s.kind == "reduce_major"
               else s for s in samples]
    d = fit_device(samples)
    assert d.base.inline_relayout == 0.01  # the target schema wants it above 0
    assert d.row_reduction_factor == 0.0


def test_the_gpu_target_written_prices_what_was_measured(tmp_path):
    d = fit_device(device_samples())
    target = written_target(tmp_path, d, "gpu")
    assert target.name == "gpu"
    assert target.memory_bandwidth_gb_per_s == pytest.approx(TRUE["bandwidth"])
    assert target.copies.fixed_ns == pytest.approx(TRUE["kernel"])
    assert target.transpose.minor_moving == pytest.approx(TRUE["minor"])
    # the 1- and 2-byte transposes measured slower than the f32 ones are priced apart
    assert target.transpose.minor_moving_by_bytes == {1: 1.5, 2: 1.5}
    assert target.transpose.minor_factor("f32") == pytest.approx(TRUE["minor"])
    assert target.transpose.minor_factor("s8") == target.transpose.minor_factor("pred") == 1.5
    assert "m, 2026" in target.calibration and "2026-01-01" in target.calibration
    lhs = [r for r in target.rules_for("dot") if r.params.get("ns_per_flop")]
    assert [(r.element_types, r.operands) for r in lhs] == [(("f32",), (0,))]  # bf16: equal
    convs = {r.element_types: r.params for r in target.rules_for("convolution")
             if r.spatial_dims == (2,)}
    assert convs[("f32",)] == {"layout": "NHWC", "cost_factor": TRUE["conv"]}
    assert convs[("f16", "bf16")] == {"layout": "NCHW", "cost_factor": 0.5}  # NCHW faster
    reduce = target.rules_for("reduce")[0]
    assert (reduce.kind, reduce.params["cost_factor"]) == ("row_reduction", TRUE["column"])
    # the hard rules the measurements do not touch are kept
    assert {r.kind for r in target.rules_for("dot") if r.hard} == {
        "dot_batch_not_most_minor", "dot_groups_contiguous", "dot_contracting_most_minor"}
    assert {r.op for r in target.op_rules if r.hard} >= {"fft", "sort"}


def test_a_column_major_f32_lhs_costs_its_flops_times_the_measured_price(tmp_path):
    from hlo.parser import parse_module
    from solver.layout_assignment.assign import score

    target = written_target(tmp_path, fit_device(device_samples()), "gpu")
    per_flop = next(r.params["ns_per_flop"] for r in target.rules_for("dot")
                    if r.params.get("ns_per_flop"))

    def dot(t: str, lhs: str) -> int:
        text = (f"HloModule d\nENTRY e {{\n  a = {t}[1024,512]{lhs} parameter(0)\n"
                f"  b = {t}[512,256]{{1,0}} parameter(1)\n  ROOT d = {t}[1024,256]{{1,0}} dot(a, b), "
                "lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n")
        return score(parse_module(text, "d"), target).total

    assert dot("f32", "{0,1}") - dot("f32", "{1,0}") == int(2 * 1024 * 256 * 512 * per_flop) > 0
    assert dot("bf16", "{0,1}") == dot("bf16", "{1,0}")


def test_the_built_in_gpu_target_is_the_fit_of_the_recorded_measurements(tmp_path):
    """``hlo/targets/gpu.toml`` is what ``calibrate --from`` writes for the H200 measurements
    kept in ``bench/gpu_calibration.json``: no number in it was written by hand."""
    from service.cli import build_app

    out = tmp_path / "gpu.toml"
    result = CliRunner().invoke(build_app(), ["calibrate", "--from", str(RECORDED), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_text() == (ROOT / "hlo" / "targets" / "gpu.toml").read_text()


def test_calibrate_from_json_round_trips_and_refuses_what_it_cannot_fit(tmp_path):
    from service.calibration.run import from_json, to_json
    from service.cli import build_app

    recorded = from_json(json.loads(RECORDED.read_text()))
    again = from_json(json.loads(json.dumps(to_json(recorded))))
    assert again == recorded
    runner = CliRunner()
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    result = runner.invoke(build_app(), ["calibrate", "--from", str(bad)])
    assert result.exit_code == 2 and "error: cannot read" in result.output
    assert "Traceback" not in result.output
    data = json.loads(RECORDED.read_text())
    data["measured"] = [m for m in data["measured"] if m["kind"] != "copy_minor"]
    bad.write_text(json.dumps(data))
    result = runner.invoke(build_app(), ["calibrate", "--from", str(bad)])
    assert result.exit_code == 2 and "'copy_minor'" in result.output
    for value in (0.0, -1.0, float("nan")):  # not times: refused, not divided by
        broken = json.loads(RECORDED.read_text())
        broken["measured"][0]["median_ms"] = value
        bad.write_text(json.dumps(broken))
        result = runner.invoke(build_app(), ["calibrate", "--from", str(bad)])
        assert result.exit_code == 2 and "is not a measurement" in result.output, value
    flat = json.loads(RECORDED.read_text())
    for m in flat["measured"]:
        m["median_ms"] = 1.0  # nothing grows with its bytes
    bad.write_text(json.dumps(flat))
    result = runner.invoke(build_app(), ["calibrate", "--from", str(bad)])
    assert result.exit_code == 2 and "no bandwidth" in result.output
    del data["measured"]
    bad.write_text(json.dumps(data))
    result = runner.invoke(build_app(), ["calibrate", "--from", str(bad)])
    assert result.exit_code == 2 and "not a calibration" in result.output


def test_the_device_groups_run_on_the_pinned_path_only():
    """No bitcast (XLA's layout assignment refuses one), the adds apart from the dots, one
    base module per group that has timed modules beside it."""
    from service.calibration.microbenchmarks import device_groups
    from service.xla.refusals import pinned_reason

    for group in device_groups():
        assert all(pinned_reason(b.module) is None for b in group.benches), group.name
        kinds = {b.kind.split("_")[0] for b in group.benches}
        assert not {"add", "dot"} <= kinds, group.name
    assert sum(b.kind == "kernel_two" for g in device_groups() for b in g.benches) == 1


def test_a_relayout_is_priced_by_its_element_width(tmp_path):
    from hlo.shape import ArrayShape, Layout
    from solver.layout_assignment.costs import CostModel

    cm = CostModel(written_target(tmp_path, fit_device(device_samples()), "gpu"))

    def relayout(t: str) -> int:
        src = ArrayShape(t, (1024, 1024), Layout((1, 0)))
        return cm.conversion(src, "", ArrayShape(t, (1024, 1024), Layout((0, 1))), "")[0]

    kernel = TRUE["kernel"]
    # the same bytes: 1024x1024 s8 against 512x512 f32 would differ in size, so per byte
    assert (relayout("s8") - kernel) / (1 << 20) == pytest.approx(
        1.5 / TRUE["minor"] * (relayout("f32") - kernel) / (4 << 20), rel=1e-3)


def test_a_width_factor_must_be_positive():
    from hlo.target import TargetError, load_target, read_target_file

    spec = read_target_file(ROOT / "hlo" / "targets" / "gpu.toml")
    spec["transpose"]["minor_moving_by_bytes"] = {"1": -1.0}
    with pytest.raises(TargetError, match="minor_moving_by_bytes"):
        load_target(spec)


def test_calibrate_from_several_runs_fits_each_microbenchmarks_median(tmp_path):
    """Three runs, one of them twice as slow everywhere and one 10 % faster: the merged run
    holds the middle run's medians, so its fit is the middle run's fit; runs of another
    platform are refused with exit 2; a run of fewer microbenchmarks merges."""
    from service.calibration.run import from_json, merged
    from service.cli import build_app

    middle = json.loads(RECORDED.read_text())
    slow, fast = json.loads(RECORDED.read_text()), json.loads(RECORDED.read_text())
    for m in slow["measured"]:
        m["median_ms"] *= 2.0
    for m in fast["measured"]:
        m["median_ms"] *= 0.9
    fast["measured"].reverse()  # matched by label, not by position
    fast["date"], slow["load_average"] = "2000-01-01 00:00 UTC", [9.0, 9.0, 9.0]
    one = merged([slow, middle, fast])
    assert [m["median_ms"] for m in one["measured"]] == [m["median_ms"] for m in middle["measured"]]
    assert one["load_average"] == [9.0, 9.0, 9.0] and one["date"].startswith("2000-01-01 00:00 UTC to ")
    assert one["reps"] == middle["reps"]
    assert one["note"] == f"each microbenchmark's median over 3 runs ({', '.join([str(middle['reps'])] * 3)} rounds)"
    assert from_json(one).coefficients == from_json(middle).coefficients
    paths = []
    for i, run in enumerate((slow, middle, fast)):
        paths += ["--from", str(tmp_path / f"run{i}.json")]
        (tmp_path / f"run{i}.json").write_text(json.dumps(run))
    out = tmp_path / "merged.toml"
    result = CliRunner().invoke(build_app(), ["calibrate", *paths, "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "# each microbenchmark's median over 3 runs" in out.read_text()
    other = dict(middle, platform="tpu")
    (tmp_path / "other.json").write_text(json.dumps(other))
    result = CliRunner().invoke(build_app(), ["calibrate", *paths[:2], "--from", str(tmp_path / "other.json")])
    assert result.exit_code == 2 and "differ in platform" in result.output
    # A run that measured one microbenchmark less (an earlier version): that one's median
    # over the two runs that measured it, and the note says so.
    fewer = dict(fast, measured=[m for m in fast["measured"]
                                 if m["label"] != middle["measured"][0]["label"]])
    some = merged([slow, middle, fewer])
    first = middle["measured"][0]
    assert some["measured"][0]["label"] == first["label"]
    assert some["measured"][0]["median_ms"] == pytest.approx(1.5 * first["median_ms"])
    assert some["note"].endswith(f"; 1 over the runs that measured them ({first['label']} 2)")
    assert [m["median_ms"] for m in some["measured"][1:]] == [
        m["median_ms"] for m in middle["measured"][1:]]
    # One label timed on another module (another version of the benchmarks): refused.
    other = json.loads(RECORDED.read_text())
    other["measured"][0]["module"] = "0123456789abcdef"
    with pytest.raises(ValueError, match="different modules as"):
        merged([middle, other])
