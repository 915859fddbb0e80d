"""The shard's lifecycle log: one INFO line as a job is enqueued, dispatched, retried and settled.

Callers check ``jobs_log.isEnabledFor(logging.INFO)`` (``DEBUG`` for ``tick``) before they call, once for
a batch of jobs, so a disabled ``tsumugi.jobs`` logger costs one level check and builds no line
(ADR-0145).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Final

from tsumugi.logging import jobs_log, log_event
from tsumugi.storage.job_rows import JobRow
from tsumugi.storage.tick_tables import DispatchRow

ERROR_CHARS: Final = 200  # a log line carries the error's last line, cut short; the job keeps it whole
_TERMINAL_EVENTS: Final = {
    "COMPLETED": "job succeeded",
    "FAILED": "job failed",
    "CANCELLED": "job cancelled",
    "STALLED": "job stalled",
}


def error_summary(error: str | None) -> str | None:
    """The last non-empty line of an error text (a traceback ends with ``Type: message``), cut short."""
    if not error:
        return None
    lines = [line.strip() for line in error.strip().splitlines() if line.strip()]
    last = lines[-1] if lines else error.strip()
    return last if len(last) <= ERROR_CHARS else last[: ERROR_CHARS - 1] + "…"


def enqueued(jobs: Iterable[JobRow], now_ms: int) -> None:
    """``job enqueued`` for each new row; ``delay_ms`` when it waits to run."""
    for job in jobs:
        delay_ms = job["run_after"] - now_ms
        log_event(
            jobs_log,
            logging.INFO,
            "job enqueued",
            binding=job["binding"],
            job=job["id"],
            max_attempts=job["max_attempts"],
            delay_ms=delay_ms if delay_ms > 0 else None,
            run=job["run_id"],
        )


def enqueued_ids(binding: str, job_ids: Iterable[str]) -> None:
    """``job enqueued`` for new jobs with every option at its default."""
    for job_id in job_ids:
        log_event(jobs_log, logging.INFO, "job enqueued", binding=binding, job=job_id)


def dispatched(jobs: Iterable[DispatchRow]) -> None:
    """``job dispatched`` with the attempt about to run, ``attempt`` of ``max_attempts``."""
    for job in jobs:
        log_event(
            jobs_log,
            logging.INFO,
            "job dispatched",
            binding=job.binding,
            job=job.id,
            attempt=job.attempts + 1,
            max_attempts=job.max_attempts,
        )


def retrying(job: JobRow, attempts: int, now_ms: int, run_after: int, error: str | None) -> None:
    """``job retrying``: the next attempt (``attempt`` of ``max_attempts``) runs ``in_ms`` from now."""
    log_event(
        jobs_log,
        logging.INFO,
        "job retrying",
        binding=job["binding"],
        job=job["id"],
        attempt=attempts + 1,
        max_attempts=job["max_attempts"],
        in_ms=max(0, run_after - now_ms),
        error=error_summary(error) if error is not None else "no report before the silence timeout",
    )


def settled(jobs: Iterable[JobRow], now_ms: int, errors: Mapping[str, str | None]) -> None:
    """``job succeeded`` (``duration_ms`` from dispatch to report), ``failed``, ``cancelled``, ``stalled``."""
    for job in jobs:
        state = job["state"]
        dispatched_at = job["dispatched_at"]
        duration_ms = now_ms - dispatched_at if state == "COMPLETED" and dispatched_at is not None else None
        log_event(
            jobs_log,
            logging.INFO,
            _TERMINAL_EVENTS.get(state, f"job {state.lower()}"),
            binding=job["binding"],
            job=job["id"],
            attempt=job["attempts"],
            max_attempts=job["max_attempts"],
            duration_ms=duration_ms,
            run=job["run_id"],
            error=error_summary(errors.get(job["id"])),
        )


def tick(shard: str, now_ms: int, dispatched: int, decided: int, next_alarm_at: int | None) -> None:
    """``shard tick`` at DEBUG: what one alarm did, and when the next one is due."""
    log_event(
        jobs_log,
        logging.DEBUG,
        "shard tick",
        shard=shard,
        dispatched=dispatched,
        decided=decided,
        next_in_ms=next_alarm_at - now_ms if next_alarm_at is not None else None,
    )
