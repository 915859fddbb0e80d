"""Durable alarms: persisted, re-armed at start, fired under the coordinator's lock, retried on failure."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tsumugi.clock import FixedClock
from tsumugi.runtimes.local.durable_alarms import DurableAlarms
from tsumugi.runtimes.local.local_alarm import LocalAlarm
from tsumugi.runtimes.local.serial_coordinators import ALARM_RETRY_FIRST_MS, SerialCoordinators
from tsumugi.runtimes.local.sqlite_executor import SqliteExecutor
from tsumugi.testing.faults import DISK_FULL, IO_ERROR, StorageFaults


def _coordinators(alarms: DurableAlarms, tmp_path: Path, clock: FixedClock, cls: Any) -> SerialCoordinators:
    return SerialCoordinators("shards", tmp_path / "shards", alarms, clock, cls, SqliteExecutor)


@pytest.fixture
def open_coordinators(closing: Any) -> Any:
    def make(alarms: DurableAlarms, tmp_path: Path, clock: FixedClock, cls: Any) -> SerialCoordinators:
        return closing(_coordinators(alarms, tmp_path, clock, cls))  # type: ignore[no-any-return]

    return make


async def test_an_alarm_survives_a_restart_and_fires_when_due(
    tmp_path: Path, clock: FixedClock, closing: Any, recording_coordinator: Any, open_coordinators: Any
) -> None:
    alarms = closing(DurableAlarms(tmp_path / "alarms.sqlite3", clock))
    await LocalAlarm("shards/MAIL#0", alarms).set_alarm(clock.now() + 60_000)
    alarms.close()  # the process ends with the alarm pending

    restarted = closing(DurableAlarms(tmp_path / "alarms.sqlite3", clock))
    coordinators = open_coordinators(restarted, tmp_path, clock, recording_coordinator)
    restarted.start(lambda key: coordinators.run_alarm(key.partition("/")[2]))
    assert await LocalAlarm("shards/MAIL#0", restarted).get_alarm() == clock.now() + 60_000
    await restarted.fire_due()
    assert coordinators.coordinator("MAIL#0").ticks == 0  # not due yet
    clock.advance(60_000)
    await restarted.fire_due()
    assert coordinators.coordinator("MAIL#0").ticks == 1
    assert restarted.get("shards/MAIL#0") is None  # a fired alarm is cleared (one alarm per DO)
    await restarted.stop()


async def test_an_overdue_alarm_fires_on_its_own_after_start(
    tmp_path: Path, clock: FixedClock, closing: Any, recording_coordinator: Any, open_coordinators: Any
) -> None:
    alarms = closing(DurableAlarms(tmp_path / "alarms.sqlite3", clock))
    alarms.set("shards/MAIL#0", clock.now() - 1_000)
    coordinators = open_coordinators(alarms, tmp_path, clock, recording_coordinator)
    fired = asyncio.Event()

    async def handler(key: str) -> None:
        await coordinators.run_alarm(key.partition("/")[2])
        fired.set()

    alarms.start(handler)  # arms the loop timer; an overdue alarm is due immediately
    await asyncio.wait_for(fired.wait(), timeout=5)
    assert coordinators.coordinator("MAIL#0").ticks == 1
    await alarms.stop()


async def test_an_alarm_tick_never_interleaves_with_a_call(
    tmp_path: Path, clock: FixedClock, closing: Any, recording_coordinator: Any, open_coordinators: Any
) -> None:
    alarms = closing(DurableAlarms(tmp_path / "alarms.sqlite3", clock))
    coordinators = open_coordinators(alarms, tmp_path, clock, recording_coordinator)
    alarms.set("shards/MAIL#0", clock.now())
    await asyncio.gather(coordinators.call("MAIL#0", "slow_call", "rpc"), coordinators.run_alarm("MAIL#0"))
    assert coordinators.coordinator("MAIL#0").events == ["enter rpc", "leave rpc", "tick"]


async def test_a_failing_tick_is_retried_later(
    tmp_path: Path, clock: FixedClock, closing: Any, recording_coordinator: Any, open_coordinators: Any
) -> None:
    # J-164: a failed tick must not lose the alarm; locally it is retried with a backoff (ADR-0052)
    alarms = closing(DurableAlarms(tmp_path / "alarms.sqlite3", clock))
    coordinators = open_coordinators(alarms, tmp_path, clock, recording_coordinator)
    coordinators.coordinator("MAIL#0").fail_ticks = 2
    alarms.set("shards/MAIL#0", clock.now())
    await coordinators.run_alarm("MAIL#0")
    assert alarms.get("shards/MAIL#0") == clock.now() + ALARM_RETRY_FIRST_MS
    clock.advance(ALARM_RETRY_FIRST_MS)
    await coordinators.run_alarm("MAIL#0")
    assert alarms.get("shards/MAIL#0") == clock.now() + 2 * ALARM_RETRY_FIRST_MS
    clock.advance(2 * ALARM_RETRY_FIRST_MS)
    await coordinators.run_alarm("MAIL#0")
    assert coordinators.coordinator("MAIL#0").ticks == 3
    assert alarms.get("shards/MAIL#0") is None


async def test_delete_alarm_disarms(tmp_path: Path, clock: FixedClock, closing: Any) -> None:
    alarms = closing(DurableAlarms(tmp_path / "alarms.sqlite3", clock))
    alarm = LocalAlarm("shards/MAIL#0", alarms)
    await alarm.set_alarm(clock.now() + 5)
    await alarm.delete_alarm()
    assert await alarm.get_alarm() is None
    alarms.close()
    assert closing(DurableAlarms(tmp_path / "alarms.sqlite3", clock)).pending() == {}


# ------------------------------------------------------------------ a disk that refuses writes (ADR-0131)
def _faulty_alarms(tmp_path: Path, clock: FixedClock, closing: Any) -> tuple[DurableAlarms, StorageFaults]:
    faults = StorageFaults()
    path = tmp_path / "alarms.sqlite3"
    return closing(DurableAlarms(path, clock, sql=faults.executor(SqliteExecutor(path)))), faults


async def test_a_refused_write_keeps_the_alarm_armed_and_is_written_later(
    tmp_path: Path, clock: FixedClock, closing: Any
) -> None:
    alarms, faults = _faulty_alarms(tmp_path, clock, closing)
    faults.fail(DISK_FULL, times=None)
    alarms.set("shards/MAIL#0", clock.now() + 60_000)  # never raises: this process's alarm is armed
    alarms.set("shards/MAIL#1", clock.now() + 1_000)
    alarms.delete("shards/MAIL#1")
    assert alarms.get("shards/MAIL#0") == clock.now() + 60_000
    assert alarms.unsynced() == {"shards/MAIL#0"}  # MAIL#1 was never on disk: nothing to delete
    assert closing(DurableAlarms(tmp_path / "alarms.sqlite3", clock)).pending() == {}  # not on disk yet
    faults.clear()
    alarms.set("shards/MAIL#2", clock.now() + 5_000)  # the next write that goes through catches up
    assert alarms.unsynced() == set()
    on_disk = closing(DurableAlarms(tmp_path / "alarms.sqlite3", clock)).pending()
    assert on_disk == {"shards/MAIL#0": clock.now() + 60_000, "shards/MAIL#2": clock.now() + 5_000}


async def test_a_refused_delete_clears_the_alarm_here_and_on_disk_later(
    tmp_path: Path, clock: FixedClock, closing: Any
) -> None:
    alarms, faults = _faulty_alarms(tmp_path, clock, closing)
    alarms.set("shards/MAIL#0", clock.now() + 1_000)
    faults.fail(IO_ERROR, matching="^DELETE")
    alarms.delete("shards/MAIL#0")
    assert alarms.get("shards/MAIL#0") is None and alarms.unsynced() == {"shards/MAIL#0"}
    assert alarms.sync() is True  # the rule failed one write; the retry goes through
    assert closing(DurableAlarms(tmp_path / "alarms.sqlite3", clock)).pending() == {}


async def test_a_handler_that_raises_is_retried_with_a_backoff_for_as_long_as_it_raises(
    tmp_path: Path, clock: FixedClock, closing: Any
) -> None:
    # A Durable Object retries a failed alarm; locally the retries back off (2 s, 4 s, ...) and never
    # stop, even when what raised is not the tick (here: the handler itself, after clearing the alarm).
    alarms = closing(DurableAlarms(tmp_path / "alarms.sqlite3", clock))
    calls: list[int] = []

    async def handler(name: str) -> None:
        calls.append(clock.now())
        alarms.delete(name)  # cleared when it fires, as SerialCoordinators.run_alarm does
        if len(calls) <= 3:
            raise sqlite3.OperationalError(DISK_FULL)

    start = clock.now()
    alarms.set("shards/MAIL#0", start + 1_000)
    alarms.start(handler)
    for _ in range(20):
        clock.advance(1_000)
        await alarms.fire_due()  # the handler never yields, so the loop timers cannot fire meanwhile
    assert [at - start for at in calls] == [1_000, 3_000, 7_000, 15_000]
    assert alarms.get("shards/MAIL#0") is None
    await alarms.stop()


def _on_disk(path: Path, key: str) -> int | None:
    """The instant the alarm file holds for ``key``, read as the next process would."""
    with sqlite3.connect(path) as db:
        row = db.execute("SELECT at_ms FROM alarm WHERE coordinator = ?", (key,)).fetchone()
    return None if row is None else int(row[0])


class _HeldTick:
    """A coordinator whose tick waits for ``release``, then sets ``next_at`` as its next alarm (if any)."""

    next_at: int | None = None

    def __init__(self, name: str, sql: Any, alarm: Any) -> None:
        self.alarm_port = alarm
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    async def alarm(self) -> None:
        self.entered.set()
        await self.release.wait()
        if self.next_at is not None:
            await self.alarm_port.set_alarm(self.next_at)


async def test_a_fired_alarm_stays_on_disk_until_its_tick_finishes(
    tmp_path: Path, clock: FixedClock, closing: Any, open_coordinators: Any
) -> None:
    # ADR-0163: a process killed mid-tick leaves the alarm on disk, so the next start fires it again,
    # as a Durable Object retries an alarm whose handler did not finish.
    path = tmp_path / "alarms.sqlite3"
    alarms = closing(DurableAlarms(path, clock))
    coordinators = open_coordinators(alarms, tmp_path, clock, _HeldTick)
    due_at = clock.now() + 5_000
    alarms.set("shards/MAIL#0", due_at)
    clock.advance(5_000)
    tick = asyncio.create_task(coordinators.run_alarm("MAIL#0"))
    held = coordinators.coordinator("MAIL#0")
    await asyncio.wait_for(held.entered.wait(), timeout=5)
    assert alarms.get("shards/MAIL#0") is None  # cleared in this process: it fired
    assert _on_disk(path, "shards/MAIL#0") == due_at  # a restart now would fire it again
    held.release.set()
    await tick
    assert _on_disk(path, "shards/MAIL#0") is None  # the tick finished and set no alarm


async def test_a_tick_that_sets_its_next_alarm_replaces_the_row(
    tmp_path: Path, clock: FixedClock, closing: Any, open_coordinators: Any
) -> None:
    path = tmp_path / "alarms.sqlite3"
    faults = StorageFaults()
    deletes = faults.fail(matching="^DELETE", nth=1_000_000)  # never fails: counts the deletes it sees
    alarms = closing(DurableAlarms(path, clock, sql=faults.executor(SqliteExecutor(path))))
    coordinators = open_coordinators(alarms, tmp_path, clock, _HeldTick)
    alarms.set("shards/MAIL#0", clock.now() + 1_000)
    clock.advance(1_000)
    held = coordinators.coordinator("MAIL#0")
    held.next_at = clock.now() + 60_000
    held.release.set()
    writes_before = faults.writes
    await coordinators.run_alarm("MAIL#0")
    assert _on_disk(path, "shards/MAIL#0") == clock.now() + 60_000
    assert (faults.writes - writes_before, deletes.seen) == (1, 0)  # one write, no delete of the fired row
