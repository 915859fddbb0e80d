"""None binds as SQL NULL in the local stores, in single statements and in batches (ADR-0166)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tsumugi.runtimes.local.sql_database import SqliteDatabase
from tsumugi.runtimes.local.sqlite_executor import SqliteExecutor


def test_none_is_stored_as_null_by_execute_and_execute_many() -> None:
    sql = SqliteExecutor()
    sql.execute("CREATE TABLE t (n INTEGER, v TEXT)")
    sql.execute("INSERT INTO t VALUES (?, ?)", (1, None))
    sql.execute_many("INSERT INTO t VALUES (?, ?)", [(2, None), (3, "x")])
    rows = sql.execute("SELECT n, v, typeof(v), v IS NULL FROM t ORDER BY n")
    assert rows == [(1, None, "null", 1), (2, None, "null", 1), (3, "x", "text", 0)]


def test_none_is_stored_as_null_in_a_read_model_batch(tmp_path: Path) -> None:
    db = SqliteDatabase(tmp_path / "read_model.sqlite3")

    async def run() -> list[dict[str, object]]:
        await db.run("CREATE TABLE t (n INTEGER, v TEXT)")
        await db.batch([("INSERT INTO t VALUES (?, ?)", (n, None)) for n in range(3)])
        return list(await db.all("SELECT count(*) AS nulls FROM t WHERE v IS NULL AND typeof(v) = 'null'"))

    try:
        assert asyncio.run(run()) == [{"nulls": 3}]
    finally:
        db.close()
