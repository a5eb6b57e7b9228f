"""Token-level helpers plus shape and layout parsing (the base of the parser).

``parse_X`` consumes an X or raises a located :class:`ParseError`;
``parse_optional_X`` returns ``None`` without consuming when the next token
cannot start an X.
"""

from __future__ import annotations

import re

from hlo.errors import LayoutError, ParseError
from hlo.lexer import Lexer
from hlo.shape import (
    COMBINED,
    ELEMENT_BITS,
    UNBOUNDED,
    ArrayShape,
    BufferShape,
    DimLevel,
    Layout,
    OpaqueShape,
    Shape,
    SplitConfig,
    Tile,
    TokenShape,
    TupleShape,
)

#: ``f32[2,3]{1,0}`` without blanks or layout properties: the overwhelmingly common
#: case, parsed by one regex and memoized (a 10k-instruction module has a few
#: hundred distinct shapes).
_FAST_ARRAY = re.compile(r"([a-z][a-z0-9]*)\[([0-9,]*)\](\{[0-9,]*\})?(?![{\w])")

_SHAPE_WORDS = frozenset(ELEMENT_BITS) | {"token", "opaque"}


class ShapeParsing:
    lx: Lexer

    def __init__(self, lx: Lexer) -> None:
        self.lx = lx
        self._shape_cache: dict[str, ArrayShape] = {}

    # -- token helpers ------------------------------------------------------

    def error(self, message: str, pos: int | None = None) -> ParseError:
        return self.lx.error(message, pos)

    def at_punct(self, p: str) -> bool:
        return self.lx.kind == p

    def accept_punct(self, p: str) -> bool:
        if self.lx.kind == p:
            self.lx.advance()
            return True
        return False

    def expect_punct(self, p: str, context: str = "") -> None:
        if self.lx.kind != p:
            where = f" {context}" if context else ""
            raise self.error(f"expects '{p}'{where}, but sees {self.lx.describe()}")
        self.lx.advance()

    def at_ident(self, word: str) -> bool:
        lx = self.lx
        return lx.kind == "ident" and lx.raw == word

    def parse_int(self, what: str = "an integer") -> int:
        lx = self.lx
        if lx.kind != "int":
            raise self.error(f"expects {what}, but sees {lx.describe()}")
        value = int(lx.raw)
        lx.advance()
        return value

    def parse_ident(self, what: str = "an identifier") -> str:
        lx = self.lx
        if lx.kind != "ident":
            raise self.error(f"expects {what}, but sees {lx.describe()}")
        value = lx.raw
        lx.advance()
        return value

    def parse_name(self, what: str = "a name") -> str:
        """A ``%name`` or a bare identifier."""
        lx = self.lx
        if lx.kind == "name":
            value = lx.value
        elif lx.kind == "ident":
            value = lx.raw
        else:
            raise self.error(f"expects {what}, but sees {lx.describe()}")
        lx.advance()
        return value

    # -- shapes -------------------------------------------------------------

    def starts_shape(self) -> bool:
        lx = self.lx
        if lx.kind != "ident":
            return lx.kind == "("
        nxt = lx.text[lx.end : lx.end + 1]
        if nxt == "[":
            return lx.raw in _SHAPE_WORDS
        return nxt == "(" and lx.raw == "b"

    def parse_optional_shape(self) -> Shape | None:
        return self.parse_shape() if self.starts_shape() else None

    def parse_shape(self) -> Shape:
        lx = self.lx
        if self.at_punct("("):
            lx.advance()
            elements: list[Shape] = []
            if not self.at_punct(")"):
                elements.append(self.parse_shape())
                while self.accept_punct(","):
                    elements.append(self.parse_shape())
            self.expect_punct(")", "at the end of a tuple shape")
            return TupleShape(tuple(elements))
        if lx.kind != "ident":
            raise self.error(f"expects a shape, but sees {lx.describe()}")
        if lx.raw == "b" and lx.text.startswith("(", lx.end):
            return self._parse_buffer_shape()
        m = _FAST_ARRAY.match(lx.text, lx.start)
        if m is not None and m.group(1) in ELEMENT_BITS:
            key = m.group()
            shape = self._shape_cache.get(key)
            if shape is None:
                shape = self._parse_array_shape()
                self._shape_cache[key] = shape
            else:
                lx.reset(m.end())
            return shape
        return self._parse_array_shape()

    def _parse_buffer_shape(self) -> BufferShape:
        lx = self.lx
        lx.advance()
        self.expect_punct("(")
        if lx.kind != "ident" or lx.raw not in ELEMENT_BITS:
            raise self.error(f"expected primitive type, but sees {lx.describe()}")
        array = self._parse_array_shape()
        self.expect_punct(")", "at the end of buffer shape")
        return BufferShape(array)  # type: ignore[arg-type]

    def _parse_array_shape(self) -> Shape:
        lx = self.lx
        start = lx.start
        word = lx.raw
        if lx.kind != "ident" or word not in _SHAPE_WORDS:
            raise self.error(f"expected primitive type, but sees {lx.describe()}")
        lx.advance()
        if word in ("token", "opaque"):
            self.expect_punct("[")
            self.expect_punct("]", f"after '{word}['")
            return TokenShape() if word == "token" else OpaqueShape()
        self.expect_punct("[", "after the element type")
        dims: list[int] = []
        dynamic: list[bool] = []
        if not self.at_punct("]"):
            while True:
                if self.accept_punct("?"):
                    dims.append(UNBOUNDED)
                    dynamic.append(True)
                elif self.accept_punct("<="):
                    if self.accept_punct("?"):
                        dims.append(UNBOUNDED)
                    else:
                        dims.append(self.parse_int("a dimension bound"))
                    dynamic.append(True)
                else:
                    dims.append(self.parse_int("a dimension size"))
                    dynamic.append(False)
                if not self.accept_punct(","):
                    break
        close_end = lx.end
        self.expect_punct("]", "at the end of the dimensions")
        layout = None
        layout_pos = lx.start
        # A layout follows ']' directly; a '{' after a blank opens something else
        # (``-> f32[2] {`` starts a computation body).
        if layout_pos == close_end and self.at_punct("{"):
            layout = self.parse_layout(rank=len(dims))
        if layout is not None and not dims and layout == Layout(()):
            layout = None  # a scalar's plain layout is printed as nothing: keep one spelling
        try:
            return ArrayShape(word, tuple(dims), layout, tuple(dynamic) if any(dynamic) else ())
        except LayoutError as e:
            raise self.error(e.message, layout_pos if layout is not None else start) from None

    # -- layouts ------------------------------------------------------------

    def parse_layout(self, rank: int | None = None) -> Layout:
        """``{1,0:T(8,128)}``; with ``rank``, a minor_to_major of another length is an error."""
        lx = self.lx
        start = lx.start
        self.expect_punct("{", "to start a layout")
        mtm: list[int] = []
        if lx.kind == "int":
            mtm.append(self.parse_int())
            while self.accept_punct(","):
                mtm.append(self.parse_int("a dimension in minor_to_major"))
        fields: dict[str, object] = {}
        if self.accept_punct(":"):
            self._parse_layout_properties(fields)
        self.expect_punct("}", "at the end of a layout")
        if rank is not None and len(mtm) != rank:
            raise self.error(f"Dimensions size is {rank}, but minor to major size is {len(mtm)}.", start)
        try:
            return Layout(tuple(mtm), **fields)  # type: ignore[arg-type]
        except LayoutError as e:
            raise self.error(e.message, start) from None

    def _parse_layout_properties(self, fields: dict[str, object]) -> None:
        lx = self.lx
        while not self.at_punct("}"):
            pos = lx.start
            if self.accept_punct("#"):
                fields["index_type"] = self._parse_paren_type()
            elif self.accept_punct("*"):
                fields["pointer_type"] = self._parse_paren_type()
            elif lx.kind == "ident":
                key = lx.raw
                lx.advance()
                if key == "T":
                    tiles = []
                    while self.at_punct("("):
                        tiles.append(self._parse_tile())
                    if not tiles:
                        raise self.error("expects a tile '(..)' after 'T'")
                    fields["tiles"] = tuple(tiles)
                elif key == "D":
                    fields["dim_levels"] = self._parse_dim_levels()
                elif key in ("L", "E", "S", "M"):
                    self.expect_punct("(")
                    value = self.parse_int()
                    self.expect_punct(")")
                    fields[_INT_PROPERTY[key]] = value
                elif key == "SC":
                    configs = []
                    while self.accept_punct("("):
                        dim = self.parse_int()
                        self.expect_punct(":")
                        idx = [self.parse_int()]
                        while self.accept_punct(","):
                            idx.append(self.parse_int())
                        self.expect_punct(")")
                        configs.append(SplitConfig(dim, tuple(idx)))
                    fields["split_configs"] = tuple(configs)
                elif key == "P":
                    self.expect_punct("(")
                    phys = self.parse_shape()
                    self.expect_punct(")")
                    if not isinstance(phys, ArrayShape):
                        raise self.error("P(..) must hold an array shape", pos)
                    fields["physical_shape"] = phys
                else:
                    raise self.error(f"unexpected layout property '{key}'", pos)
            else:
                raise self.error(f"expects a layout property, but sees {lx.describe()}")

    def _parse_paren_type(self) -> str:
        self.expect_punct("(")
        t = self.parse_ident("a primitive type")
        self.expect_punct(")")
        return t

    def _parse_tile(self) -> Tile:
        start = self.lx.start
        self.expect_punct("(")
        dims: list[int] = []
        while True:
            if self.accept_punct("*"):
                dims.append(COMBINED)
            else:
                dims.append(self.parse_int("a tile dimension or '*'"))
            if not self.accept_punct(","):
                break
        self.expect_punct(")", "at the end of a tile")
        try:
            return Tile(tuple(dims))
        except LayoutError as e:
            raise self.error(e.message, start) from None

    def _parse_dim_levels(self) -> tuple[DimLevel, ...]:
        self.expect_punct("(")
        levels = []
        while True:
            pos = self.lx.start
            kind = self.parse_ident("a dim level type")
            unique = ordered = True
            while True:
                if self.accept_punct("+"):
                    unique = False
                elif self.accept_punct("~"):
                    ordered = False
                else:
                    break
            try:
                levels.append(DimLevel(kind, unique, ordered))
            except LayoutError as e:
                raise self.error(e.message, pos) from None
            if not self.accept_punct(","):
                break
        self.expect_punct(")")
        return tuple(levels)


_INT_PROPERTY = {
    "L": "tail_padding_alignment",
    "E": "element_size_bits",
    "S": "memory_space",
    "M": "dynamic_metadata_prefix_bytes",
}
