"""``measure``, ``assign --measure`` and ``verify --xla``: exit codes and the report's structure.

What runs is checked against XLA's own execution; no test asserts a time.
"""

from __future__ import annotations

import json

import pytest
from conftest import shared_path
from typer.testing import CliRunner

from service.cli import build_app
from service.xla import availability

pytestmark = pytest.mark.xla
runner = CliRunner()

ROW_MAJOR = """HloModule t, entry_computation_layout={(f32[64,32]{1,0})->f32[32,64]{1,0}}
ENTRY %e (p: f32[64,32]) -> f32[32,64] {
  %p = f32[64,32]{1,0} parameter(0)
  %t = f32[32,64]{0,1} transpose(%p), dimensions={1,0}
  ROOT %c = f32[32,64]{1,0} copy(%t)
}
"""
STANDALONE = """HloModule t, entry_computation_layout={(f32[64,32]{1,0})->f32[32,64]{1,0}}
ENTRY %e (p: f32[64,32]) -> f32[32,64] {
  %p = f32[64,32]{1,0} parameter(0)
  ROOT %t = f32[32,64]{1,0} transpose(%p), dimensions={1,0}
}
"""
# A bitcast where a transpose belongs: XLA runs it (as a reshape of the bytes), wrong numbers.
WRONG = """HloModule t, entry_computation_layout={(f32[64,32]{1,0})->f32[32,64]{1,0}}
ENTRY %e (p: f32[64,32]) -> f32[32,64] {
  %p = f32[64,32]{1,0} parameter(0)
  ROOT %t = f32[32,64]{1,0} bitcast(%p)
}
"""


def invoke(*args):
    return runner.invoke(build_app(), [*map(str, args)])


@pytest.fixture
def files(tmp_path):
    out = {}
    for name, text in (("row", ROW_MAJOR), ("standalone", STANDALONE), ("wrong", WRONG)):
        out[name] = tmp_path / f"{name}.hlo"
        out[name].write_text(text)
    return out


def test_measure_shares_its_rounds_among_processes(files):
    result = invoke("measure", files["row"], files["standalone"], "--reps", "3", "--sessions", "2",
                    "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["sessions"] == 2 and report["modules"][1]["ratio"]["rounds"] == 3
    assert "in 2 processes" in invoke("measure", files["row"], files["standalone"], "--reps", "2",
                                      "--sessions", "2").output
    assert invoke("measure", files["row"], files["standalone"], "--sessions", "0").exit_code == 2


def test_measure_times_and_compares_with_the_reference(files):
    result = invoke("measure", files["row"], files["standalone"], "--reps", "3", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["reference"] == "row.hlo" and report["reps"] == 3
    assert report["noise"]["rounds"] == 3 and len(report["load_average"]) == 3
    row, standalone = report["modules"]
    assert row["verdict"] == "reference" and standalone["outputs_match"] is True
    assert standalone["ratio"]["rounds"] == 3
    assert standalone["verdict"] in ("faster", "slower", "same")
    assert isinstance(standalone["predicted_ns"], int) and standalone["predicted_ratio"] > 0
    # XLA's buffer assignment reports each module's temporaries.
    assert all(isinstance(m["temp_bytes"], int) and m["temp_bytes"] >= 0 for m in (row, standalone))


def test_measure_exit_1_on_differing_outputs(files):
    result = invoke("measure", files["row"], files["wrong"], "--reps", "0")
    assert result.exit_code == 1, result.output
    assert "wrong.hlo: outputs differ: output {0} element [0,1]" in result.output


# A scatter in a form XLA's scatter simplifier would have rewritten (an inserted window dim):
# XLA:CPU's scatter emitter CHECK-fails on it.
UNSIMPLIFIED_SCATTER = """HloModule s, entry_computation_layout={(f32[8,4]{1,0}, s32[3,1]{1,0}, f32[3,4]{1,0})->f32[8,4]{1,0}}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[8,4]{1,0} parameter(0)
  i = s32[3,1]{1,0} parameter(1)
  u = f32[3,4]{1,0} parameter(2)
  ROOT s = f32[8,4]{1,0} scatter(x, i, u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
}
"""


def test_measure_exit_2_with_the_reason_for_a_module_the_path_cannot_run(tmp_path):
    scatter = tmp_path / "scatter.hlo"
    scatter.write_text(UNSIMPLIFIED_SCATTER)
    result = invoke("measure", scatter, scatter, "--reps", "0")
    assert result.exit_code == 2
    assert "cannot run on the XLA path: %s is a scatter not in the simplified form" in result.output


def test_measure_runs_a_corpus_module_with_scatters(files):
    scatter = shared_path("corpus", "scatter_ops.after_layout.hlo")
    result = invoke("measure", scatter, scatter, "--reps", "0")
    assert result.exit_code == 0, result.output


def test_measure_exit_2_on_bad_hlo_names_the_file(tmp_path, files):
    bad = tmp_path / "bad.hlo"
    bad.write_text("HloModule m\nENTRY e {\n  ROOT p = f32[2]{0} paramter(0)\n}\n")
    result = invoke("measure", files["row"], bad)
    assert result.exit_code == 2
    assert f"{bad}: 3:" in result.output and "error" in result.output


def test_commands_that_need_jax_exit_2_without_it(files, monkeypatch):
    monkeypatch.setattr(availability.importlib.util, "find_spec", lambda name: None)
    for args in (("measure", files["row"], files["row"]),
                 ("verify", files["row"], files["row"], "--xla"),
                 ("assign", files["row"], "--measure", "-o", files["row"].with_suffix(".o"))):
        result = invoke(*args)
        assert result.exit_code == 2, (args, result.output)
        assert "pip install 'hlo-layout[xla]'" in result.output


def test_verify_xla_runs_the_rewrite_against_xla_execution_of_the_original(files):
    original = shared_path("corpus", "attention_fwd.pre.hlo")
    rewritten = shared_path("corpus", "attention_fwd.after_layout.hlo")
    result = invoke("verify", original, rewritten, "--xla", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["xla"]["outputs_match"] is True
    result = invoke("verify", files["row"], files["wrong"], "--xla")
    assert result.exit_code == 1
    assert "XLA:CPU: NOT equivalent" in result.output


def test_assign_measure_with_a_baseline_adds_the_measured_section(tmp_path):
    before = shared_path("corpus", "transpose_reshape_chain.before_layout.hlo")
    baseline = shared_path("corpus", "transpose_reshape_chain.after_layout.hlo")
    report = tmp_path / "r.json"
    result = invoke("assign", before, "-t", "cpu", "-o", tmp_path / "o.hlo", "--report", report,
                    "--baseline", baseline, "--reps", "2", "--time-limit", "5")
    assert result.exit_code == 0, result.output
    measured = json.loads(report.read_text())["measured"]
    assert measured["baseline"] == f"file {baseline}"
    assert [row["label"] for row in measured["modules"]] == ["xla", "ours"]
    assert measured["modules"][1]["outputs_match"] is True
