"""Normalization as an option of ``assign``: the target's default, explicit passes, off;
the output verifies and computes what the input computes."""

from __future__ import annotations

import json

import pytest
from conftest import gpu_pricing_column_reductions_as_transposes, shared_path
from typer.testing import CliRunner

from hlo.equivalence import compare_modules
from hlo.layout_verifier import verify_layouts
from hlo.parser import parse_file
from hlo.passes.normalize_reductions import non_canonical_reduces
from hlo.verifier import collect_errors
from solver.layout_assignment.assign import assign, score
from solver.layout_assignment.options import AssignOptions, NormalizePass

#: Modules with reductions the assignment leaves non-canonical on gpu, and one without.
GPU_MODULES = ["reduce_2d", "reduce_3d", "argmax_multi_output_reduce", "softmax_axes",
               "layernorm_fwd"]


def _module(name: str):
    path = shared_path("corpus") / f"{name}.before_layout.hlo"
    return parse_file(path if path.exists() else path.with_suffix(".hlo.gz"))


@pytest.mark.parametrize("name", GPU_MODULES)
def test_gpu_normalizes_by_default_and_stays_equivalent(name):
    original = _module(name)
    result = assign(original, "gpu", AssignOptions(time_limit_s=5))
    norm = result.normalization
    assert norm.passes == ("normalize-reductions", "group-reductions")
    # Oracle for "normalized": the reduces the assignment left non-canonical are exactly the
    # ones reported, and none is left afterwards.
    assert list(norm.reductions_normalized) == non_canonical_reduces(result.assigned)
    assert non_canonical_reduces(result.module) == [] and norm.reductions_left == ()
    assert collect_errors(result.module) == []
    assert verify_layouts(result.module) == [] and result.violations == ()
    # Normalization only adds free bitcasts: the cost of the returned module is unchanged.
    assert score(result.module, "gpu").total == result.objective
    report = compare_modules(original, result.module, seed=3)
    assert report.equivalent, (name, report.to_json()["first_difference"])


def test_the_reduce_modules_do_get_rewritten():
    # Priced as XLA's GPU layout assignment assumes, column reductions become row ones,
    # which leaves reduces for the normalization to rewrite (measured on an H200, the
    # built-in gpu target keeps them as they are: nothing to rewrite).
    target = gpu_pricing_column_reductions_as_transposes()
    rewritten = {name: len(assign(_module(name), target, AssignOptions(time_limit_s=5))
                           .normalization.reductions_normalized) for name in GPU_MODULES[:3]}
    assert all(count > 0 for count in rewritten.values()), rewritten


def test_off_and_explicit_passes():
    original = _module("reduce_2d")
    off = assign(original, gpu_pricing_column_reductions_as_transposes(),
                 AssignOptions(time_limit_s=5, normalize=()))
    assert off.normalization.passes == () and off.module is off.assigned
    assert non_canonical_reduces(off.module)            # left as assigned
    cpu = assign(original, "cpu", AssignOptions(time_limit_s=5))
    assert cpu.normalization.passes == () and cpu.module is cpu.assigned
    full = assign(original, "cpu", AssignOptions(
        time_limit_s=5, normalize=(NormalizePass.LAYOUTS, NormalizePass.REDUCTIONS)))
    assert full.normalization.passes == ("normalize-layouts", "normalize-reductions")
    assert full.violations == ()
    assert compare_modules(original, full.module, seed=2).equivalent


def test_cli_flags(tmp_path):
    from service.cli import build_app
    app = build_app()

    path = str(shared_path("corpus") / "reduce_2d.before_layout.hlo")
    runner = CliRunner()
    report = tmp_path / "r.json"
    out = tmp_path / "o.hlo"
    for flags, passes in (([], ["normalize-reductions", "group-reductions"]),
                          (["--no-normalize"], []),
                          (["--passes", "reductions"], ["normalize-reductions"])):
        run = runner.invoke(app, ["assign", path, "-t", "gpu", "-o", str(out),
                                  "--report", str(report), *flags])
        assert run.exit_code == 0, run.output
        data = json.loads(report.read_text())
        assert data["normalization"]["passes"] == passes, flags
    run = runner.invoke(app, ["assign", path, "-t", "cpu", "--normalize", "-o", str(out),
                              "--report", str(report)])
    assert run.exit_code == 0
    assert json.loads(report.read_text())["normalization"]["passes"] == ["normalize-reductions"]
    for bad in (["--no-normalize", "--passes", "reductions"], ["--passes", "bogus"]):
        run = runner.invoke(app, ["assign", path, "-t", "gpu", *bad])
        assert run.exit_code == 2, (bad, run.output)
