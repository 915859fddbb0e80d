"""Fixtures for the REST tests (see rest_harness)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from tests.api.rest_harness import Harness, Switchboard, make_harness
from tests.api.served import serve

from tsumugi.runtimes.local.sql_database import SqliteDatabase, apply_migrations


@pytest.fixture
def db() -> SqliteDatabase:
    database = SqliteDatabase(":memory:")
    apply_migrations(database)
    return database


@pytest.fixture(scope="session")
def switchboard() -> Iterator[Switchboard]:
    board = Switchboard(base_url="")
    with serve(board) as base_url:
        board.base_url = base_url
        yield board


@pytest.fixture(params=["asgi", "socket"])
def harness(request: pytest.FixtureRequest, db: SqliteDatabase) -> Harness:
    """Every REST test runs twice: in-process over ASGI and against uvicorn on 127.0.0.1."""
    built = make_harness(db)
    if request.param == "socket":
        built.switchboard = request.getfixturevalue("switchboard")
    return built


@pytest.fixture
async def api(harness: Harness) -> AsyncIterator[httpx.AsyncClient]:
    async with harness.client() as client:
        yield client
