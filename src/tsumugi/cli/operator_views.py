"""What the operator commands print for people: REST answers (``tsumugi.api.models``) as tables and fields."""

from __future__ import annotations

from tsumugi.api import models
from tsumugi.cli.text_output import (
    decoded_json,
    duration,
    fields,
    instant,
    table,
    text_or_none,
)

# Stats list the states in the order a job moves through them (A-54 sends only the non-empty ones).
STATE_ORDER = ("SCHEDULED", "QUEUED", "RUNNING", "COMPLETED", "FAILED", "CANCELLED", "STALLED")


def job_list(answer: models.JobList) -> str:
    """``tsumugi jobs list``: one row per job, then how many of how many were shown."""
    if not answer.jobs:
        return "no jobs\n"
    rows = [
        [
            job.id,
            job.binding,
            job.state,
            f"{job.attempts}/{job.max_attempts}",
            str(job.priority),
            instant(job.created_at),
            instant(job.updated_at),
        ]
        for job in answer.jobs
    ]
    headers = ["ID", "BINDING", "STATE", "ATTEMPTS", "PRIORITY", "CREATED (UTC)", "UPDATED (UTC)"]
    shown = _shown(len(answer.jobs), answer.total, "job")
    return table(headers, rows, right=("ATTEMPTS", "PRIORITY")) + shown


def job_detail(job: models.JobDetail) -> str:
    """``tsumugi jobs show``: the job's fields, its payload and result, and its attempts, newest first."""
    text = fields(
        [
            ("id", job.id),
            ("binding", job.binding),
            ("state", job.state + (" (retryable)" if job.retryable else "")),
            ("attempts", f"{job.attempts} of {job.max_attempts}"),
            ("priority", str(job.priority)),
            ("guarantee", job.guarantee),
            ("progress", "-" if job.progress is None else f"{job.progress:.0%}"),
            ("concurrency key", text_or_none(job.concurrency_key)),
            ("unique key", text_or_none(job.unique_key)),
            ("created", instant(job.created_at)),
            ("updated", instant(job.updated_at)),
            ("runs after", instant(job.run_after)),
            ("dispatched", instant(job.dispatched_at)),
        ]
    )
    text += f"\npayload:\n{_indented(decoded_json(job.payload))}"
    text += f"\nresult:\n{_indented(decoded_json(job.result))}"
    if not job.attempts_log:
        return text + "\nno attempts yet\n"
    rows = [
        [
            str(record.attempt),
            record.state,
            instant(record.started_at),
            _took(record.started_at, record.finished_at),
            text_or_none(record.error),
        ]
        for record in job.attempts_log
    ]
    headers = ["ATTEMPT", "STATE", "STARTED (UTC)", "TOOK", "ERROR"]
    return text + "\n" + table(headers, rows, right=("ATTEMPT",))


def run_list(answer: models.RunList) -> str:
    """``tsumugi runs list``: one row per run, newest change first."""
    #
    if not answer.runs:
        return "no runs\n"
    rows = [
        [
            run.id,
            run.flow,
            run.state,
            f"{run.node_done}/{run.node_total}",
            str(run.node_failed),
            instant(run.created_at),
            instant(run.updated_at),
        ]
        for run in answer.runs
    ]
    headers = ["ID", "FLOW", "STATE", "NODES DONE", "FAILED", "CREATED (UTC)", "UPDATED (UTC)"]
    shown = _shown(len(answer.runs), answer.total, "run")
    return table(headers, rows, right=("NODES DONE", "FAILED")) + shown


def run_detail(answer: models.RunDetailResponse) -> str:
    """``tsumugi runs show``: the run's fields, its input, and its nodes in display order."""
    run = answer.run
    text = fields(
        [
            ("id", run.id),
            ("flow", run.flow),
            ("state", run.state + (" (resumable)" if run.retryable else "")),
            ("nodes", f"{run.node_done} of {run.node_total} done, {run.node_failed} failed"),
            ("parent run", text_or_none(run.parent_run_id)),
            ("created", instant(run.created_at)),
            ("updated", instant(run.updated_at)),
        ]
    )
    text += f"\ninput:\n{_indented(decoded_json(run.input))}\n"
    if not answer.nodes:
        return text + "no nodes\n"
    rows = [
        [
            node.id,
            node.binding,
            node.state,
            text_or_none(node.job_id or node.child_run_id),
            text_or_none(node.error),
        ]
        for node in answer.nodes
    ]
    return text + table(["NODE", "BINDING", "STATE", "JOB OR RUN", "ERROR"], rows)


def stats(answer: models.Stats) -> str:
    """``tsumugi stats``: jobs per state in lifecycle order, and how long the oldest scheduled job waits."""
    known = [state for state in STATE_ORDER if state in answer.byState]
    others = sorted(state for state in answer.byState if state not in STATE_ORDER)
    rows = [[state, str(answer.byState[state])] for state in known + others]
    text = table(["STATE", "JOBS"], rows, right=("JOBS",)) if rows else "no jobs\n"
    waiting = answer.oldestScheduledMs
    wait = "-" if waiting is None else f"created {duration(waiting)} ago"
    return text + f"oldest scheduled job: {wait}\n"


def _shown(count: int, total: int, noun: str) -> str:
    if count >= total:
        return ""
    return f"{count} of {total} {noun}s shown (--limit, --offset for more)\n"


def _took(started_at: int | None, finished_at: int) -> str:
    return "-" if started_at is None else duration(max(0, finished_at - started_at))


def _indented(text: str) -> str:
    return "".join(f"  {line}\n" for line in text.splitlines())
