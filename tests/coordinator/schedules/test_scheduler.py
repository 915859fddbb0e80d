"""The scheduler coordinator (flows.md §23-§27) driven by a FixedClock."""

from __future__ import annotations

from typing import Any

POLL = {"binding": "Poll", "payload": {"x": 1}, "every_ms": 60_000}


async def test_sync_registers_and_arms_one_interval_later(harness: Any) -> None:
    # S-10, S-13, S-14, S-15
    s = harness.scheduler({"poll": POLL})
    await s.sync()
    [row] = await s.list()
    assert row == {
        "name": "poll",
        "kind": "job",
        "target": "Poll",
        "every_ms": 60_000,
        "cron": None,
        "overlap": "skip",
        "next_run_at": harness.clock.now() + 60_000,
        "last_run_at": None,
        "last_fired_at": None,
        "last_job_id": None,
        "last_run_id": None,
        "last_skipped_at": None,
        "skipped_count": 0,
        "last_error": None,
    }
    assert harness.alarm.at == harness.clock.now() + 60_000


async def test_job_firing_ids_payload_and_options(harness: Any) -> None:
    # S-4, S-17, F-10
    seen: list[int] = []

    def payload(ctx: Any) -> dict[str, Any]:
        seen.append(ctx.scheduled_at)
        return {"at": ctx.scheduled_at}

    s = harness.scheduler({"poll": {**POLL, "payload": payload, "priority": 3, "max_attempts": 2}})
    await s.sync()
    occurrence = harness.alarm.at
    harness.clock.set(occurrence + 250)
    await harness.fire_due(s)
    job_id = f"Poll#0:poll-{occurrence}"
    assert harness.shards.get("Poll#0").jobs[job_id] == {
        "binding": "Poll",
        "payload": {"at": occurrence},
        "id": job_id,
        "maxAttempts": 2,
        "priority": 3,
    }
    [row] = await s.list()
    assert (row["last_run_at"], row["last_fired_at"], row["last_job_id"]) == (
        occurrence,
        occurrence + 250,
        job_id,
    )
    assert row["next_run_at"] == occurrence + 60_000
    assert seen == [occurrence]


async def test_catch_up_fires_once_and_keeps_phase(harness: Any) -> None:
    # S-11
    s = harness.scheduler({"poll": {**POLL, "overlap": "overlap"}})
    await s.sync()
    t = harness.alarm.at
    harness.clock.set(t)
    await harness.fire_due(s)
    harness.clock.set(t + 181_000)
    await harness.fire_due(s)
    jobs = harness.shards.get("Poll#0").jobs
    assert sorted(jobs) == sorted([f"Poll#0:poll-{t}", f"Poll#0:poll-{t + 60_000}"])
    [row] = await s.list()
    assert (row["next_run_at"], row["skipped_count"]) == (t + 240_000, 0)


async def test_overlap_skip_counts_skips(harness: Any) -> None:
    # S-17 step 1, S-20
    s = harness.scheduler({"poll": POLL})
    await s.sync()
    t = harness.alarm.at
    harness.clock.set(t)
    await harness.fire_due(s)
    harness.clock.set(t + 60_000)
    await harness.fire_due(s)  # previous job still SCHEDULED -> skipped
    [row] = await s.list()
    assert (row["skipped_count"], row["last_skipped_at"], row["last_run_at"]) == (1, t + 60_000, t)
    harness.shards.get("Poll#0").states[f"Poll#0:poll-{t}"] = "COMPLETED"
    harness.clock.set(t + 120_000)
    await harness.fire_due(s)
    [row] = await s.list()
    assert row["last_job_id"] == f"Poll#0:poll-{t + 120_000}"


async def test_failure_records_error_and_moves_on(harness: Any) -> None:
    # S-17 step 4
    s = harness.scheduler({"poll": {**POLL, "overlap": "overlap"}, "zeta": {**POLL, "overlap": "overlap"}})
    await s.sync()
    t = harness.alarm.at
    harness.shards.get("Poll#0").fail = True
    harness.clock.set(t)
    await harness.fire_due(s)
    rows = await s.list()
    assert [(r["last_error"], r["last_run_at"], r["next_run_at"]) for r in rows] == [
        ("shard down", None, t + 60_000),
        ("shard down", None, t + 60_000),
    ]
    harness.shards.get("Poll#0").fail = False
    harness.clock.set(t + 60_000)
    await harness.fire_due(s)
    assert [r["last_error"] for r in await s.list()] == [None, None]


