"""The read model's writer process projects each shard from the shard's file, beside it (ADR-0171).

A real runtime on a real state directory: its shards dispatch and settle jobs while the writer process
reads what is due from their files and upserts it; the shard only clears what came back.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sqlite3
import subprocess
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import pytest
from tests import polling

from tsumugi import JobContext, Performer, define_tsumugi
from tsumugi.runtimes.local import read_model_process
from tsumugi.runtimes.local.runtime import LocalRuntime

DEADLINE_S = 20.0
FAST_RETRY = {"kind": "fixed", "delayMs": 10}


class Flaky(Performer):
    """Fails its first attempt."""

    async def perform(self, payload: Any, ctx: JobContext) -> None:
        if ctx.attempt == 1:
            raise RuntimeError("first attempt fails")


class Quick(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> None:
        return None


APP = define_tsumugi(performers={"Flaky": Flaky, "Quick": Quick})


def _runtime(state: Path) -> LocalRuntime:
    return LocalRuntime(APP, state, exports={"Flaky": Flaky, "Quick": Quick}, cron=False)


@contextmanager
def _read(path: Path) -> Iterator[sqlite3.Connection]:
    with closing(sqlite3.connect(path, timeout=5)) as db:
        yield db


def _listed(state: Path) -> dict[str, str]:
    """The read model's jobs by id: their state there."""
    with _read(state / "read_model.sqlite3") as db:
        return {str(i): str(s) for i, s in db.execute("SELECT id, state FROM job")}


def _marked(state: Path, binding: str) -> int:
    """Jobs of the binding's shard waiting for a projection."""
    with _read(state / "shards" / f"{binding}%230.sqlite3") as db:
        row = db.execute("SELECT (SELECT count(*) FROM outbox) + (SELECT count(*) FROM fresh)").fetchone()
        return int(row[0])


def _writer_pids() -> list[int]:
    """This process's children running the read model's writer."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        parent = int(stat.rpartition(")")[2].split()[1])
        if parent == os.getpid() and b"read_model_child.py" in command:
            found.append(int(entry.name))
    return found


async def _settled(runtime: LocalRuntime, job_ids: list[str], state: str = "COMPLETED") -> None:
    shard = runtime.env.JOB_SHARD

    async def done() -> bool:
        for job_id in job_ids:
            if await shard.get(job_id.partition(":")[0]).state_of(job_id) != state:
                return False
        return True

    await polling.until(done, f"{len(job_ids)} jobs {state}", DEADLINE_S)


async def _listed_as(state_dir: Path, job_ids: list[str], state: str = "COMPLETED") -> None:
    await polling.until(
        lambda: all(_listed(state_dir).get(job_id) == state for job_id in job_ids),
        f"{len(job_ids)} jobs listed {state}",
        DEADLINE_S,
    )


async def _quick(runtime: LocalRuntime, count: int) -> list[str]:
    """Enqueue ``count`` Quick jobs; their ids."""
    return await APP.enqueue_many(
        runtime.env, [{"binding": "Quick", "payload": {"n": n}} for n in range(count)]
    )


async def _writer_once_listing(runtime: LocalRuntime, state: Path) -> int:
    """The writer process's id, once it has listed a first job."""
    [first] = await _quick(runtime, 1)
    await _listed_as(state, [first])
    [pid] = _writer_pids()
    return pid


async def _cleared(state: Path, binding: str) -> None:
    await polling.until(lambda: _marked(state, binding) == 0, f"{binding}'s marks cleared", DEADLINE_S)


async def test_settled_jobs_are_listed_with_their_attempts_and_one_metric_point_each(tmp_path: Path) -> None:
    state = tmp_path / "state"
    async with _runtime(state) as runtime:
        flaky = await APP.enqueue(runtime.env, {"binding": "Flaky", "payload": {}, "backoff": FAST_RETRY})
        quick = await _quick(runtime, 5)
        await _settled(runtime, [flaky, *quick])
        await _listed_as(state, [flaky, *quick])
        await _cleared(state, "Flaky")
        assert len(_writer_pids()) == 1
    with _read(state / "read_model.sqlite3") as db:
        [(log_text, attempts)] = db.execute("SELECT attempts_log, attempts FROM job WHERE id = ?", (flaky,))
        points = db.execute("SELECT binding, state, attempts FROM tsumugi_metric ORDER BY binding").fetchall()
    assert attempts == 2
    second, first = json.loads(log_text)  # J-95: newest first
    assert [(a["attempt"], a["state"]) for a in (second, first)] == [(2, "COMPLETED"), (1, "FAILED")]
    assert "first attempt fails" in first["error"]
    assert points == [("Flaky", "COMPLETED", 2)] + [("Quick", "COMPLETED", 1)] * 5  # M-4: never twice


async def test_a_stopped_writer_holds_up_the_listing_and_never_the_jobs(tmp_path: Path) -> None:
    state = tmp_path / "state"
    async with _runtime(state) as runtime:
        pid = await _writer_once_listing(runtime, state)
        os.kill(pid, signal.SIGSTOP)
        try:
            later = await _quick(runtime, 50)
            await _settled(runtime, later)  # dispatched and settled while the writer cannot answer
            assert not any(_listed(state).get(job_id) == "COMPLETED" for job_id in later)
        finally:
            os.kill(pid, signal.SIGCONT)
        await _listed_as(state, later)
        await _cleared(state, "Quick")


