"""Schedules on the ``TsumugiScheduler`` Durable Object and the Worker's cron trigger (S-rules, J-172).

The example's ``ping-hello`` schedule fires every minute from the scheduler's alarm; the cron trigger
(the ``scheduled`` handler, reached through wrangler's ``/cdn-cgi/handler/scheduled``) sweeps old
terminal jobs out of D1.
"""

from __future__ import annotations

import json
import time

import pytest
from tests.workerd.harness import Workers, request

pytestmark = pytest.mark.workerd

DAY_MS = 86_400_000


def _schedule(workers: Workers, name: str) -> dict[str, object]:
    answer = workers.api("GET", "/api/schedules")
    assert answer.status == 200, answer
    return next(item for item in answer.body["schedules"] if item["name"] == name)


def test_the_scheduler_alarm_fires_the_every_minute_schedule(workers: Workers) -> None:
    # S-14: the first request primed the scheduler; its alarm fires ping-hello once a minute.
    deadline = time.monotonic() + 80
    schedule = _schedule(workers, "ping-hello")
    assert schedule["kind"] == "job" and schedule["target"] == "Hello" and schedule["every_ms"] == 60_000
    while schedule["last_job_id"] is None and time.monotonic() < deadline:
        time.sleep(1)  # the alarm fires on the minute; bounded by the deadline (noqa: sleep-ok)
        schedule = _schedule(workers, "ping-hello")
    job_id = str(schedule["last_job_id"])
    assert job_id.startswith("Hello#0:ping-hello-"), schedule  # S-8: the occurrence names the job
    job = workers.wait_job(job_id)
    assert job["state"] == "COMPLETED"
    assert json.loads(job["payload"]) == {"name": f"ping-{schedule['last_run_at']}"}  # S-4: the occurrence
    assert schedule["next_run_at"] == schedule["last_run_at"] + 60_000


def test_the_cron_trigger_sweeps_old_terminal_jobs_from_the_read_model(workers: Workers) -> None:
    old = int(time.time() * 1000) - 8 * DAY_MS  # past the 7-day default (J-172)
    columns = ", ".join(
        [
            *("id", "seq", "binding", "state", "priority", "attempts", "max_attempts", "guarantee"),
            *("created_at", "updated_at", "payload"),
        ]
    )
    rows = [
        ("Hello#0:swept-by-cron", "COMPLETED", old),
        ("Hello#0:kept-active", "SCHEDULED", old),  # active rows are never deleted
    ]
    values = ", ".join(
        f"('{job_id}', 1, 'Hello', '{state}', 0, 1, 3, 'at-least-once', {at}, {at}, '{{}}')"
        for job_id, state, at in rows
    )
    workers.d1(f"INSERT INTO job ({columns}) VALUES {values}")
    assert workers.job("Hello#0:swept-by-cron") is not None

    # wrangler dev --test-scheduled: this path runs the Worker's scheduled handler, not its fetch.
    answer = request(workers.url + "/cdn-cgi/handler/scheduled?cron=17+*+*+*+*", token=None)
    assert answer.status == 200, answer
    deadline = time.monotonic() + 20
    while workers.job("Hello#0:swept-by-cron") is not None and time.monotonic() < deadline:
        time.sleep(0.25)  # the scheduled handler runs on its own; bounded (noqa: sleep-ok)
    assert workers.job("Hello#0:swept-by-cron") is None
    assert workers.job("Hello#0:kept-active") is not None
    assert "tsumugi: swept 1 jobs from the read model" in workers.log()  # J-207
    workers.d1("DELETE FROM job WHERE id = 'Hello#0:kept-active'")
