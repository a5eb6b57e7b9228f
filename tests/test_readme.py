"""The README's Python examples run as written (from the repository root), and print what
their comments say they print."""

from __future__ import annotations

import contextlib
import io
import re

import pytest
from conftest import REPO

BLOCKS = re.findall(r"```python\n(.*?)```", (REPO / "README.md").read_text(), re.S)


def test_the_readme_has_python_examples() -> None:
    assert len(BLOCKS) >= 2


@pytest.mark.parametrize("block", range(len(BLOCKS)))
def test_python_example_runs(block: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(BLOCKS[block], f"README.md python block {block}", "exec"), {})
    printed = out.getvalue().splitlines()
    # A print whose comment starts with "->" promises that output, in order.
    promised = [line.split("# -> ", 1)[1].strip() for line in BLOCKS[block].splitlines()
                if line.startswith("print(") and "# -> " in line]
    for text in promised:
        assert any(text in p for p in printed), (text, printed)


def test_some_example_promises_its_output() -> None:
    assert any("# -> " in block for block in BLOCKS)
