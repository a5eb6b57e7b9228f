"""Memory-order pictures: where each element of an array lands in memory.

A :class:`MemoryPicture` is the data of one picture: a 2-D grid of elements, each with its
linear position in memory (``positions``), the block each position falls in (a first-level
tile, an Ascend fractal block, a warp) and an optional label per element. :func:`to_svg` draws
it the way the tiled-layout figures do: the logical array on the left, coloured by tile, with
the linear index in every cell, and on the right memory itself, one tile per row, where
padding shows as empty white cells.

``f32[3,5]{1,0:T(2,2)}``: element (2,3) has tile index (1,1) and index (0,1) inside its tile,
so its linear index is (1·3 + 1)·4 + 1 = 17; the array takes 24 positions, 9 of them padding.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape

import numpy as np

from hlo.errors import LayoutError
from hlo.linear_layout import blocked
from hlo.shape import COMBINED, ArrayShape
from hlo.split_layout import fractal_nz, fractal_z, nc1hwc0
from hlo.tiling import physical_element_count, physical_offsets

#: Largest grid drawn (rows and columns; a larger array shows its top left corner), the
#: longest memory strip, and the largest array laid out for a picture.
MAX_SIDE = 32
MAX_STRIP = 4096
MAX_ELEMENTS = 1 << 24

#: Ascend formats :func:`fractal_picture` knows.
ASCEND_FORMATS = ("FRACTAL_NZ", "FRACTAL_Z", "NC1HWC0")

# Light fills (dark text on all of them keeps a contrast ratio above 7:1).
PALETTE = ("#cfe3ff", "#ffe0b3", "#d4f2d0", "#f7d0e6", "#e6dcff", "#fff3b0",
           "#c9f0ef", "#f5d5c8", "#dfe8c8", "#e0e0e0", "#ffd6d6", "#d0e8f2")


class PictureError(LayoutError):
    """The picture cannot be drawn (too large, or the layout is not of the kind asked for)."""


@dataclass(frozen=True, slots=True)
class MemoryPicture:
    """``positions[r][c]``: linear memory position of the element in row ``r``, column ``c``;
    ``block``: positions per coloured block; ``frame``: positions per framed sub-block (a
    second-level tile; 0 for none); ``physical``: positions the whole array takes (padding
    included); ``labels``: text drawn in each cell (default: the position)."""

    title: str
    kind: str  # "tiled" | "fractal" | "linear"
    positions: tuple[tuple[int, ...], ...]
    block: int
    frame: int
    physical: int
    strip: bool
    labels: tuple[tuple[str, ...], ...] | None = None
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict:
        drawn = len(self.positions) * len(self.positions[0])
        return {"title": self.title, "kind": self.kind,
                "positions": [list(r) for r in self.positions],
                "block": self.block, "frame": self.frame, "physical": self.physical,
                # padding is known when the whole array is drawn (the memory strip shows it)
                "padding": self.physical - drawn if self.strip else None,
                "labels": None if self.labels is None else [list(r) for r in self.labels],
                "notes": list(self.notes)}


def _grid(offsets: np.ndarray) -> tuple[np.ndarray, tuple[str, ...]]:
    """The 2-D grid drawn for an array of any rank, and what was left out."""
    if offsets.ndim == 0:
        return offsets.reshape(1, 1), ()
    if offsets.ndim == 1:
        return offsets.reshape(1, -1), ()
    notes = ()
    if offsets.ndim > 2:
        lead = offsets.shape[:-2]
        notes = (f"the slice [{','.join('0' for _ in lead)},:,:] of the leading dims "
                 f"{list(lead)}",)
        offsets = offsets[(0,) * len(lead)]
    return offsets, notes


def _crop(grid: np.ndarray, notes: tuple[str, ...]) -> tuple[np.ndarray, tuple[str, ...], bool]:
    """At most MAX_SIDE x MAX_SIDE elements, from the top left corner; whether it was cut."""
    rows, cols = grid.shape
    if rows <= MAX_SIDE and cols <= MAX_SIDE:
        return grid, notes, False
    note = f"the first {min(rows, MAX_SIDE)}x{min(cols, MAX_SIDE)} of {rows}x{cols} elements"
    return grid[:MAX_SIDE, :MAX_SIDE], notes + (note,), True


def _check_dims(dims: tuple[int, ...]) -> None:
    """Refuse before any work: the whole array is laid out to find the drawn corner."""
    if 0 in dims:
        raise PictureError(f"an array with no elements ({list(dims)}) has no memory order to draw")
    if math.prod(dims) > MAX_ELEMENTS:
        raise PictureError(f"the picture is drawn for arrays of at most {MAX_ELEMENTS} elements, "
                           f"not {math.prod(dims)} ({list(dims)})")


def _positions(grid: np.ndarray) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(int(v) for v in row) for row in grid)


def tiled_picture(shape: ArrayShape) -> MemoryPicture:
    """The tile grid of an XLA (tiled) layout: blocks are first-level tiles, frames the
    second-level ones (``(8,128)(2,1)``: pairs packed into one 32-bit word)."""
    _check_dims(shape.dims)
    grid, notes, cut = _crop(*_grid(physical_offsets(shape)))
    tiles = shape.layout.tiles if shape.layout is not None else ()
    if tiles:
        block = math.prod(d for d in tiles[0].dims if d != COMBINED)
        frame = math.prod(d for d in tiles[1].dims if d != COMBINED) if len(tiles) > 1 else 0
    else:  # untiled: one block per run of the minor-most dim
        minor = shape.effective_layout().minor_to_major[0] if shape.rank else 0
        block, frame = (shape.dims[minor] if shape.rank else 1) or 1, 0
    physical = physical_element_count(shape)
    strip = shape.rank <= 2 and physical <= MAX_STRIP and not cut
    return MemoryPicture(str(shape), "tiled", _positions(grid), block, frame, physical, strip,
                         notes=notes)


def fractal_picture(shape: ArrayShape, format_name: str) -> MemoryPicture:
    """An Ascend split-permute format of ``shape``'s dims: blocks are the fractals (the two
    minor-most physical factors, e.g. 16x16 for FRACTAL_NZ of f16)."""
    name = format_name.upper()
    dims = shape.dims
    _check_dims(dims)
    if name == "FRACTAL_NZ":
        split = fractal_nz(dims, shape.element_type)
    elif name in ("FRACTAL_Z", "NC1HWC0"):
        if len(dims) != 4:
            raise PictureError(f"{name} needs a rank-4 [N,C,H,W] shape, not {list(dims)}")
        make = fractal_z if name == "FRACTAL_Z" else nc1hwc0
        split = make((dims[0], dims[1], dims[2], dims[3]), shape.element_type)
    else:
        raise PictureError(f"unknown format {format_name!r} (one of {', '.join(ASCEND_FORMATS)})")
    physical_dims = split.physical_dims
    block = physical_dims[-1] * (physical_dims[-2] if name != "NC1HWC0" else 1)
    if len(dims) == 4 and name != "FRACTAL_NZ":  # the channels live in N and C: draw that plane
        grid, notes = split.offsets()[:, :, 0, 0], ("the [N,C] plane at h = w = 0",)
    else:
        grid, notes = _grid(split.offsets())
    grid, notes, cut = _crop(grid, notes)
    strip = len(dims) <= 2 and split.element_count <= MAX_STRIP and not cut
    title = f"{shape.dims_text()} as {name} [{','.join(map(str, physical_dims))}]"
    return MemoryPicture(title, "fractal", _positions(grid), block, 0, split.element_count,
                         strip, notes=notes)


def parse_blocked(spec: str) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """``"1,4:8,4:2,1"`` -> size per thread, threads per warp, warps per CTA."""
    parts = spec.split(":")
    try:
        values = tuple(tuple(int(v) for v in part.split(",")) for part in parts)
    except ValueError:
        values = ()
    if len(values) != 3:
        raise PictureError(f"a blocked layout is SPT:TPW:WPC, e.g. 1,4:8,4:2,1, not {spec!r}")
    return values[0], values[1], values[2]


def linear_picture(shape: ArrayShape, size_per_thread: tuple[int, ...],
                   threads_per_warp: tuple[int, ...], warps_per_cta: tuple[int, ...],
                   order: tuple[int, ...] | None = None) -> MemoryPicture:
    """A GF(2) blocked layout (register × lane × warp -> element) of a 2-D shape: each cell
    shows the register, lane and warp holding it (the first, when broadcast); blocks are
    warps."""
    if shape.rank != 2:
        raise PictureError(f"the register/lane/warp map is drawn for rank-2 shapes, not rank "
                           f"{shape.rank}")
    _check_dims(shape.dims)
    for name, value in (("size_per_thread", size_per_thread),
                        ("threads_per_warp", threads_per_warp), ("warps_per_cta", warps_per_cta)):
        if len(value) != 2:
            raise PictureError(f"{name} needs two values, not {list(value)}")
    order = order or (1, 0)
    threads = math.prod(size_per_thread) * math.prod(threads_per_warp) * math.prod(warps_per_cta)
    if threads > MAX_SIDE ** 3 or shape.dims[0] > MAX_SIDE or shape.dims[1] > MAX_SIDE:
        raise PictureError(f"the register/lane/warp map is drawn for at most {MAX_SIDE}x"
                           f"{MAX_SIDE} elements and {MAX_SIDE ** 3} registers x lanes x warps")
    layout = blocked(size_per_thread, threads_per_warp, warps_per_cta, order, shape=shape.dims)
    rows, cols = shape.dims
    sizes = [layout.in_size(n) if n in dict(layout.ins) else 1
             for n in ("register", "lane", "warp")]
    lanes = sizes[1]
    owner: dict[tuple[int, int], tuple[int, int, int]] = {}
    for w in range(sizes[2]):
        for lane in range(sizes[1]):
            for r in range(sizes[0]):
                inputs = {"register": r, "lane": lane, "warp": w}
                at = layout.apply({n: inputs[n] for n, _ in layout.ins})
                owner.setdefault((at[0], at[1]), (r, lane, w))
    positions = tuple(tuple((owner[i, j][2] * lanes + owner[i, j][1]) for j in range(cols))
                      for i in range(rows))
    labels = tuple(tuple("r{}l{}w{}".format(*owner[i, j]) for j in range(cols))
                   for i in range(rows))
    title = (f"{shape.dims_text()} blocked: size_per_thread {list(size_per_thread)}, "
             f"threads_per_warp {list(threads_per_warp)}, warps_per_cta {list(warps_per_cta)}")
    # ``positions`` here is the thread (warp·lanes + lane); a block is one warp.
    return MemoryPicture(title, "linear", positions, lanes, 0, rows * cols, False, labels)


# ---------------------------------------------------------------------------
# Drawing
# ---------------------------------------------------------------------------

CELL = 30
GAP = 40


def _fill(position: int, block: int) -> str:
    return PALETTE[(position // max(block, 1)) % len(PALETTE)]


def to_svg(picture: MemoryPicture) -> str:
    """The picture as a standalone SVG document (no scripts, no external references)."""
    rows = len(picture.positions)
    cols = len(picture.positions[0])
    cell = CELL if picture.labels is None else 2 * CELL
    grid_w, grid_h = cols * cell, rows * CELL
    top = 60
    parts: list[str] = []
    add = parts.append
    add(f'<text x="0" y="16" class="t">{escape(picture.title)}</text>')
    caption = {"tiled": "linear index of each element; colour: first-level tile",
               "fractal": "linear index of each element; colour: fractal block",
               "linear": "register/lane/warp of each element; colour: warp"}[picture.kind]
    add(f'<text x="0" y="34" class="c">{escape(caption)}</text>')
    for r, row in enumerate(picture.positions):
        for c, pos in enumerate(row):
            x, y = c * cell, top + r * CELL
            label = str(pos) if picture.labels is None else picture.labels[r][c]
            fill = _fill(pos, picture.block)
            add(f'<g class="e" data-position="{pos}"><rect x="{x}" y="{y}" width="{cell}" '
                f'height="{CELL}" fill="{fill}"/><text x="{x + cell / 2}" y="{y + 19}">'
                f'{escape(label)}</text></g>')
    add(_block_borders(picture, cell, top))
    width, height = grid_w, top + grid_h
    if picture.strip:
        strip_svg, strip_w, strip_h = _strip(picture, grid_w + GAP, top)
        add(strip_svg)
        width, height = grid_w + GAP + strip_w, max(height, top + strip_h)
    y = height + 16
    for note in picture.notes:
        add(f'<text x="0" y="{y}" class="c">shown: {escape(note)}</text>')
        y += 16
    height = y
    style = ("<style>text{font:11px sans-serif;text-anchor:middle;fill:#111}"
             ".t{font:bold 13px sans-serif;text-anchor:start}.c{text-anchor:start;fill:#333}"
             "rect{stroke:#555;stroke-width:.5}.pad rect{fill:#fff;stroke:#999}</style>")
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="memory-picture" role="img" '
            f'aria-label="{escape(picture.title)}" width="{max(width, 560)}" height="{height}" '
            f'viewBox="0 0 {max(width, 560)} {height}">{style}{"".join(parts)}</svg>')


def _block_borders(picture: MemoryPicture, cell: int, top: int) -> str:
    """Thick lines where neighbouring elements fall in different blocks (tiles), red ones
    where they fall in different frames (second-level tiles)."""
    lines: list[str] = []
    pos = picture.positions
    rows, cols = len(pos), len(pos[0])
    for size, colour, width in ((picture.block, "#111", 2.5), (picture.frame, "#d00", 1.5)):
        if not size or size == 1:
            continue
        for r in range(rows):
            for c in range(cols):
                here = pos[r][c] // size
                x, y = c * cell, top + r * CELL
                if c + 1 < cols and pos[r][c + 1] // size != here:
                    lines.append(f'<line x1="{x + cell}" y1="{y}" x2="{x + cell}" y2="{y + CELL}" '
                                 f'stroke="{colour}" stroke-width="{width}"/>')
                if r + 1 < rows and pos[r + 1][c] // size != here:
                    lines.append(f'<line x1="{x}" y1="{y + CELL}" x2="{x + cell}" y2="{y + CELL}" '
                                 f'stroke="{colour}" stroke-width="{width}"/>')
    return "".join(lines)


def _strip(picture: MemoryPicture, left: int, top: int) -> tuple[str, int, int]:
    """Memory in order, one block per row (wrapped at 32); empty white cells are padding."""
    width = min(picture.block, 32) if picture.block > 1 else min(picture.physical, 32)
    where = {pos: (r, c) for r, row in enumerate(picture.positions) for c, pos in enumerate(row)}
    parts = [f'<text x="{left}" y="{top - 8}" class="c">memory, in order ({picture.physical} '
             f'positions, {picture.physical - len(where)} padding)</text>']
    cw = 36
    for p in range(picture.physical):
        x, y = left + (p % width) * cw, top + (p // width) * CELL
        if p in where:
            r, c = where[p]
            parts.append(f'<g class="m" data-position="{p}"><rect x="{x}" y="{y}" width="{cw}" '
                         f'height="{CELL}" fill="{_fill(p, picture.block)}"/>'
                         f'<text x="{x + cw / 2}" y="{y + 19}">{r},{c}</text></g>')
        else:
            parts.append(f'<g class="pad" data-position="{p}"><rect x="{x}" y="{y}" '
                         f'width="{cw}" height="{CELL}"/><title>position {p}: padding</title></g>')
    rows = -(-picture.physical // width)
    return "".join(parts), width * cw, rows * CELL
