"""The documented error answers of a route (all share :class:`ErrorOut`)."""

from __future__ import annotations

from typing import Any

from service.api.schemas import ErrorOut

_MEANING = {
    400: "The HLO text does not parse or breaks a structural rule (line and column given).",
    401: "Missing or wrong bearer token.",
    404: "No such resource.",
    413: "Request body larger than the server accepts.",
    415: "Body is neither application/json nor text/plain.",
    422: "An option, the target or another field is invalid (``field`` names it); or the module "
    "cannot be laid out: a ``bitcast`` before assignment (``layout_dependent_bitcast``, with its "
    "line and column) or hard rules no layout meets (``infeasible``); or XLA:CPU cannot run a "
    "module (``not_runnable``: which one and why).",
    429: "Too much work waiting; retry after ``Retry-After`` seconds.",
    500: "A defect in the server.",
    501: "The operation is not available in this build.",
    503: "The worker process died; it has been replaced, retry.",
    504: "The work ran past its wall-clock limit and was stopped.",
}


def error_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    return {code: {"model": ErrorOut, "description": _MEANING[code]} for code in codes}
