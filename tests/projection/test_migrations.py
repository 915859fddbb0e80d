"""The shipped migrations: names, idempotent application and the columns projection writes (D-1..D-16)."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from tsumugi.runtimes.local.sql_database import SqliteDatabase, apply_migrations, default_migrations_dir
from tsumugi.storage.read_model_jobs import DETAIL_COLUMNS, SUMMARY_COLUMNS
from tsumugi.storage.read_model_runs import NODE_COLUMNS, RUN_DETAIL_COLUMNS
from tsumugi.storage.read_model_schema import (
    EXPECTED_MIGRATIONS,
    JOB_COLUMNS,
    RUN_COLUMNS,
    RUN_NODE_COLUMNS,
    RUN_NODE_WAIT_COLUMNS,
)

ROOT = Path(__file__).resolve().parents[2]


def _columns(db: SqliteDatabase, table: str) -> dict[str, tuple[str, bool]]:
    conn = sqlite3.connect(db.path) if db.path != ":memory:" else None
    assert conn is not None
    rows = conn.execute(f"PRAGMA table_info({table})").fetchall()
    conn.close()
    return {r[1]: (r[2], bool(r[3])) for r in rows}


def test_shipped_files_equal_the_expected_list() -> None:
    # D-10: the migration check's list equals the directory exactly.
    assert default_migrations_dir() == ROOT / "migrations"
    assert tuple(sorted(p.name for p in (ROOT / "migrations").glob("*.sql"))) == EXPECTED_MIGRATIONS


def test_d1_dialect_no_transactions_and_if_not_exists() -> None:
    # PLATFORM.md: D1 migrations carry no BEGIN/COMMIT; D-1: all CREATEs use IF NOT EXISTS.
    for path in (ROOT / "migrations").glob("*.sql"):
        text = path.read_text()
        assert not re.search(r"\b(BEGIN|COMMIT|SAVEPOINT|PRAGMA)\b", text, re.I), path.name
        for create in re.findall(r"CREATE (?:TABLE|INDEX)[^(]*", text):
            assert "IF NOT EXISTS" in create, (path.name, create)


def test_apply_is_idempotent_and_records_the_ledger(tmp_path: Path) -> None:
    db = SqliteDatabase(tmp_path / "rm.sqlite")
    assert apply_migrations(db) == list(EXPECTED_MIGRATIONS)
    assert apply_migrations(db) == []
    assert db.ledger_names() == set(EXPECTED_MIGRATIONS)
    db.close()


def test_columns_equal_what_projection_writes_and_queries_read(tmp_path: Path) -> None:
    # D-16 [P]: the DDL's column sets equal the writer's and the queries' assumptions (J-193, D-4, D-5).
    db = SqliteDatabase(tmp_path / "rm.sqlite")
    apply_migrations(db)
    job = _columns(db, "job")
    assert set(job) == set(JOB_COLUMNS)
    assert set(_columns(db, "run")) == set(RUN_COLUMNS)
    assert set(_columns(db, "run_node")) == set(RUN_NODE_COLUMNS)
    for listed in (SUMMARY_COLUMNS, DETAIL_COLUMNS):
        assert {c.strip() for c in listed.split(",")} <= set(JOB_COLUMNS)
    assert {c.strip() for c in RUN_DETAIL_COLUMNS.split(",")} <= set(RUN_COLUMNS)
    # ADR-0155: node columns come from run_node (n.) or from the wait side table (w.), made on demand.
    node_columns = [c.strip().split(".") for c in NODE_COLUMNS.split(",")]
    assert {c for t, c in node_columns if t == "n"} <= set(RUN_NODE_COLUMNS)
    assert {c for t, c in node_columns if t == "w"} <= set(RUN_NODE_WAIT_COLUMNS)
    assert {t for t, _ in node_columns} == {"n", "w"}
    # D-1 types and nullability
    assert (
        job["id"][0] == "TEXT"
        and job["seq"] == ("INTEGER", True)
        and job["dispatched_at"] == ("INTEGER", False)
    )
    assert job["progress"] == ("REAL", False) and job["payload"] == ("TEXT", True)
    db.close()


def test_indexes_of_d1_and_d7(tmp_path: Path) -> None:
    # D-1, D-4, D-7: the index set (names and columns) the queries rely on.
    db = SqliteDatabase(tmp_path / "rm.sqlite")
    apply_migrations(db)
    conn = sqlite3.connect(db.path)
    found = {}
    for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"):
        found[name] = tuple(r[2] for r in conn.execute(f"PRAGMA index_info({name})"))
    conn.close()
    db.close()
    assert found == {
        "job_state": ("state", "updated_at"), "job_binding": ("binding", "updated_at"),
        "job_created": ("created_at",), "job_unique_key": ("unique_key", "updated_at"),
        "job_concurrency_key": ("concurrency_key", "updated_at"), "run_state": ("state", "updated_at"),
        "run_flow": ("flow", "updated_at"), "run_created": ("created_at",),
        "run_updated": ("updated_at", "id"), "run_node_run": ("run_id", "position"),
    }  # fmt: skip


async def test_batches_from_two_threads_never_interleave(tmp_path: Path) -> None:
    # ADR-0063: the connection is shared by a server thread and the loop; each batch stays atomic.
    import asyncio
    import threading

    db = SqliteDatabase(tmp_path / "rm.sqlite")
    apply_migrations(db)
    statement = "INSERT INTO d1_migrations (name) VALUES (?)"
    errors: list[BaseException] = []

    def writer(prefix: str) -> None:
        try:
            for i in range(200):
                asyncio.run(db.batch([(statement, (f"{prefix}{i}a",)), (statement, (f"{prefix}{i}b",))]))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(p,)) for p in ("x", "y")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(db.ledger_names()) == len(EXPECTED_MIGRATIONS) + 800
    db.close()
