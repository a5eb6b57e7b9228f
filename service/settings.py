"""Server and batch settings: read once, from the environment (``HLO_LAYOUT_*``) or arguments.

This is the only place the service reads the environment. ``Settings()`` validates every value
at construction, so a bad deployment fails at startup with the offending variable named,
not at the first request. Example: ``HLO_LAYOUT_WORKERS=4 HLO_LAYOUT_AUTH_TOKEN=s3cret
hlo-layout serve`` runs four solver processes and requires ``Authorization: Bearer s3cret``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from service.options import MAX_TIME_LIMIT_S


def _default_cache_path() -> Path:
    return Path.home() / ".cache" / "hlo-layout" / "results.sqlite"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="HLO_LAYOUT_", frozen=True, extra="forbid")

    host: str = "127.0.0.1"
    port: Annotated[int, Field(ge=0, le=65535)] = 8000

    workers: Annotated[int, Field(ge=1, le=256)] = Field(
        default_factory=lambda: max(1, os.cpu_count() or 1),
        description="Solver processes; CPU-bound work never runs on the event loop.",
    )
    queue_limit: Annotated[int, Field(ge=0, le=100_000)] = Field(
        16, description="Requests that may wait for a worker; beyond that the answer is 429."
    )
    max_body_bytes: Annotated[int, Field(ge=1024)] = Field(
        16 * 1024 * 1024, description="Larger request bodies are answered with 413."
    )
    default_time_limit_s: Annotated[float, Field(gt=0, le=MAX_TIME_LIMIT_S)] = 10.0
    max_time_limit_s: Annotated[float, Field(gt=0, le=MAX_TIME_LIMIT_S)] = Field(
        60.0, description="Cap on a request's own time limit."
    )
    request_timeout_s: Annotated[float, Field(gt=0)] = Field(
        60.0, description="Wall-clock limit of operations without a time limit (format, check...)."
    )
    time_limit_grace_s: Annotated[float, Field(ge=0)] = Field(
        15.0,
        description="A solve still running this long after its time limit is stopped (504).",
    )
    cache_path: Path | None = Field(
        default_factory=_default_cache_path,
        description="SQLite file of cached results; unset (empty) disables the cache.",
    )
    auth_token: SecretStr | None = Field(
        None, description="When set, /v1 routes require 'Authorization: Bearer <token>'."
    )
    max_interpreter_memory_mb: Annotated[int, Field(ge=1, le=2**30)] = Field(
        4096,
        description="Cap on the buffers the reference interpreter may hold for one verify (MiB); "
        "a larger module is refused with 413 before anything is allocated.",
    )
    max_measure_reps: Annotated[int, Field(ge=0, le=1000)] = Field(
        20, description="Cap on the timed rounds of one POST /v1/measure (its warm-up rounds "
        "are capped at 5); the whole measurement runs under request_timeout_s.",
    )
    max_batch_modules: Annotated[int, Field(ge=1)] = 1000
    batches_kept: Annotated[int, Field(ge=1)] = Field(
        64, description="Finished batch jobs kept in memory for GET /v1/batches/{id}."
    )
    retry_after_s: Annotated[int, Field(ge=1)] = 1

    @field_validator("cache_path", mode="before")
    @classmethod
    def _empty_disables_cache(cls, value: object) -> object:
        return None if value in ("", None) else value

    @model_validator(mode="after")
    def _limits_agree(self) -> Settings:
        if self.default_time_limit_s > self.max_time_limit_s:
            raise ValueError("default_time_limit_s must not exceed max_time_limit_s")
        return self

    def capped_time_limit(self, requested: float) -> float:
        return min(requested, self.max_time_limit_s)
