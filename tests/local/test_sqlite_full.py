"""A real full disk, as SQLite reports it (``max_page_count`` reached: SQLITE_FULL), in the local stores.

SQLite rolls a transaction back by itself when a write meets a full disk; a ROLLBACK after that fails
with "cannot rollback - no transaction is active" and used to hide the disk-full error. Each store must
raise the real error, keep nothing of the failed transaction and work again once there is room.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tsumugi.clock import FixedClock
from tsumugi.runtimes.local.dispatch_queue import DurableQueue
from tsumugi.runtimes.local.sql_database import SqliteDatabase
from tsumugi.runtimes.local.sqlite_executor import SqliteExecutor
from tsumugi.testing.faults import DISK_FULL

ROOM_PAGES = 3  # a few pages beyond what the file holds: the second or third row of 1 KB fills them
UNLIMITED_PAGES = 1_073_741_823  # SQLite's default max_page_count
ROW = "x" * 1_000


def _fill_up(sql: SqliteExecutor) -> None:
    [(pages,)] = sql.execute("PRAGMA page_count")
    sql.execute(f"PRAGMA max_page_count={int(str(pages)) + ROOM_PAGES}")


def test_a_transaction_stopped_by_a_full_disk_raises_the_full_disk_error(tmp_path: Path) -> None:
    sql = SqliteExecutor(tmp_path / "shard.sqlite3")
    sql.execute("CREATE TABLE t (x TEXT)")
    _fill_up(sql)

    def insert_many() -> None:
        for _ in range(100):
            sql.execute("INSERT INTO t VALUES (?)", (ROW,))

    with pytest.raises(sqlite3.OperationalError, match=DISK_FULL):
        sql.transaction(insert_many)
    assert sql.execute("SELECT count(*) FROM t") == [(0,)]  # nothing of it stayed
    sql.execute(f"PRAGMA max_page_count={UNLIMITED_PAGES}")  # space is freed
    sql.transaction(insert_many)
    assert sql.execute("SELECT count(*) FROM t") == [(100,)]
    sql.close()


async def test_the_dispatch_queue_refuses_a_batch_whole_and_takes_the_next(tmp_path: Path) -> None:
    clock = FixedClock(1_700_000_000_000)
    path = tmp_path / "queue.sqlite3"
    sql = SqliteExecutor(path)
    queue = DurableQueue(path, clock, sql=sql)
    _fill_up(sql)
    with pytest.raises(sqlite3.OperationalError, match=DISK_FULL):
        await queue.send_batch([{"jobId": f"MAIL#0:{n}", "pad": ROW} for n in range(100)])
    assert queue.depth() == 0
    sql.execute(f"PRAGMA max_page_count={UNLIMITED_PAGES}")
    await queue.send_batch([{"jobId": "MAIL#0:a"}])
    assert [m.body for m in queue.lease(10)] == ['{"jobId":"MAIL#0:a"}']
    queue.close()


async def test_the_read_model_refuses_a_batch_whole_and_takes_the_next(tmp_path: Path) -> None:
    db = SqliteDatabase(tmp_path / "read_model.sqlite3")
    await db.run("CREATE TABLE job (id TEXT PRIMARY KEY, body TEXT)")
    [row] = await db.all("PRAGMA page_count")
    await db.run(f"PRAGMA max_page_count={int(str(row['page_count'])) + ROOM_PAGES}")
    statements = [("INSERT INTO job VALUES (?, ?)", (str(n), ROW)) for n in range(100)]
    with pytest.raises(sqlite3.OperationalError, match=DISK_FULL):
        await db.batch(statements)
    assert await db.all("SELECT count(*) AS n FROM job") == [{"n": 0}]
    await db.run(f"PRAGMA max_page_count={UNLIMITED_PAGES}")
    await db.batch(statements)
    assert await db.all("SELECT count(*) AS n FROM job") == [{"n": 100}]
    db.close()
