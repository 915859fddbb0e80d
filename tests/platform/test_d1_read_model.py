"""Proof 2: the migrations apply on real local D1, the schema is what the projector writes, and the
projector's and read model's statements run on that same database through Miniflare.

Rules: D-1..D-8 (files and DDL), D-9 / J-192 (seq-guarded upserts, NULL for an empty attempt log),
D-11 (the ledger), D-16 (the column set of the migrations equals the columns the queries assume), J-172.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.platform.node_tooling import REPO_ROOT, node_or_skip, run_wrangler
from tests.platform.replay_client import LoopbackD1Database, ReplayServer

from tsumugi.storage.read_model_jobs import JobFilter, JobPage, count_by_state, get_job, list_jobs
from tsumugi.storage.read_model_migrations import read_migration_status
from tsumugi.storage.read_model_schema import (
    EXPECTED_MIGRATIONS,
    JOB_COLUMNS,
    RUN_COLUMNS,
    RUN_NODE_COLUMNS,
)
from tsumugi.storage.read_model_writer import D1ReadModelWriter

pytestmark = pytest.mark.platform

NOW_MS = 1_764_460_800_000  # 2025-11-30T00:00:00Z, a fixed instant for the snapshots
DAY_MS = 86_400_000


@pytest.fixture(scope="module")
def migrated_d1(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A local D1 state directory after ``wrangler d1 migrations apply TSUMUGI_DB --local``."""
    persist = tmp_path_factory.mktemp("d1-state")
    result = run_wrangler(
        ["d1", "migrations", "apply", "TSUMUGI_DB", "--local", "--persist-to", str(persist)]
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return persist


@pytest.fixture(scope="module")
def d1_server(migrated_d1: Path) -> Iterator[ReplayServer]:
    server = ReplayServer(node_or_skip(), d1_persist=migrated_d1 / "v3" / "d1")
    try:
        yield server
    finally:
        server.close()


def d1_file(persist: Path) -> Path:
    (database,) = [p for p in (persist / "v3" / "d1").rglob("*.sqlite") if p.name != "metadata.sqlite"]
    return database


def columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]


def test_migrations_apply_and_the_schema_matches_the_projector(migrated_d1: Path) -> None:
    # D-1..D-8, D-16: every file applied, in order; the tables hold exactly the projected columns.
    shipped = tuple(sorted(p.name for p in (REPO_ROOT / "migrations").glob("*.sql")))
    assert shipped == EXPECTED_MIGRATIONS
    with sqlite3.connect(d1_file(migrated_d1)) as conn:
        ledger = tuple(row[0] for row in conn.execute("SELECT name FROM d1_migrations ORDER BY id"))
        assert ledger == EXPECTED_MIGRATIONS
        assert sorted(columns(conn, "job")) == sorted(JOB_COLUMNS)
        assert sorted(columns(conn, "run")) == sorted(RUN_COLUMNS)
        assert sorted(columns(conn, "run_node")) == sorted(RUN_NODE_COLUMNS)
        indexes = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert {"job_state", "job_binding", "job_created", "job_unique_key", "job_concurrency_key"} <= indexes
    assert {"run_state", "run_flow", "run_created", "run_updated", "run_node_run"} <= indexes


def test_a_second_apply_has_nothing_to_do(migrated_d1: Path) -> None:
    result = run_wrangler(
        ["d1", "migrations", "apply", "TSUMUGI_DB", "--local", "--persist-to", str(migrated_d1)]
    )
    assert result.returncode == 0 and "No migrations to apply" in result.stdout + result.stderr


def job_snapshot(n: int, seq: int, state: str, **fields: Any) -> dict[str, Any]:
    return {
        "id": f"Hello#0:d1proof{n:017d}",
        "seq": seq,
        "binding": "Hello",
        "state": state,
        "priority": 0,
        "attempts": 1 if state in ("COMPLETED", "FAILED") else 0,
        "max_attempts": 3,
        "concurrency_key": None,
        "unique_key": f"u{n}",
        "guarantee": "at-least-once",
        "created_at": NOW_MS - 10 * DAY_MS + n,
        "updated_at": NOW_MS - 10 * DAY_MS + seq,
        "dispatched_at": None,
        "run_after": NOW_MS - 10 * DAY_MS,
        "progress": None,
        "payload": {"name": f"n{n}", "ok": True},
        "result": None,
        "run_id": None,
        "node_id": None,
        "attempts_log": [],
        **fields,
    }


async def test_projector_statements_run_on_the_migrated_d1(d1_server: ReplayServer) -> None:
    db = LoopbackD1Database(d1_server)
    assert (await read_migration_status(db)).kind == "ok"  # D-11 against wrangler's real ledger
    writer = D1ReadModelWriter(db)
    log = [{"job_id": "Hello#0:d1proof00000000000000001", "attempt": 1, "state": "COMPLETED",
            "started_at": NOW_MS, "finished_at": NOW_MS + 5, "error": None}]  # fmt: skip
    await writer.upsert_jobs([job_snapshot(1, 1, "QUEUED"), job_snapshot(2, 1, "SCHEDULED")])
    await writer.upsert_jobs(
        [job_snapshot(1, 3, "COMPLETED", result={"sent": 1}, progress=1.0, attempts_log=log)]
    )
    await writer.upsert_jobs([job_snapshot(1, 2, "RUNNING")])  # D-9: a stale seq is a no-op
    (row,) = await db.all(
        "SELECT seq, state, result, progress, payload, created_at FROM job WHERE id = ?",
        ["Hello#0:d1proof00000000000000001"],
    )
    assert (row["seq"], row["state"], row["result"], row["progress"]) == (3, "COMPLETED", '{"sent":1}', 1)
    assert row["payload"] == '{"name":"n1","ok":true}'
    assert row["created_at"] == NOW_MS - 10 * DAY_MS + 1  # D-9: created_at never changes on conflict
    detail = await get_job(db, "Hello#0:d1proof00000000000000001")
    assert detail is not None and detail["state"] == "COMPLETED"
    second = await get_job(db, "Hello#0:d1proof00000000000000002")
    assert second is not None and second["attempts_log"] is None  # J-192: empty log -> NULL
    rows, total = await list_jobs(db, JobFilter(binding="Hello"), JobPage())
    assert total == 2 and {r["id"] for r in rows} == {
        "Hello#0:d1proof00000000000000001",
        "Hello#0:d1proof00000000000000002",
    }
    counts = await count_by_state(db)
    assert (counts.get("COMPLETED"), counts.get("SCHEDULED")) == (1, 1)
    # J-172: the retention sweep deletes terminal rows older than the cut-off, never active ones.
    assert await writer.delete_terminal_jobs(NOW_MS - 7 * DAY_MS, 1000) == 1
    assert await get_job(db, "Hello#0:d1proof00000000000000001") is None
    assert await get_job(db, "Hello#0:d1proof00000000000000002") is not None
    assert db.rows_written > 0
