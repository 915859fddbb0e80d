"""The example schedules fire on the local runtime under a FixedClock (S-10, S-14, S-17, S-18, S-21)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.local.flow_support import TOKEN, path_id, rest_client, until

from tsumugi.clock import FixedClock
from tsumugi.core.wire_format import format_job_id
from tsumugi.runtimes.local.app_loader import LoadedApp, load_app
from tsumugi.runtimes.local.runtime import LocalRuntime

BEFORE_THREE_MS = 1_767_236_340_000  # 2026-01-01T02:59:00Z
AT_THREE_MS = BEFORE_THREE_MS + 60_000  # 03:00:00Z: ping-hello's first occurrence and the nightly cron
DAY_MS = 86_400_000


@pytest.fixture(scope="module")
def example() -> LoadedApp:
    return load_app()


def _runtime(example: LoadedApp, state_dir: Path, clock: FixedClock) -> LocalRuntime:
    return LocalRuntime(
        example.tsumugi,
        state_dir,
        clock=clock,
        exports=example.exports,
        vars={"TSUMUGI_TOKEN": TOKEN},
        cron=False,
    )


async def _schedules(runtime: LocalRuntime, example: LoadedApp) -> dict[str, dict[str, Any]]:
    return {entry["name"]: entry for entry in await example.tsumugi.list_schedules(runtime.env)}


async def test_start_primes_the_scheduler_and_due_occurrences_fire(
    example: LoadedApp, tmp_path: Path
) -> None:
    clock = FixedClock(BEFORE_THREE_MS)
    async with _runtime(example, tmp_path / "state", clock) as runtime:
        # S-14: starting the runtime syncs the scheduler: one row per schedule, first occurrences armed
        rows = await until(lambda: _schedules(runtime, example), "the first scheduler sync")
        assert sorted(rows) == ["nightly", "ping-hello", "poll-names"]
        assert rows["ping-hello"]["next_run_at"] == AT_THREE_MS  # S-10: now + every_ms
        assert rows["poll-names"]["next_run_at"] == BEFORE_THREE_MS + 300_000
        assert rows["nightly"]["next_run_at"] == AT_THREE_MS  # the next 03:00 UTC
        assert rows["nightly"]["last_run_at"] is None

        clock.set(AT_THREE_MS)
        await runtime.alarms.fire_due()

        rows = await _schedules(runtime, example)
        ping, nightly = rows["ping-hello"], rows["nightly"]
        job_id = format_job_id(
            "Hello", 0, f"ping-hello-{AT_THREE_MS}"
        )  # S-18: ids derive from the occurrence
        run_id = f"GREETINGS:nightly-{AT_THREE_MS}"
        assert (ping["last_run_at"], ping["last_job_id"], ping["last_error"]) == (AT_THREE_MS, job_id, None)
        assert ping["next_run_at"] == AT_THREE_MS + 60_000
        assert (nightly["last_run_id"], nightly["next_run_at"]) == (run_id, AT_THREE_MS + DAY_MS)
        assert rows["poll-names"]["last_run_at"] is None  # not due yet

        async with rest_client(example.tsumugi.asgi(runtime.env)) as client:
            # S-4: the payload function saw the occurrence; the job runs like any other
            async def job() -> dict[str, Any] | None:
                answer = await client.get(f"/api/jobs/{path_id(job_id)}")
                found = answer.json()["job"] if answer.status_code == 200 else None
                return found if found is not None and found["state"] == "COMPLETED" else None

            completed = await until(job, f"{job_id} COMPLETED")
            assert json.loads(completed["payload"]) == {"name": f"ping-{AT_THREE_MS}"}
            assert await until(lambda: example.tsumugi.run_for(runtime.env, run_id).state(), run_id)
            listed = (await client.get("/api/schedules")).json()["schedules"]
            assert [entry["name"] for entry in listed] == ["nightly", "ping-hello", "poll-names"]  # S-21


async def test_schedules_resume_after_a_restart(example: LoadedApp, tmp_path: Path) -> None:
    # ADR-0101: the scheduler's rows and alarm are on disk; a restart past an occurrence fires it once
    clock = FixedClock(BEFORE_THREE_MS)
    state_dir = tmp_path / "state"
    async with _runtime(example, state_dir, clock) as first:
        await until(lambda: _schedules(first, example), "the first scheduler sync")
    clock.set(AT_THREE_MS + 1_000)
    async with _runtime(example, state_dir, clock) as second:

        async def fired() -> dict[str, dict[str, Any]] | None:
            rows = await _schedules(second, example)
            return rows if rows["ping-hello"]["last_run_at"] is not None else None

        rows = await until(fired, "ping-hello to fire after the restart")
        assert rows["ping-hello"]["last_run_at"] == AT_THREE_MS  # the stored occurrence (S-17)
        assert rows["ping-hello"]["last_fired_at"] == AT_THREE_MS + 1_000
        assert rows["ping-hello"]["next_run_at"] == AT_THREE_MS + 60_000
        assert rows["nightly"]["last_run_id"] == f"GREETINGS:nightly-{AT_THREE_MS}"
