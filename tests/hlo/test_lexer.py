"""The HLO lexer: token kinds, skipped comments, positions, string escapes."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hlo.lexer import Lexer, escape, unescape


def tokens(text: str) -> list[tuple[str, str]]:
    lx = Lexer(text)
    out = []
    while lx.kind != "eof":
        out.append((lx.kind, lx.raw))
        lx.advance()
    return out


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("%add.1", [("name", "%add.1")]),
        ("get-tuple-element", [("ident", "get-tuple-element")]),
        ("b01f_01io->b01f", [("dimlab", "b01f_01io->b01f")]),
        ("?b01f_0?1io->b01?f", [("dimlab", "?b01f_0?1io->b01?f")]),
        ("0_0_0x0_-10_0", [("pad", "0_0_0x0_-10_0")]),
        ("1x1x7x1", [("dxd", "1x1x7x1")]),
        ("-1.5e-05 1e+10 .5 3.", [("float", "-1.5e-05"), ("float", "1e+10"), ("float", ".5"), ("float", "3.")]),
        ("inf -inf nan -nan nan(0x3ff)", [("float", "inf"), ("float", "-inf"), ("float", "nan"),
                                          ("float", "-nan"), ("float", "nan(0x3ff)")]),
        ("infeed nanny", [("ident", "infeed"), ("ident", "nanny")]),
        ("-42", [("int", "-42")]),
        ("->", [("->", "->")]),
        ("<=[4]", [("<=", "<="), ("[", "["), ("int", "4"), ("]", "]")]),
        ("{...}", [("{", "{"), ("...", "..."), ("}", "}")]),
        ("'axis_0'", [("sq", "'axis_0'")]),
        ('"a\\"b"', [("str", '"a\\"b"')]),
        ("(p: f32[])->f32[]", [("(", "("), ("ident", "p"), (":", ":"), ("ident", "f32"), ("[", "["),
                               ("]", "]"), (")", ")"), ("->", "->"), ("ident", "f32"), ("[", "["), ("]", "]")]),
    ],
)
def test_token_kinds(text: str, expected: list[tuple[str, str]]) -> None:
    assert tokens(text) == expected


def test_comments_and_blanks_are_skipped() -> None:
    text = "/* a */ x // line\r\n/*index=5*/ y\n/* multi\nline */z"
    assert [raw for _, raw in tokens(text)] == ["x", "y", "z"]


def test_positions_are_one_based_and_crlf_safe() -> None:
    lx = Lexer("a\r\n  bb\n\tc")
    lx.advance()
    loc = lx.location(lx.start)
    assert (loc.line, loc.column, loc.source_line) == (2, 3, "  bb")
    lx.advance()
    assert lx.line_col(lx.start) == (3, 2)


def test_unterminated_comment_is_an_error_token() -> None:
    lx = Lexer("x\n/* never closed")
    lx.advance()
    assert lx.kind == "err"
    assert lx.describe() == "an unterminated comment"
    err = lx.error("expects something, but sees " + lx.describe())
    assert str(err).splitlines()[1:] == ["/* never closed", "^"]
    assert (err.location.line, err.location.column) == (2, 1)


def test_unknown_character_is_an_error_token() -> None:
    assert tokens("a $ b")[1] == ("err", "$")


def test_value_unescapes_strings_and_strips_percent() -> None:
    lx = Lexer('"it\\\'s \\"q\\"\\n"')
    assert lx.value == "it's \"q\"\n"
    assert Lexer("%x.1").value == "x.1"


def test_balanced_end_respects_strings() -> None:
    text = '{a={b}, s="}{"} tail'
    lx = Lexer(text)
    assert text[: lx.balanced_end(0)] == '{a={b}, s="}{"}'


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_escape_round_trips(text: str) -> None:
    assert unescape(escape(text)) == text
