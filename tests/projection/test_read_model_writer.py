"""Projection into the read model: the seq guard, frozen columns and NULL mapping (D-9, J-192, J-193)."""

from __future__ import annotations

from typing import Any

import pytest
from tests.api.rest_harness import job

from tsumugi.runtimes.local.sql_database import SqliteDatabase, apply_migrations
from tsumugi.storage.read_model_writer import D1ReadModelWriter


@pytest.fixture
def db() -> SqliteDatabase:
    database = SqliteDatabase(":memory:")
    apply_migrations(database)
    return database


async def _row(db: SqliteDatabase, job_id: str) -> dict[str, Any]:
    rows = await db.all("SELECT * FROM job WHERE id = ?", (job_id,))
    assert len(rows) == 1
    return rows[0]


async def test_newer_seq_overwrites_and_older_is_a_noop(db: SqliteDatabase) -> None:
    # D-9, J-192: only excluded.seq > job.seq updates; replays and reordering never regress.
    writer = D1ReadModelWriter(db)
    await writer.upsert_jobs([job(seq=3, state="QUEUED")])
    await writer.upsert_jobs([job(seq=2, state="SCHEDULED"), job(seq=3, state="FAILED")])
    assert (await _row(db, "MAIL#0:a1"))["state"] == "QUEUED"
    await writer.upsert_jobs([job(seq=5, state="COMPLETED"), job(seq=4, state="RUNNING")])
    row = await _row(db, "MAIL#0:a1")
    assert (row["state"], row["seq"]) == ("COMPLETED", 5)


async def test_frozen_columns_never_change(db: SqliteDatabase) -> None:
    # D-9: id, created_at, binding, guarantee are kept from the first insert.
    writer = D1ReadModelWriter(db)
    await writer.upsert_jobs([job(seq=1, created_at=10, guarantee="at-most-once")])
    await writer.upsert_jobs(
        [job(seq=2, created_at=99, binding="OTHER", guarantee="at-least-once", priority=7)]
    )
    row = await _row(db, "MAIL#0:a1")
    assert (row["created_at"], row["binding"], row["guarantee"], row["priority"]) == (
        10, "MAIL", "at-most-once", 7,
    )  # fmt: skip


async def test_missing_fields_store_null_and_empty_log_is_null(db: SqliteDatabase) -> None:
    # J-192: run_after/progress/result missing -> NULL; [] attempts_log -> NULL, not "[]".
    snapshot = job(attempts_log=[])
    for name in ("run_after", "progress", "result"):
        snapshot.pop(name, None)
    await D1ReadModelWriter(db).upsert_jobs([snapshot])
    row = await _row(db, "MAIL#0:a1")
    assert (row["run_after"], row["progress"], row["result"], row["attempts_log"]) == (None, None, None, None)


async def test_json_columns_hold_text(db: SqliteDatabase) -> None:
    # A-11, J-190: payload/result/attempts_log stored as compact JSON text whatever form arrives.
    log = [{"job_id": "MAIL#0:a1", "attempt": 1, "state": "COMPLETED", "started_at": 1, "finished_at": 2,
            "error": None}]  # fmt: skip
    await D1ReadModelWriter(db).upsert_jobs([job(payload={"b": 1.0}, result={"ok": True}, attempts_log=log)])
    row = await _row(db, "MAIL#0:a1")
    assert row["payload"] == '{"b":1}' and row["result"] == '{"ok":true}'
    assert row["attempts_log"] is not None and row["attempts_log"].startswith('[{"job_id":"MAIL#0:a1"')


async def test_a_batch_is_atomic(db: SqliteDatabase) -> None:
    # J-192: a failing batch leaves nothing behind (so the outbox keeps it for the next tick).
    bad = job("MAIL#0:b2")
    bad["state"] = None  # violates NOT NULL
    with pytest.raises(Exception, match="NOT NULL"):
        await D1ReadModelWriter(db).upsert_jobs([job(), bad])
    assert await db.all("SELECT id FROM job") == []


async def test_run_nodes_keep_binding_and_created_at(db: SqliteDatabase) -> None:
    # F-84: run_node.run_id, node_id, created_at, binding never change.
    writer = D1ReadModelWriter(db)
    node = {"run_id": "f:1", "node_id": "n", "seq": 1, "binding": "MAIL", "state": "PENDING",
            "container": False, "parent": None, "origin": "static", "after": ["a"], "job_id": None,
            "child_run_id": None, "result": None, "error": None, "position": 0, "created_at": 1,
            "updated_at": 1}  # fmt: skip
    await writer.upsert_run_nodes([node])
    await writer.upsert_run_nodes([{**node, "seq": 2, "binding": "X", "created_at": 9, "state": "COMPLETED"}])
    await writer.upsert_run_nodes([{**node, "seq": 1, "state": "FAILED"}])
    rows = await db.all("SELECT binding, created_at, state, after, container FROM run_node")
    assert rows == [
        {"binding": "MAIL", "created_at": 1, "state": "COMPLETED", "after": '["a"]', "container": 0}
    ]
