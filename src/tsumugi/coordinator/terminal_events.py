"""Events a terminal transition leaves behind: run notifications and notices."""
# F-45, J-180, J-180a

from __future__ import annotations

from collections.abc import Sequence

from tsumugi.coordinator.shard_context import ShardContext
from tsumugi.core import ids, jsonwire
from tsumugi.core.json_types import JsonObject
from tsumugi.core.states import FAILURE_STATES
from tsumugi.storage.event_outbox import RunEvent, RunJobEvent
from tsumugi.storage.job_rows import JobRow

__all__ = ["EXPIRED_ERROR", "RunEvent", "record_terminal_events"]

EXPIRED_ERROR = "job expired"  # J-41: the text is undocumented; ours, recorded in ADR-0047


def record_terminal_events(
    ctx: ShardContext,
    job: JobRow,
    now_ms: int,
    *,
    error: str | None,
    spawns: Sequence[object] | None,
    run_events: list[RunEvent] | None = None,
) -> None:
    """Write the run event and the notices of a job that just reached a terminal state.

    With ``run_events``, the run event is appended there for the caller to write with others.
    """
    state = job["state"]
    failure_target, settled_target = _notice_targets(ctx, job)
    if job["run_id"] is None and failure_target is None and settled_target is None:
        return  # nothing to write, so the last error need not be read (ADR-0105)
    # A first attempt that completed has no attempt row to read (J-95 writes one only after a failure).
    first_success = state == "COMPLETED" and job["attempts"] <= 1
    last_error = error if error is not None or first_success else ctx.attempts.last_error(job["id"])
    if job["run_id"] is not None:
        event: RunJobEvent = {
            "nodeId": job["node_id"],
            "jobId": job["id"],
            "state": state,
            "result": job["result"],
            "error": last_error,
        }
        if spawns and state == "COMPLETED":
            event["spawns"] = spawns
        if run_events is None:
            ctx.events.add_run_event(job["run_id"], event)
        else:
            run_events.append((job["run_id"], event))
    base: JsonObject = {
        "jobId": job["id"],
        "binding": job["binding"],
        "state": state,
        "attempts": job["attempts"],
        "maxAttempts": job["max_attempts"],
        "runId": job["run_id"],
        "nodeId": job["node_id"],
    }
    if failure_target is not None:
        _add(ctx, job, failure_target, {**base, "error": last_error, "failedAt": now_ms})
    if settled_target is not None:
        settled = {
            **base,
            "error": last_error if state in FAILURE_STATES else None,
            "result": jsonwire.loads(job["result"]) if state == "COMPLETED" and job["result"] else None,
            "settledAt": now_ms,
        }
        _add(ctx, job, settled_target, settled)


def _notice_targets(ctx: ShardContext, job: JobRow) -> tuple[str | None, str | None]:
    """The bindings that get an ``onFailure`` and an ``onSettled`` notice of ``job`` (or None)."""
    settings = ctx.settings
    state, binding = job["state"], job["binding"]
    on_failure, on_settled = settings.on_failure, settings.on_settled
    failure: str | None = None
    if on_failure and state in FAILURE_STATES and binding != on_failure:  # J-180: no loops
        failure = on_failure
    settled: str | None = None
    if (
        on_settled is not None
        and state in on_settled.states
        and binding not in (on_settled.binding, on_failure)
    ):
        settled = on_settled.binding  # J-180a
    return failure, settled


def _add(ctx: ShardContext, job: JobRow, target: str, payload: JsonObject) -> None:
    # A fixed id per notice makes redelivery idempotent: the target shard returns the existing job (J-38).
    notice_id = ids.format_job_id(target, 0, ids.new_local_id())
    ctx.events.add_notice(target, notice_id, payload, job["traceparent"])  # J-40: the trace goes on
