"""The migration check and its cache (D-10..D-15, A-16)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from tsumugi.clock import FixedClock
from tsumugi.ports import SqlValue
from tsumugi.runtimes.local.sql_database import LEDGER_DDL, SqliteDatabase, apply_migrations
from tsumugi.storage.read_model_migrations import MigrationGate, read_migration_status
from tsumugi.storage.read_model_schema import EXPECTED_MIGRATIONS


class ScriptedDb:
    """A SqlDatabase whose ledger read returns or raises what the test scripts."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.reads = 0

    async def all(self, sql: str, params: Sequence[SqlValue] = ()) -> list[dict[str, SqlValue]]:
        self.reads += 1
        await asyncio.sleep(0)
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        return [{"name": n} for n in answer]

    async def run(self, sql: str, params: Sequence[SqlValue] = ()) -> int:
        return 0

    async def batch(self, statements: Sequence[tuple[str, Sequence[SqlValue]]]) -> None:
        return None


async def test_no_ledger_means_everything_missing() -> None:
    # D-12: "no such table: d1_migrations" -> all eight missing, with the D-13 message.
    status = await read_migration_status(SqliteDatabase(":memory:"))
    assert status.kind == "missing" and status.missing == EXPECTED_MIGRATIONS
    assert status.error_message() == (
        "database schema is out of date: " + ", ".join(EXPECTED_MIGRATIONS) + " not applied. "
        'run "wrangler d1 migrations apply <database> --remote"'
    )


async def test_partial_ledger_lists_the_missing_in_order_and_ignores_extras() -> None:
    # D-13, D-15
    db = SqliteDatabase(":memory:")
    db.executescript(LEDGER_DDL)
    for name in ("0001_create_job_read_model.sql", "0003_add_result.sql", "9999_extra.sql"):
        await db.run("INSERT INTO d1_migrations (name) VALUES (?)", (name,))
    status = await read_migration_status(db)
    assert status.missing == tuple(n for n in EXPECTED_MIGRATIONS if n[:4] not in ("0001", "0003"))


async def test_other_failures_are_unavailable() -> None:
    # D-12, D-13: never suggests applying migrations.
    for error in (RuntimeError("D1_ERROR: network"), RuntimeError("no such table: other")):
        status = await read_migration_status(ScriptedDb(error))
        assert status.kind == "unavailable"
        assert status.error_message() == "database temporarily unavailable"


async def test_ok_is_cached_forever() -> None:
    # D-14
    db = SqliteDatabase(":memory:")
    apply_migrations(db)
    gate = MigrationGate(FixedClock().now)
    assert (await gate.check(db)).kind == "ok"
    db.executescript("DROP TABLE d1_migrations")
    assert (await gate.check(db)).kind == "ok"


async def test_missing_is_never_cached() -> None:
    # D-14: recovers after applying, without a restart.
    db = SqliteDatabase(":memory:")
    gate = MigrationGate(FixedClock().now)
    assert (await gate.check(db)).kind == "missing"
    apply_migrations(db)
    assert (await gate.check(db)).kind == "ok"


async def test_unavailable_is_cached_for_five_seconds() -> None:
    # D-14
    clock = FixedClock()
    db = ScriptedDb(RuntimeError("down"), list(EXPECTED_MIGRATIONS))
    gate = MigrationGate(clock.now)
    assert (await gate.check(db)).kind == "unavailable"
    clock.advance(4_999)
    assert (await gate.check(db)).kind == "unavailable"
    assert db.reads == 1
    clock.advance(1)
    assert (await gate.check(db)).kind == "ok"
    assert db.reads == 2


async def test_concurrent_requests_share_one_check_and_databases_are_separate() -> None:
    # D-14: one in-flight check; the cache is per database object.
    db = ScriptedDb(list(EXPECTED_MIGRATIONS))
    other = ScriptedDb([])
    gate = MigrationGate(FixedClock().now)
    results = await asyncio.gather(*(gate.check(db) for _ in range(10)), gate.check(other))
    assert [r.kind for r in results] == ["ok"] * 10 + ["missing"]
    assert db.reads == 1
