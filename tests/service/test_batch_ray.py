"""``--engine ray`` on a real local Ray instance gives the same results as the local pool."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from conftest import shared_path
from test_batch import batch, outputs, stable_records

from service.batch import TIMING_COLUMNS

MODULES = ("attention_fwd.pre_short.hlo", "mlp_train.pre_short.hlo", "cnn_train_nhwc.pre_short.hlo")


def test_ray_and_local_engines_produce_identical_summaries(tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    for name in MODULES:
        shutil.copy(shared_path("corpus", name), src / name)
    (src / "broken.hlo").write_text("HloModule m\n")  # a per-module failure on both engines

    local, ray = tmp_path / "local", tmp_path / "ray"
    # assign, the default operation, on the TPU target (copies and padding to explain).
    a = batch(str(src), "--out", str(local), "-t", "tpu", "--time-limit", "10", "--workers", "2")
    b = batch(str(src), "--out", str(ray), "-t", "tpu", "--time-limit", "10", "--engine", "ray",
              timeout=300)
    assert a.returncode == b.returncode == 1, a.stderr + b.stderr
    assert (ray / "summary.json").exists(), b.stderr[-3000:]

    summaries = [json.loads((d / "summary.json").read_text()) for d in (local, ray)]
    assert [s["engine"] for s in summaries] == ["local", "ray"]
    for s in summaries:
        for key in ("engine", "created"):
            s.pop(key)
        for row in s["modules"]:
            for key in TIMING_COLUMNS:  # the only columns allowed to differ
                row.pop(key)
    assert summaries[0] == summaries[1]
    assert summaries[0]["operation"] == "assign"
    objectives = [row["objective"] for row in summaries[0]["modules"] if row["status"] == "ok"]
    assert len(objectives) == 3 and any(objectives)
    assert (summaries[0]["ok"], summaries[0]["failed"]) == (3, 1)
    assert stable_records(local) == stable_records(ray)
    assert outputs(local) == outputs(ray) and len(outputs(local)) == 3
