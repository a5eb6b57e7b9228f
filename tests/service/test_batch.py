"""``hlo-layout batch`` with the local engine: inputs, outputs, failures, kill and resume."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import shared_path

from hlo.parser import parse_module
from hlo.printer import print_module
from service.batch import BatchError, collect_inputs

CLI = [sys.executable, "-c", "from service.cli import main; main()"]
VOLATILE = ("time_ms", "timings_ms", "cached")  # fields of a record that describe the run


def batch(*args: str, env: dict | None = None, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*CLI, "batch", *args], capture_output=True, text=True, timeout=timeout,
        env={**os.environ, "HLO_LAYOUT_CACHE_PATH": "", **(env or {})},
    )


def stable_records(out: Path) -> dict[str, dict]:
    """Per-module records without the fields that differ between runs (time, cache)."""
    records = {}
    for path in sorted((out / "modules").glob("*.json")):
        record = json.loads(path.read_text())
        for key in VOLATILE:
            record.pop(key, None)
        records[path.stem] = record
    return records


def outputs(out: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted((out / "modules").glob("*.hlo"))}


def test_collect_inputs_files_dirs_globs_and_gz(tmp_path: Path) -> None:
    text = shared_path("corpus", "attention_fwd.pre_short.hlo").read_text()
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.hlo").write_text(text)
    (tmp_path / "sub" / "a.hlo").write_text(text)
    with gzip.open(tmp_path / "sub" / "b.hlo.gz", "wt") as f:
        f.write(text)
    (tmp_path / "notes.txt").write_text("not a module")
    inputs = collect_inputs([str(tmp_path), str(tmp_path / "*.hlo")])
    assert len(inputs) == 3  # a.hlo named twice is one input
    names = [i.name for i in inputs]
    assert len(set(names)) == 3 and "b" in names
    assert sum(n.startswith("a-") for n in names) == 2  # same stem: disambiguated
    with pytest.raises(BatchError):
        collect_inputs([str(tmp_path / "missing.hlo")])


def test_batch_writes_results_summary_and_records_failures(tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    good = ["attention_fwd.pre_short.hlo", "mlp_train.pre_short.hlo"]
    corpus = shared_path("corpus")
    for name in good:
        shutil.copy(corpus / name, src / name)
    with gzip.open(src / "zipped.hlo.gz", "wt") as f:
        f.write((corpus / good[0]).read_text())
    (src / "broken.hlo").write_text("HloModule m\n\nENTRY e {\n  ROOT x = f32[] bogus()\n}\n")
    out = tmp_path / "out"
    result = batch(str(src), "--out", str(out), "--operation", "format", "--workers", "2")
    assert result.returncode == 1, result.stderr  # one module failed
    summary = json.loads((out / "summary.json").read_text())
    assert summary["operation"] == "format" and summary["engine"] == "local"
    assert (summary["total"], summary["ok"], summary["failed"]) == (len(good) + 2, len(good) + 1, 1)
    rows = {row["module"]: row for row in summary["modules"]}
    assert rows["broken"]["error_type"] == "parse_error"
    record = json.loads((out / "modules" / "broken.json").read_text())
    assert (record["error"]["line"], record["error"]["column"]) == (4, 18)  # the 'b' of 'bogus'
    for name in good:
        stem = name[: -len(".hlo")]
        expected = print_module(parse_module((corpus / name).read_text(), name))
        assert (out / "modules" / f"{stem}.hlo").read_text() == expected
    assert (out / "modules" / "zipped.hlo").read_text() == (
        out / "modules" / f"{good[0][: -len('.hlo')]}.hlo"
    ).read_text()
    csv_lines = (out / "summary.csv").read_text().splitlines()
    assert csv_lines[0].startswith("module,status,error_type,solve_status,objective")
    assert len(csv_lines) == len(good) + 3


def test_default_operation_is_assign_with_a_summary_per_module(tmp_path: Path) -> None:
    from service.batch import CSV_COLUMNS
    from solver.layout_assignment.assign import assign
    from solver.layout_assignment.options import AssignOptions
    from solver.layout_assignment.report import summary, to_json

    src = tmp_path / "in"
    src.mkdir()
    names = ("attention_fwd.pre_short.hlo", "mlp_fwd_tiny.pre_short.hlo")
    for name in names:
        shutil.copy(shared_path("corpus", name), src / name)
    (src / "bitcast.hlo").write_text(
        "HloModule b\n\nENTRY e {\n  p = f32[2,3] parameter(0)\n  ROOT b = f32[3,2] bitcast(p)\n}\n"
    )
    out = tmp_path / "out"
    result = batch(str(src), "--out", str(out), "-t", "tpu", "--time-limit", "10",
                   "--workers", "2")
    assert result.returncode == 1, result.stderr  # the bitcast module fails, the others not
    summary_json = json.loads((out / "summary.json").read_text())
    assert summary_json["operation"] == "assign" and summary_json["target"] == "tpu"
    rows = {row["module"]: row for row in summary_json["modules"]}
    assert rows["bitcast"]["status"] == "failed"
    assert rows["bitcast"]["error_type"] == "layout_dependent_bitcast"
    for name in names:
        stem = name[: -len(".hlo")]
        # Oracle: the solver itself on the same module and options.
        direct = assign(parse_module((src / name).read_text(), name),
                        "tpu", AssignOptions(time_limit_s=10))
        expected = summary(to_json(direct))
        row = rows[stem]
        assert row["status"] == "ok" and row["solve_status"] == expected["status"]
        assert row["objective"] == expected["objective_ns"]
        assert row["baseline_default"] == expected["default_ns"]
        assert row["baseline_greedy"] == expected["greedy_ns"]
        assert row["lower_bound"] == expected["lower_bound_ns"] and row["gap"] == direct.gap
        assert row["copies_inserted"] == expected["copies_inserted"]
        assert row["time_ms"] > 0
        assert (out / "modules" / f"{stem}.hlo").read_text() == print_module(direct.module)
    lines = (out / "summary.csv").read_text().splitlines()
    assert lines[0] == ",".join(CSV_COLUMNS) and len(lines) == 4
    assert "objective" in CSV_COLUMNS and "lower_bound" in CSV_COLUMNS


def test_killed_batch_resumes_and_loses_nothing(tmp_path: Path) -> None:
    pattern = str(shared_path("corpus") / "*.pre.hlo")
    reference = tmp_path / "reference"
    full = batch(pattern, "--out", str(reference), "--operation", "format", "--workers", "2")
    assert full.returncode == 0, full.stderr
    total = json.loads((reference / "summary.json").read_text())["total"]
    assert total >= 20

    out = tmp_path / "resumed"
    proc = subprocess.Popen(
        [*CLI, "batch", pattern, "--out", str(out), "--operation", "format", "--workers", "2"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        env={**os.environ, "HLO_LAYOUT_CACHE_PATH": ""},
    )
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            done = list((out / "modules").glob("*.json")) if (out / "modules").exists() else []
            if len(done) >= 3:
                break
            time.sleep(0.01)
        assert proc.poll() is None, "the batch finished before it could be killed"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the batch and its workers, mid-run
        proc.wait(timeout=30)
    before = stable_records(out)
    assert 3 <= len(before) < total
    for record in before.values():  # every record on disk is whole (atomic writes)
        assert record["status"] == "ok"

    again = batch(pattern, "--out", str(out), "--operation", "format", "--workers", "2")
    assert again.returncode == 0, again.stderr
    assert f"{len(before)} already done" in again.stderr.replace("\n", " ")
    assert stable_records(out) == stable_records(reference)
    assert outputs(out) == outputs(reference)
    summary = json.loads((out / "summary.json").read_text())
    ref_summary = json.loads((reference / "summary.json").read_text())
    strip = lambda s: [{k: v for k, v in m.items() if k not in VOLATILE} for m in s["modules"]]  # noqa: E731
    assert strip(summary) == strip(ref_summary)
