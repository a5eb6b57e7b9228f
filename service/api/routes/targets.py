"""``/v1/targets``: the built-in targets."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter

from service.api.schemas import TargetsOut
from service.pipeline import list_targets

router = APIRouter(prefix="/v1", tags=["targets"])


@router.get("/targets", response_model=TargetsOut, summary="List the built-in targets")
async def targets() -> TargetsOut:
    listed = await asyncio.to_thread(list_targets)
    return TargetsOut(targets=listed)
