"""Settings the shard pins or carries, when a policy change comes first or a write fails (issue 13).

J-50 (settings travel with enqueues), J-51 (a write is skipped when nothing changed), J-175/J-176 (pin,
merge, reset); ADR-0131.
"""

from __future__ import annotations

import sqlite3

import pytest

from tsumugi.clock import FixedClock
from tsumugi.coordinator.job_shard import JobShard
from tsumugi.runtimes.local.sqlite_executor import SqliteExecutor
from tsumugi.testing.fakes import FakeAlarm, FakeQueue
from tsumugi.testing.faults import COMMIT, DISK_FULL, StorageFaults

from .conftest import START, Harness

STATIC = {"policy": {"reaperGraceMs": 1000, "concurrency": 3}, "sweepAfterMs": 60_000}


async def test_a_policy_change_before_the_first_enqueue_merges_onto_the_static_settings(h: Harness) -> None:
    # Issue 13 item 5: it pinned the built-in defaults (reaperGraceMs 30000) over the configured 1000
    merged = await h.shard.update_policy({"paused": True}, STATIC)
    assert merged["policy"]["reaperGraceMs"] == 1000 and merged["policy"]["concurrency"] == 3
    assert merged["policy"]["paused"] is True and merged["sweepAfterMs"] == 60_000
    await h.enqueue(settings={"policy": {"concurrency": 9}})  # pinned: what enqueues carry is ignored
    assert (await h.shard.diagnostics())["policy"]["concurrency"] == 3
    again = await h.shard.update_policy({"concurrency": 5}, STATIC)  # pinned: merges onto the pin
    assert again["policy"] == {**merged["policy"], "concurrency": 5}
    reset = await h.shard.reset_policy(STATIC)
    assert reset["policy"]["paused"] is False and reset["policy"]["reaperGraceMs"] == 1000


async def test_without_static_settings_a_policy_change_merges_onto_what_the_shard_holds(h: Harness) -> None:
    # The RPC's old form: an existing caller that passes only the patch behaves as before
    await h.enqueue(settings={"policy": {"reaperGraceMs": 2000}, "onFailure": "ALERT"})
    merged = await h.shard.update_policy({"concurrency": 4})
    assert merged["policy"]["reaperGraceMs"] == 2000 and merged["policy"]["concurrency"] == 4
    assert merged["onFailure"] == "ALERT"


async def test_static_settings_without_notice_targets_keep_the_carried_ones(h: Harness) -> None:
    # ADR-0044: a pin holds policy and retention, not the notice targets
    await h.enqueue(settings={"onFailure": "ALERT"})
    merged = await h.shard.update_policy({"concurrency": 2}, {"policy": {"reaperGraceMs": 1000}})
    assert merged["onFailure"] == "ALERT" and merged["policy"]["reaperGraceMs"] == 1000


def _shard(sql: object) -> JobShard:
    return JobShard("MAIL#0", sql, clock=FixedClock(START), alarm=FakeAlarm(), queue=FakeQueue())  # type: ignore[arg-type]


async def test_settings_of_an_enqueue_whose_commit_failed_are_written_when_they_come_again() -> None:
    # The shard cached the carried settings as it wrote them; the commit failed (a full disk), and the
    # same settings coming again compared equal to the cache, so they were never written (J-51).
    faults = StorageFaults()
    sql = faults.executor(SqliteExecutor(":memory:"))
    shard = _shard(sql)
    settings = {"policy": {"concurrency": 3}}
    faults.fail(DISK_FULL, matching=f"^{COMMIT}$")
    with pytest.raises(sqlite3.OperationalError, match=DISK_FULL):
        await shard.enqueue_many([{"binding": "MAIL", "payload": 1}], settings)
    assert (await shard.diagnostics())["policy"]["concurrency"] == 100  # what the disk holds
    await shard.enqueue_many([{"binding": "MAIL", "payload": 2}], settings)
    reopened = _shard(sql)  # an evicted Durable Object, or a restart: it reads the disk
    assert (await reopened.diagnostics())["policy"]["concurrency"] == 3


async def test_a_policy_change_whose_commit_failed_changes_nothing() -> None:
    faults = StorageFaults()
    shard = _shard(faults.executor(SqliteExecutor(":memory:")))
    faults.fail(DISK_FULL, matching=f"^{COMMIT}$")
    with pytest.raises(sqlite3.OperationalError, match=DISK_FULL):
        await shard.update_policy({"paused": True}, STATIC)
    diagnostics = await shard.diagnostics()
    assert diagnostics["policy"]["paused"] is False and diagnostics["policy"]["reaperGraceMs"] == 30_000
