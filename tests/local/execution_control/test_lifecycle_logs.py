"""The lifecycle log on the local runtime (issue 14 item 9, ADR-0145): one INFO line per transition."""

from __future__ import annotations

import logging

import pytest
from tests.local.execution_control.conftest import MakeLocal

from tsumugi.core.wire_format import shard_name_of
from tsumugi.logging import JOBS_LOGGER


def _lines(caplog: pytest.LogCaptureFixture, job_id: str) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == JOBS_LOGGER and f"job={job_id} " in f"{r.getMessage()} "
    ]


def _event(lines: list[str], event: str) -> str:
    found = [line for line in lines if line.startswith(event + " ")]
    assert len(found) == 1, (event, lines)
    return found[0]


async def test_a_job_that_succeeds_logs_each_step(local: MakeLocal, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=JOBS_LOGGER)
    app = await local()
    job_id = await app.enqueue(payload={"result": {"sent": True}})
    await app.settled(job_id, "COMPLETED")
    lines = _lines(caplog, job_id)
    assert [line.split(" binding=")[0] for line in lines] == [
        "job enqueued",
        "job dispatched",
        "job started",
        "job succeeded",
    ]
    assert lines[0] == f"job enqueued binding=MAIL job={job_id}"
    assert (
        _event(lines, "job dispatched")
        == f"job dispatched binding=MAIL job={job_id} attempt=1 max_attempts=3"
    )
    assert _event(lines, "job started") == f"job started binding=MAIL job={job_id} attempt=1"
    assert _event(lines, "job succeeded").startswith(
        f"job succeeded binding=MAIL job={job_id} attempt=1 max_attempts=3 duration_ms="
    )
    assert all(r.levelno == logging.INFO for r in caplog.records if r.name == JOBS_LOGGER)


async def test_a_failing_job_logs_its_retry_then_its_failure(
    local: MakeLocal, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=JOBS_LOGGER)
    app = await local()
    backoff = {"kind": "fixed", "delay_ms": 5_000}
    job_id = await app.enqueue(payload={"fail": "smtp down"}, max_attempts=2, backoff=backoff)

    async def retrying() -> bool:
        return any(line.startswith("job retrying") for line in _lines(caplog, job_id))

    await app.until(retrying, "the retry line")
    retry = _event(_lines(caplog, job_id), "job retrying")
    # the next attempt, of how many, and when: retrying in N ms, attempt k of n
    assert retry == (
        f"job retrying binding=MAIL job={job_id} attempt=2 max_attempts=2 in_ms=5000 "
        'error="RuntimeError: smtp down"'
    )
    await app.advance(5_000)
    await app.settled(job_id, "FAILED")
    failed = _event(_lines(caplog, job_id), "job failed")
    assert (
        failed
        == f'job failed binding=MAIL job={job_id} attempt=2 max_attempts=2 error="RuntimeError: smtp down"'
    )
    dispatched = [line for line in _lines(caplog, job_id) if line.startswith("job dispatched")]
    assert [line.split(" attempt=")[1] for line in dispatched] == ["1 max_attempts=2", "2 max_attempts=2"]


async def test_a_cancelled_job_and_a_delayed_enqueue(
    local: MakeLocal, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=JOBS_LOGGER)
    app = await local()
    job_id = await app.enqueue(payload={}, delay_ms=60_000, priority=2)
    assert _event(_lines(caplog, job_id), "job enqueued") == (
        f"job enqueued binding=MAIL job={job_id} max_attempts=3 delay_ms=60000"
    )
    assert (await app.shard(shard_name_of(job_id)).cancel(job_id))["ok"] is True
    cancelled = _event(_lines(caplog, job_id), "job cancelled")
    assert cancelled == f"job cancelled binding=MAIL job={job_id} attempt=0 max_attempts=3"


async def test_ticks_log_at_debug_only(local: MakeLocal, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=JOBS_LOGGER)
    app = await local()
    job_id = await app.enqueue(payload={})
    await app.settled(job_id, "COMPLETED")
    assert not [r for r in caplog.records if r.getMessage().startswith("shard tick")]
    caplog.clear()
    caplog.set_level(logging.DEBUG, logger=JOBS_LOGGER)
    second = await app.enqueue(payload={})
    await app.settled(second, "COMPLETED")
    ticks = [r for r in caplog.records if r.getMessage().startswith("shard tick shard=MAIL#0 ")]
    assert ticks and all(r.levelno == logging.DEBUG for r in ticks)
    assert any(" dispatched=1 " in f"{r.getMessage()} " for r in ticks)


async def test_nothing_is_logged_when_the_level_is_off(
    local: MakeLocal, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger=JOBS_LOGGER)
    app = await local()
    job_id = await app.enqueue(payload={"result": 1})
    await app.settled(job_id, "COMPLETED")
    assert not [r for r in caplog.records if r.name == JOBS_LOGGER]


async def test_a_silent_at_most_once_job_logs_stalled(
    local: MakeLocal, caplog: pytest.LogCaptureFixture
) -> None:
    # J-112: the reaper stalls a silent at-most-once attempt; the line names its attempt
    caplog.set_level(logging.INFO, logger=JOBS_LOGGER)
    app = await local()
    job_id = await app.enqueue(payload={"gate": "never"}, guarantee="at-most-once", timeout_ms=0)

    async def started() -> bool:
        return any(line.startswith("job started") for line in _lines(caplog, job_id))

    await app.until(started, "the attempt to start")
    for _ in range(3):  # past the reaper's grace (no attempt timeout: the gate keeps it silent)
        await app.advance(60_000)
    await app.settled(job_id, "STALLED")
    assert _event(_lines(caplog, job_id), "job stalled") == (
        f"job stalled binding=MAIL job={job_id} attempt=1 max_attempts=3"
    )
