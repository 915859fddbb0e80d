"""Storage faults under the shard, the alarms, the queue and the read model (issue 13, ADR-0131).

A write that fails (disk full, I/O error, locked) must not stop anything for good: once the fault
clears, every due job runs with no outside help (no enqueue, no call: only time passes), and nothing
acknowledged is lost. J-160, J-161, J-164 (tick failure re-arms), J-111/J-112 (the reaper recovers a lost
report), J-192 (a failed projection is retried).
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
from tests import polling
from tests.local.fault_support import SHARD_FILE, START, TERMINAL, Faulty, Mail

from tsumugi.testing.faults import DISK_FULL, IO_ERROR, LOCKED, FaultRule, StorageFaults

MakeFaulty = Callable[[], Awaitable[Faulty]]
RECOVERY_BOUND_MS = 10_000  # after the fault clears: the 5 s tick retry (J-164) plus the 2 s alarm backoff


@pytest.fixture
async def faulty(tmp_path: Path) -> AsyncIterator[MakeFaulty]:
    started: list[Faulty] = []

    async def make() -> Faulty:
        instance = Faulty(tmp_path / f"state{len(started)}", StorageFaults())
        started.append(instance)
        return await instance.start()

    yield make
    for instance in started:
        await instance.stop()


async def _all_in(f: Faulty, job_ids: list[str], states: tuple[str, ...]) -> bool:
    return all(state in states for state in (await f.states(job_ids)).values())


async def test_a_full_disk_when_the_alarm_fires_does_not_stop_the_shard(faulty: MakeFaulty) -> None:
    # Issue 13 item 1: the alarm's DELETE failed, the alarm was gone from memory, and 20 due jobs sat
    # idle until an unrelated request came. Now the alarm is retried and the jobs run once space is back.
    f = await faulty()
    due_at = START + 10_000
    job_ids = [await f.enqueue(payload={"n": n}, delay_ms=10_000) for n in range(20)]
    await f.drive(lambda: f.runtime.alarms.get("shards/MAIL#0") == due_at)  # persisted: in the future
    f.faults.fail(DISK_FULL, times=None)  # the disk fills up
    f.clock.set(due_at)  # the jobs fall due and the alarm fires into the full disk
    await f.runtime.alarms.fire_due()
    failed = {(fault.label, fault.sql.split()[0]) for fault in f.faults.injected}
    # The tick met the full disk; the fired alarm's row stays on disk until a tick finishes (ADR-0163).
    assert any(label != "alarms.sqlite3" for label, _ in failed), failed
    assert await f.states(job_ids) == dict.fromkeys(job_ids, "SCHEDULED")
    f.faults.clear()  # space is freed; nobody calls the runtime from here on
    cleared_at = f.clock.now()
    await f.drive(lambda: _all_in(f, job_ids, ("COMPLETED",)))
    assert f.clock.now() - cleared_at <= RECOVERY_BOUND_MS
    assert Mail.runs == dict.fromkeys(job_ids, 1)
    assert f.runtime.alarms.unsynced() == set()  # the alarm rows caught up with the disk too


async def test_every_store_refusing_writes_for_a_while_loses_nothing_acknowledged(
    faulty: MakeFaulty,
) -> None:
    # Disk full under every store at once, with jobs done, in flight, due and delayed. What was
    # acknowledged before the fault completes after it, and the read model catches up (J-192).
    f = await faulty()
    done = await f.enqueue(payload={"n": "done"})
    await f.drive(lambda: _all_in(f, [done], ("COMPLETED",)))
    in_flight = [await f.enqueue(payload={"gate": "held", "n": n}) for n in range(3)]
    await polling.until(lambda: len(Mail.runs) == 4, "the held attempts to start", 10.0)
    due_soon = [await f.enqueue(payload={"n": n}, delay_ms=2_000) for n in range(5)]
    later = [await f.enqueue(payload={"n": n}, delay_ms=30_000) for n in range(2)]
    f.faults.fail(DISK_FULL, times=None)
    with pytest.raises(sqlite3.OperationalError, match=DISK_FULL):
        await f.enqueue(payload={"n": "refused"})  # not acknowledged: the caller sees the error
    f.open("held")  # the held attempts end; their reports and the queue's settle hit the full disk
    await polling.until(
        lambda: any(x.sql.startswith("DELETE FROM message") for x in f.faults.injected),
        "a refused settle",
        10.0,
    )
    for _ in range(5):  # time passes during the fault: the due jobs' alarm fires, ticks fail
        f.clock.advance(1_000)
        await f.runtime.alarms.fire_due()
    labels = {x.label for x in f.faults.injected}
    assert labels >= {SHARD_FILE, "alarms.sqlite3", "queue.sqlite3"}
    f.faults.clear()
    acknowledged = [done, *in_flight, *due_soon, *later]
    await f.drive(lambda: _all_in(f, acknowledged, ("COMPLETED",)))
    assert set(Mail.runs) == set(acknowledged)  # every one ran; the refused enqueue never existed
    assert all(Mail.runs[job_id] >= 1 for job_id in acknowledged)

    async def projected() -> bool:
        rows = await f.runtime.read_model.all("SELECT id, state FROM job")
        return {row["id"]: row["state"] for row in rows} == dict.fromkeys(acknowledged, "COMPLETED")

    await f.drive(projected)


@pytest.mark.parametrize("store", [SHARD_FILE, "alarms.sqlite3", "queue.sqlite3", "read_model.sqlite3"])
async def test_any_single_failed_write_is_recovered_from(faulty: MakeFaulty, store: str) -> None:
    # The Nth write to one store fails, for every N a small workload reaches on a running runtime (the
    # three errors in turn): at-least-once jobs complete, at-most-once jobs run at most once (J-107) and
    # end COMPLETED or STALLED (a lost dispatch or report, J-112), and no acknowledged job is missing.
    f = await faulty()
    await _run_workload(f, None)  # every store open and warm: the positions below are steady-state writes
    n = 1
    while await _run_workload(f, f.faults.fail(_ERRORS[n % 3], nth=n, where=store)):
        n += 1
    print(f"{store}: writes 1..{n - 1} failed in turn, each recovered")
    assert n > 3, n  # the workload wrote to this store, several times


async def test_a_shard_that_cannot_create_its_schema_opens_once_it_can(faulty: MakeFaulty) -> None:
    # A full disk when a shard's file is first opened (its tables created): the enqueue is refused, and
    # the next one works. The alarm of a shard that fails to open is retried (ADR-0131).
    f = await faulty()
    f.faults.fail(DISK_FULL, matching="^CREATE", where=SHARD_FILE)
    with pytest.raises(sqlite3.OperationalError, match=DISK_FULL):
        await f.enqueue(payload={"n": 1})
    job_id = await f.enqueue(payload={"n": 2})
    await f.drive(lambda: _all_in(f, [job_id], ("COMPLETED",)))


_ERRORS = (DISK_FULL, IO_ERROR, LOCKED)
_WORKLOAD: list[tuple[str, dict[str, object]]] = [
    ("at-least-once", {"payload": {"n": 1}}),
    ("at-least-once", {"payload": {"n": 2}, "delay_ms": 3_000}),
    ("at-most-once", {"payload": {"n": 3}}),
]


async def _run_workload(f: Faulty, rule: FaultRule | None) -> bool:
    """Enqueue the workload under ``rule``, let time pass until every job is settled, check the
    guarantees and clear the fault; whether the rule failed a write."""
    acknowledged: dict[str, str] = {}
    for guarantee, options in _WORKLOAD:
        try:
            acknowledged[await f.enqueue(guarantee=guarantee, **options)] = guarantee
        except sqlite3.OperationalError as error:
            assert rule is not None and rule.message in str(error)  # refused, so never acknowledged
    await f.drive(lambda: _all_in(f, list(acknowledged), TERMINAL))
    states = await f.states(list(acknowledged))
    context = (rule, f.faults.injected[-1:])
    for job_id, guarantee in acknowledged.items():
        if guarantee == "at-least-once":
            assert states[job_id] == "COMPLETED", context
            assert Mail.runs.get(job_id, 0) >= 1, context
        else:
            assert states[job_id] in ("COMPLETED", "STALLED"), context
            assert Mail.runs.get(job_id, 0) <= 1, context
    f.faults.clear()
    return rule is not None and rule.failed > 0
