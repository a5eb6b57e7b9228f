"""The explorer page: served at ``/`` with its script and style under ``/static``, or written
as one self-contained file (``assign --html``) with the script, the style and the data inline."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["STATIC", "assign_report_html", "report_html"]

#: Conversions whose from/to layouts are drawn into an HTML report (each picture is a few kB).
PICTURED_CONVERSIONS = 12

STATIC = Path(__file__).with_name("static")


def _script_json(data: Any) -> str:
    """JSON safe inside a ``<script>`` element (no ``</``, no HTML comment openers)."""
    text = json.dumps(data, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def report_html(report: dict[str, Any], view: dict[str, Any], pictures: dict[str, str],
                xla_score: int | None = None) -> str:
    """One HTML file holding the page, its script and style, and everything it shows: the
    report, the graph view and the memory-order pictures (SVG by shape)."""
    page = (STATIC / "index.html").read_text()
    style = (STATIC / "explorer.css").read_text()
    script = (STATIC / "explorer.js").read_text().replace("</", "<\\/")
    data = {"report": report, "view": view, "pictures": pictures, "xla_score": xla_score}
    page = page.replace('<link rel="stylesheet" href="/static/explorer.css">',
                        f"<style>\n{style}</style>")
    page = page.replace('<script src="/static/explorer.js"></script>',
                        f"<script>\n{script}</script>")
    page = page.replace("<!--EMBED-->", '<script type="application/json" id="embedded-data">'
                        + _script_json(data) + "</script>")
    return page


def assign_report_html(report: dict[str, Any], xla_score: int | None = None) -> str:
    """The HTML report of one assign answer (``report`` as ``--report`` writes it, with its
    ``hlo``): the numbers, the graph, the annotated text and the memory order of the layouts
    of the first conversions."""
    from hlo.errors import HloError
    from hlo.parser import parse_shape
    from service.explorer.answers import view_answer
    from service.explorer.pictures import tiled_picture, to_svg

    view = view_answer(report["hlo"], report.get("inserted", ()), report.get("terms", ()))
    pictures: dict[str, str] = {}
    for conversion in report.get("inserted", ())[:PICTURED_CONVERSIONS]:
        for text in (conversion.get("from"), conversion.get("to")):
            if not isinstance(text, str) or text in pictures:
                continue
            try:
                shape = parse_shape(text)
                pictures[text] = to_svg(tiled_picture(shape))  # type: ignore[arg-type]
            except (HloError, AttributeError):
                continue  # a tuple or an oversized array: no picture
    return report_html(report, view, pictures, xla_score)