async def test_a_killed_writer_fails_one_projection_and_the_next_one_catches_up(tmp_path: Path) -> None:
    state = tmp_path / "state"
    async with _runtime(state) as runtime:
        killed = await _writer_once_listing(runtime, state)
        os.kill(killed, signal.SIGKILL)
        later = await _quick(runtime, 20)
        await _settled(runtime, later)
        await _listed_as(state, later)  # a tick retries what failed, on a new writer process
        assert killed not in _writer_pids()
        await _cleared(state, "Quick")


async def test_a_runtime_stopped_at_once_has_listed_every_settled_job(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    state = tmp_path / "state"
    with caplog.at_level(logging.ERROR, logger="tsumugi"):
        async with _runtime(state) as runtime:
            job_ids = await _quick(runtime, 200)
            await _settled(runtime, job_ids)
        # The stop let the projections under way finish: nothing is left to list, nothing was logged.
        assert _writer_pids() == []
        assert caplog.records == []
    assert _marked(state, "Quick") == 0
    assert all(_listed(state).get(job_id) == "COMPLETED" for job_id in job_ids)
    async with _runtime(state) as runtime:  # and the next start goes on from there
        later = await APP.enqueue(runtime.env, {"binding": "Quick", "payload": {}})
        await _settled(runtime, [later])
        await _listed_as(state, [later])


async def test_without_a_writer_process_each_shard_projects_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: object, **kwargs: object) -> subprocess.Popen[bytes]:
        raise OSError("no processes left")

    monkeypatch.setattr(read_model_process.subprocess, "Popen", refuse)
    state = tmp_path / "state"
    async with _runtime(state) as runtime:
        flaky = await APP.enqueue(runtime.env, {"binding": "Flaky", "payload": {}, "backoff": FAST_RETRY})
        await _settled(runtime, [flaky])
        await _listed_as(state, [flaky])
        assert _writer_pids() == []
    with _read(state / "read_model.sqlite3") as db:
        assert db.execute("SELECT count(*) FROM tsumugi_metric").fetchone() == (1,)


async def test_many_shards_are_projected_by_one_writer(tmp_path: Path) -> None:
    app = define_tsumugi(performers={"Quick": Quick}, bindings={"Quick": {"shards": 4}})
    state = tmp_path / "state"
    async with LocalRuntime(app, state, exports={"Quick": Quick}, cron=False) as runtime:
        inputs = [{"binding": "Quick", "payload": {}, "partitionKey": f"k{n}"} for n in range(40)]
        job_ids = await app.enqueue_many(runtime.env, inputs)
        assert len({job_id.partition(":")[0] for job_id in job_ids}) > 1
        await _settled(runtime, job_ids)
        await _listed_as(state, job_ids)
        assert len(_writer_pids()) == 1


def _points(state: Path) -> int:
    """Metric points written so far; none before the writer made their table (on its first points)."""
    with _read(state / "read_model.sqlite3") as db:
        try:
            return int(db.execute("SELECT count(*) FROM tsumugi_metric").fetchone()[0])
        except sqlite3.OperationalError:
            return 0


async def test_a_drain_of_many_passes_writes_one_metric_point_per_job(tmp_path: Path) -> None:
    # M-4, J-194: each pass's points are written once its marks were cleared, never twice
    state = tmp_path / "state"
    async with _runtime(state) as runtime:
        quick = await _quick(runtime, 700)  # more than three passes of 200
        await _settled(runtime, quick)
        await _listed_as(state, quick)
        await _cleared(state, "Quick")
        await polling.until(lambda: _points(state) >= len(quick), "a point per job", DEADLINE_S)
        assert _points(state) == len(quick)


async def test_points_that_cannot_be_written_are_logged_and_the_listing_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # M-4: logged and swallowed; the jobs are still listed
    state = tmp_path / "state"
    async with _runtime(state) as runtime:
        await _writer_once_listing(runtime, state)
        await polling.until(lambda: _points(state) == 1, "the first point", DEADLINE_S)
        with _read(state / "read_model.sqlite3") as db:
            db.execute(
                "CREATE TRIGGER no_points BEFORE INSERT ON tsumugi_metric "
                "BEGIN SELECT RAISE(ABORT, 'no room'); END"
            )
            db.commit()
        with caplog.at_level(logging.ERROR, logger="tsumugi"):
            quick = await _quick(runtime, 450)
            await _settled(runtime, quick)
            await _listed_as(state, quick)
            await _cleared(state, "Quick")
            await polling.until(
                lambda: any(r.getMessage() == "tsumugi: writeMetrics failed" for r in caplog.records),
                "the failure logged",
                DEADLINE_S,
            )
    assert _points(state) == 1
    assert "no room" in "".join(str(r.exc_info[1]) for r in caplog.records if r.exc_info)
