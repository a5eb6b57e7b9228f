"""``hlo-layout assign`` shows the solver's progress on stderr, and prints wall-clock time."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import time
from pathlib import Path

from conftest import shared_path
from service.cli.progress_line import ProgressLine, describe
from solver.progress import Progress, throttled

CLI = [sys.executable, "-c", "from service.cli import main; main()"]
LINE = re.compile(r"^\[\s*([0-9.]+) s\] (\S+(?: \S+)*?)\s*(?:  best (\d+))?(?:  bound (\d+))?"
                  r"(?:  gap ([0-9.]+) %)?$")


def test_assign_progress_on_stderr(tmp_path: Path) -> None:
    src = shared_path("corpus", "transformer_block_train.before_layout.hlo")
    out, rep = tmp_path / "out.hlo", tmp_path / "r.json"
    began = time.perf_counter()
    run = subprocess.run(CLI + ["assign", str(src), "-t", "tpu", "-o", str(out), "--report",
                                str(rep), "--progress"], capture_output=True, text=True)
    wall = time.perf_counter() - began
    assert run.returncode == 0, run.stderr
    lines = [m for m in map(LINE.match, run.stderr.splitlines()) if m]
    phases = [m.group(2) for m in lines]
    assert phases[0] == "candidates" and phases[-1] == "done", run.stderr
    assert "exact problem" in phases
    report = json.loads(rep.read_text())
    last = lines[-1]
    assert int(last.group(3)) == report["objective"] and int(last.group(4)) == report["lower_bound"]
    assert last.group(5) == "0.00"
    seconds = [float(m.group(1)) for m in lines]
    assert seconds == sorted(seconds)
    # time_ms is the wall clock of the assignment: within the process's own wall clock.
    shown = float(re.search(r"time_ms\s*│\s*([0-9.]+)", run.stdout).group(1))
    assert shown / 1000 <= wall and shown == round(report["timings_ms"]["wall"], 1)
    # Without a terminal and without --progress: no progress lines.
    quiet = subprocess.run(CLI + ["assign", str(src), "-t", "tpu", "-o", str(out)],
                           capture_output=True, text=True)
    assert quiet.returncode == 0 and not any(map(LINE.match, quiet.stderr.splitlines()))


def test_progress_line_redraws_in_place_on_a_terminal() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Terminal()
    show = throttled(ProgressLine(stream), 0.25)
    for event in (Progress("exact problem", 1.0, 120, 100), Progress("exact problem", 1.1, 110, 100),
                  Progress("exact problem", 1.3, 105, 104), Progress("done", 1.31, 105, 105)):
        show(event)
    text = stream.getvalue()
    # The event 0.1 s after the first of its step is dropped; the rest redraw one line.
    assert text.count("\r") == 3 and text.endswith("\n") and "best 110" not in text
    assert describe(Progress("done", 1.31, 105, 105)).endswith("gap 0.00 %")
    assert describe(Progress("candidates", 0.0)) .strip() == "[    0.0 s] candidates"
