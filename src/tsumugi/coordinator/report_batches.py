"""Reports applied in batches, as the local runtime's consumer sends them (ADR-0106, ADR-0136, ADR-0181).

``apply_reports`` applies a batch as if ``job_transitions.apply_report`` ran for each report in turn,
with one read and one write per chunk for the reports that finish their job.
"""
# J-115, J-95, J-165

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Final

from tsumugi import telemetry
from tsumugi.coordinator import lifecycle_log
from tsumugi.coordinator.context import ShardContext
from tsumugi.coordinator.first_attempts import completed_row
from tsumugi.coordinator.job_transitions import (
    IN_FLIGHT,
    apply_report,
    record_terminal_events,
    stored_backoff,
)
from tsumugi.core.backoff import DEFAULT
from tsumugi.core.states import (
    AttemptOutcome,
    Completed,
    JobState,
    ReportEffect,
    assert_transition,
    decide_report,
    outcome_from_wire,
)
from tsumugi.logging import jobs_log
from tsumugi.storage.event_outbox import RunEvent
from tsumugi.storage.job_rows import REPORT_COLUMNS, JobRow
from tsumugi.storage.job_table import Settle


def apply_reports(
    ctx: ShardContext, reports: Sequence[tuple[str, Mapping[str, object]]], now_ms: int
) -> int | None:
    """Apply a batch of reports as if ``apply_report`` ran for each in turn (ADR-0106, ADR-0136).

    Each report arrives in its wire form and is decoded here, once. A first attempt that returned
    nothing, of a job this shard remembers dispatching, is written without reading its row (ADR-0181).
    The others take one read for the batch, and those that finish their job are written with one
    statement per chunk. Retries, and any job reported more than once in the batch, take
    ``apply_report`` one by one. Returns the instant to arm the alarm at (or None).
    """
    counts: dict[str, int] = {}
    for job_id, _ in reports:
        counts[job_id] = counts.get(job_id, 0) + 1
    remembered = ctx.first_attempts
    completed: list[JobRow] = []
    decoded: list[tuple[str, AttemptOutcome]] = []
    for job_id, wire in reports:
        outcome = outcome_from_wire(wire)
        dispatched = None
        if remembered is not None and outcome is _FIRST_RETURNED_NOTHING and counts[job_id] == 1:
            dispatched = remembered.take(job_id)
        if dispatched is not None:
            completed.append(completed_row(job_id, dispatched))
        else:
            decoded.append((job_id, outcome))
    rows = {row["id"]: row for row in ctx.jobs.get_many([i for i, _ in decoded], REPORT_COLUMNS)}
    settled: list[tuple[JobRow, ReportEffect]] = []
    arms: list[int] = []
    for job_id, outcome in decoded:
        job = rows.get(job_id)
        if job is None:
            continue  # J-115: not in this shard
        if counts[job_id] > 1:
            arm_at = apply_report(ctx, job_id, outcome, now_ms, rows.pop(job_id, None))
            arms += [arm_at] if arm_at is not None else []
            continue
        # Only a failure reads the backoff (a retry's delay); a plain job's success never does.
        needs_backoff = not isinstance(outcome, Completed) or job["run_id"] is not None
        backoff = stored_backoff(job["backoff"]) if needs_backoff else DEFAULT
        effect = decide_report(job, outcome, now_ms, ctx.rand(), backoff)
        if effect is None:
            continue
        spawning = isinstance(outcome, Completed) and job["run_id"] is not None and bool(outcome.spawns)
        if effect.to_state == "SCHEDULED" or effect.log_state is not None or spawning:
            arm_at = apply_report(ctx, job_id, outcome, now_ms, job)  # the rarer paths, one by one
            arms += [arm_at] if arm_at is not None else []
            continue
        settled.append((job, effect))
    if settled or completed:
        changed, errors = _settle(ctx, settled, now_ms) if settled else ([], {})
        if completed:
            # J-115, ADR-0046: each must still be in flight on its first attempt; if one is not, this
            # raises, nothing is applied, and the reports are applied one at a time instead.
            ctx.jobs.complete_first_attempts([job["id"] for job in completed], IN_FLIGHT, now_ms)
        _settled(ctx, [*changed, *completed], errors, now_ms)
        arms.append(now_ms)  # J-165
    return min(arms) if arms else None


# A report that says its first attempt returned nothing and spawned nothing: ``outcome_from_wire`` gives
# the same value for each (from a cache: one it dropped takes the general path, to the same effect).
_FIRST_RETURNED_NOTHING: Final = outcome_from_wire({"ok": True, "attempt": 1})


def _settle(
    ctx: ShardContext, settled: list[tuple[JobRow, ReportEffect]], now_ms: int
) -> tuple[list[JobRow], dict[str, str]]:
    """Write finished reports together; their rows, and the errors of those that failed.

    ``settled`` pairs each job's row, read in this transaction, with what its report does. Every one of
    them moves (``settle_many`` checks it), and its row is then changed in place to what the statement
    left (ADR-0158, ADR-0176).
    """
    for to_state in {effect.to_state for _, effect in settled}:
        assert_transition(JobState.QUEUED, to_state)
    ctx.jobs.settle_many(
        [Settle(job["id"], effect.to_state, effect.attempts, effect.result) for job, effect in settled],
        IN_FLIGHT,
        now_ms,
    )
    changed: list[JobRow] = []
    for job, effect in settled:
        job["state"], job["attempts"], job["result"] = effect.to_state, effect.attempts, effect.result
        job["cancel_requested_at"] = None
        changed.append(job)
    return changed, {job["id"]: effect.error for job, effect in settled if effect.error is not None}


def _settled(ctx: ShardContext, changed: list[JobRow], errors: Mapping[str, str], now_ms: int) -> None:
    """What follows jobs that finished together: their marks, their terminal events, the log, the counts."""
    ctx.jobs.mark_changed_many(changed)
    run_events: list[RunEvent] = []
    for job in changed:
        error = errors.get(job["id"])
        record_terminal_events(ctx, job, now_ms, error=error, spawns=None, run_events=run_events)
    ctx.events.add_run_events(run_events)
    if jobs_log.isEnabledFor(logging.INFO):  # ADR-0145: one level check for the batch
        lifecycle_log.settled(changed, now_ms, errors)
    if telemetry.active is not None:  # ADR-0143: each job counts, as one settled alone does
        for state, count in Counter(job["state"] for job in changed).items():
            telemetry.active.jobs_moved(ctx.binding, state, count)
