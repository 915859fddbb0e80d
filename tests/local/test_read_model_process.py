"""The coordinators' writes into the read model run in a child process (ADR-0170).

Each test runs a real child on a real SQLite file; reads go through this process's own connection.
"""

from __future__ import annotations

import asyncio
import logging
import os
import select
import signal
import sqlite3
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tsumugi.runtimes.local import read_model_process
from tsumugi.runtimes.local.read_model_process import WriterExitedError, WriterProcess
from tsumugi.runtimes.local.sql_database import SqliteDatabase

INSERT = "INSERT INTO item (id, note) VALUES (?, ?)"


@pytest.fixture
async def writer(tmp_path: Path) -> AsyncIterator[WriterProcess]:
    reads = SqliteDatabase(tmp_path / "read_model.sqlite3")
    await reads.run("CREATE TABLE item (id INTEGER PRIMARY KEY, note TEXT)")
    process = WriterProcess(reads)
    yield process
    process.close()
    reads.close()


async def _ids(writer: WriterProcess) -> list[int]:
    return [int(str(row["id"])) for row in await writer.all("SELECT id FROM item ORDER BY id")]


def _kill(pid: int) -> None:
    """SIGKILL ``pid`` and return once it has exited (a zombie its parent has not reaped yet counts)."""
    pidfd = os.pidfd_open(pid)
    try:
        os.kill(pid, signal.SIGKILL)
        readable, _, _ = select.select([pidfd], [], [], 10)  # readable once the process has ended
        assert readable, f"process {pid} outlived SIGKILL"
    finally:
        os.close(pidfd)


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


async def test_a_write_is_made_by_another_process_and_read_here_once_awaited(writer: WriterProcess) -> None:
    await writer.batch(
        [(INSERT, (1, "a")), (INSERT, (2, None)), ("UPDATE item SET note = ? WHERE id = ?", ("b", 1))]
    )
    assert writer.pid is not None and writer.pid != os.getpid()
    assert await writer.all("SELECT id, note FROM item ORDER BY id") == [
        {"id": 1, "note": "b"},
        {"id": 2, "note": None},
    ]
    assert await writer.run("DELETE FROM item WHERE id > ?", (0,)) == 2


async def test_a_failing_batch_raises_sqlites_error_and_leaves_nothing_of_itself(
    writer: WriterProcess,
) -> None:
    await writer.batch([(INSERT, (1, "kept"))])
    with pytest.raises(sqlite3.IntegrityError, match="UNIQUE"):
        await writer.batch([(INSERT, (2, "rolled back")), (INSERT, (1, "a duplicate"))])
    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        await writer.run("DELETE FROM missing")
    assert await _ids(writer) == [1]


async def test_writes_sent_together_are_answered_in_order(writer: WriterProcess) -> None:
    await asyncio.gather(
        *(writer.batch([(INSERT, (n, "x" * 50_000))]) for n in range(1, 41))
    )  # past a pipe's room
    assert await _ids(writer) == list(range(1, 41))
    assert await writer.run("UPDATE item SET note = NULL") == 40


async def test_a_killed_writer_fails_what_it_had_not_answered_and_the_next_write_starts_another(
    writer: WriterProcess,
) -> None:
    await writer.batch([(INSERT, (1, "a"))])
    killed = writer.pid
    assert killed is not None
    _kill(killed)
    attempts = 0
    while True:  # the first write after the kill fails: the child that would have made it is gone
        attempts += 1
        try:
            await writer.batch([(INSERT, (2, "b"))])
            break
        except WriterExitedError:
            assert attempts < 2, "no new writer process was started"
    assert writer.pid not in (None, killed)
    assert await _ids(writer) == [1, 2]


async def test_close_ends_the_child_after_its_last_write(writer: WriterProcess) -> None:
    await writer.batch([(INSERT, (0, "first"))])
    pending = asyncio.ensure_future(writer.batch([(INSERT, (n, "x" * 100)) for n in range(1, 1001)]))
    await asyncio.sleep(0)  # sent (partly still in this process: more than a pipe holds), not answered
    pid = writer.pid
    assert pid is not None
    writer.close()
    assert _gone(pid)
    pending.cancel()
    assert await _ids(writer) == list(range(1001))


async def test_without_a_child_the_writes_are_made_here(
    writer: WriterProcess, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def refuse(*args: object, **kwargs: object) -> subprocess.Popen[bytes]:
        raise OSError("no processes left")

    monkeypatch.setattr(read_model_process.subprocess, "Popen", refuse)
    with caplog.at_level(logging.WARNING, logger="tsumugi.local"):
        await writer.batch([(INSERT, (1, "a"))])
        assert await writer.run("UPDATE item SET note = ?", ("b",)) == 1
    assert writer.pid is None
    assert "no writer process (no processes left)" in caplog.text
    assert await writer.all("SELECT note FROM item") == [{"note": "b"}]
