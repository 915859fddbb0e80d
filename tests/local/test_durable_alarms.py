"""Durable alarms: persisted, re-armed at start, fired under the coordinator's lock, retried on failure."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tsumugi.clock import FixedClock
from tsumugi.runtimes.local.durable_alarms import DurableAlarms
from tsumugi.runtimes.local.local_alarm import LocalAlarm
from tsumugi.runtimes.local.serial_coordinators import ALARM_RETRY_FIRST_MS, SerialCoordinators
from tsumugi.runtimes.local.sqlite_executor import SqliteExecutor


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