async def test_flow_schedule_starts_run_with_derived_id(harness: Any) -> None:
    # S-17 step 3, F-10, S-20
    s = harness.scheduler(
        {
            "nightly": {
                "flow": "REPORT",
                "input": lambda ctx: {"until": ctx.scheduled_at},
                "cron": "0 3 * * *",
                "deadline_ms": 9000,
            }
        }
    )
    await s.sync()
    occurrence = harness.alarm.at
    assert occurrence == harness.clock.now() + 3 * 3_600_000  # 2026-01-01T03:00Z
    harness.clock.set(occurrence)
    await harness.fire_due(s)
    run_id = f"REPORT:nightly-{occurrence}"
    assert harness.runs.get(run_id).started == [("REPORT", {"until": occurrence}, 9000)]
    [row] = await s.list()
    assert (row["last_run_id"], row["last_job_id"], row["next_run_at"]) == (
        run_id,
        None,
        occurrence + 86_400_000,
    )
    harness.clock.set(occurrence + 86_400_000)
    await harness.fire_due(s)  # previous run still RUNNING -> skipped (S-20)
    assert (await s.list())[0]["skipped_count"] == 1


async def test_missing_run_binding_is_recorded(harness: Any) -> None:
    # S-17 step 4
    harness.runs = None
    s = harness.scheduler({"nightly": {"flow": "REPORT", "input": {}, "every_ms": 1000}})
    await s.sync()
    harness.clock.set(harness.alarm.at)
    await harness.fire_due(s)
    assert (await s.list())[0][
        "last_error"
    ] == "RUN binding is not configured, add the Run DO binding to wrangler"


async def test_reconcile_on_definition_changes(harness: Any) -> None:
    # S-13
    s = harness.scheduler({"poll": POLL, "gone": POLL})
    await s.sync()
    first = harness.alarm.at
    harness.clock.advance(10_000)
    same_timing = harness.scheduler({"poll": {**POLL, "overlap": "overlap"}})
    await same_timing.sync()
    [row] = await same_timing.list()
    assert (row["name"], row["overlap"], row["next_run_at"]) == ("poll", "overlap", first)
    retimed = harness.scheduler({"poll": {**POLL, "every_ms": 5000}})
    await retimed.sync()
    assert (await retimed.list())[0]["next_run_at"] == harness.clock.now() + 5000  # phase reset


async def test_durable_across_restarts(harness: Any) -> None:
    # S-12: state lives in SQLite; a new instance over the same storage continues the phase
    s = harness.scheduler({"poll": {**POLL, "overlap": "overlap"}})
    await s.sync()
    t = harness.alarm.at
    harness.clock.set(t)
    await harness.fire_due(s)
    restarted = harness.scheduler({"poll": {**POLL, "overlap": "overlap"}})
    await restarted.sync()
    [row] = await restarted.list()
    assert (row["last_run_at"], row["next_run_at"]) == (t, t + 60_000)


async def test_no_schedules_deletes_the_alarm_and_removed_rows_are_deleted(harness: Any) -> None:
    # S-15, S-16
    s = harness.scheduler({"poll": POLL})
    await s.sync()
    empty = harness.scheduler({})
    await empty.sync()
    assert harness.alarm.at is None and await empty.list() == []


async def test_sharded_binding_uses_partition_key(harness: Any) -> None:
    # S-17 step 3, S-2.8
    s = harness.scheduler({"p": {**POLL, "partition_key": "tenant-1"}}, shards_of={"Poll": 8})
    await s.sync()
    t = harness.alarm.at
    harness.clock.set(t)
    await harness.fire_due(s)
    [job] = [j for shard in harness.shards.by_name.values() for j in shard.jobs.values()]
    assert job["partitionKey"] == "tenant-1"
    assert job["id"].endswith(f":p-{t}")


async def test_async_payload_function(harness: Any) -> None:
    # S-4
    async def payload(ctx: Any) -> int:
        return 7

    s = harness.scheduler({"poll": {**POLL, "payload": payload}})
    await s.sync()
    harness.clock.set(harness.alarm.at)
    await harness.fire_due(s)
    assert [j["payload"] for j in harness.shards.get("Poll#0").jobs.values()] == [7]


async def test_tick_failure_rearms_in_five_seconds(harness: Any) -> None:
    # S-16
    s = harness.scheduler({"poll": POLL})
    await s.sync()
    harness.clock.set(harness.alarm.at)
    harness.sql.execute("DROP TABLE schedule")
    await harness.fire_due(s)
    assert harness.alarm.at == harness.clock.now() + 5000
