"""Read-model retention (J-172, D-9)."""

from __future__ import annotations

import logging

import pytest
from tests.api.rest_harness import NOW, job

from tsumugi.projection.read_model_sweep import SweepOptions, sweep_read_model
from tsumugi.runtimes.local.sql_database import SqliteDatabase, apply_migrations
from tsumugi.storage.read_model_writer import D1ReadModelWriter

WEEK_MS = 604_800_000
TERMINAL = ("COMPLETED", "FAILED", "CANCELLED", "STALLED")


async def test_sweep_deletes_old_terminal_rows_only(caplog: pytest.LogCaptureFixture) -> None:
    # J-172: terminal and older than 7 days; active rows never; bounded by limit; logs the count (J-207).
    db = SqliteDatabase(":memory:")
    apply_migrations(db)
    old = NOW - WEEK_MS - 1
    await D1ReadModelWriter(db).upsert_jobs(
        [job(f"MAIL#0:t{i}", state=s, updated_at=old) for i, s in enumerate(TERMINAL)]
        + [job("MAIL#0:active", state="SCHEDULED", updated_at=0)]
        + [job("MAIL#0:q", state="RUNNING", updated_at=0)]
        + [job("MAIL#0:fresh", state="FAILED", updated_at=NOW - WEEK_MS)]
    )
    with caplog.at_level(logging.INFO, logger="tsumugi"):
        assert await sweep_read_model(db, NOW, SweepOptions(limit=3)) == 3
    assert "tsumugi: swept 3 jobs from the read model" in caplog.text
    assert await sweep_read_model(db, NOW) == 1
    assert await sweep_read_model(db, NOW) == 0
    remaining = {r["id"] for r in await db.all("SELECT id FROM job")}
    assert remaining == {"MAIL#0:active", "MAIL#0:q", "MAIL#0:fresh"}


async def test_runs_are_never_swept() -> None:
    # D-9 [I]
    db = SqliteDatabase(":memory:")
    apply_migrations(db)
    await D1ReadModelWriter(db).upsert_runs(
        [{"id": "f:1", "seq": 1, "flow": "f", "state": "COMPLETED", "input": None, "node_total": 0,
          "node_done": 0, "node_failed": 0, "created_at": 0, "updated_at": 0}]
    )  # fmt: skip
    await sweep_read_model(db, NOW)
    assert len(await db.all("SELECT id FROM run")) == 1
