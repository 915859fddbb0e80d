"""What one enqueue did, as the shard answers it and the clients return it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal, TypeGuard, get_args

from tsumugi.core.json_types import JsonObject

EnqueueStatus = Literal["created", "existing", "debounced", "dropped"]
_STATUSES: Final[frozenset[object]] = frozenset(get_args(EnqueueStatus))


@dataclass(frozen=True, slots=True)
class EnqueueOutcome:
    """What one enqueue did: created a job, found one, debounced into one, or dropped it.

    Attributes:
        id: the job's id; None when a throttle dropped the job (no job exists).
        status: ``"created"``; ``"existing"`` (a unique key's holder, or a node id already enqueued);
            ``"debounced"`` (a waiting job with the same debounce key took this payload); ``"dropped"``.
        run_after: when the job becomes due (epoch ms); None when dropped, or not known for an existing job.
    """

    id: str | None
    status: EnqueueStatus
    run_after: int | None = None

    @property
    def created(self) -> bool:
        return self.status == "created"

    @property
    def debounced(self) -> bool:
        return self.status == "debounced"

    @property
    def dropped(self) -> bool:
        return self.status == "dropped"

    def to_wire(self) -> JsonObject:
        return {"id": self.id, "status": self.status, "runAfter": self.run_after}


def _is_status(value: object) -> TypeGuard[EnqueueStatus]:
    return value in _STATUSES


def outcome_from_wire(wire: Mapping[str, object]) -> EnqueueOutcome:
    """``{id, status, runAfter?}`` as the shard answers it."""
    job_id, status, run_after = wire.get("id"), wire["status"], wire.get("runAfter")
    if not (job_id is None or isinstance(job_id, str)) or not _is_status(status):
        raise ValueError(f"not an enqueue outcome: {dict(wire)!r}")
    if run_after is None or isinstance(run_after, int):
        return EnqueueOutcome(job_id, status, run_after)
    if isinstance(run_after, float):  # a JavaScript number that crossed as a float
        return EnqueueOutcome(job_id, status, int(run_after))
    raise ValueError(f"not an enqueue outcome: {dict(wire)!r}")
