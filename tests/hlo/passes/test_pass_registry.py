"""The pass registry: names, aliases, order, verification, and what targets ask for."""

from __future__ import annotations

import pytest
from xla_normalization_cases import load

from hlo.ir import Module
from hlo.passes import PASSES, PassError, pass_names, passes_for_target, run_passes
from hlo.passes.group_reductions import group_reductions
from hlo.passes.normalize_layouts import normalize_layouts
from hlo.passes.normalize_reductions import normalize_reductions
from hlo.target import builtin_target_names, load_target


def test_names_are_kebab_case_flags() -> None:
    assert set(PASSES) == {"normalize-reductions", "group-reductions", "normalize-layouts"}
    for name in PASSES:
        assert name == name.lower() and " " not in name and "_" not in name


def test_pass_names_accept_lists_strings_and_aliases() -> None:
    assert pass_names("normalize-layouts, reductions") == (
        "normalize-layouts",
        "normalize-reductions",
    )
    assert pass_names(["grouping"]) == ("group-reductions",)
    with pytest.raises(PassError, match="unknown pass 'bogus'"):
        pass_names("normalize-reductions,bogus")


def test_run_passes_applies_them_in_order() -> None:
    module = load("reduction_layout_normalizer_test", "LayoutCanonicalizerTest.hlo")
    got = run_passes(module, "normalize-reductions,group-reductions", verify=True)
    assert got == group_reductions(normalize_reductions(module))
    assert run_passes(module, []) == module
    other = run_passes(module, ["normalize-layouts", "normalize-reductions"])
    assert other == normalize_reductions(normalize_layouts(module))


def test_verification_after_a_pass_names_the_pass() -> None:
    module = load("layout_normalization_test", "TestDefault.hlo")

    def breaking(m: Module) -> Module:  # drops the root's layout: a layout violation
        import dataclasses

        entry = m.entry
        root = entry.root_instruction
        bad = dataclasses.replace(root, shape=root.shape.with_layout(None))
        instrs = tuple(bad if i.name == root.name else i for i in entry.instructions)
        comps = tuple(
            dataclasses.replace(c, instructions=instrs) if c is entry else c for c in m.computations
        )
        return dataclasses.replace(m, computations=comps)

    PASSES["breaking-pass"] = breaking
    try:
        with pytest.raises(PassError, match="after pass 'breaking-pass'"):
            run_passes(module, ["normalize-layouts", "breaking-pass"], verify=True)
    finally:
        del PASSES["breaking-pass"]


def test_targets_that_want_row_reductions_get_canonical_grouped_reduces() -> None:
    wanted = {name: passes_for_target(load_target(name)) for name in builtin_target_names()}
    assert wanted["gpu"] == ("normalize-reductions", "group-reductions")
    assert wanted["cpu"] == ()
    for passes in wanted.values():
        assert all(p in PASSES for p in passes)
