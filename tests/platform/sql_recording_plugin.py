"""pytest plugin: record every statement any ``SqliteExecutor`` runs during a test session (proof 3).

Loaded with ``-p tests.platform.sql_recording_plugin`` in a child pytest run of the coordinator and
local-runtime suites; the recording is written to ``$TSUMUGI_SQL_RECORDING`` when the session ends.
A file database is one session however often it is reopened; each ``:memory:`` database is its own.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from tests.platform.recording import RecordingExecutor, SqlRecording

from tsumugi.ports import Row, SqlValue
from tsumugi.runtimes.local.sqlite_executor import SqliteExecutor

T = TypeVar("T")
RECORDING = SqlRecording()
_ORIGINAL_INIT = SqliteExecutor.__init__
_ORIGINAL_EXECUTE = SqliteExecutor.execute
_ORIGINAL_EXECUTE_MANY = SqliteExecutor.execute_many
_ORIGINAL_TRANSACTION = SqliteExecutor.transaction


class _Unrecorded:
    """The executor's own methods, for the recorder to call through."""

    def __init__(self, executor: SqliteExecutor) -> None:
        self._executor = executor

    def execute(self, sql: str, params: Sequence[SqlValue] = ()) -> list[Row]:
        return _ORIGINAL_EXECUTE(self._executor, sql, params)

    def execute_many(self, sql: str, rows: Iterable[Sequence[SqlValue]]) -> None:
        for params in rows:
            self.execute(sql, params)

    def transaction(self, fn: Callable[[], T]) -> T:
        return _ORIGINAL_TRANSACTION(self._executor, fn)


# Files only the local runtime keeps (alarms, the dispatch queue, the run journal): never Durable Object SQL.
LOCAL_ONLY_FILES = frozenset({"alarms.sqlite3", "queue.sqlite3", "open_coordinators.sqlite3"})


def _init(self: SqliteExecutor, path: str | Path = ":memory:") -> None:
    _ORIGINAL_INIT(self, path)
    self._local_only = Path(str(path)).name in LOCAL_ONLY_FILES  # type: ignore[attr-defined]
    session = RECORDING.new_session("memory") if str(path) == ":memory:" else str(Path(path).resolve())
    self._recorder = RecordingExecutor(_Unrecorded(self), RECORDING, session)  # type: ignore[attr-defined]


def _execute(self: SqliteExecutor, sql: str, params: Sequence[SqlValue] = ()) -> list[Row]:
    if sql.lstrip().upper().startswith("PRAGMA"):
        if "MAX_PAGE_COUNT" in sql.upper():
            self._local_only = True  # type: ignore[attr-defined]  # a full-disk experiment: DO has no such limit
        return _ORIGINAL_EXECUTE(self, sql, params)  # PRAGMAs are the local runtime's, never engine SQL
    if self._local_only:  # type: ignore[attr-defined]
        return _ORIGINAL_EXECUTE(self, sql, params)
    return self._recorder.execute(sql, params)  # type: ignore[attr-defined, no-any-return]


def _execute_many(self: SqliteExecutor, sql: str, rows: Iterable[Sequence[SqlValue]]) -> None:
    if self._local_only:  # type: ignore[attr-defined]
        _ORIGINAL_EXECUTE_MANY(self, sql, rows)
        return
    self._recorder.execute_many(sql, rows)  # type: ignore[attr-defined]


def _transaction(self: SqliteExecutor, fn: Callable[[], T]) -> T:
    return self._recorder.transaction(fn)  # type: ignore[attr-defined, no-any-return]


def pytest_configure(config: Any) -> None:
    SqliteExecutor.__init__ = _init  # type: ignore[method-assign]
    SqliteExecutor.execute = _execute  # type: ignore[method-assign]
    SqliteExecutor.execute_many = _execute_many  # type: ignore[method-assign]
    SqliteExecutor.transaction = _transaction  # type: ignore[method-assign]


def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    RECORDING.save(Path(os.environ["TSUMUGI_SQL_RECORDING"]))
