"""``ports.SqlExecutor`` over a Durable Object's ``ctx.storage.sql``: one storage layer, two runtimes."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import Final, TypeVar

from tsumugi.ports import Row, SqlValue
from tsumugi.runtimes.cloudflare.js_conversion import js_callback, js_sql_args, rows_from_raw
from tsumugi.runtimes.cloudflare.js_objects import DurableObjectStorage, SqlCursor
from tsumugi.storage.sql_values import MAX_BOUND_PARAMS

T = TypeVar("T")
# An INSERT whose statement ends with its one VALUES row: ``execute_many`` joins rows into one statement.
_ONE_VALUES_ROW: Final = re.compile(r"^(INSERT\s.*?\sVALUES)\s*(\([^()]*\))\s*$", re.IGNORECASE | re.DOTALL)


class _Rollback(Exception):
    """Thrown through ``transactionSync`` so it rolls back; the original error is re-raised afterwards."""


class DurableObjectSqlExecutor:
    """Synchronous SQL on Durable Object SQLite.

    Every cursor is drained with ``raw().toArray()`` before the next statement runs, then released, so no
    statement is left open (an open cursor blocks the next write with SQLITE_LOCKED). ``rows_read`` and
    ``rows_written`` sum the cursors' billing counters (COST.md).
    """

    def __init__(self, storage: DurableObjectStorage) -> None:
        self._storage = storage
        self._sql = storage.sql
        self._in_transaction = False
        self.rows_read = 0
        self.rows_written = 0

    def execute(self, sql: str, params: Sequence[SqlValue] = ()) -> list[Row]:
        cursor = self._sql.exec(sql, *js_sql_args(params))
        try:
            rows = rows_from_raw(cursor.raw().toArray())
            self.rows_read += int(cursor.rowsRead)
            self.rows_written += int(cursor.rowsWritten)
        finally:
            _release(cursor)
        return rows

    def execute_many(self, sql: str, rows: Iterable[Sequence[SqlValue]]) -> None:
        """Each row's statement; an ``INSERT`` of one ``VALUES`` row takes many rows per statement.

        A call into the Durable Object's SQL crosses from Python to JavaScript, so fewer statements cost
        less; each one binds at most 100 parameters.
        """
        single = _ONE_VALUES_ROW.match(sql)
        if single is None:
            for params in rows:
                self.execute(sql, params)
            return
        head, values = single.group(1), single.group(2)
        pending = [tuple(params) for params in rows]
        per_statement = max(1, MAX_BOUND_PARAMS // max(1, values.count("?")))
        for start in range(0, len(pending), per_statement):
            chunk = pending[start : start + per_statement]
            statement = f"{head} {', '.join([values] * len(chunk))}"
            self.execute(statement, [value for params in chunk for value in params])

    def transaction(self, fn: Callable[[], T]) -> T:
        # Durable Object SQL refuses BEGIN/SAVEPOINT (PLATFORM.md §3.7); transactionSync is the only way.
        # A nested call joins the outer transaction, as a savepoint-less SQLite connection would.
        if self._in_transaction:
            return fn()
        outcome: list[T] = []
        failure: list[BaseException] = []

        def body() -> None:
            try:
                outcome.append(fn())
            except BaseException as error:
                failure.append(error)
                raise _Rollback from error

        self._in_transaction = True
        try:
            self._storage.transactionSync(js_callback(body))
        except Exception:
            if failure:
                raise failure[0] from None
            raise
        finally:
            self._in_transaction = False
        return outcome[0]


def _release(cursor: SqlCursor) -> None:
    destroy = getattr(cursor, "destroy", None)
    if callable(destroy):
        destroy()
