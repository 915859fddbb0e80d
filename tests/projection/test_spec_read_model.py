"""Spec audit of the D1 read model: each migration's DDL, seq guard, retention and the gate (D-1..D-16)."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from tests.api.rest_harness import NOW, job

from tsumugi.clock import FixedClock
from tsumugi.core.config import SweepOptions
from tsumugi.projection.read_model_sweep import sweep_read_model
from tsumugi.runtimes.local.sql_database import LEDGER_DDL, SqliteDatabase, apply_migrations
from tsumugi.storage.read_model_migrations import MigrationGate, read_migration_status
from tsumugi.storage.read_model_schema import EXPECTED_MIGRATIONS
from tsumugi.storage.read_model_writer import D1ReadModelWriter, LocalMetricsWriter

MIGRATIONS = Path(__file__).resolve().parents[2] / "migrations"
WEEK_MS = 604_800_000
# (name, type, NOT NULL, primary-key position) as PRAGMA table_info reports them
Column = tuple[str, str, bool, int]


def _columns(conn: sqlite3.Connection, table: str) -> list[Column]:
    return [(r[1], r[2], bool(r[3]), r[5]) for r in conn.execute(f"PRAGMA table_info({table})")]


def _indexes(conn: sqlite3.Connection) -> dict[str, tuple[str, tuple[str, ...]]]:
    found = {}
    for name, table in conn.execute(
        "SELECT name, tbl_name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
    ):
        found[name] = (table, tuple(r[2] for r in conn.execute(f"PRAGMA index_info({name})")))
    return found


def _apply(conn: sqlite3.Connection, name: str) -> None:
    conn.executescript((MIGRATIONS / name).read_text())


JOB_0001: list[Column] = [
    ("id", "TEXT", False, 1), ("seq", "INTEGER", True, 0), ("binding", "TEXT", True, 0),
    ("state", "TEXT", True, 0), ("priority", "INTEGER", True, 0), ("attempts", "INTEGER", True, 0),
    ("max_attempts", "INTEGER", True, 0), ("concurrency_key", "TEXT", False, 0),
    ("unique_key", "TEXT", False, 0), ("guarantee", "TEXT", True, 0), ("created_at", "INTEGER", True, 0),
    ("updated_at", "INTEGER", True, 0), ("dispatched_at", "INTEGER", False, 0), ("payload", "TEXT", True, 0),
    ("run_id", "TEXT", False, 0), ("node_id", "TEXT", False, 0),
]  # fmt: skip
RUN_0004: list[Column] = [
    ("id", "TEXT", False, 1), ("seq", "INTEGER", True, 0), ("flow", "TEXT", True, 0),
    ("state", "TEXT", True, 0), ("input", "TEXT", True, 0), ("node_total", "INTEGER", True, 0),
    ("node_done", "INTEGER", True, 0), ("node_failed", "INTEGER", True, 0),
    ("created_at", "INTEGER", True, 0), ("updated_at", "INTEGER", True, 0),
]  # fmt: skip
RUN_NODE_0004: list[Column] = [
    ("run_id", "TEXT", True, 1), ("node_id", "TEXT", True, 2), ("seq", "INTEGER", True, 0),
    ("binding", "TEXT", True, 0), ("state", "TEXT", True, 0), ("container", "INTEGER", True, 0),
    ("parent", "TEXT", False, 0), ("origin", "TEXT", True, 0), ("after", "TEXT", True, 0),
    ("job_id", "TEXT", False, 0), ("result", "TEXT", False, 0), ("error", "TEXT", False, 0),
    ("position", "INTEGER", True, 0), ("created_at", "INTEGER", True, 0), ("updated_at", "INTEGER", True, 0),
]  # fmt: skip


def test_each_migration_adds_exactly_what_its_rule_states() -> None:
    # D-1..D-8: applied one file at a time, every step adds exactly the stated columns and indexes.
    conn = sqlite3.connect(":memory:")
    _apply(conn, "0001_create_job_read_model.sql")  # D-1
    assert _columns(conn, "job") == JOB_0001
    assert _indexes(conn) == {
        "job_state": ("job", ("state", "updated_at")), "job_binding": ("job", ("binding", "updated_at")),
        "job_created": ("job", ("created_at",)),
    }  # fmt: skip
    _apply(conn, "0002_add_attempt_log.sql")  # D-2
    assert _columns(conn, "job")[len(JOB_0001) :] == [("attempts_log", "TEXT", False, 0)]
    _apply(conn, "0003_add_result.sql")  # D-3
    assert _columns(conn, "job")[len(JOB_0001) + 1 :] == [("result", "TEXT", False, 0)]
    _apply(conn, "0004_create_run_read_model.sql")  # D-4
    assert _columns(conn, "run") == RUN_0004 and _columns(conn, "run_node") == RUN_NODE_0004
    assert {k: v for k, v in _indexes(conn).items() if v[0] != "job"} == {
        "run_state": ("run", ("state", "updated_at")), "run_flow": ("run", ("flow", "updated_at")),
        "run_created": ("run", ("created_at",)), "run_updated": ("run", ("updated_at", "id")),
        "run_node_run": ("run_node", ("run_id", "position")),
    }  # fmt: skip
    _apply(conn, "0005_add_subflow.sql")  # D-5
    assert _columns(conn, "run_node")[len(RUN_NODE_0004) :] == [("child_run_id", "TEXT", False, 0)]
    assert _columns(conn, "run")[len(RUN_0004) :] == [
        ("parent_run_id", "TEXT", False, 0), ("parent_node_id", "TEXT", False, 0),
    ]  # fmt: skip
    _apply(conn, "0006_add_run_after.sql")  # D-6
    assert _columns(conn, "job")[-1] == ("run_after", "INTEGER", False, 0)
    before = set(_indexes(conn))
    _apply(conn, "0007_add_key_indexes.sql")  # D-7
    assert {k: v for k, v in _indexes(conn).items() if k not in before} == {
        "job_unique_key": ("job", ("unique_key", "updated_at")),
        "job_concurrency_key": ("job", ("concurrency_key", "updated_at")),
    }
    _apply(conn, "0008_add_progress.sql")  # D-8
    assert _columns(conn, "job")[-1] == ("progress", "REAL", False, 0)
    assert len(_columns(conn, "job")) == len(JOB_0001) + 4  # D-2, D-3, D-6, D-8
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert tables == {"job", "run", "run_node"}  # the package owns no ledger schema (D-11)
    # D-1: IF NOT EXISTS everywhere, so the CREATE-only files re-apply as no-ops.
    for name in (
        "0001_create_job_read_model.sql",
        "0004_create_run_read_model.sql",
        "0007_add_key_indexes.sql",
    ):
        _apply(conn, name)
    conn.close()


def test_existing_job_rows_read_null_in_added_columns() -> None:
    # D-6: rows projected before 0006 keep run_after NULL until re-projected; same for D-2, D-3, D-8.
    conn = sqlite3.connect(":memory:")
    _apply(conn, "0001_create_job_read_model.sql")
    conn.execute(
        "INSERT INTO job VALUES ('MAIL#0:a', 1, 'MAIL', 'QUEUED', 0, 0, 3, NULL, NULL, 'at-least-once', "
        "1, 1, NULL, 'null', NULL, NULL)"
    )
    for name in EXPECTED_MIGRATIONS[1:]:
        _apply(conn, name)
    row = conn.execute("SELECT attempts_log, result, run_after, progress FROM job").fetchone()
    assert row == (None, None, None, None)
    conn.close()


@pytest.fixture
def db() -> SqliteDatabase:
    database = SqliteDatabase(":memory:")
    apply_migrations(database)
    return database


def _run(seq: int, **fields: Any) -> dict[str, Any]:
    base = {"id": "signup:r1", "seq": seq, "flow": "signup", "state": "RUNNING", "input": '{"a":1}',
            "node_total": 2, "node_done": 0, "node_failed": 0, "created_at": 10, "updated_at": 10,
            "parent_run_id": None, "parent_node_id": None}  # fmt: skip
    return {**base, **fields}


async def test_equal_seq_is_a_noop_for_every_table(db: SqliteDatabase) -> None:
    # D-9: only a strictly greater seq overwrites (a replayed batch carries the same seq).
    writer = D1ReadModelWriter(db)
    await writer.upsert_jobs([job(seq=4, state="QUEUED")])
    await writer.upsert_jobs([job(seq=4, state="COMPLETED")])
    await writer.upsert_runs([_run(4)])
    await writer.upsert_runs([_run(4, state="COMPLETED")])
    node = {"run_id": "signup:r1", "node_id": "a", "seq": 4, "binding": "MAIL", "state": "RUNNING",
            "container": True, "parent": None, "origin": "static", "after": [], "job_id": "MAIL#0:a1",
            "child_run_id": None, "result": None, "error": None, "position": 0, "created_at": 1,
            "updated_at": 1}  # fmt: skip
    await writer.upsert_run_nodes([node])
    await writer.upsert_run_nodes([{**node, "state": "COMPLETED"}])
    assert await db.all("SELECT state, seq FROM job") == [{"state": "QUEUED", "seq": 4}]
    assert await db.all("SELECT state, seq FROM run") == [{"state": "RUNNING", "seq": 4}]
    assert await db.all("SELECT state, container, after FROM run_node") == [
        {"state": "RUNNING", "container": 1, "after": "[]"}
    ]


async def test_run_frozen_columns_and_moving_ones(db: SqliteDatabase) -> None:
    # D-9: run keeps id, created_at and flow; everything else, parent links included (D-5), moves forward.
    writer = D1ReadModelWriter(db)
    await writer.upsert_runs([_run(1)])
    await writer.upsert_runs([_run(2, flow="other", created_at=99, state="COMPLETED", node_done=2,
                                   updated_at=50, parent_run_id="p:1", parent_node_id="n")])  # fmt: skip
    await writer.upsert_runs([_run(1, state="FAILED")])
    rows = await db.all("SELECT * FROM run")
    assert rows == [{"id": "signup:r1", "seq": 2, "flow": "signup", "state": "COMPLETED", "input": '{"a":1}',
                     "node_total": 2, "node_done": 2, "node_failed": 0, "created_at": 10, "updated_at": 50,
                     "parent_run_id": "p:1", "parent_node_id": "n"}]  # fmt: skip


async def test_job_seq_and_all_other_columns_move_forward(db: SqliteDatabase) -> None:
    # D-9: a newer snapshot replaces every non-frozen column, seq included, and NULLs what it lacks.
    writer = D1ReadModelWriter(db)
    await writer.upsert_jobs([job(seq=1, progress=0.5, result='{"x":1}', run_after=NOW)])
    newer = job(seq=2, state="RUNNING", attempts=1, dispatched_at=NOW, unique_key="u", concurrency_key="c",
                run_id="f:1", node_id="n", max_attempts=5, priority=3)  # fmt: skip
    for name in ("run_after", "progress", "result"):
        newer.pop(name, None)
    await writer.upsert_jobs([newer])
    row = (await db.all("SELECT * FROM job"))[0]
    assert {k: row[k] for k in ("seq", "state", "attempts", "dispatched_at", "unique_key", "concurrency_key",
                                "run_id", "node_id", "max_attempts", "priority", "run_after", "progress",
                                "result")} == {
        "seq": 2, "state": "RUNNING", "attempts": 1, "dispatched_at": NOW, "unique_key": "u",
        "concurrency_key": "c", "run_id": "f:1", "node_id": "n", "max_attempts": 5, "priority": 3,
        "run_after": None, "progress": None, "result": None,
    }  # fmt: skip


async def test_sweep_boundary_defaults_and_log_line(
    db: SqliteDatabase, caplog: pytest.LogCaptureFixture
) -> None:
    # D-9: `updated_at < now - olderThanMs` (strict), defaults 7 days and 1 000 rows; J-207 log line exact,
    # and silent when nothing was swept.
    assert (SweepOptions().older_than_ms, SweepOptions().limit) == (WEEK_MS, 1_000)
    edge = NOW - WEEK_MS
    await D1ReadModelWriter(db).upsert_jobs(
        [job(f"MAIL#0:o{i}", state="COMPLETED", updated_at=edge - 1) for i in range(1_001)]
        + [job("MAIL#0:edge", state="FAILED", updated_at=edge)]
    )
    with caplog.at_level(logging.INFO, logger="tsumugi"):
        assert await sweep_read_model(db, NOW) == 1_000
        assert await sweep_read_model(db, NOW) == 1
        assert await sweep_read_model(db, NOW) == 0
    messages = [r.getMessage() for r in caplog.records if r.name == "tsumugi"]
    assert messages == [
        "tsumugi: swept 1000 jobs from the read model",
        "tsumugi: swept 1 jobs from the read model",
    ]
    assert await db.all("SELECT id FROM job") == [{"id": "MAIL#0:edge"}]


async def test_sweep_leaves_run_nodes_and_metrics(db: SqliteDatabase) -> None:
    # D-9 [I]: run_node rows are never deleted; M-5: metric points outlive the swept job rows.
    old = NOW - 2 * WEEK_MS
    snapshot = job(state="COMPLETED", updated_at=old, dispatched_at=old - 10)
    writer = D1ReadModelWriter(db)
    await writer.upsert_jobs([snapshot])
    node = {"run_id": "f:1", "node_id": "a", "seq": 1, "binding": "MAIL", "state": "COMPLETED",
            "container": False, "parent": None, "origin": "static", "after": [], "job_id": snapshot["id"],
            "child_run_id": None, "result": None, "error": None, "position": 0, "created_at": old,
            "updated_at": old}  # fmt: skip
    await writer.upsert_run_nodes([node])
    assert await LocalMetricsWriter(db).write([snapshot]) == 1
    assert await sweep_read_model(db, NOW) == 1
    assert await db.all("SELECT id FROM job") == []
    assert len(await db.all("SELECT node_id FROM run_node")) == 1
    assert await db.all("SELECT at, duration_ms FROM tsumugi_metric") == [{"at": old, "duration_ms": 10}]


async def test_no_such_table_is_matched_case_insensitively() -> None:
    # D-12: "no such table" in any case plus a mention of d1_migrations -> nothing applied.
    class Failing:
        async def all(self, sql: str, params: Any = ()) -> list[dict[str, Any]]:
            raise RuntimeError("D1_ERROR: No Such Table: d1_migrations: SQLITE_ERROR")

        async def run(self, sql: str, params: Any = ()) -> int:
            return 0

        async def batch(self, statements: Any) -> None:
            return None

    status = await read_migration_status(Failing())
    assert (status.kind, status.missing) == ("missing", EXPECTED_MIGRATIONS)


async def test_one_missing_migration_message_and_recovery() -> None:
    # D-13: one name, the literal `<database>`; D-14: missing is not cached, ok then is.
    db = SqliteDatabase(":memory:")
    db.executescript(LEDGER_DDL)
    for name in EXPECTED_MIGRATIONS[:-1]:
        await db.run("INSERT INTO d1_migrations (name) VALUES (?)", (name,))
    gate = MigrationGate(FixedClock(NOW).now)
    status = await gate.check(db)
    assert status.error_message() == (
        f"database schema is out of date: {EXPECTED_MIGRATIONS[-1]} not applied. "
        'run "wrangler d1 migrations apply <database> --remote"'
    )
    await db.run("INSERT INTO d1_migrations (name) VALUES (?)", (EXPECTED_MIGRATIONS[-1],))
    assert (await gate.check(db)).kind == "ok"
    assert (await gate.check(db)).error_message() == ""
