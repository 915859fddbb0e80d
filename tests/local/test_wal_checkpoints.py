"""Background checkpoints: a store's commits reach its database file without the store checkpointing."""

from __future__ import annotations

import contextlib
import functools
import os
import sqlite3
from pathlib import Path

from tests import polling

from tsumugi.runtimes.local.sql_database import SqliteDatabase
from tsumugi.runtimes.local.sqlite_executor import SqliteExecutor
from tsumugi.runtimes.local.wal_checkpoints import CHECKPOINTS, SAFETY_NET_PAGES

DEADLINE_S = 10.0


def _rows_in_database_file(path: Path) -> int:
    """Rows of ``item`` in the database file itself: ``immutable`` reads ignore the write-ahead log.

    Such a read takes no lock, so it can meet a checkpoint half-way through copying pages and see a torn
    file: that read counts nothing, and the caller polls again (SQLite's own readers never see it).
    """
    uri = f"file:{path}?immutable=1"
    with contextlib.closing(sqlite3.connect(uri, uri=True)) as db:
        try:
            return int(db.execute("SELECT count(*) FROM item").fetchone()[0])
        except sqlite3.DatabaseError:  # the table is still only in the log, or the copy is half done
            return 0


def _intact(path: Path) -> bool:
    with contextlib.closing(sqlite3.connect(path)) as db:
        return bool(db.execute("PRAGMA integrity_check").fetchone()[0] == "ok")


async def test_commits_reach_the_database_file_while_the_store_stays_open(tmp_path: Path) -> None:
    path = tmp_path / "shard.sqlite3"
    store = SqliteExecutor(path)
    try:
        [(threshold,)] = store.execute("PRAGMA wal_autocheckpoint")
        assert threshold == SAFETY_NET_PAGES  # far above what is written here: the store never checkpoints
        store.execute("CREATE TABLE item (n INTEGER)")
        for n in range(50):
            store.transaction(functools.partial(store.execute, "INSERT INTO item (n) VALUES (?)", (n,)))
        await polling.until(lambda: _rows_in_database_file(path) == 50, "a background checkpoint", DEADLINE_S)
        assert _intact(path)
    finally:
        store.close()


async def test_the_read_model_is_checkpointed_in_the_background_too(tmp_path: Path) -> None:
    path = tmp_path / "read_model.sqlite3"
    database = SqliteDatabase(path)
    try:
        await database.batch(
            [("CREATE TABLE item (n INTEGER)", ()), ("INSERT INTO item (n) VALUES (?)", (1,))]
        )
        await polling.until(lambda: _rows_in_database_file(path) == 1, "a background checkpoint", DEADLINE_S)
    finally:
        database.close()


def test_closing_the_store_leaves_no_log_behind(tmp_path: Path) -> None:
    # The thread's own connection is closed first, so the store's close is the file's last one.
    path = tmp_path / "shard.sqlite3"
    store = SqliteExecutor(path)
    store.execute("CREATE TABLE item (n INTEGER)")
    store.transaction(lambda: store.execute("INSERT INTO item (n) VALUES (1)"))
    store.close()
    assert not Path(f"{path}-wal").exists()
    assert _rows_in_database_file(path) == 1


async def test_a_deleted_file_is_not_created_again(tmp_path: Path) -> None:
    path = tmp_path / "gone.sqlite3"
    store = SqliteExecutor(path)
    store.execute("CREATE TABLE item (n INTEGER)")
    for suffix in ("", "-wal", "-shm"):
        os.unlink(f"{path}{suffix}")
    CHECKPOINTS.mark(str(path))  # the thread tries the file: it is gone, and stays gone
    other = SqliteExecutor(tmp_path / "other.sqlite3")  # a later checkpoint proves the thread moved on
    try:
        other.execute("CREATE TABLE item (n INTEGER)")
        other.transaction(lambda: other.execute("INSERT INTO item (n) VALUES (1)"))
        await polling.until(
            lambda: _rows_in_database_file(tmp_path / "other.sqlite3") == 1, "the next checkpoint", DEADLINE_S
        )
        assert not path.exists()
    finally:
        other.close()
        store.close()
