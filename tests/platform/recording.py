"""Recording every SQL statement the engine issues, with its parameters and results (proof 3).

``RecordingExecutor`` wraps any ``ports.SqlExecutor``; a ``SqlRecording`` keeps, per database (session),
the statements in order, grouped the way they ran: autocommit runs, and ``transaction`` bodies (with
whether they rolled back). ``do_replay`` runs the same groups on Durable Object SQLite.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from tests.platform.replay_client import decode_cell, encode_param

from tsumugi.ports import Row, SqlExecutor, SqlValue

T = TypeVar("T")


@dataclass
class RecordedStatement:
    sql: str
    params: list[Any]
    ok: bool
    rows: list[Row] = field(default_factory=list)
    error: str | None = None


@dataclass
class RecordedGroup:
    transaction: bool
    statements: list[RecordedStatement] = field(default_factory=list)
    rollback: bool = False


class SqlRecording:
    """Sessions of recorded groups, keyed by database; saved and loaded as JSON lines."""

    def __init__(self) -> None:
        self.sessions: dict[str, list[RecordedGroup]] = {}
        self._ids = itertools.count(1)

    def new_session(self, prefix: str = "db") -> str:
        key = f"{prefix}-{next(self._ids)}"
        self.sessions[key] = []
        return key

    def statements(self) -> Iterable[RecordedStatement]:
        for groups in self.sessions.values():
            for group in groups:
                yield from group.statements

    def save(self, path: Path) -> None:
        with path.open("w", encoding="utf-8") as out:
            for key, groups in self.sessions.items():
                for group in groups:
                    record = {
                        "session": key,
                        "transaction": group.transaction,
                        "rollback": group.rollback,
                        "statements": [
                            {
                                "sql": st.sql,
                                "params": [encode_param(p) for p in st.params],
                                "ok": st.ok,
                                "rows": [[encode_param(c) for c in row] for row in st.rows],
                                "error": st.error,
                            }
                            for st in group.statements
                        ],
                    }
                    out.write(json.dumps(record) + "\n")

    def load(self, path: Path, prefix: str) -> None:
        """Add the sessions of a saved recording, their keys prefixed to keep them apart."""
        with path.open(encoding="utf-8") as lines:
            for line in lines:
                record = json.loads(line)
                group = RecordedGroup(record["transaction"], rollback=record["rollback"])
                for st in record["statements"]:
                    group.statements.append(
                        RecordedStatement(
                            st["sql"],
                            [decode_cell(p) for p in st["params"]],
                            st["ok"],
                            [tuple(decode_cell(c) for c in row) for row in st["rows"]],
                            st["error"],
                        )
                    )
                self.sessions.setdefault(f"{prefix}:{record['session']}", []).append(group)


class RecordingExecutor:
    """A ``ports.SqlExecutor`` that records every statement of ``inner`` into one session."""

    def __init__(self, inner: SqlExecutor, recording: SqlRecording, session: str | None = None) -> None:
        self._inner = inner
        self._recording = recording
        self.session = session or recording.new_session()
        self._groups = recording.sessions.setdefault(self.session, [])
        self._transaction: RecordedGroup | None = None

    def _group(self) -> RecordedGroup:
        if self._transaction is not None:
            return self._transaction
        if not self._groups or self._groups[-1].transaction:
            self._groups.append(RecordedGroup(transaction=False))
        return self._groups[-1]

    def execute(self, sql: str, params: Sequence[SqlValue] = ()) -> list[Row]:
        if sql.lstrip().upper().startswith("EXPLAIN"):
            # A test's look at the query plan, not an engine statement: plans legitimately differ
            # between SQLite versions, so they are not part of the conformance replay.
            return self._inner.execute(sql, params)
        group = self._group()
        try:
            rows = self._inner.execute(sql, params)
        except Exception as error:
            group.statements.append(RecordedStatement(sql, list(params), False, error=str(error)))
            raise
        group.statements.append(RecordedStatement(sql, list(params), True, list(rows)))
        return rows

    def execute_many(self, sql: str, rows: Iterable[Sequence[SqlValue]]) -> None:
        for params in rows:
            self.execute(sql, params)

    def transaction(self, fn: Callable[[], T]) -> T:
        if self._transaction is not None:
            return fn()  # a nested call joins the outer transaction, as SqliteExecutor does
        group = RecordedGroup(transaction=True)
        self._groups.append(group)
        self._transaction = group

        def body() -> T:
            try:
                return fn()
            except BaseException:
                group.rollback = True
                raise

        try:
            return self._inner.transaction(body)
        finally:
            self._transaction = None
