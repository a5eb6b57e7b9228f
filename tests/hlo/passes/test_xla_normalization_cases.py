"""The normalization cases from XLA's own tests reproduce their described outcome.

Each case: our pass output satisfies XLA's FileCheck facts (checked
structurally: shapes with layouts, opcodes, operands, dims attributes), passes
both verifiers, and computes what the input computes (reference interpreter,
bitcasts through the physical byte image).
"""

from __future__ import annotations

import numpy as np
import pytest
from filecheck_facts import check
from xla_normalization_cases import cases, load

from hlo.equivalence import compare_modules
from hlo.errors import LayoutError
from hlo.interpreter import evaluate
from hlo.layout_verifier import verify_layouts
from hlo.passes import run_passes
from hlo.passes.normalize_layouts import normalize_layouts
from hlo.passes.normalize_reductions import (
    is_canonical_reduce,
    non_canonical_reduces,
    normalize_reductions,
)
from hlo.passes.physical_shapes import is_descending
from hlo.verifier import verify_module

REDUCTIONS = "reduction_layout_normalizer_test"
LAYOUTS = "layout_normalization_test"


def _proved(original, rewritten) -> None:  # noqa: ANN001
    verify_module(rewritten)
    assert verify_layouts(rewritten) == []
    report = compare_modules(original, rewritten, seed=3, trials=2)
    assert report.equivalent, report.difference


@pytest.mark.parametrize(
    "case", [c for c in cases(REDUCTIONS) if c.get("expected_filecheck")], ids=lambda c: c["file"]
)
def test_reduction_normalizer_case(case: dict) -> None:
    module = load(REDUCTIONS, case["file"])
    assert non_canonical_reduces(module), "the case starts non-canonical"
    out = normalize_reductions(module)
    check(out, case["expected_filecheck"])
    assert non_canonical_reduces(out) == []
    _proved(module, out)
    assert normalize_reductions(out) == out


def test_reduction_normalizer_rejects_variadic_inputs_in_different_layouts() -> None:
    (case,) = [c for c in cases(REDUCTIONS) if c["file"].endswith("DifferentLayouts.hlo")]
    module = load(REDUCTIONS, case["file"])
    with pytest.raises(LayoutError, match="Layout assignment") as info:
        normalize_reductions(module)
    assert info.value.location is not None and info.value.location.line == 26
    with pytest.raises(LayoutError, match="Layout assignment"):
        normalize_layouts(module)
    # the unmodified module still runs: argmax over dim 3 against numpy
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 4, 7)).astype(np.float32)
    idx = rng.integers(0, 100, (2, 3, 4, 7)).astype(np.uint32)
    got_max, got_idx = evaluate(module, [x, idx])
    best = x.argmax(axis=3)
    want_max = np.maximum(x.max(axis=3), 0)
    want_idx = np.where(x.max(axis=3) > 0, np.take_along_axis(idx, best[..., None], 3)[..., 0], 0)
    np.testing.assert_array_equal(got_max, want_max)
    np.testing.assert_array_equal(got_idx, want_idx)


@pytest.mark.parametrize("case", cases(LAYOUTS), ids=lambda c: c["file"])
def test_layout_normalization_case(case: dict) -> None:
    module = load(LAYOUTS, case["file"])
    out = normalize_layouts(module)
    if case.get("expected_filecheck"):
        check(out, case["expected_filecheck"])
    else:  # "no change"
        assert out == module
    _proved(module, out)
    entry = out.entry
    edges = {p.name for p in entry.parameter_instructions()} | {entry.root}
    for instr in entry.instructions:
        if instr.name not in edges:
            assert is_descending(instr.shape), f"{instr.name}: {instr.shape} is not descending"
    assert normalize_layouts(out) == out
    both = run_passes(module, ["normalize-layouts", "normalize-reductions"], verify=True)
    assert non_canonical_reduces(both) == []


def test_constant_literal_is_physically_transposed() -> None:
    module = load(LAYOUTS, "Constant.hlo")
    out = normalize_layouts(module)
    (constant,) = [i for i in out.entry.instructions if i.opcode == "constant"]
    assert str(constant.shape) == "f32[4,5]{1,0}"
    values = np.array(constant.attr("literal").values).reshape(4, 5)
    np.testing.assert_array_equal(values, np.arange(1, 21).reshape(5, 4).T)


def test_canonicality_check_fails_on_the_non_canonical_case() -> None:
    module = load(REDUCTIONS, "LayoutCanonicalizerTest.hlo")
    reduce = module.entry.instruction("reduce0")
    assert not is_canonical_reduce(module, reduce)
    assert non_canonical_reduces(module) == [("main", "reduce0")]
    out = normalize_reductions(module)
    (new_reduce,) = [i for i in out.entry.instructions if i.opcode == "reduce"]
    assert is_canonical_reduce(out, new_reduce)
    with pytest.raises(LayoutError):
        is_canonical_reduce(module, module.entry.instruction("arg0"))
