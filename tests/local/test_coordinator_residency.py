"""Coordinators leave memory like evicted Durable Objects and come back on the next call (ADR-0132).

A dormant coordinator closes when its turn ends, at most ``max_idle`` others stay open, calls stay one at a
time (ADR-0050), and the open journal names exactly the coordinators a start must tick (ADR-0052).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tests.local.open_files import fds_on, fds_under

from tsumugi.clock import FixedClock
from tsumugi.ports import AlarmPort, SqlExecutor
from tsumugi.runtimes.local.durable_alarms import DurableAlarms
from tsumugi.runtimes.local.open_journal import OpenJournal
from tsumugi.runtimes.local.serial_coordinators import SerialCoordinators
from tsumugi.runtimes.local.sqlite_executor import SqliteExecutor


class Resident:
    """Keeps what it is told in its own file; a name starting with ``settled`` says it is dormant."""

    def __init__(self, name: str, sql: SqlExecutor, alarm: AlarmPort) -> None:
        self.name = name
        self.sql = sql
        self.alarm_port = alarm
        self.events: list[str] = []
        sql.execute("CREATE TABLE IF NOT EXISTS item (body TEXT)")

    async def write(self, body: str, yields: int = 0, arm_now_ms: int | None = None) -> int:
        self.events.append(f"enter {body}")
        self.sql.execute("INSERT INTO item (body) VALUES (?)", [body])
        for _ in range(yields):
            await asyncio.sleep(0)
        if arm_now_ms is not None:
            await self.alarm_port.set_alarm(arm_now_ms)
        self.events.append(f"leave {body}")
        return id(self)

    async def bodies(self) -> list[str]:
        return [str(row[0]) for row in self.sql.execute("SELECT body FROM item ORDER BY rowid")]

    async def alarm(self) -> None:
        self.sql.execute("INSERT INTO item (body) VALUES ('tick')")

    def dormant(self) -> bool:
        if self.name == "broken":
            raise RuntimeError("its storage cannot be read")
        return self.name.startswith("settled")


def _coordinators(
    tmp_path: Path, clock: FixedClock, closing: Any, *, max_idle: int = 4, journal: OpenJournal | None = None
) -> tuple[SerialCoordinators, DurableAlarms]:
    alarms = closing(DurableAlarms(tmp_path / "alarms.sqlite3", clock))
    coordinators = closing(
        SerialCoordinators(
            "runs",
            tmp_path / "runs",
            alarms,
            clock,
            Resident,
            SqliteExecutor,
            max_idle=max_idle,
            journal=journal,
        )
    )
    alarms.start(lambda key: coordinators.run_alarm(key.partition("/")[2]))
    return coordinators, alarms


def _file(tmp_path: Path, name: str) -> Path:
    return tmp_path / "runs" / f"{name}.sqlite3"


async def test_a_dormant_coordinator_closes_when_its_turn_ends_and_reopens_on_the_next_call(
    tmp_path: Path, clock: FixedClock, closing: Any
) -> None:
    coordinators, _alarms = _coordinators(tmp_path, clock, closing)
    await coordinators.call("settled-1", "write", "a")
    assert coordinators.open_count() == 0
    assert fds_under(tmp_path / "runs") == 0  # its database, WAL and -shm are all closed
    assert await coordinators.call("settled-1", "bodies") == ["a"]  # reopened from its file
    assert coordinators.open_count() == 0


async def test_idle_coordinators_beyond_the_cap_close_least_recently_used_first(
    tmp_path: Path, clock: FixedClock, closing: Any
) -> None:
    coordinators, _alarms = _coordinators(tmp_path, clock, closing, max_idle=2)
    for name in ("a", "b", "c"):
        await coordinators.call(name, "write", name)
    assert coordinators.open_count() == 2
    assert [fds_on(_file(tmp_path, name)) > 0 for name in ("a", "b", "c")] == [False, True, True]
    await coordinators.call("b", "write", "again")  # b is now the most recently used
    await coordinators.call("d", "write", "d")
    assert [fds_on(_file(tmp_path, name)) > 0 for name in ("b", "c", "d")] == [True, False, True]
    assert await coordinators.call("a", "bodies") == ["a"]


async def test_calls_waiting_on_a_dormant_coordinator_run_one_at_a_time_on_one_instance(
    tmp_path: Path, clock: FixedClock, closing: Any
) -> None:
    # ADR-0050: the coordinator is not closed while a call holds or awaits its lock
    coordinators, _alarms = _coordinators(tmp_path, clock, closing)
    instances = await asyncio.gather(
        *(coordinators.call("settled-2", "write", tag, yields=5) for tag in ("a", "b", "c"))
    )
    assert len(set(instances)) == 1
    assert coordinators.open_count() == 0
    assert await coordinators.call("settled-2", "bodies") == ["a", "b", "c"]


async def test_a_dormant_coordinator_with_a_due_alarm_stays_open_until_it_has_ticked(
    tmp_path: Path, clock: FixedClock, closing: Any
) -> None:
    journal = closing(OpenJournal(tmp_path / "open.sqlite3"))
    coordinators, alarms = _coordinators(tmp_path, clock, closing, journal=journal)
    await coordinators.call("settled-3", "write", "a", arm_now_ms=clock.now())
    assert coordinators.open_count() == 1
    assert journal.names("runs") == ["settled-3"]
    await alarms.fire_due()
    assert coordinators.open_count() == 0
    assert journal.names("runs") == []
    assert await coordinators.call("settled-3", "bodies") == ["a", "tick"]


async def test_the_journal_lists_what_a_kill_left_open_and_a_clean_close_keeps_only_due_alarms(
    tmp_path: Path, clock: FixedClock, closing: Any
) -> None:
    path = tmp_path / "open.sqlite3"
    journal = closing(OpenJournal(path))
    coordinators, _alarms = _coordinators(tmp_path, clock, closing, journal=journal)
    await coordinators.call("active", "write", "a")  # idle, kept open
    await coordinators.call("settled-done", "write", "b")  # closed at once, nothing due
    await coordinators.call("settled-due", "write", "c", arm_now_ms=clock.now())  # due alarm in memory only
    after_a_kill = closing(OpenJournal(path))  # a second process reading the file now
    assert after_a_kill.names("runs") == ["active", "settled-due"]
    assert not after_a_kill.created

    coordinators.close()  # a clean stop: the due alarm is not on disk, so its name stays
    assert closing(OpenJournal(path)).names("runs") == ["settled-due"]


async def test_a_new_journal_over_an_older_state_directory_ticks_every_file_once(
    tmp_path: Path, clock: FixedClock, closing: Any
) -> None:
    # ADR-0132: a state directory from before the journal may hide a lost alarm in any file
    plain, _ = _coordinators(tmp_path, clock, closing)
    for name in ("a", "settled-b"):
        await plain.call(name, "write", name)
    plain.close()
    journal = closing(OpenJournal(tmp_path / "open.sqlite3"))
    fresh, _ = _coordinators(tmp_path, clock, closing, journal=journal)
    assert journal.created
    assert fresh.start_up_names() == ["a", "settled-b"]


async def test_a_failing_dormant_check_still_returns_the_call_s_outcome(
    tmp_path: Path, clock: FixedClock, closing: Any, caplog: Any
) -> None:
    coordinators, _ = _coordinators(tmp_path, clock, closing)
    assert isinstance(await coordinators.call("broken", "write", "a"), int)
    assert await coordinators.call("broken", "bodies") == ["a"]  # kept open, still serving
    assert "closing or keeping runs/broken failed" in caplog.text
