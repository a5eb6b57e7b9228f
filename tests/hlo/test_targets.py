"""Targets as data: built-ins load and follow the documented tile rules; mistakes name the field."""

from __future__ import annotations

import json
import tomllib
from importlib import resources

import pytest

from hlo.errors import HloError
from hlo.shape import ArrayShape
from hlo.target import (CPU_TARGET_VARIABLE, DEFAULT_CPU, HostCpu, TargetError, builtin_target_names,
                        host_cpu, host_cpu_target, load_target, resolved_name)


def tiles_text(target, element_type, dims, mtm=None) -> str:
    return "".join(map(str, target.tiles_for(ArrayShape(element_type, dims), mtm)))


def test_builtins_load_and_validate() -> None:
    assert set(builtin_target_names()) >= {"tpu", "gpu", "cpu", "ascend"}
    for name in builtin_target_names():
        target = load_target(name)
        assert target.name == resolved_name(name)
        assert target.memory_bandwidth_gb_per_s > 0
        assert target.description and target.calibration


@pytest.mark.parametrize(
    ("element_type", "dims", "mtm", "expected"),
    [
        ("f32", (256, 512), (1, 0), "(8,128)"),
        ("f32", (2, 512), (1, 0), "(2,128)"),
        ("f32", (1, 512), (1, 0), "(2,128)"),
        ("f32", (3, 512), (1, 0), "(4,128)"),
        ("f32", (4, 512), (1, 0), "(4,128)"),
        ("f32", (5, 512), (1, 0), "(8,128)"),
        ("f32", (512, 2), (0, 1), "(2,128)"),   # {0,1}: dim 1 (size 2) is second-minor
        ("f32", (512, 2), (1, 0), "(8,128)"),   # {1,0}: dim 0 (size 512) is second-minor
        ("bf16", (64, 64), (1, 0), "(8,128)(2,1)"),
        ("s8", (64, 64), (1, 0), "(8,128)(4,1)"),
        ("pred", (64, 64), (1, 0), "(32,128)(32,1)"),
        ("bf16", (2048,), (0,), "(1024)(128)(2,1)"),
    ],
)
def test_tpu_tile_rules(element_type, dims, mtm, expected) -> None:
    assert tiles_text(load_target("tpu"), element_type, dims, mtm) == expected


def test_tpu_second_minor_follows_the_layout_order() -> None:
    tpu = load_target("tpu")
    # f32[2,512]: in {1,0} dim 0 (2) is second-minor -> compact; in {0,1} dim 1 (512) is.
    assert tiles_text(tpu, "f32", (2, 512), (1, 0)) == "(2,128)"
    assert tiles_text(tpu, "f32", (2, 512), (0, 1)) == "(8,128)"


def test_untiled_targets_give_no_tiles() -> None:
    for name in ("gpu", "cpu", "ascend"):
        assert load_target(name).tiles_for(ArrayShape("f32", (64, 64))) == ()


def test_gpu_op_rules_are_complete() -> None:
    gpu = load_target("gpu")
    kinds = {(r.op, r.kind) for r in gpu.op_rules}
    assert {("dot", "dot_batch_not_most_minor"), ("dot", "dot_groups_contiguous"),
            ("dot", "dot_contracting_most_minor"), ("convolution", "conv_layout"),
            ("fft", "default_layout"), ("sort", "default_layout"), ("reduce", "row_reduction")} <= kinds
    conv = {(r.element_types, r.spatial_dims): r.params["layout"] for r in gpu.rules_for("convolution")}
    assert conv[(("f32",), (2,))] == "NHWC" and conv[(("f16", "bf16"), (2,))] == "NHWC"
    assert conv[(("f64",), ())] == "NCHW" and conv[((), (3,))] == "NCHW"
    (reduce,) = gpu.rules_for("reduce")
    assert reduce.params["min_reduced_size"] == 32


def test_ascend_formats_and_ttrans() -> None:
    ascend = load_target("ascend")
    assert {f.name for f in ascend.formats} == {"ND", "NZ", "NC1HWC0", "FRACTAL_Z"}
    assert ascend.format("FRACTAL_Z").n0 == 16 and ascend.format("FRACTAL_Z").c0_bytes == 32
    hard = {r.params["format"] for r in ascend.rules_for("convolution") if r.hard}
    assert hard == {"NC1HWC0", "FRACTAL_Z"}
    unit = ascend.transpose_unit
    assert unit.is_aligned(cols=16, element_bytes=2) and not unit.is_aligned(cols=15, element_bytes=2)
    assert not unit.is_aligned(cols=8, element_bytes=8)   # 8-byte elements are not supported


