"""``targets`` and ``explain-layout``: the layout algebra on the command line.

``hlo-layout explain-layout 'f32[3,5]{1,0:T(2,2)}' --index 2,3`` shows the
physical shape, padding and bytes, the linear position of element (2,3) (17)
and, for 2-D arrays, each element's position laid out as the matrix.
Exit 2 with ``<shape>:1:COL: error: ...`` on a bad shape.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from hlo.errors import HloError
from hlo.shape import ArrayShape
from hlo.target import builtin_target_names, load_target
from service.explorer.pictures import (
    MemoryPicture,
    PictureError,
    fractal_picture,
    linear_picture,
    parse_blocked,
    tiled_picture,
    to_svg,
)
from hlo.tiling import (
    element_storage_bits,
    linear_index,
    logical_size_bytes,
    padding_bytes,
    physical_element_count,
    physical_offsets,
    physical_size_bytes,
    tiled_shape,
)

#: Largest matrix drawn by ``explain-layout`` (rows and columns).
PICTURE_LIMIT = 32


def _target_summary(name: str) -> dict:
    target = load_target(name)
    examples = {}
    for element_type in ("f32", "bf16", "s8", "pred"):
        tiles = target.tiles_for(ArrayShape(element_type, (1024, 1024)))
        examples[element_type] = "".join(map(str, tiles)) or "untiled"
    return {
        "name": name,
        **({"this_host": target.name} if target.name != name else {}),
        "description": target.description,
        "layout_family": target.layout_family,
        "memory_bandwidth_gb_per_s": target.memory_bandwidth_gb_per_s,
        "tiles_1024x1024": examples,
        "transpose_factors": {"minor_moving": target.transpose.minor_moving,
                              "major_only": target.transpose.major_only},
        "op_rules": len(target.op_rules),
        "formats": [f.name for f in target.formats],
    }


def _explain(shape: ArrayShape, index: tuple[int, ...] | None) -> dict:
    info: dict = {
        "shape": str(shape),
        "physical_shape": list(tiled_shape(shape)),
        "element_bits": element_storage_bits(shape),
        "logical_elements": shape.element_count,
        "physical_elements": physical_element_count(shape),
        "logical_bytes": logical_size_bytes(shape),
        "physical_bytes": physical_size_bytes(shape),
        "padding_bytes": padding_bytes(shape),
    }
    if index is not None:
        info["index"] = list(index)
        info["linear_index"] = linear_index(shape, index)
    if shape.rank == 2 and max(shape.dims) <= PICTURE_LIMIT:
        info["memory_order"] = physical_offsets(shape).tolist()
    return info


def _print_text(info: dict) -> None:
    padding_elements = info["physical_elements"] - info["logical_elements"]
    typer.echo(f"shape:          {info['shape']}")
    typer.echo(f"physical shape: [{','.join(map(str, info['physical_shape']))}]")
    typer.echo(f"elements:       {info['logical_elements']} logical, {info['physical_elements']} "
               f"physical ({padding_elements} padding)")
    typer.echo(f"bytes:          {info['logical_bytes']} logical, {info['physical_bytes']} physical "
               f"({info['padding_bytes']} padding), {info['element_bits']} bits per element")
    if "linear_index" in info:
        typer.echo(f"index ({','.join(map(str, info['index']))}):    linear {info['linear_index']}")
    if "memory_order" in info:
        rows = info["memory_order"]
        width = max((len(str(v)) for row in rows for v in row), default=1)
        typer.echo("memory order (linear position of each element):")
        for row in rows:
            typer.echo("  " + " ".join(str(v).rjust(width) for v in row))


def _picture(shape: ArrayShape, fractal: str | None, blocked_spec: str | None) -> MemoryPicture:
    if fractal is not None and blocked_spec is not None:
        raise PictureError("--format and --blocked picture different things: give one")
    if fractal is not None:
        return fractal_picture(shape, fractal)
    if blocked_spec is not None:
        return linear_picture(shape, *parse_blocked(blocked_spec))
    return tiled_picture(shape)


def _fail(message: str) -> typer.Exit:
    typer.echo(message, err=True)
    return typer.Exit(code=2)


def register(app: typer.Typer) -> None:
    @app.command("targets")
    def targets(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
        """List the built-in targets with their key numbers."""
        rows = [_target_summary(name) for name in builtin_target_names()]
        if as_json:
            typer.echo(json.dumps(rows, indent=2))
            return
        for row in rows:
            tiles = ", ".join(f"{t} {v}" for t, v in row["tiles_1024x1024"].items())
            typer.echo(f"{row['name']:<8} {row['layout_family']:<9} "
                       f"{row['memory_bandwidth_gb_per_s']:>8.1f} GB/s  "
                       f"transpose x{row['transpose_factors']['minor_moving']:g} "
                       f"(major-only x{row['transpose_factors']['major_only']:g})  "
                       f"{row['op_rules']} op rules  tiles: {tiles}"
                       + (f"  formats: {', '.join(row['formats'])}" if row["formats"] else "")
                       + (f"  (this host: {row['this_host']})" if "this_host" in row else ""))

    @app.command("explain-layout")
    def explain_layout(
        shape_text: str = typer.Argument(..., metavar="SHAPE", help="e.g. 'f32[3,5]{1,0:T(2,2)}'"),
        index: str | None = typer.Option(None, "--index", help="Element index, e.g. 2,3."),
        as_json: bool = typer.Option(False, "--json", help="Print JSON."),
        svg: Path | None = typer.Option(
            None, "--svg", help="Write the memory-order picture (tile grid, linear index of each "
                                "element, padding) as SVG to this file."),
        fractal: str | None = typer.Option(
            None, "--format", help="Picture an Ascend format of the shape's dims instead: "
                                   "FRACTAL_NZ, FRACTAL_Z or NC1HWC0."),
        blocked_spec: str | None = typer.Option(
            None, "--blocked", metavar="SPT:TPW:WPC",
            help="Picture a GF(2) blocked layout's register/lane/warp map instead, e.g. "
                 "1,4:8,4:2,1 (size per thread, threads per warp, warps per CTA)."),
    ) -> None:
        """Physical shape, padding, bytes and memory order of one array shape."""
        from hlo.parser import parse_shape  # the parser is only needed here

        try:
            shape = parse_shape(shape_text)
        except HloError as err:
            raise _fail(str(err)) from None
        if not isinstance(shape, ArrayShape):
            raise _fail(f"<shape>: error: explain-layout needs an array shape, not '{shape}'")
        element: tuple[int, ...] | None = None
        if index is not None:
            try:
                element = tuple(int(part) for part in index.split(",")) if index.strip() else ()
            except ValueError:
                raise _fail(f"<index>: error: --index expects integers separated by commas, "
                            f"not '{index}'") from None
        try:
            info = _explain(shape, element)
        except HloError as err:
            raise _fail(f"<shape>: {err}") from None
        if svg is not None:
            try:
                picture = _picture(shape, fractal, blocked_spec)
            except HloError as err:
                raise _fail(f"<shape>: error: {err.message}") from None
            svg.write_text(to_svg(picture))
        if as_json:
            typer.echo(json.dumps(info, indent=2))
        else:
            _print_text(info)
