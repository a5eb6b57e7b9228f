"""Memory-order pictures against formulas written here from their definitions: XLA's tiled
linear index (the seed document's worked example: element (2,3) of ``f32[3,5]{1,0:T(2,2)}``
is at 17), the Ascend FRACTAL_NZ block order, and Triton's blocked register/lane/warp map.
``explain-layout --svg`` writes the same picture as well-formed SVG."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hlo.parser import parse_shape
from service.cli import build_app
from service.explorer.pictures import (
    PictureError,
    fractal_picture,
    linear_picture,
    tiled_picture,
    to_svg,
)

SVG = "{http://www.w3.org/2000/svg}"


def tiled_2d(i: int, j: int, cols: int, tile: tuple[int, int]) -> int:
    """Row-major tiles of a row-major array: tile index, then the index inside the tile."""
    th, tw = tile
    tiles_per_row = math.ceil(cols / tw)
    return ((i // th) * tiles_per_row + j // tw) * th * tw + (i % th) * tw + j % tw


@pytest.mark.parametrize("dims,tile", [((3, 5), (2, 2)), ((5, 7), (2, 4)), ((9, 3), (8, 1))])
def test_tiled_positions_and_padding(dims: tuple[int, int], tile: tuple[int, int]) -> None:
    shape = parse_shape(f"f32[{dims[0]},{dims[1]}]{{1,0:T({tile[0]},{tile[1]})}}")
    picture = tiled_picture(shape)
    rows, cols = dims
    assert picture.positions == tuple(tuple(tiled_2d(i, j, cols, tile) for j in range(cols))
                                      for i in range(rows))
    physical = math.ceil(rows / tile[0]) * tile[0] * math.ceil(cols / tile[1]) * tile[1]
    assert picture.physical == physical
    assert picture.to_json()["padding"] == physical - rows * cols
    root = ET.fromstring(to_svg(picture))
    cells = root.findall(f".//{SVG}g[@class='e']")
    assert sorted(int(c.get("data-position")) for c in cells) == sorted(
        tiled_2d(i, j, cols, tile) for i in range(rows) for j in range(cols))
    assert len(root.findall(f".//{SVG}g[@class='pad']")) == physical - rows * cols


def test_seed_example_element_2_3_is_17() -> None:
    picture = tiled_picture(parse_shape("f32[3,5]{1,0:T(2,2)}"))
    assert picture.positions[2][3] == 17
    assert picture.block == 4


def test_second_level_tile_frames() -> None:
    # bf16 packing (the seed's figure 2): pairs of rows share a 32-bit word.
    picture = tiled_picture(parse_shape("bf16[4,8]{1,0:T(2,4)(2,1)}"))
    assert picture.positions[0][:2] == (0, 2) and picture.positions[1][:2] == (1, 3)
    assert (picture.block, picture.frame) == (8, 2)


def test_large_arrays_show_their_corner() -> None:
    picture = tiled_picture(parse_shape("f32[256,256]{0,1:T(8,128)}"))
    assert len(picture.positions) == 32 and len(picture.positions[0]) == 32
    assert not picture.strip and picture.notes
    # column-major tiles: element (i, j) of {0,1} is element (j, i) of the transposed array
    assert picture.positions[3][5] == tiled_2d(5, 3, 256, (8, 128))
    with pytest.raises(PictureError):
        tiled_picture(parse_shape("f32[100000,100000]"))


def test_fractal_nz_blocks() -> None:
    m, n = 20, 40
    picture = fractal_picture(parse_shape(f"f16[{m},{n}]"), "FRACTAL_NZ")
    m1 = math.ceil(m / 16)
    # [M, N] -> [N1, M1, M0, N0] with 16x16 fractals for f16
    expected = tuple(tuple(((j // 16) * m1 + i // 16) * 256 + (i % 16) * 16 + j % 16
                           for j in range(min(n, 32))) for i in range(m))
    assert picture.positions == expected
    assert picture.block == 256
    assert picture.physical == math.ceil(n / 16) * m1 * 256


def test_blocked_register_lane_warp_map() -> None:
    picture = linear_picture(parse_shape("f32[16,16]"), (1, 4), (8, 4), (2, 1))
    for i in range(16):
        for j in range(16):
            register, lane, warp = j % 4, (i % 8) * 4 + (j // 4) % 4, i // 8
            assert picture.labels[i][j] == f"r{register}l{lane}w{warp}"
    with pytest.raises(PictureError):
        linear_picture(parse_shape("f32[16,16,2]"), (1, 4), (8, 4), (2, 1))


def test_explain_layout_svg(tmp_path: Path) -> None:
    out = tmp_path / "p.svg"
    result = CliRunner().invoke(build_app(), ["explain-layout", "f32[3,5]{1,0:T(2,2)}",
                                              "--svg", str(out)])
    assert result.exit_code == 0, result.output
    root = ET.fromstring(out.read_text())
    positions = {int(g.get("data-position")) for g in root.findall(f".//{SVG}g[@class='e']")}
    assert 17 in positions and len(positions) == 15
    for args in (["f32[3,5]", "--blocked", "1,2:3"], ["f32[3,5]", "--format", "NOPE"],
                 ["f32[3,5]", "--format", "FRACTAL_NZ", "--blocked", "1,1:1,1:1,1"]):
        bad = CliRunner().invoke(build_app(), ["explain-layout", *args, "--svg", str(out)])
        assert bad.exit_code == 2
        assert "Traceback" not in bad.output and "error:" in bad.output
