"""The local read model writes on a thread of its own, in order; reads see every awaited write (ADR-0152)."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from tsumugi.runtimes.local.sql_database import SqliteDatabase

TABLE = [("CREATE TABLE t (n INTEGER PRIMARY KEY, who TEXT)", ())]


async def test_a_read_after_an_awaited_write_sees_it(tmp_path: Path) -> None:
    db = SqliteDatabase(tmp_path / "rm.sqlite3")
    try:
        await db.batch(TABLE)
        await db.batch([("INSERT INTO t (n, who) VALUES (?, ?)", (1, "a"))])
        assert await db.all("SELECT n, who FROM t") == [{"n": 1, "who": "a"}]
        assert await db.run("UPDATE t SET who = ? WHERE n = ?", ("b", 1)) == 1
        assert await db.all("SELECT who FROM t") == [{"who": "b"}]
    finally:
        db.close()


async def test_writes_land_in_the_order_they_were_made(tmp_path: Path) -> None:
    db = SqliteDatabase(tmp_path / "rm.sqlite3")
    try:
        await db.batch(TABLE)
        # Each write replaces the same row: only the order in which they ran decides what is left.
        await asyncio.gather(
            *(db.batch([("INSERT OR REPLACE INTO t (n, who) VALUES (1, ?)", (str(i),))]) for i in range(50))
        )
        assert await db.all("SELECT who FROM t") == [{"who": "49"}]
    finally:
        db.close()


async def test_the_loop_runs_while_a_write_is_in_progress(tmp_path: Path) -> None:
    db = SqliteDatabase(tmp_path / "rm.sqlite3")
    release = threading.Event()
    writer_threads: list[str] = []

    def held(value: int) -> int:
        writer_threads.append(threading.current_thread().name)
        assert release.wait(timeout=30), "the loop never ran while the write was held"
        return value

    try:
        await db.batch(TABLE)
        db._conn.create_function("held", 1, held)  # the writer's connection
        write = asyncio.ensure_future(db.batch([("INSERT INTO t (n, who) VALUES (held(7), 'x')", ())]))
        while not writer_threads:  # the writer thread has started the statement
            await asyncio.sleep(0)
        assert not write.done()
        assert await db.all("SELECT count(*) AS c FROM t") == [{"c": 0}]  # a reader is not held up
        release.set()  # only this coroutine, running meanwhile, lets the write finish
        await write
        assert await db.all("SELECT n FROM t") == [{"n": 7}]
        assert writer_threads != [threading.current_thread().name]
    finally:
        release.set()
        db.close()


async def test_a_write_whose_caller_was_cancelled_still_lands_before_close(tmp_path: Path) -> None:
    path = tmp_path / "rm.sqlite3"
    db = SqliteDatabase(path)
    release = threading.Event()
    started = threading.Event()

    def held(value: int) -> int:
        started.set()
        release.wait(timeout=30)
        return value

    await db.batch(TABLE)
    db._conn.create_function("held", 1, held)
    first = asyncio.ensure_future(db.batch([("INSERT INTO t (n, who) VALUES (held(1), 'first')", ())]))
    while not started.is_set():
        await asyncio.sleep(0)
    queued = asyncio.ensure_future(db.batch([("INSERT INTO t (n, who) VALUES (2, 'queued')", ())]))
    await asyncio.sleep(0)  # the second write is submitted, behind the first
    queued.cancel()
    release.set()
    await first
    db.close()  # waits for the writes already made
    reopened = SqliteDatabase(path, inline_writes=True)
    try:
        assert await reopened.all("SELECT who FROM t ORDER BY n") == [{"who": "first"}, {"who": "queued"}]
    finally:
        reopened.close()


async def test_memory_and_inline_databases_write_on_the_callers_thread(tmp_path: Path) -> None:
    for db in (SqliteDatabase(":memory:"), SqliteDatabase(tmp_path / "i.sqlite3", inline_writes=True)):
        seen: list[str] = []
        db._conn.create_function(
            "who", 0, lambda seen=seen: seen.append(threading.current_thread().name) or 1
        )
        try:
            await db.batch(TABLE)
            await db.batch([("INSERT INTO t (n, who) VALUES (who(), 'x')", ())])
            assert seen == [threading.current_thread().name]
        finally:
            db.close()
