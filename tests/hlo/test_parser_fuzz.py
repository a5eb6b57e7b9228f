"""Mutated HLO never makes the parser fail with anything but a located ``ParseError``."""

from __future__ import annotations

import re

from conftest import shared_path
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hlo.errors import ParseError
from hlo.parser import parse_module, parse_shape, read_text
from hlo.printer import print_module

SEEDS = [
    read_text(p)
    for p in sorted(shared_path("xla-cases", "hlo_parser_test").glob("*.hlo"))
    if not p.name.startswith("nonrt") or ".expected" not in p.name
] + [read_text(shared_path("corpus", f"{n}.pre.hlo")) for n in ("attention_fwd", "cond_branches")]
TOKEN = re.compile(r"\s+|[\w.%\-]+|.", re.DOTALL)
PIECES = ["{", "}", "(", ")", "[", "]", ",", "=", ":", "->", "<=", "%", "#", "*", "/*", "*/", "//",
          '"', "'", "ROOT", "ENTRY", "f32[", "{1,0:T(", "constant(", "nan(0x", "-", "0", "99999999999999999999",
          "1e999", "\n", "\r\n", "\x00", "é", "T(*)", "E(", "P(", "SC(", "D(C+~", "<=?", "?"]

FUZZ = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _check(text: str) -> None:
    try:
        module = parse_module(text, "fuzz")
    except ParseError as err:
        loc = err.location
        assert loc is not None and loc.name == "fuzz"
        line_count = text.count("\n") + 1
        assert 1 <= loc.line <= line_count
        lines = text.split("\n")
        assert 1 <= loc.column <= len(lines[loc.line - 1]) + 1
        str(err)  # renders without failing
        return
    # What parses prints and parses back to the same module.
    assert parse_module(print_module(module)) == module


@st.composite
def byte_mutation(draw):
    text = draw(st.sampled_from(SEEDS))
    for _ in range(draw(st.integers(1, 4))):
        pos = draw(st.integers(0, len(text)))
        op = draw(st.sampled_from(["delete", "insert", "swap", "dup"]))
        if op == "delete":
            n = draw(st.integers(1, 8))
            text = text[:pos] + text[pos + n :]
        elif op == "insert":
            text = text[:pos] + draw(st.sampled_from(PIECES + [chr(draw(st.integers(0, 0x7F)))])) + text[pos:]
        elif op == "swap" and pos + 1 < len(text):
            text = text[:pos] + text[pos + 1] + text[pos] + text[pos + 2 :]
        else:
            text = text[:pos] + text[pos : pos + 20] + text[pos:]
    return text


@st.composite
def token_mutation(draw):
    tokens = TOKEN.findall(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(tokens) - 1))
        op = draw(st.sampled_from(["drop", "replace", "repeat", "move"]))
        if op == "drop":
            del tokens[i]
        elif op == "replace":
            tokens[i] = draw(st.sampled_from(PIECES + tokens))
        elif op == "repeat":
            tokens.insert(i, tokens[i])
        else:
            tokens.insert(draw(st.integers(0, len(tokens) - 1)), tokens.pop(i))
    return "".join(tokens)


@FUZZ
@given(byte_mutation())
def test_byte_mutations(text: str) -> None:
    _check(text)


@FUZZ
@given(token_mutation())
def test_token_mutations(text: str) -> None:
    _check(text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="f32[]{}(),:0123456789*<=?TLESPMDC#b+~ us", max_size=40))
def test_shape_strings(text: str) -> None:
    try:
        parse_shape(text)
    except ParseError as err:
        assert err.location is not None and err.location.line == 1
        assert 1 <= err.location.column <= len(text) + 1


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_arbitrary_text(text: str) -> None:
    _check(text)


def test_deep_nesting_is_a_parse_error() -> None:
    text = "HloModule m\nENTRY e {\n  ROOT p = " + "(" * 5000 + "f32[]" + ")" * 5000 + " parameter(0)\n}\n"
    try:
        parse_module(text)
    except ParseError as err:
        assert err.location is not None


def test_a_dimension_list_that_is_not_a_list_of_integers_is_refused_where_written() -> None:
    """``dimensions={0,3,1,}`` (a mutated transpose) was kept as text and failed later with a TypeError."""
    text = ("HloModule m\n\nENTRY e {\n  x = f32[2,3,4,5] parameter(0)\n"
            "  ROOT t = f32[2,5,3,4] transpose(x), dimensions={0,3,1,}\n}\n")
    try:
        parse_module(text, "m.hlo")
    except ParseError as err:
        assert (err.location.line, err.location.column) == (5, 50)
        assert "dimensions expects a list of dimension numbers" in err.message
    else:
        raise AssertionError("accepted")
