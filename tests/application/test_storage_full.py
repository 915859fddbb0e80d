"""A full disk on the local runtime, seen through the REST API (issue 13 item 4, ADR-0133).

The shards' files fill for real: ``PRAGMA max_page_count`` caps a file at its size and filler rows take
its free pages, so SQLite itself answers SQLITE_FULL ("database or disk is full") through the real
``SqliteExecutor``. The read model's job table keeps free space inside its own pages, which no filler
reaches, so its writes are refused the way SQLite refuses them, with the same error.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from tests import polling

from tsumugi import bearer_auth, define_tsumugi
from tsumugi.clock import FixedClock
from tsumugi.errors import StorageFullError
from tsumugi.performer import JobContext, Performer
from tsumugi.ports import SqlExecutor, SqlValue
from tsumugi.runtimes.local.engine_wiring import EngineWiring
from tsumugi.runtimes.local.runtime import LocalRuntime
from tsumugi.runtimes.local.sql_database import SqliteDatabase
from tsumugi.runtimes.local.sqlite_executor import FULL_STORAGE, SqliteExecutor

START = 1_700_000_000_000
TOKEN = "full-disk-token"
BIG = "x" * 20_000  # needs pages of its own: a full file cannot take it
SETTLE_S = 10.0
FILLER_SIZES = (4_000, 400, 40, 1)  # bytes per filler row, from whole pages down to the last gaps
UNCAPPED_PAGES = 1_073_741_823  # SQLite's default max_page_count


class Parked(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> None:
        return None


def _full_disk() -> sqlite3.OperationalError:
    error = sqlite3.OperationalError("database or disk is full")
    error.sqlite_errorcode, error.sqlite_errorname = sqlite3.SQLITE_FULL, "SQLITE_FULL"
    return error


class FillableDatabase(SqliteDatabase):
    """The read model; while ``full``, its writes fail as SQLite fails them on a full disk."""

    full = False

    async def run(self, sql: str, params: Sequence[SqlValue] = ()) -> int:
        if self.full:
            raise _full_disk()
        return await super().run(sql, params)

    async def batch(self, statements: Sequence[tuple[str, Sequence[SqlValue]]]) -> None:
        if self.full:
            raise _full_disk()
        await super().batch(statements)


class RecordingWiring(EngineWiring):
    """The real wiring; remembers each shard's executor and the read model, to fill them up."""

    def __init__(self) -> None:
        super().__init__(rand=lambda: 0.5)
        self.shard_sql: dict[str, SqliteExecutor] = {}
        self.database: FillableDatabase | None = None

    def executor(self, path: Path) -> SqlExecutor:
        sql = super().executor(path)
        if isinstance(sql, SqliteExecutor):
            self.shard_sql[path.name] = sql
        return sql

    def read_model(self, path: Path) -> SqliteDatabase:
        self.database = FillableDatabase(path)
        return self.database


class Disk:
    def __init__(self, runtime: LocalRuntime, wiring: RecordingWiring, clock: FixedClock) -> None:
        self.runtime = runtime
        self.wiring = wiring
        self.clock = clock

    async def fill(self) -> None:
        """No file may grow any more, and no page has room left: the disk is full."""
        assert self.wiring.shard_sql, "a shard opens its file at its first call"
        for sql in self.wiring.shard_sql.values():
            _exhaust(sql)
        assert self.wiring.database is not None
        self.wiring.database.full = True

    async def free(self) -> None:
        for sql in self.wiring.shard_sql.values():
            sql.execute("DELETE FROM disk_filler")
            sql.execute(f"PRAGMA max_page_count={UNCAPPED_PAGES}")
        assert self.wiring.database is not None
        self.wiring.database.full = False

    async def tick(self, ms: int = 1_000) -> None:
        self.clock.advance(ms)
        await self.runtime.alarms.fire_due()


def _exhaust(sql: SqlExecutor) -> None:
    """Cap the file at its size, then fill its free pages with filler rows until SQLite says it is full."""
    sql.execute("CREATE TABLE IF NOT EXISTS disk_filler (b BLOB)")
    (pages,) = sql.execute("PRAGMA page_count")[0]
    sql.execute(f"PRAGMA max_page_count={int(str(pages))}")
    for size in FILLER_SIZES:
        with contextlib.suppress(sqlite3.OperationalError):  # StorageFullError is one too
            while True:
                sql.execute(f"INSERT INTO disk_filler VALUES (zeroblob({size}))")


@pytest.fixture(autouse=True)
def no_episode() -> Iterator[None]:
    FULL_STORAGE.active = False  # one episode per process: each test starts with room
    yield
    FULL_STORAGE.active = False


@pytest.fixture
async def disk(tmp_path: Path) -> AsyncIterator[tuple[Disk, httpx.AsyncClient]]:
    clock = FixedClock(START)
    app = define_tsumugi(
        performers={"Parked": Parked},
        bindings={"Parked": {"policy": {"paused": True}}},  # jobs stay SCHEDULED: only writes matter here
        auth=bearer_auth(lambda env: env.get("TSUMUGI_TOKEN")),
    )
    app.clock = clock
    wiring = RecordingWiring()
    runtime = LocalRuntime(
        app, tmp_path, clock=clock, vars={"TSUMUGI_TOKEN": TOKEN}, wiring=wiring, cron=False
    )
    await runtime.start()
    transport = httpx.ASGITransport(app=app.asgi(runtime.env))
    headers = {"authorization": f"Bearer {TOKEN}"}
    async with httpx.AsyncClient(transport=transport, base_url="http://local", headers=headers) as client:
        yield Disk(runtime, wiring, clock), client
    await runtime.stop(grace_s=1.0)


async def _create(client: httpx.AsyncClient, payload: Any) -> httpx.Response:
    return await client.post("/api/jobs", json={"binding": "Parked", "payload": payload})


async def test_a_full_disk_answers_a_json_503_logged_once(
    disk: tuple[Disk, httpx.AsyncClient], caplog: pytest.LogCaptureFixture
) -> None:
    # ADR-0133: was a plain-text 500 "Internal Server Error" with a traceback per request
    state, client = disk
    assert (await _create(client, {"n": 1})).status_code == 201
    await state.fill()
    caplog.set_level(logging.INFO, logger="tsumugi")
    answers = [await _create(client, BIG) for _ in range(5)]
    assert {(a.status_code, a.text) for a in answers} == {(503, '{"error":"storage is full"}')}
    assert answers[0].headers["content-type"] == "application/json; charset=UTF-8"
    full = [r for r in caplog.records if "storage is full" in r.getMessage()]
    assert len(full) == 1 and full[0].levelno == logging.ERROR  # once per episode, not per request
    assert not [r for r in caplog.records if r.exc_info]  # no traceback either
    await state.free()
    assert (await _create(client, BIG)).status_code == 201
    assert any("room again" in r.getMessage() for r in caplog.records)
    await state.fill()
    assert (await _create(client, BIG)).status_code == 503
    assert len([r for r in caplog.records if "storage is full" in r.getMessage()]) == 2  # a new episode


async def test_the_python_api_raises_storage_full_error(disk: tuple[Disk, httpx.AsyncClient]) -> None:
    state, client = disk
    assert (await _create(client, {"n": 1})).status_code == 201
    await state.fill()
    app = state.runtime.app
    with pytest.raises(StorageFullError, match="database or disk is full"):
        await app.enqueue(state.runtime.env, binding="Parked", payload=BIG)  # type: ignore[attr-defined]


async def test_jobs_accepted_before_the_disk_filled_appear_once_it_has_room(
    disk: tuple[Disk, httpx.AsyncClient],
) -> None:
    # Issue 13: "jobs accepted just before it filled answer 404". The detail reads the read model,
    # which the shard's tick writes about a second after an enqueue (ADR-0119). While the read model's
    # file cannot grow, that write fails, the job stays marked in the shard, and the detail answers 404;
    # once there is room, the next tick projects it. Nothing accepted is lost (ADR-0133).
    state, client = disk
    created = await _create(client, {"n": 1})
    assert created.status_code == 201
    job_path = f"/api/jobs/{quote(created.json()['id'], safe='')}"
    await state.fill()
    for _ in range(3):
        await state.tick()
    assert (await client.get(job_path)).status_code == 404  # the read model lags while it is full
    await state.free()

    async def projected() -> bool:
        if (await client.get(job_path)).status_code == 200:
            return True
        await state.tick(5_000)  # a failed tick is tried again (J-164)
        return False

    await polling.until(projected, "the job in the read model once the disk has room", SETTLE_S)
    detail = (await client.get(job_path)).json()["job"]
    assert (detail["state"], detail["payload"]) == ("SCHEDULED", '{"n":1}')
