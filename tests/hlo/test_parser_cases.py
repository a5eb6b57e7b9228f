"""XLA's own parser tests (``xla-cases/hlo_parser_test``): round trips, rejections, semantics."""

from __future__ import annotations

import json

import pytest
from conftest import shared_path

from hlo.errors import ParseError
from hlo.ir import AliasEntry, BufferDonor, ProgramShape
from hlo.parser import parse_module, read_text
from hlo.printer import print_module
from hlo.shape import ArrayShape, Layout

CASES_DIR = shared_path("xla-cases", "hlo_parser_test")
CASES = json.loads((CASES_DIR / "cases.json").read_text())


def _cases(kind: str) -> list[dict]:
    return [c for c in CASES if c["kind"] == kind]


def test_case_kinds_are_all_covered() -> None:
    kinds = {c["kind"] for c in CASES}
    assert kinds == {"parse_roundtrip", "parse_normalize", "parse_error", "parse_semantics"}
    assert len(_cases("parse_roundtrip")) == 46


@pytest.mark.parametrize("case", _cases("parse_roundtrip"), ids=lambda c: c["file"])
def test_roundtrip_is_byte_exact(case: dict) -> None:
    text = read_text(CASES_DIR / case["file"])
    module = parse_module(text, case["file"])
    printed = print_module(module, short=case["print_form"] == "short")
    assert printed.rstrip() == text.rstrip()
    assert parse_module(printed) == module


@pytest.mark.parametrize("case", _cases("parse_normalize"), ids=lambda c: c["file"])
def test_normalizing_roundtrip(case: dict) -> None:
    text = read_text(CASES_DIR / case["file"])
    module = parse_module(text, case["file"], fill_missing_layouts=True)
    expected = read_text(CASES_DIR / case["expected_output_file"])
    assert print_module(module, short=True).strip() == expected.strip()


#: Where XLA's message differs from ours only by XLA-specific framing, the part we
#: must carry instead (same meaning).
_MESSAGE_CORE = {
    "err_CrossComputationLookup.hlo": "instruction does not exist: aparam",
}
#: Cases whose position the upstream test pins (line, column).
_PINNED = {
    "err_CrossComputationLookup.hlo": (8, 39),
    "err_UnterminatedComment.hlo": (3, 1),
}


@pytest.mark.parametrize("case", _cases("parse_error"), ids=lambda c: c["file"])
def test_rejected_with_meaningful_message(case: dict) -> None:
    path = CASES_DIR / case["file"]
    text = read_text(path)
    # XLA's parser fills missing layouts by default, and its messages show them.
    with pytest.raises(ParseError) as info:
        parse_module(text, str(path), fill_missing_layouts=True)
    err = info.value
    assert err.location is not None
    assert err.location.name == str(path)
    lines = text.splitlines()
    assert 1 <= err.location.line <= len(lines)
    assert 1 <= err.location.column <= len(lines[err.location.line - 1]) + 1
    want = _MESSAGE_CORE.get(case["file"], case.get("error_substring"))
    if want:
        assert want in str(err)
    if case["file"] in _PINNED:
        assert (err.location.line, err.location.column) == _PINNED[case["file"]]
    assert str(err).startswith(f"{path}:{err.location.line}:{err.location.column}: error: ")


def test_error_messages_without_substring_say_what_is_wrong() -> None:
    def message(name: str) -> str:
        with pytest.raises(ParseError) as info:
            parse_module(read_text(CASES_DIR / name), name)
        return info.value.message

    assert "unknown opcode: le" in message("err_WrongOpcode.hlo")
    assert "primitive type" in message("err_WrongShape.hlo") and "g32" in message("err_WrongShape.hlo")


def _parse(name: str, **options: bool):
    return parse_module(read_text(CASES_DIR / name), name, **options)


def test_attributes_any_order_keeps_their_values() -> None:
    conv = _parse("ok_AttributesAnyOrder.hlo").entry.root_instruction
    window = conv.attr("window")
    assert [d.size for d in window.dims] == [1]
    assert conv.attr("feature_group_count") == 1
    assert conv.attr("dim_labels").input_batch == 0


def test_slice_stride_defaults_to_one() -> None:
    ranges = _parse("ok_SliceAllowOmitStride1.hlo").entry.root_instruction.attr("slice")
    assert [r.stride for r in ranges] == [1, 1, 2, 1]


def test_comma_between_metadata_sub_attributes() -> None:
    root = _parse("ok_CommaBetweenSubAttributes.hlo").entry.root_instruction
    assert "op_type" in root.attr("metadata").text


def test_entry_layout_inferred_from_instructions() -> None:
    layout = _parse("ok_EntryComputationLayoutNotDefined.hlo").attr("entry_computation_layout")
    assert layout.parameters[0].layout.minor_to_major == (0, 1, 2)
    assert layout.result.layout.minor_to_major == (0, 1)


def test_auto_entry_layout_has_no_layouts() -> None:
    layout = _parse("ok_EntryComputationLayoutDefinedThroughAutoLayout.hlo", fill_missing_layouts=True).attr(
        "entry_computation_layout"
    )
    assert isinstance(layout, ProgramShape)
    assert layout.parameters[0].layout is None and layout.result.layout is None


def test_no_entry_means_last_computation() -> None:
    module = _parse("ok_NoEntry.hlo")
    assert module.entry.name == "c2"


def test_comments_anywhere_and_crlf() -> None:
    module = _parse("ok_Comments.hlo")
    assert module.entry.root_instruction.attr("literal").values == (12345.0,)
    raw = (CASES_DIR / "ok_SlashSlashCommentMsDosEolFormat.hlo").read_bytes()
    assert b"\r\n" in raw
    assert _parse("ok_SlashSlashCommentMsDosEolFormat.hlo").entry.instructions


def test_module_aliasing_and_donors() -> None:
    alias = _parse("ok_SimpleAliasing.hlo").attr("input_output_alias")
    assert alias == (AliasEntry((0,), 0, (0,), "must-alias"), AliasEntry((1,), 0, (1,), None))
    donors = _parse("ok_SimpleBufferDonor.hlo").attr("buffer_donor")
    assert donors == (BufferDonor(0, (0,)), BufferDonor(0, (1,)))


def test_dot_shape_inferred() -> None:
    dot = _parse("ok_InferDotShape.hlo", fill_missing_layouts=True).entry.root_instruction
    assert dot.shape == ArrayShape("f32", (2,), Layout((0,)))


def test_whitespace_inside_shapes() -> None:
    p = _parse("ok_AllowShapeWhitespace.hlo").entry.instructions[0]
    assert p.shape == ArrayShape("f32", (1, 2, 3, 4, 5), Layout((0, 1, 2, 3, 4)))


def test_missing_layout_filled_only_on_request() -> None:
    filled = _parse("ok_FallBackToDefaultLayoutIfEnabled.hlo", fill_missing_layouts=True).entry.root_instruction
    kept = _parse("ok_FallBackToDefaultLayoutIfEnabled.hlo").entry.root_instruction
    assert filled.shape.layout == Layout((3, 2, 1, 0))
    assert kept.shape.layout is None


def test_semantic_cases_all_parse() -> None:
    for case in _cases("parse_semantics"):
        options = case.get("parser_options") or {}
        _parse(case["file"], fill_missing_layouts=options.get("fill_missing_layouts", False))
