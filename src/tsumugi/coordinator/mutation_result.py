"""What an operator's mutation (retry, cancel, reschedule) answers, as a value inside the coordinator.

The RPC edge turns it into the wire dict (``to_wire``): ``{ok: true}``, ``{ok: true, requested: true}``
or ``{ok: false, reason}``.
"""
# J-130..J-135, F-69, F-77

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal, TypeAlias

from tsumugi.core.json_types import JsonObject

Refusal: TypeAlias = Literal["invalid-state", "gone"]


@dataclass(frozen=True, slots=True)
class MutationResult:
    """``ok``, or why not; ``requested``: a cancel of a job in flight was only asked for."""

    # J-135

    ok: bool
    reason: Refusal | None = None
    requested: bool = False

    def to_wire(self) -> JsonObject:
        if not self.ok:
            return {"ok": False, "reason": self.reason}
        return {"ok": True, "requested": True} if self.requested else {"ok": True}


DONE: Final = MutationResult(True)
REQUESTED: Final = MutationResult(True, requested=True)  # J-135: the performer is asked to stop
GONE: Final = MutationResult(False, "gone")  # J-131: swept (a job) or never created (a run)
INVALID_STATE: Final = MutationResult(False, "invalid-state")
