"""XLA's own parser (jaxlib) accepts what we print and sees the same instructions and shapes.

All corpus ``pre`` and ``after_layout`` modules go through one subprocess (XLA may abort
a process instead of raising). For every module we compare, per computation, the
instruction names and their shapes with layouts as XLA reports them for our printed
text, for the original text, and as our IR holds them.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import shared_path

from hlo.parser import parse_module, read_text
from hlo.printer import print_module

PATHS = sorted(
    p for p in shared_path("corpus").glob("*.hlo*")
    if p.name.split(".")[1] in ("pre", "after_layout")
)

_XLA_SIDE = r"""
import json, sys
from jaxlib import _hlo
texts = json.load(open(sys.argv[1]))
out = []
for text in texts:
    try:
        m = _hlo.hlo_module_from_text(text)
    except Exception as e:
        out.append({"error": str(e)[:500]})
        continue
    out.append({c.name: [[i.name, i.to_string()] for i in c.instructions()] for c in m.computations()})
json.dump(out, sys.stdout)
"""


def _shape_text(instruction_text: str) -> str:
    """The result shape in XLA's ``%name = SHAPE opcode(...)`` line (brackets balanced)."""
    rest = instruction_text.split(" = ", 1)[1]
    depth = 0
    for i, ch in enumerate(rest):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == " " and depth == 0 and not rest[:i].endswith(","):
            return rest[:i]
    raise AssertionError(f"no shape in {instruction_text!r}")


def _by_computation(report: dict) -> dict[str, dict[str, str]]:
    return {comp: {name: _shape_text(text) for name, text in instrs} for comp, instrs in report.items()}


@pytest.fixture(scope="module")
def xla_reports(tmp_path_factory) -> dict[str, tuple[dict, dict]]:
    texts, keys = [], []
    for path in PATHS:
        original = read_text(path)
        texts += [original, print_module(parse_module(original, str(path)))]
        keys.append(path.name)
    data = tmp_path_factory.mktemp("oracle") / "texts.json"
    data.write_text(json.dumps(texts))
    run = subprocess.run([sys.executable, "-c", _XLA_SIDE, str(data)], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    reports = json.loads(run.stdout)
    return {k: (reports[2 * i], reports[2 * i + 1]) for i, k in enumerate(keys)}


def test_representative_set() -> None:
    assert len(PATHS) == 76


@pytest.mark.xla
@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.name)
def test_xla_accepts_our_text_and_agrees(path, xla_reports) -> None:
    original, ours = xla_reports[path.name]
    assert "error" not in original, original
    assert "error" not in ours, ours["error"]
    expected = _by_computation(original)
    assert _by_computation(ours) == expected
    module = parse_module(read_text(path), str(path))
    own = {c.name: {i.name: str(i.shape) for i in c.instructions} for c in module.computations}
    assert own == expected
