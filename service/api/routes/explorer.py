"""The layout explorer: the page at ``/`` (public: it holds no data, and asks for the token
the ``/v1`` calls need) and the ``/v1`` routes only the page uses: the module graph laid out
for drawing, memory-order pictures and the bundled examples."""

from __future__ import annotations

import json
import time
from importlib import resources
from typing import Annotated, Any, Literal

from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, Response
from pydantic import BaseModel, Field

from service.api.errors import ApiError, error_body
from service.api.routes.errors_doc import error_responses
from service.explorer.examples import example, example_names
from service.explorer.answers import PictureRequest, ViewFailed, picture_answer, view_answer

page_router = APIRouter(include_in_schema=False)
router = APIRouter(prefix="/v1", tags=["explorer"])


@page_router.get("/", response_class=HTMLResponse)
async def page() -> HTMLResponse:
    text = resources.files("service.explorer").joinpath("static/index.html").read_text()
    return HTMLResponse(text)


class GraphViewIn(BaseModel):
    hlo: Annotated[str, Field(description="HLO text (e.g. the `hlo` of an assign answer)")]
    inserted: list[dict[str, Any]] = Field(
        default_factory=list, description="the `inserted` conversions of an assign answer")
    terms: list[dict[str, Any]] = Field(
        default_factory=list, description="the cost `terms` of an assign answer")


class LayoutPictureIn(BaseModel):
    shape: Annotated[str, Field(description="an array shape, e.g. `f32[3,5]{1,0:T(2,2)}`")]
    format: Literal["FRACTAL_NZ", "FRACTAL_Z", "NC1HWC0"] | None = Field(
        default=None, description="draw this Ascend format of the shape's dims instead")
    blocked: str | None = Field(
        default=None, description="draw this GF(2) blocked layout (`SPT:TPW:WPC`, "
                                  "e.g. `1,4:8,4:2,1`) instead")


def _raise(failure: ViewFailed) -> None:
    raise ApiError(failure.status, failure.body)


def _encoded_view(body: GraphViewIn) -> tuple[bytes, dict[str, float]]:
    """The view as JSON bytes, and the milliseconds of each step (encoding included), then
    ``cpu``: the CPU time of them all (on a busy machine, about what they take alone)."""
    timings: dict[str, float] = {}
    cpu = time.thread_time()
    view = view_answer(body.hlo, body.inserted, body.terms, timings)
    start = time.perf_counter()
    data = json.dumps(view, separators=(",", ":")).encode()
    timings["encode"] = round((time.perf_counter() - start) * 1000.0, 1)
    timings["cpu"] = round((time.thread_time() - cpu) * 1000.0, 1)
    return data, timings


@router.post("/graph-view", responses=error_responses(400, 422), response_class=Response,
             summary="The module graph laid out for drawing (layers, families, conversions)")
async def graph_view(body: GraphViewIn) -> Response:
    """The view is encoded once, by hand (FastAPI's generic encoder walks every one of the
    tens of thousands of values again); ``Server-Timing`` gives the milliseconds of parse,
    verify, layout and encode, and their CPU time (``cpu``), which the page reports beside
    its own."""
    try:
        data, timings = await run_in_threadpool(_encoded_view, body)
    except ViewFailed as failure:
        _raise(failure)
        raise
    header = ", ".join(f"{name};dur={ms}" for name, ms in timings.items())
    return Response(data, media_type="application/json", headers={"Server-Timing": header})


@router.post("/layout-picture", responses=error_responses(400, 422),
             summary="Memory-order picture of one shape and layout, as SVG and as data")
async def layout_picture(body: LayoutPictureIn) -> dict[str, Any]:
    try:
        return await run_in_threadpool(
            picture_answer, PictureRequest(body.shape, body.format, body.blocked))
    except ViewFailed as failure:
        _raise(failure)
        raise


@router.get("/examples", summary="The bundled example modules")
async def examples() -> list[str]:
    return example_names()


@router.get("/examples/{name}", responses=error_responses(404),
            summary="One bundled example: the module and XLA's layouts for it")
async def one_example(name: str) -> dict[str, Any]:
    found = example(name)
    if found is None:
        raise ApiError(404, error_body("not_found", f"no example named {name!r}"))
    return {"name": name, "hlo": found[0], "xla_hlo": found[1]}
