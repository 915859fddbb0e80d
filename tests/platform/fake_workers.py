"""Fake Workers runtime objects for CPython tests of the Cloudflare adapter (PLATFORM.md §4, item 6).

``FakeDurableObjectStorage`` runs SQL on CPython sqlite3 but enforces the Durable Object rules the
adapter must respect (PLATFORM.md §3.7): no SQL transactions, no booleans (DO binds them as TEXT), no
BigInt-sized ints, at most 100 bound parameters. ``FakeD1`` and ``FakeQueue`` mimic the bindings' JS API.
The SDK's runtime-only modules are stubbed by ``workers_sdk_stubs``.
"""

from __future__ import annotations

import sqlite3
import sys
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

MAX_BOUND_PARAMETERS = 100  # Durable Object SQL and D1 both refuse more per statement
_TRANSACTION_WORDS = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE")


@contextmanager
def workers_sdk_stubs() -> Iterator[None]:
    """Make ``import workers`` work on CPython: stub ``js`` and the two runtime-only helper modules."""
    stubs = {
        name: mock.MagicMock(name=name)
        for name in ("js", "_pyodide_entrypoint_helper", "_cloudflare_compat_flags")
    }
    with mock.patch.dict(sys.modules, stubs):
        yield


def _check_params(args: tuple[Any, ...]) -> None:
    if len(args) > MAX_BOUND_PARAMETERS:
        raise RuntimeError("too many SQL variables: SQLITE_ERROR")
    for value in args:
        if isinstance(value, bool):
            raise AssertionError("a boolean reached DO SQL: it would bind as the TEXT 'true'/'false'")
        if isinstance(value, int) and abs(value) > 2**53 - 1:
            raise AssertionError("an int beyond 2^53 reached DO SQL: Pyodide would pass a BigInt")


class FakeCursor:
    def __init__(self, rows: list[tuple[Any, ...]], rows_written: int, owner: FakeSqlStorage) -> None:
        self._rows = [list(row) for row in rows]
        self.rowsRead = len(rows)
        self.rowsWritten = rows_written
        self._owner = owner

    def raw(self) -> FakeCursor:
        return self

    def toArray(self) -> list[list[Any]]:
        return self._rows

    def destroy(self) -> None:
        self._owner.open_cursors -= 1


class FakeSqlStorage:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self.open_cursors = 0
        self.statements: list[tuple[str, tuple[Any, ...]]] = []

    def exec(self, sql: str, *args: Any) -> FakeCursor:
        if sql.lstrip().upper().startswith(_TRANSACTION_WORDS):
            raise RuntimeError("To execute a transaction, please use the state.storage.transaction() APIs")
        _check_params(args)
        self.statements.append((sql, args))
        before = self._conn.total_changes
        rows = self._conn.execute(sql, args).fetchall()
        self.open_cursors += 1
        return FakeCursor(rows, self._conn.total_changes - before, self)


class FakeDurableObjectStorage:
    """``ctx.storage``: SQL, ``transactionSync`` and the alarm."""

    def __init__(self) -> None:
        self._conn = sqlite3.connect(":memory:", isolation_level=None)
        self.sql = FakeSqlStorage(self._conn)
        self.alarm_at: float | None = None
        self.transactions = 0

    def transactionSync(self, fn: Callable[[], Any]) -> Any:
        self.transactions += 1
        self._conn.execute("SAVEPOINT fake_tx")
        try:
            result = fn()
        except BaseException:
            self._conn.execute("ROLLBACK TO fake_tx")
            self._conn.execute("RELEASE fake_tx")
            raise
        self._conn.execute("RELEASE fake_tx")
        return result

    async def getAlarm(self) -> float | None:
        return self.alarm_at

    async def setAlarm(self, at_ms: int) -> None:
        self.alarm_at = float(at_ms)  # JS hands every number back as a double

    async def deleteAlarm(self) -> None:
        self.alarm_at = None


class FakeD1Statement:
    def __init__(self, db: FakeD1, sql: str) -> None:
        self._db = db
        self.sql = sql
        self.args: tuple[Any, ...] = ()

    def bind(self, *args: Any) -> FakeD1Statement:
        _check_params(args)
        self.args = args
        return self

    def _run(self) -> types.SimpleNamespace:
        before = self._db.conn.total_changes
        cursor = self._db.conn.execute(self.sql, self.args)
        columns = [c[0] for c in cursor.description or []]
        rows = [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]
        changes = self._db.conn.total_changes - before
        meta = {"changes": changes, "rows_read": len(rows), "rows_written": changes}
        return types.SimpleNamespace(results=rows, meta=meta)

    async def all(self) -> types.SimpleNamespace:
        return self._run()

    async def run(self) -> types.SimpleNamespace:
        return self._run()


class FakeD1:
    """A D1 binding: ``prepare(sql).bind(...).all()/run()`` and an atomic ``batch``."""

    def __init__(self) -> None:
        self.conn = sqlite3.connect(":memory:", isolation_level=None)
        self.batches = 0

    def prepare(self, sql: str) -> FakeD1Statement:
        return FakeD1Statement(self, sql)

    async def batch(self, statements: list[FakeD1Statement]) -> list[dict[str, Any]]:
        self.batches += 1
        self.conn.execute("BEGIN")
        try:
            results = [{"results": r.results, "meta": r.meta} for r in (s._run() for s in statements)]
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")
        return results


class FakeQueue:
    """A Queue producer binding: records each ``sendBatch`` call's entries."""

    def __init__(self) -> None:
        self.calls: list[list[dict[str, Any]]] = []

    async def sendBatch(self, entries: list[dict[str, Any]]) -> None:
        self.calls.append(list(entries))

    @property
    def bodies(self) -> list[Any]:
        return [entry["body"] for call in self.calls for entry in call]


class FakeMessage:
    """One message of a JS ``MessageBatch``."""

    def __init__(self, body: Any, attempts: int = 1, message_id: str = "m-1") -> None:
        self.body = body
        self.attempts = attempts
        self.id = message_id
        self.acked = 0
        self.retried = 0

    def ack(self) -> None:
        self.acked += 1

    def retry(self) -> None:
        self.retried += 1


class FakeNamespace:
    """A Durable Object namespace: ``idFromName`` then ``get`` gives the stub registered for the name."""

    constructor = types.SimpleNamespace(name="DurableObjectNamespace")

    def __init__(self, stubs: dict[str, Any]) -> None:
        self._stubs = stubs

    def idFromName(self, name: str) -> str:
        return f"id:{name}"

    def get(self, object_id: str) -> Any:
        return self._stubs[object_id.removeprefix("id:")]
