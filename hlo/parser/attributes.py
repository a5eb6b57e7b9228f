"""Parsing attribute values (``name=value`` after an instruction or in the module header).

Values that other code reads are typed (ints, int tuples, computation references,
windows, padding, dim labels, slices, shapes, aliasing); values that are only
printed (metadata, sharding, frontend attributes, backend_config dicts,
statistics, iota replica groups) are kept as :class:`Verbatim` text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from hlo.ir import (
    AliasEntry,
    BufferDonor,
    ComputationRef,
    ConvDimLabels,
    PaddingConfig,
    PaddingDim,
    ProgramShape,
    Quoted,
    SliceRange,
    Verbatim,
    Window,
    WindowDim,
)
from hlo.parser.literals import LiteralParsing
from hlo.shape import Shape

#: Attributes whose value names computations.
COMPUTATION_ATTRS = frozenset({
    "to_apply", "calls", "condition", "body", "true_computation", "false_computation",
    "select", "scatter", "branch_computations", "called_computations", "comparator",
})
#: Attributes kept as their exact ``{...}`` text.
VERBATIM_ATTRS = frozenset({
    "sharding", "metadata", "frontend_attributes", "statistics", "origin", "original_value",
    "backend_config", "result_accuracy", "schedule_config",
})

#: Attributes whose value is a list of dimension numbers (``{0,1}``): anything else is refused
#: where it is written, as XLA's parser refuses it.
INT_LIST_ATTRS = frozenset({
    "dimensions", "lhs_batch_dims", "rhs_batch_dims", "lhs_contracting_dims", "rhs_contracting_dims",
    "dynamic_slice_sizes", "offset_dims", "collapsed_slice_dims", "start_index_map", "slice_sizes",
    "update_window_dims", "inserted_window_dims", "scatter_dims_to_operand_dims", "operand_batching_dims",
    "start_indices_batching_dims", "input_batching_dims", "scatter_indices_batching_dims", "fft_length",
})

_IOTA_GROUPS = re.compile(r"\[[\d,\s]*\]\s*<=\s*\[[\d,\s]*\](?:T\([\d,\s]*\))?")
_MESH_GROUPS = re.compile(r"mesh\[[^\]]*\]\s*\{[^}]*\}")


def _ints(value: Any) -> bool:
    """An int, or a (nested, as collective-permute's ``slice_sizes``) tuple of ints."""
    if isinstance(value, tuple):
        return all(_ints(v) for v in value)
    return isinstance(value, int) and not isinstance(value, bool)


class _NotATree(Exception):
    """The ``{...}`` value holds something other than ints, bools and words."""


class AttributeParsing(LiteralParsing):
    def parse_attribute_value(self, name: str) -> Any:
        """The value after ``name=`` (the current token is its first token)."""
        special = _SPECIAL.get(name)
        if special is not None:
            return special(self)
        if name in COMPUTATION_ATTRS:
            return self._parse_computation_refs()
        if name in VERBATIM_ATTRS:
            return self._parse_verbatim_or_quoted()
        if name in INT_LIST_ATTRS:
            return self._parse_int_list(name)
        return self.parse_generic_value()

    def _parse_int_list(self, name: str) -> int | tuple[int, ...]:
        start = self.lx.start
        value = self.parse_generic_value()
        if _ints(value):
            return value
        self.lx.reset(start)
        raise self.error(f"{name} expects a list of dimension numbers like {{0,1}}, but sees {self.lx.describe()}")

    # -- generic ------------------------------------------------------------

    def parse_generic_value(self) -> Any:
        lx = self.lx
        kind = lx.kind
        if kind == "str":
            value = Quoted(lx.value)
            lx.advance()
            return value
        if kind == "name":
            value = ComputationRef(lx.value)
            lx.advance()
            return value
        if kind == "int":
            return self.parse_int()
        if kind == "float":
            value = float(lx.raw)
            lx.advance()
            return value
        if kind == "ident":
            if self.starts_shape():
                return self.parse_shape()
            word = lx.raw
            lx.advance()
            if word == "true":
                return True
            if word == "false":
                return False
            return word
        if kind == "dimlab":
            return self._parse_dim_labels()
        if kind == "pad":
            return self._parse_padding()
        if kind == "dxd":
            value = Verbatim(lx.raw)
            lx.advance()
            return value
        if self.at_punct("{"):
            return self._parse_tree_or_verbatim()
        if self.at_punct("("):
            return self.parse_shape()
        if self.at_punct("["):
            return self._parse_regex_verbatim(_IOTA_GROUPS, "an iota device list")
        raise self.error(f"expects an attribute value, but sees {lx.describe()}")

    def _parse_tree_or_verbatim(self) -> Any:
        start = self.lx.start
        try:
            return self._parse_tree()
        except _NotATree:
            self.lx.reset(start)
            return self._parse_verbatim_braces()

    def _parse_tree(self) -> tuple[Any, ...]:
        lx = self.lx
        lx.advance()
        items: list[Any] = []
        if not self.at_punct("}"):
            while True:
                if self.at_punct("{"):
                    items.append(self._parse_tree())
                elif lx.kind == "int":
                    items.append(int(lx.raw))
                    lx.advance()
                elif lx.kind == "ident":
                    word = lx.raw
                    items.append(True if word == "true" else False if word == "false" else word)
                    lx.advance()
                else:
                    raise _NotATree
                if not self.accept_punct(","):
                    break
        if not self.at_punct("}"):
            raise _NotATree
        lx.advance()
        return tuple(items)

    def _parse_verbatim_braces(self) -> Verbatim:
        lx = self.lx
        if not self.at_punct("{"):
            raise self.error(f"expects '{{', but sees {lx.describe()}")
        start = lx.start
        end = lx.balanced_end(start)
        lx.reset(end)
        return Verbatim(lx.text[start:end])

    def _parse_verbatim_or_quoted(self) -> Any:
        if self.lx.kind == "str":
            value = Quoted(self.lx.value)
            self.lx.advance()
            return value
        return self._parse_verbatim_braces()

    def _parse_verbatim_parens(self) -> Verbatim:
        """A balanced ``(...)`` group kept as text (e.g. a custom-call ``literal=``)."""
        lx = self.lx
        start = lx.start
        if not self.at_punct("("):
            return Verbatim(str(self.parse_generic_value()))
        depth = 0
        while True:
            if lx.kind == "eof" or lx.kind == "err":
                raise self.error(f"expects ')' to close the '(' here, but sees {lx.describe()}", start)
            if lx.kind in ("(", "[", "{"):
                depth += 1
            elif lx.kind in (")", "]", "}"):
                depth -= 1
                if depth == 0:
                    end = lx.end
                    lx.advance()
                    return Verbatim(lx.text[start:end])
            lx.advance()

    def _parse_regex_verbatim(self, pattern: re.Pattern[str], what: str) -> Verbatim:
        lx = self.lx
        m = pattern.match(lx.text, lx.start)
        if m is None:
            raise self.error(f"expects {what}, but sees {lx.describe()}")
        lx.reset(m.end())
        return Verbatim(m.group())

    # -- computations and names --------------------------------------------

    def _parse_computation_ref(self) -> ComputationRef:
        lx = self.lx
        pos = lx.start
        name = self.parse_name("a computation name")
        self.computation_uses.append((name, pos))
        return ComputationRef(name)

    def _parse_computation_refs(self) -> Any:
        if self.accept_punct("{"):
            refs = []
            if not self.at_punct("}"):
                refs.append(self._parse_computation_ref())
                while self.accept_punct(","):
                    refs.append(self._parse_computation_ref())
            self.expect_punct("}", "at the end of a computation list")
            return tuple(refs)
        return self._parse_computation_ref()

    def _parse_control_predecessors(self) -> tuple[str, ...]:
        self.expect_punct("{")
        names: list[str] = []
        if not self.at_punct("}"):
            while True:
                pos = self.lx.start
                name = self.parse_name("an instruction name")
                self.predecessor_uses.append((name, pos))
                names.append(name)
                if not self.accept_punct(","):
                    break
        self.expect_punct("}", "at the end of control-predecessors")
        return tuple(names)

    # -- typed values -------------------------------------------------------

    def _parse_window(self) -> Window:
        lx = self.lx
        start = lx.start
        self.expect_punct("{", "to start a window")
        fields: dict[str, list[Any]] = {}
        while not self.at_punct("}"):
            key_pos = lx.start
            key = self.parse_ident("a window sub-attribute")
            self.expect_punct("=")
            if key == "pad":
                fields[key] = self._parse_window_pad()
            elif key in ("size", "stride", "lhs_dilate", "rhs_dilate", "rhs_reversal"):
                if lx.kind not in ("dxd", "int"):
                    raise self.error(f"expects a number or NxM for '{key}', but sees {lx.describe()}")
                fields[key] = [int(x) for x in lx.raw.split("x")]
                lx.advance()
            else:
                raise self.error(f"unexpected window sub-attribute '{key}'", key_pos)
            self.accept_punct(",")
        self.expect_punct("}", "at the end of a window")
        if "size" not in fields:
            if not fields:
                return Window(())
            raise self.error("window needs the sub-attribute 'size'", start)
        rank = len(fields["size"])
        for key, values in fields.items():
            if len(values) != rank:
                raise self.error(f"window '{key}' has {len(values)} dims, 'size' has {rank}", start)
        pads = fields.get("pad", [(0, 0)] * rank)
        return Window(tuple(
            WindowDim(
                size=fields["size"][i],
                stride=fields.get("stride", [1] * rank)[i],
                padding_low=pads[i][0],
                padding_high=pads[i][1],
                base_dilation=fields.get("lhs_dilate", [1] * rank)[i],
                window_dilation=fields.get("rhs_dilate", [1] * rank)[i],
                window_reversal=bool(fields.get("rhs_reversal", [0] * rank)[i]),
            )
            for i in range(rank)
        ))

    def _parse_window_pad(self) -> list[tuple[int, int]]:
        lx = self.lx
        if lx.kind != "pad":
            raise self.error(f"expects padding_low and padding_high separated by '_', but sees {lx.describe()}")
        out = []
        for part in lx.raw.split("x"):
            nums = part.split("_")
            if len(nums) != 2:
                raise self.error("expects padding_low and padding_high separated by '_'")
            out.append((int(nums[0]), int(nums[1])))
        lx.advance()
        return out

    def _parse_padding(self) -> PaddingConfig:
        lx = self.lx
        if lx.kind != "pad":
            raise self.error(f"expects a padding config like 0_1x2_3_1, but sees {lx.describe()}")
        dims = []
        for part in lx.raw.split("x"):
            nums = [int(n) for n in part.split("_")]
            dims.append(PaddingDim(nums[0], nums[1], nums[2] if len(nums) == 3 else 0))
        lx.advance()
        return PaddingConfig(tuple(dims))

    def _parse_dim_labels(self) -> ConvDimLabels:
        lx = self.lx
        if lx.kind != "dimlab":
            raise self.error(f"expects dim labels like b01f_01io->b01f, but sees {lx.describe()}")
        text = lx.raw
        lhs, rest = text.split("_", 1)
        rhs, out = rest.split("->", 1)
        lhs_map = self._dim_label_part(lhs, "bf", "lhs")
        rhs_map = self._dim_label_part(rhs, "io", "rhs")
        out_map = self._dim_label_part(out, "bf", "output")
        spatial = [k for k in lhs_map if k.isdigit()]
        for m, part in ((rhs_map, "rhs"), (out_map, "output")):
            if sorted(k for k in m if k.isdigit()) != sorted(spatial):
                raise self.error(f"{part} dimension numbers do not name the same spatial dims as lhs")
        order = [str(i) for i in range(len(spatial))]
        lx.advance()
        return ConvDimLabels(
            input_batch=lhs_map["b"], input_feature=lhs_map["f"],
            input_spatial=tuple(lhs_map[k] for k in order),
            kernel_input_feature=rhs_map["i"], kernel_output_feature=rhs_map["o"],
            kernel_spatial=tuple(rhs_map[k] for k in order),
            output_batch=out_map["b"], output_feature=out_map["f"],
            output_spatial=tuple(out_map[k] for k in order),
            text=text,
        )

    def _dim_label_part(self, part: str, letters: str, what: str) -> dict[str, int]:
        allowed = f"[0-{len(part) - 1}{letters}?]"
        seen: dict[str, int] = {}
        for i, ch in enumerate(part):
            if ch == "?":
                continue
            if ch not in letters and not (ch.isdigit() and int(ch) < len(part)):
                raise self.error(f"expects {allowed} in {what} dimension numbers, but sees '{ch}'")
            if ch in seen:
                raise self.error(f"expects unique {what} dimension numbers, but '{ch}' repeats")
            seen[ch] = i
        digits = sorted(int(k) for k in seen if k.isdigit())
        if digits != list(range(len(digits))):
            raise self.error(f"{what} spatial dimension numbers must be 0..{len(digits) - 1}")
        for letter in letters:
            if letter not in seen:
                raise self.error(f"{what} dimension numbers need '{letter}'")
        return seen

    def _parse_slice(self) -> tuple[SliceRange, ...]:
        self.expect_punct("{", "to start slice ranges")
        ranges = []
        if not self.at_punct("}"):
            while True:
                self.expect_punct("[", "to start a slice range")
                start = self.parse_int()
                self.expect_punct(":")
                limit = self.parse_int()
                explicit = self.accept_punct(":")
                stride = self.parse_int() if explicit else 1
                self.expect_punct("]", "at the end of a slice range")
                ranges.append(SliceRange(start, limit, stride, explicit))
                if not self.accept_punct(","):
                    break
        self.expect_punct("}", "at the end of slice ranges")
        return tuple(ranges)

    def parse_program_shape(self) -> ProgramShape:
        self.expect_punct("{", "to start entry_computation_layout")
        self.expect_punct("(", "to start the parameter shapes")
        params: list[Shape] = []
        if not self.at_punct(")"):
            params.append(self.parse_shape())
            while self.accept_punct(","):
                params.append(self.parse_shape())
        self.expect_punct(")", "at the end of the parameter shapes")
        self.expect_punct("->")
        result = self.parse_shape()
        self.expect_punct("}", "at the end of entry_computation_layout")
        return ProgramShape(tuple(params), result)

    def _parse_shape_list(self) -> tuple[Shape, ...]:
        self.expect_punct("{")
        shapes: list[Shape] = []
        if not self.at_punct("}"):
            shapes.append(self.parse_shape())
            while self.accept_punct(","):
                shapes.append(self.parse_shape())
        self.expect_punct("}", "at the end of a shape list")
        return tuple(shapes)

    def _parse_shape_index(self) -> tuple[int, ...]:
        self.expect_punct("{", "to start a ShapeIndex")
        out: list[int] = []
        if self.lx.kind == "int":
            out.append(self.parse_int())
            while self.accept_punct(","):
                out.append(self.parse_int())
        if not self.at_punct("}"):
            raise self.error(f"Expects '}}' at the end of ShapeIndex, but sees {self.lx.describe()}")
        self.lx.advance()
        return tuple(out)

    def _parse_aliasing(self) -> tuple[AliasEntry, ...]:
        self.expect_punct("{")
        entries = []
        if not self.at_punct("}"):
            while True:
                output = self._parse_shape_index()
                self.expect_punct(":", "after the output ShapeIndex")
                self.expect_punct("(")
                operand = self.parse_int("an operand or parameter number")
                self.expect_punct(",")
                index = self._parse_shape_index()
                kind = None
                if self.accept_punct(","):
                    pos = self.lx.start
                    kind = self.parse_ident("must-alias or may-alias")
                    if kind not in ("must-alias", "may-alias"):
                        raise self.error(f"expects must-alias or may-alias, but sees '{kind}'", pos)
                self.expect_punct(")")
                entries.append(AliasEntry(output, operand, index, kind))
                if not self.accept_punct(","):
                    break
        self.expect_punct("}", "at the end of the aliasing list")
        return tuple(entries)

    def _parse_buffer_donor(self) -> tuple[BufferDonor, ...]:
        self.expect_punct("{")
        entries = []
        if not self.at_punct("}"):
            while True:
                self.expect_punct("(")
                param = self.parse_int("a parameter number")
                self.expect_punct(",")
                index = self._parse_shape_index()
                self.expect_punct(")")
                entries.append(BufferDonor(param, index))
                if not self.accept_punct(","):
                    break
        self.expect_punct("}", "at the end of buffer_donor")
        return tuple(entries)

    def _parse_replica_groups(self) -> Any:
        if self.at_punct("{"):
            return self._parse_tree_or_verbatim()
        if self.at_ident("mesh"):
            return self._parse_regex_verbatim(_MESH_GROUPS, "mesh replica groups")
        return self._parse_regex_verbatim(_IOTA_GROUPS, "replica groups")


_SPECIAL: dict[str, Callable[[Any], Any]] = {
    "window": AttributeParsing._parse_window,
    "padding": AttributeParsing._parse_padding,
    "dim_labels": AttributeParsing._parse_dim_labels,
    "slice": AttributeParsing._parse_slice,
    "entry_computation_layout": AttributeParsing.parse_program_shape,
    "operand_layout_constraints": AttributeParsing._parse_shape_list,
    "output_to_operand_aliasing": AttributeParsing._parse_aliasing,
    "input_output_alias": AttributeParsing._parse_aliasing,
    "buffer_donor": AttributeParsing._parse_buffer_donor,
    "control-predecessors": AttributeParsing._parse_control_predecessors,
    "replica_groups": AttributeParsing._parse_replica_groups,
    "literal": AttributeParsing._parse_verbatim_parens,
}
