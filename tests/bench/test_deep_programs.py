"""The deep-model builders of the scaling benchmark: they lower, and depth adds layers.

Counted by XLA's own parse of the text (jaxlib's HLO module parser), not by ours; ours must
accept the same text.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.programs.deep import FAMILIES, hlo_text  # noqa: E402
from hlo.parser import parse_module  # noqa: E402


def _count(text: str, opcode: str) -> int:
    return len(re.findall(rf" {opcode}\(", text))


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_builders_lower_and_parse(family: str) -> None:
    from jaxlib import _hlo

    shallow, deep = hlo_text(family, 1), hlo_text(family, 3)
    for text in (shallow, deep):
        _hlo.hlo_module_from_text(text)
        parse_module(text)
    if family == "scan":
        # One loop body, however deep: the text does not grow with the depth.
        assert _count(deep, "while") == _count(shallow, "while") >= 1
        assert _count(deep, "dot") == _count(shallow, "dot")
    else:
        # Unrolled: every layer adds the same instructions (forward and backward).
        kind = "convolution" if family == "resnet" else "dot"
        per_layer = (_count(deep, kind) - _count(shallow, kind)) / 2
        assert per_layer >= (6 if family == "resnet" else 9)
        assert _count(deep, kind) == _count(shallow, kind) + 2 * per_layer
    if family in ("llama", "gpt2"):
        # AdamW: one square root per weight of every layer (at least 9 weights a layer).
        assert _count(deep, "sqrt") - _count(shallow, "sqrt") >= 2 * 9


def test_before_layout_stage_is_xla_dump() -> None:
    text = hlo_text("llama", 1, "before_layout")
    assert text.startswith("HloModule jit_step")
    parse_module(text)
    with pytest.raises(ValueError, match="unknown stage"):
        hlo_text("llama", 1, "final")