def test_copy_cost_is_bytes_over_bandwidth() -> None:
    cpu = load_target("cpu")
    small, large = 3200, cpu.cache_bytes
    per_copy, factor = cpu.copies.fixed_ns, cpu.copies.factor
    assert cpu.copy_ns(small, small) == pytest.approx(
        2 * small / cpu.cache_bandwidth_gb_per_s * factor + per_copy)
    assert cpu.copy_ns(large, large) == pytest.approx(
        2 * large / cpu.memory_bandwidth_gb_per_s * factor + per_copy)
    gpu = load_target("gpu")  # no cache figures: one bandwidth, plus a launch per copy
    assert gpu.copy_ns(small, small) == pytest.approx(
        2 * small / gpu.memory_bandwidth_gb_per_s * gpu.copies.factor + gpu.copies.fixed_ns)


def builtin_dict(name: str) -> dict:
    return tomllib.loads((resources.files("hlo") / "targets" / f"{name}.toml").read_text())


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda d: d["tile_rules"][0].update(tile=[[0, 128]]), "tile_rules.0.tile"),
        (lambda d: d["tile_rules"][2].update(tile=[[8, "*"]]), "tile_rules.2.tile"),
        (lambda d: d.update(memory_bandwidth_gb_per_s=-1), "memory_bandwidth_gb_per_s"),
        (lambda d: d["transpose"].pop("major_only"), "transpose.major_only"),
        (lambda d: d["op_rules"][0].update(kind="sideways"), "op_rules.0.kind"),
        (lambda d: d.update(colour="red"), "colour"),
        (lambda d: d["tile_rules"][0].update(tile=[[2, 2, 128]]), "tile_rules.0.tile"),
    ],
)
def test_mistakes_name_the_field(mutate, field) -> None:
    data = builtin_dict("tpu")
    mutate(data)
    with pytest.raises(TargetError) as info:
        load_target(data)
    assert field in str(info.value)
    assert isinstance(info.value, HloError)


def test_user_files(tmp_path) -> None:
    data = builtin_dict("gpu")
    data["name"] = "my-gpu"
    path = tmp_path / "my.json"
    path.write_text(json.dumps(data))
    assert load_target(path).name == "my-gpu"
    assert load_target(str(path)).name == "my-gpu"
    bad = tmp_path / "bad.toml"
    bad.write_text("name = [")
    with pytest.raises(TargetError, match="not valid toml"):
        load_target(bad)
    with pytest.raises(TargetError, match="cannot read"):
        load_target(tmp_path / "missing.toml")
    with pytest.raises(TargetError, match="unknown target 'vax'"):
        load_target("vax")


XEON = "Intel(R) Xeon(R) Processor @ 2.80GHz"


def test_host_cpu_reads_the_vendor_and_model_the_kernel_reports(tmp_path) -> None:
    info = tmp_path / "cpuinfo"
    info.write_text(f"processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: {XEON}\n\n"
                    "processor\t: 1\nvendor_id\t: GenuineIntel\nmodel name\t: another\n")
    assert host_cpu(str(info)) == HostCpu(vendor="GenuineIntel", model=XEON)
    assert host_cpu(str(tmp_path / "missing")) == HostCpu()


@pytest.mark.parametrize(("host", "expected"), [
    (HostCpu(vendor="GenuineIntel", model=XEON), "cpu-xeon"),         # the model measured
    (HostCpu(vendor="GenuineIntel", model="Intel(R) Core(TM) i9"), "cpu-xeon"),  # its vendor
    (HostCpu(vendor="AuthenticAMD", model="AMD EPYC 9654 96-Core"), "cpu-epyc"),
    (HostCpu(vendor="AuthenticAMD", model="AMD EPYC"), "cpu-epyc"),
    (HostCpu(vendor="ARM", model=""), DEFAULT_CPU),                   # no calibration of its own
    (HostCpu(), DEFAULT_CPU),
])
def test_cpu_means_the_calibration_of_this_hosts_cpu(host, expected) -> None:
    assert host_cpu_target(host, pinned="") == expected
    assert load_target(expected).host is not None


def test_the_cpu_target_variable_pins_one_and_refuses_what_is_not_a_cpu_target(monkeypatch) -> None:
    intel = HostCpu(vendor="GenuineIntel", model=XEON)
    assert host_cpu_target(intel, pinned="cpu-epyc") == "cpu-epyc"
    monkeypatch.setenv(CPU_TARGET_VARIABLE, "cpu-xeon")
    assert resolved_name("cpu") == "cpu-xeon" and resolved_name("tpu") == "tpu"
    assert load_target("cpu") == load_target("cpu-xeon")
    assert load_target("cpu").name == "cpu-xeon"
    for wrong in ("tpu", "cpu", "no-such"):
        monkeypatch.setenv(CPU_TARGET_VARIABLE, wrong)
        with pytest.raises(TargetError, match=f"{CPU_TARGET_VARIABLE}={wrong} is not a CPU target: "
                                              "use one of cpu-epyc, cpu-xeon"):
            load_target("cpu")


def test_the_suite_prices_with_the_calibration_its_numbers_came_from() -> None:
    """tests/conftest.py pins ``cpu`` to ``cpu-epyc`` on every host, so no expected number
    in the suite depends on the CPU it runs on."""
    assert {"cpu", "cpu-epyc", "cpu-xeon"} <= set(builtin_target_names())
    assert load_target("cpu").name == "cpu-epyc"
