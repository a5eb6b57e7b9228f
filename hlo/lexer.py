"""The HLO text lexer: one compiled regular expression, pulled one token at a time.

The HLO text format is context-sensitive (``b01f_01io->b01f`` is one token after
``dim_labels=`` but would be an identifier, ``->`` and more elsewhere), so the
parser *pulls* tokens and may ask the lexer to re-scan from a position
(:meth:`Lexer.reset`) or to skip a balanced ``{...}`` block verbatim
(:meth:`Lexer.balanced_end`). Positions are character offsets into the text;
line and column are computed only when somebody asks (errors, spans).

Token kinds (``Lexer.kind``):

=========  ==================================================  ================
kind       example                                             ``value``
=========  ==================================================  ================
``str``    ``"foo\\"bar"``                                     unescaped text
``sq``     ``'axis_0'``                                        raw text
``name``   ``%add.1``                                          ``add.1``
``dimlab`` ``b01f_01io->b01f``                                 raw text
``pad``    ``0_1x2_-3_1``                                      raw text
``dxd``    ``3x3``                                             raw text
``float``  ``-1.5e-05``, ``inf``, ``-nan``, ``nan(0x1)``       raw text
``int``    ``-42``                                             raw text
``ident``  ``f32``, ``get-tuple-element``, ``kLoop``           raw text
``->``     punctuation (``->``, ``<=``, ``...``, ``{``, ``=``   raw text
           ...) is its own kind
``eof``    end of text                                         ``""``
``err``    any other character                                 raw text
=========  ==================================================  ================

Whitespace, ``// line`` and ``/* block */`` comments are skipped everywhere.
"""

from __future__ import annotations

import bisect
import re

from hlo.errors import Location, ParseError

_TOKEN = re.compile(
    r"""
    (?:\s+|//[^\n]*|/\*(?:[^*]|\*(?!/))*\*/)*
    (?:
       (?P<str>"(?:[^"\\]|\\.)*")
      |(?P<name>%[\w.\-]+)
      |(?P<dimlab>[0-9bf?]{2,}_[0-9io?]{2,}->[0-9bf?]{2,}(?![\w.]))
      |(?P<pad>-?\d+_-?\d+(?:_-?\d+)?(?:x-?\d+_-?\d+(?:_-?\d+)?)*(?![\w.]))
      |(?P<dxd>\d+(?:x\d+)+(?![\w.]))
      |(?P<float>-?(?:\d+\.\d*(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|\.\d+(?:[eE][+-]?\d+)?
                    |inf(?![\w.\-])|nan(?:\(0x[0-9a-fA-F]+\))?(?![\w.\-])))
      |(?P<int>-?\d+)
      |(?P<ident>[A-Za-z_][\w.]*(?:-+[\w.]+)*)
      |(?P<punct>->|<=|\.\.\.|[=,:()\[\]{}<>*#?+~!^|])
      |(?P<sq>'[^'\n]*')
      |(?P<eof>\Z)
      |(?P<err>.)
    )
    """,
    re.VERBOSE | re.DOTALL,
)

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "?": "?",
            "a": "\a", "b": "\b", "f": "\f", "v": "\v"}
_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{1,2}|[0-7]{1,3}|.)", re.DOTALL)
_BRACE_OR_QUOTE = re.compile(r'[{}"]')
_STRING_BODY = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)


def unescape(body: str) -> str:
    """C-style unescaping of a string literal's body (XLA writes them with ``CEscape``)."""
    if "\\" not in body:
        return body

    def one(m: re.Match[str]) -> str:
        esc = m.group(1)
        if esc[0] == "x" and len(esc) > 1:
            return chr(int(esc[1:], 16))
        if esc[0] in "01234567":
            return chr(int(esc, 8))
        return _ESCAPES.get(esc, esc)

    return _ESCAPE.sub(one, body)


def escape(text: str) -> str:
    """The inverse of :func:`unescape`, as XLA's ``CEscape`` writes it."""
    out = []
    for ch in text:
        if ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ch == "'":
            out.append("\\'")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\{ord(ch):03o}")
        else:
            out.append(ch)
    return "".join(out)


class Lexer:
    """A pull lexer over ``text``; the current token is ``kind``/``start``/``end``."""

    __slots__ = ("text", "name", "kind", "start", "end", "_line_starts", "_match")

    def __init__(self, text: str, name: str = "<input>") -> None:
        self.text = text
        self.name = name
        self._line_starts: list[int] | None = None
        self._match = _TOKEN.match
        self.kind = ""
        self.start = 0
        self.end = 0
        self.reset(0)

    # -- moving ---------------------------------------------------------------

    def reset(self, pos: int) -> None:
        """Lex the token that starts at or after ``pos`` (skipping blanks and comments)."""
        m = self._match(self.text, pos)
        kind = m.lastgroup
        self.start = m.start(kind)
        self.end = m.end()
        # Punctuation is its own kind ("{", "->", ...), so the parser tests it with one compare.
        self.kind = m.group(kind) if kind == "punct" else kind  # type: ignore[assignment]

    def advance(self) -> None:
        self.reset(self.end)

    @property
    def raw(self) -> str:
        return self.text[self.start : self.end]

    @property
    def value(self) -> str:
        """The token's value: unescaped for strings, without ``%`` for names."""
        if self.kind == "str":
            return unescape(self.text[self.start + 1 : self.end - 1])
        if self.kind == "name":
            return self.text[self.start + 1 : self.end]
        return self.text[self.start : self.end]


    def balanced_end(self, pos: int) -> int:
        """The position just after the ``}`` matching the ``{`` at ``pos`` (strings respected)."""
        text = self.text
        depth = 0
        i = pos
        search = _BRACE_OR_QUOTE.search
        while True:
            m = search(text, i)
            if m is None:
                raise self.error("expects '}' to close this '{'", pos)
            ch = m.group()
            if ch == '"':
                s = _STRING_BODY.match(text, m.start())
                if s is None:
                    raise self.error("unterminated string", m.start())
                i = s.end()
                continue
            i = m.end()
            if ch == "{":
                depth += 1
            else:
                depth -= 1
                if depth == 0:
                    return i

    # -- diagnostics ----------------------------------------------------------

    def line_col(self, pos: int) -> tuple[int, int]:
        if self._line_starts is None:
            starts = [0]
            starts.extend(m.end() for m in re.finditer("\n", self.text))
            self._line_starts = starts
        line = bisect.bisect_right(self._line_starts, pos)
        return line, pos - self._line_starts[line - 1] + 1

    def location(self, pos: int) -> Location:
        pos = max(0, min(pos, len(self.text)))
        line, col = self.line_col(pos)
        begin = self._line_starts[line - 1]  # type: ignore[index]
        end = self.text.find("\n", begin)
        source = self.text[begin : end if end >= 0 else len(self.text)].rstrip("\r")
        return Location(self.name, line, col, source)

    def error(self, message: str, pos: int | None = None) -> ParseError:
        """A :class:`ParseError` at ``pos`` (default: the current token)."""
        return ParseError(message, self.location(self.start if pos is None else pos))

    def describe(self) -> str:
        """How the current token reads in an error message."""
        if self.kind == "eof":
            return "end of input"
        if self.kind == "err":
            if self.text.startswith("/*", self.start):
                return "an unterminated comment"
            if self.text.startswith('"', self.start):
                return "an unterminated string"
        return f"'{self.raw[:40]}'"
