"""Parsing literals: ``constant(...)`` values, nested braces, tuples, ``{...}``."""

from __future__ import annotations

import re
from typing import Any

from hlo.ir import Literal
from hlo.parser.numbers import (
    COMPLEX_PARTS,
    FLOAT_TYPES,
    int_range,
    make_complex,
    round_floats,
)
from hlo.parser.shapes import ShapeParsing
from hlo.shape import ArrayShape, Shape, TupleShape

_NAN_PAYLOAD = re.compile(r"(-?)nan\(0x([0-9a-fA-F]+)\)")


class LiteralParsing(ShapeParsing):
    def parse_literal(self, shape: Shape) -> Literal:
        lx = self.lx
        if isinstance(shape, TupleShape):
            self.expect_punct("(", "to start a tuple literal")
            elements = []
            for i, element_shape in enumerate(shape.elements):
                if i:
                    self.expect_punct(",", "between tuple literal elements")
                elements.append(self.parse_literal(element_shape))
            self.expect_punct(")", "at the end of a tuple literal")
            return Literal(shape, None, tuple(elements))
        if not isinstance(shape, ArrayShape):
            raise self.error(f"a literal of shape {shape} is not supported")
        if self.at_punct("{") and lx.text.startswith("...", _skip_blank(lx.text, lx.end)):
            lx.advance()
            self.expect_punct("...")
            self.expect_punct("}", "after '{...'")
            return Literal(shape, None)
        raw: list[Any] = []
        positions: list[int] = []
        if shape.rank == 0:
            self._parse_element(shape.element_type, raw, positions)
        else:
            self._parse_nested(shape, 0, raw, positions)
        return Literal(shape, self._convert(shape.element_type, raw, positions))

    def _parse_nested(self, shape: ArrayShape, depth: int, raw: list[Any], positions: list[int]) -> None:
        rank = shape.rank
        start = self.lx.start
        if not self.at_punct("{"):
            raise self.error(f"expects nested array in rank {rank}, but sees {depth}")
        self.lx.advance()
        count = 0
        if not self.at_punct("}"):
            while True:
                if depth == rank - 1:
                    if self.at_punct("{"):
                        raise self.error(f"expects {rank}-level nested array, but sees more levels")
                    self._parse_element(shape.element_type, raw, positions)
                else:
                    if not self.at_punct("{"):
                        raise self.error(f"expects nested array in rank {rank}, but sees {depth + 1}")
                    self._parse_nested(shape, depth + 1, raw, positions)
                count += 1
                if not self.accept_punct(","):
                    break
        self.expect_punct("}", "at the end of a nested array")
        if count != shape.dims[depth] and not shape.is_dynamic(depth):
            raise self.error(
                f"expects {shape.dims[depth]} elements in dimension {depth} of the literal, "
                f"but sees {count}",
                start,
            )

    def _parse_element(self, element_type: str, raw: list[Any], positions: list[int]) -> None:
        lx = self.lx
        positions.append(lx.start)
        if element_type in COMPLEX_PARTS:
            self.expect_punct("(", "to start a complex value")
            re_ = self._parse_number()
            self.expect_punct(",", "between the real and imaginary parts")
            im = self._parse_number()
            self.expect_punct(")", "at the end of a complex value")
            raw.append((re_, im))
            return
        if lx.kind == "ident" and lx.raw in ("true", "false"):
            raw.append(lx.raw == "true")
            lx.advance()
            return
        raw.append(self._parse_number())

    def _parse_number(self) -> Any:
        lx = self.lx
        text = lx.raw
        if lx.kind == "int":
            lx.advance()
            return int(text)
        if lx.kind == "float":
            lx.advance()
            m = _NAN_PAYLOAD.fullmatch(text)
            if m is not None:
                return ("nan", m.group(1) == "-", int(m.group(2), 16), lx.start)
            return float(text)
        raise self.error(f"expects a literal value, but sees {lx.describe()}")

    def _convert(self, element_type: str, raw: list[Any], positions: list[int]) -> tuple[Any, ...]:
        if element_type == "pred":
            out = []
            for v, pos in zip(raw, positions):
                if isinstance(v, bool):
                    out.append(v)
                elif isinstance(v, int) and v in (0, 1):
                    out.append(bool(v))
                else:
                    raise self.error(f"expects true, false, 0 or 1 for a pred literal, sees {v!r}", pos)
            return tuple(out)
        if element_type in COMPLEX_PARTS:
            part = COMPLEX_PARTS[element_type]
            flat = [self._float_value(x, part, pos) for pair, pos in zip(raw, positions) for x in pair]
            rounded, bad = round_floats(flat, part)
            if bad is not None:
                raise self._range_error(flat[bad], element_type, positions[bad // 2])
            return tuple(make_complex(rounded[i], rounded[i + 1]) for i in range(0, len(rounded), 2))
        if element_type in FLOAT_TYPES:
            flat = [self._float_value(v, element_type, pos) for v, pos in zip(raw, positions)]
            rounded, bad = round_floats(flat, element_type)
            if bad is not None:
                raise self._range_error(flat[bad], element_type, positions[bad])
            return tuple(rounded)
        lo, hi = int_range(element_type)
        out_ints = []
        for v, pos in zip(raw, positions):
            if isinstance(v, bool) or not isinstance(v, int):
                raise self.error(f"expects an integer for a {element_type} literal, sees {v!r}", pos)
            if not lo <= v <= hi:
                raise self._range_error(v, element_type, pos)
            out_ints.append(v)
        return tuple(out_ints)

    def _float_value(self, v: Any, element_type: str, pos: int) -> float:
        if isinstance(v, tuple):  # nan with a payload
            _, negative, payload, _ = v
            bits = FLOAT_TYPES[element_type][3]
            if payload == 0 or payload >= (1 << bits):
                raise self.error(
                    f"tries to set NaN payload 0x{payload:x} to a literal with type "
                    f"{element_type.upper()}, whose mantissa has {bits} bits",
                    pos,
                )
            return -float("nan") if negative else float("nan")
        if isinstance(v, bool):
            raise self.error(f"expects a number for a {element_type} literal, sees {v!r}", pos)
        return float(v)

    def _range_error(self, v: Any, element_type: str, pos: int):  # noqa: ANN202
        return self.error(
            f"value {v} is out of range for literal's primitive type {element_type.upper()}", pos
        )


def _skip_blank(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos
