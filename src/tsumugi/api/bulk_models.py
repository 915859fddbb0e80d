"""The documented bodies of ``POST /api/bulk`` and ``GET /api/bulk/{id}`` (ADR-0151), in api.models too."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field
from pydantic.json_schema import SkipJsonSchema

Omitted = SkipJsonSchema[None]  # as in api/models: a field that may be left out


class BulkFilter(BaseModel):
    """Any list filter: exact matches, and a created range (epoch ms)."""

    binding: str | Omitted = None
    state: str | Omitted = None
    id: str | Omitted = None
    unique_key: str | Omitted = None
    concurrency_key: str | Omitted = None
    created_from: float | Omitted = None
    created_to: float | Omitted = None


class BulkActionRequest(BaseModel):
    """Retry, cancel or reschedule every job the filter matches (``dryRun``: only count them)."""

    action: Literal["retry", "cancel", "reschedule"]
    filter: BulkFilter | Omitted = None
    dryRun: bool | Omitted = None
    cap: Annotated[int, Field(ge=1)] | Omitted = Field(default=None, description="act on at most this many")
    includeRunning: bool | Omitted = Field(default=None, description="cancel: also ask running jobs to stop")
    runAt: float | Omitted = None
    delayMs: Annotated[float, Field(ge=0)] | Omitted = None
    priority: float | Omitted = None


class BulkCount(BaseModel):
    matched: int


class BulkProgress(BaseModel):
    id: str
    action: str
    state: Literal["running", "done"]
    filter: dict[str, object]
    matched: int
    done: int
    failed: int
    remaining: int
    createdAt: int
    updatedAt: int
