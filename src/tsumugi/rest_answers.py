"""What the REST client answers with where the body is a plain JSON object: typed dicts, field for field.

Mutation answers, event answers, bulk actions over a filter and the OpenAPI document stay dicts (callers
index them and print them as they came), so they are ``TypedDict`` s checked once when they arrive. Every
other answer is a pydantic model from ``tsumugi.api.models``. Each typed dict keeps any field a newer
server adds, so printing an answer shows what the server sent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, Literal, NotRequired, TypeAlias

from pydantic import ConfigDict, TypeAdapter, with_config
from typing_extensions import TypedDict  # pydantic reads this one on Python 3.11

from tsumugi.api import models

if TYPE_CHECKING:
    from tsumugi.core.json_types import JsonObject
else:
    # pydantic cannot follow the string-spelled recursive alias of core.json_types; its own JsonValue is
    # the same set of values, so the check at the edge accepts exactly what the static type says.
    from pydantic import JsonValue as _PydanticJson

    JsonObject = dict[str, _PydanticJson]

__all__ = [
    "BulkCount",
    "BulkProgress",
    "EventAccepted",
    "EventAnswer",
    "EventRefused",
    "JobAnswer",
    "MutationAnswer",
    "MutationDone",
    "MutationRefused",
    "OpenApiDocument",
    "parse_bulk_count",
    "parse_bulk_progress",
    "parse_event",
    "parse_job_answer",
    "parse_mutation",
    "parse_openapi",
]

_KEEP_EXTRA: Final = ConfigDict(extra="allow")


@with_config(_KEEP_EXTRA)
class MutationDone(TypedDict):
    """The change was made; ``requested`` (true) when a running job was asked to stop."""

    ok: Literal[True]
    requested: NotRequired[bool]


@with_config(_KEEP_EXTRA)
class MutationRefused(TypedDict):
    """409 (``invalid-state``) or 410 (``gone``), told as a value rather than raised."""

    ok: Literal[False]
    reason: Literal["invalid-state", "gone"]


MutationAnswer: TypeAlias = MutationDone | MutationRefused


@with_config(_KEEP_EXTRA)
class EventAccepted(TypedDict):
    """The node took the event (state COMPLETED) or it is kept until the node waits (PENDING)."""

    accepted: Literal[True]
    node: str
    state: Literal["COMPLETED", "PENDING"]


@with_config(_KEEP_EXTRA)
class EventRefused(TypedDict):
    """Already satisfied, not allowed in the current state, or no node waits for the event."""

    accepted: Literal[False]
    node: NotRequired[str | None]
    error: str


EventAnswer: TypeAlias = EventAccepted | EventRefused


@with_config(_KEEP_EXTRA)
class BulkCount(TypedDict):
    """A dry run of a bulk action: how many jobs it would reach."""

    matched: int


@with_config(_KEEP_EXTRA)
class BulkProgress(TypedDict):
    """A bulk action over a filter; polling it moves it on until ``state`` is ``done``."""

    id: str
    action: str
    state: Literal["running", "done"]
    filter: JsonObject
    matched: int
    done: int
    failed: int
    remaining: int
    createdAt: int
    updatedAt: int


@with_config(_KEEP_EXTRA)
class OpenApiDocument(TypedDict):
    """The server's OpenAPI document; the parts a reader looks up first, each a JSON object."""

    openapi: str
    info: JsonObject
    paths: JsonObject
    security: NotRequired[list[JsonObject]]
    components: NotRequired[JsonObject]


# What POST /api/jobs answers with a debounce or throttle key: a new (or unique) job, or no new job.
JobAnswer: TypeAlias = models.Created | models.Debounced | models.Dropped

_MUTATION: Final = TypeAdapter[MutationAnswer](MutationAnswer)
_EVENT: Final = TypeAdapter[EventAnswer](EventAnswer)
_BULK_COUNT: Final = TypeAdapter(BulkCount)
_BULK_PROGRESS: Final = TypeAdapter(BulkProgress)
_OPENAPI: Final = TypeAdapter(OpenApiDocument)


def parse_mutation(body: object) -> MutationAnswer:
    return _MUTATION.validate_python(body)


def parse_event(body: object) -> EventAnswer:
    return _EVENT.validate_python(body)


def parse_bulk_count(body: object) -> BulkCount:
    return _BULK_COUNT.validate_python(body)


def parse_bulk_progress(body: object) -> BulkProgress:
    return _BULK_PROGRESS.validate_python(body)


def parse_openapi(body: object) -> OpenApiDocument:
    return _OPENAPI.validate_python(body)


def parse_job_answer(body: object) -> JobAnswer:
    """The model the body's marker names: ``dropped``, ``debounced``, or neither (a created job)."""
    if isinstance(body, dict) and body.get("dropped") is True:
        return models.Dropped.model_validate(body)
    if isinstance(body, dict) and body.get("debounced") is True:
        return models.Debounced.model_validate(body)
    return models.Created.model_validate(body)
