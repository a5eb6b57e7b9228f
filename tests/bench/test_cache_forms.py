"""bench/cache_forms.py builds the modules it says it builds."""

from __future__ import annotations

import pytest

from bench.cache_forms import COLUMNS, EDGE_KIB, NESTS, column_sum, edge_copies, transposes
from hlo.bitcast import transpose_is_bitcast
from hlo.parser import parse_module


@pytest.mark.parametrize("dims, perm", NESTS)
def test_the_form_is_a_bitcast_transpose_and_a_copy_the_standalone_is_not(dims, perm):
    standalone, form = transposes(dims, perm)
    s = parse_module(standalone).entry.instructions
    f = parse_module(form).entry.instructions
    assert [i.opcode for i in s] == ["parameter", "transpose"]
    assert [i.opcode for i in f] == ["parameter", "transpose", "copy"]
    assert transpose_is_bitcast(f[0].shape, f[1].shape, perm)
    assert not transpose_is_bitcast(s[0].shape, s[1].shape, perm)
    assert f[2].shape == s[1].shape  # the same result, row-major


def test_the_column_sums_read_their_operand_a_row_apart_or_in_place():
    for n, m in COLUMNS:
        assert n // m >= 128  # at or past the extent where a column reduction turns slow
    column = parse_module(column_sum(1024, 128, "1,0")).entry.instructions[0].shape
    row = parse_module(column_sum(1024, 128, "0,1")).entry.instructions[0].shape
    assert column.layout.minor_to_major == (1, 0) and row.layout.minor_to_major == (0, 1)


@pytest.mark.parametrize("kib", EDGE_KIB)
def test_the_edge_copies_move_the_stated_bytes_kept_row_major_or_to_column_major(kib):
    modules = {label: parse_module(text).entry.instructions for label, text in edge_copies(kib)}
    assert set(modules) == {"base", "copy", "minor"}
    for label, (param, root) in modules.items():
        assert param.shape.element_count * 4 == kib * 1024
        assert param.shape.layout.minor_to_major == (1, 0)
        assert root.opcode == ("slice" if label == "base" else "copy")
    assert modules["base"][1].shape.element_count == 1
    assert modules["copy"][1].shape.layout.minor_to_major == (1, 0)
    assert modules["minor"][1].shape.layout.minor_to_major == (0, 1)
