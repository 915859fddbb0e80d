"""An instrumented ``SqlExecutor`` that counts statements and estimates DO rows written (ADR-0042).

Durable Object ``rowsWritten`` counts every b-tree entry a write touches. sqlite3's ``total_changes``
counts table rows only, so each changed row is multiplied by ``1 + index entries`` of its table
(``INDEX_ENTRIES`` in the shard schema: every job write moves its one lane entry). A DELETE counts one
row, as COST.md measured for the original. ``vm_steps`` (sqlite VM instructions, sampled every 100)
stands in for rows read, which sqlite3 cannot report.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, TypeVar

from tsumugi.ports import Row, SqlValue
from tsumugi.runtimes.local.sqlite_executor import SqliteExecutor
from tsumugi.storage.shard_schema import INDEX_ENTRIES

T = TypeVar("T")
_TABLE_RE: Final = re.compile(r"^\s*(INSERT(?:\s+OR\s+\w+)?\s+INTO|UPDATE|DELETE\s+FROM)\s+(\w+)", re.I)
VM_SAMPLE: Final = 100  # progress-handler granularity: one count per 100 VM instructions


@dataclass
class StatementStats:
    calls: int = 0
    rows_changed: int = 0
    rows_written: int = 0
    rows_returned: int = 0


class CountingExecutor:
    """Wraps a ``SqliteExecutor``; per-statement statistics in ``stats``."""

    def __init__(self, inner: SqliteExecutor, index_entries: Mapping[str, int] = INDEX_ENTRIES) -> None:
        self.inner = inner
        self.index_entries = index_entries
        self.stats: dict[str, StatementStats] = {}
        self.vm_steps = 0
        self.max_params = 0  # DO SQL binds at most 100 parameters per statement
        inner.set_progress_handler(self._step, VM_SAMPLE)

    def _step(self) -> int:
        self.vm_steps += VM_SAMPLE
        return 0

    def _record(self, sql: str, changed: int, returned: int) -> None:
        key = " ".join(sql.split())
        stats = self.stats.setdefault(key, StatementStats())
        stats.calls += 1
        stats.rows_changed += changed
        stats.rows_returned += returned
        match = _TABLE_RE.match(sql)
        if match and changed:
            verb, table = match.group(1).upper(), match.group(2)
            per_row = 1 if verb.startswith("DELETE") else 1 + self.index_entries.get(table, 0)
            stats.rows_written += changed * per_row

    def execute(self, sql: str, params: Sequence[SqlValue] = ()) -> list[Row]:
        self.max_params = max(self.max_params, len(params))
        before = self.inner.total_changes
        rows = self.inner.execute(sql, params)
        self._record(sql, self.inner.total_changes - before, len(rows))
        return rows

    def execute_many(self, sql: str, rows: Iterable[Sequence[SqlValue]]) -> None:
        before = self.inner.total_changes
        self.inner.execute_many(sql, rows)
        self._record(sql, self.inner.total_changes - before, 0)

    def transaction(self, fn: Callable[[], T]) -> T:
        return self.inner.transaction(fn)

    @property
    def rows_written(self) -> int:
        return sum(s.rows_written for s in self.stats.values())

    @property
    def rows_returned(self) -> int:
        return sum(s.rows_returned for s in self.stats.values())

    def reset(self) -> None:
        self.stats.clear()
        self.vm_steps = 0
