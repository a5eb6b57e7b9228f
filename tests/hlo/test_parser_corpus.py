"""Every shared HLO text parses; print -> parse gives the same module; ``fmt`` is idempotent."""

from __future__ import annotations

import pytest
from conftest import shared_path

from hlo.parser import parse_module, parse_modules, read_text
from hlo.printer import print_module

CORPUS = sorted(shared_path("corpus").glob("*.hlo*"))
XLA_FILES = sorted(shared_path("xla-cases").glob("*/*.hlo"))
#: Files that XLA's own parser rejects on purpose (the ``err_`` cases).
REJECTED = {p for p in XLA_FILES if p.parent.name == "hlo_parser_test" and p.name.startswith("err_")}
ALL = [p for p in CORPUS + XLA_FILES if p not in REJECTED]


def test_corpus_is_complete() -> None:
    stages = {p.name.split(".")[-2] if p.suffix == ".hlo" else p.name.split(".")[-3] for p in CORPUS}
    assert stages == {"pre", "pre_short", "before_layout", "after_layout", "final"}
    assert len(CORPUS) == 190
    assert any(p.suffix == ".gz" for p in CORPUS)


@pytest.mark.parametrize("path", ALL, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_parse_print_parse(path) -> None:
    text = read_text(path)
    modules = parse_modules(text, str(path))
    assert modules
    short = path.name.endswith(("pre_short.hlo", "pre_short.hlo.gz"))
    for module in modules:
        assert module.computations and module.entry.instructions
        printed = print_module(module, short=short)
        again = parse_module(printed, "printed")
        assert again == module
        assert print_module(again, short=short) == printed


@pytest.mark.parametrize(
    "path", [p for p in CORPUS if p.name.endswith("after_layout.hlo")][:12], ids=lambda p: p.name
)
def test_other_form_round_trips_too(path) -> None:
    module = parse_module(read_text(path), str(path))
    short = print_module(module, short=True)
    assert parse_module(short) == module
    assert not any(line.lstrip().startswith(("%", "ROOT %")) for line in short.splitlines())
    assert print_module(parse_module(short), short=True) == short


def test_pre_short_prints_back_byte_for_byte() -> None:
    for path in [p for p in CORPUS if "pre_short" in p.name]:
        text = read_text(path)
        assert print_module(parse_module(text, str(path)), short=True).rstrip() == text.rstrip()
