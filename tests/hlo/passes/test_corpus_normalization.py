"""Both normalization passes on every ``after_layout`` module of the corpus.

For XLA's own laid-out modules, for the same modules with random layouts
(and random layouts plus tiles), and for our own layout assignment's output on
every built-in target: the output passes the structural verifier
(and, for XLA's modules, the layout verifier), every reduce is canonical,
normalizing again changes nothing, the reference interpreter computes the same
outputs, and XLA's parser (jaxlib, one subprocess for the whole batch) accepts
the printed text.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import shared_path
from random_layouts import scramble_layouts

from hlo.equivalence import compare_modules
from hlo.ir import Module
from hlo.layout_verifier import verify_layouts
from hlo.parser import parse_file
from hlo.passes import passes_for_target, run_passes
from hlo.passes.normalize_reductions import non_canonical_reduces
from hlo.passes.physical_shapes import is_descending
from hlo.printer import print_module
from hlo.shape import Tile
from hlo.target import load_target
from hlo.verifier import collect_errors
from solver.layout_assignment.assign import assign
from solver.layout_assignment.options import AssignOptions

PASSES = ("normalize-layouts", "normalize-reductions")
GROUPED = ("normalize-layouts", "normalize-reductions", "group-reductions")
CORPUS = sorted(shared_path("corpus").glob("*.after_layout.hlo"))
NAMES = [p.name.removesuffix(".after_layout.hlo") for p in CORPUS]


def test_the_corpus_is_there() -> None:
    assert len(CORPUS) >= 30


@functools.cache
def original(name: str) -> Module:
    return parse_file(shared_path("corpus", f"{name}.after_layout.hlo"))


@functools.cache
def scrambled(name: str, tiled: bool) -> Module:
    tiles = (Tile((2, 2)),) if tiled else ()
    return scramble_layouts(
        original(name), seed=NAMES.index(name) + (100 if tiled else 0), tiles=tiles
    )


@functools.cache
def normalized(name: str, variant: str) -> tuple[Module, Module]:
    """(input, output) for ``variant`` in xla / random / tiled."""
    module = original(name) if variant == "xla" else scrambled(name, variant == "tiled")
    return module, run_passes(module, GROUPED if variant != "xla" else PASSES)


def _check(name: str, variant: str) -> None:
    module, out = normalized(name, variant)
    errors = collect_errors(out)
    assert not errors, errors[0]
    if variant == "xla":
        assert verify_layouts(out) == []
    assert non_canonical_reduces(out) == []
    passes = GROUPED if variant != "xla" else PASSES
    assert run_passes(out, passes) == out, "normalizing twice changed the module"
    report = compare_modules(module, out, seed=7)
    assert report.equivalent, report.difference


@pytest.mark.parametrize("name", NAMES)
def test_xla_layouts_normalize_equivalently(name: str) -> None:
    _check(name, "xla")
    module, out = normalized(name, "xla")
    if all(is_descending(i.shape) for c in module.computations for i in c.instructions):
        assert out == module, "an all-descending module must come back unchanged"


#: The heaviest modules for the interpreter run with random layouts only once (untiled).
_SLOW = {"cnn_train_nhwc", "flax_resnet_train", "sort_argsort"}


@pytest.mark.parametrize("name", NAMES)
def test_random_layouts_normalize_equivalently(name: str) -> None:
    _check(name, "random")


@pytest.mark.parametrize("name", [n for n in NAMES if n not in _SLOW])
def test_random_tiled_layouts_normalize_equivalently(name: str) -> None:
    _check(name, "tiled")


#: Our own layout assignment's outputs, per target, on the modules light enough to
#: interpret four times over (the rest are covered above with XLA's and random layouts).
ASSIGNED = [
    n
    for n in NAMES
    if n
    not in _SLOW
    | {
        "attention_fwd",
        "gpt_fwd_2l",
        "conv2d_nchw",
        "transformer_block_train",
        "lstm_train",
        "linalg_custom_calls",
    }
]
TARGETS = ("cpu", "gpu", "tpu", "ascend")


@functools.cache
def assigned(name: str, target: str) -> tuple[Module, Module, Module]:
    """(assign output, the target's own passes on it, all passes on it)."""
    module = parse_file(shared_path("corpus", f"{name}.before_layout.hlo"))
    laid_out = assign(module, target, AssignOptions(time_limit_s=5.0)).module
    own = run_passes(laid_out, passes_for_target(load_target(target)))
    return laid_out, own, run_passes(laid_out, GROUPED)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", ASSIGNED)
def test_assigned_layouts_normalize_equivalently(name: str, target: str) -> None:
    laid_out, own, out = assigned(name, target)
    for rewritten in (own, out):
        errors = collect_errors(rewritten)
        assert not errors, errors[0]
        # Tile mismatches on tied ops that the assignment itself made stay as they were;
        # the normalization adds none, and no dim-order violation at all.
        assert len(verify_layouts(rewritten)) <= len(verify_layouts(laid_out))
        assert (
            verify_layouts(rewritten, compare_tiles=False)
            == verify_layouts(laid_out, compare_tiles=False)
            == []
        )
    assert non_canonical_reduces(out) == []
    if passes_for_target(load_target(target)):
        assert non_canonical_reduces(own) == []
    assert run_passes(out, GROUPED) == out
    report = compare_modules(laid_out, out, seed=11)
    assert report.equivalent, report.difference


_PARSE_ALL = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    from jaxlib import _hlo
    failures = {}
    for path in sorted(Path(sys.argv[1]).glob("*.hlo")):
        try:
            _hlo.hlo_module_from_text(path.read_text())
        except Exception as e:  # XLA reports bad text as RuntimeError
            failures[path.name] = str(e)[:500]
    print(json.dumps(failures))
""")


@pytest.mark.xla
def test_xla_parser_accepts_every_normalized_module(tmp_path: Path) -> None:
    count = 0
    for name in NAMES:
        for variant in ("xla", "random", "tiled"):
            if variant == "tiled" and name in _SLOW:
                continue
            (tmp_path / f"{name}.{variant}.hlo").write_text(
                print_module(normalized(name, variant)[1])
            )
            count += 1
    for name in ASSIGNED:
        for target in TARGETS:
            _, own, out = assigned(name, target)
            (tmp_path / f"{name}.{target}.own.hlo").write_text(print_module(own))
            (tmp_path / f"{name}.{target}.all.hlo").write_text(print_module(out))
            count += 2
    result = subprocess.run(
        [sys.executable, "-c", _PARSE_ALL, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    failures = json.loads(result.stdout.strip().splitlines()[-1])
    assert failures == {}, f"{len(failures)} of {count} rejected: {failures}"
