"""Replaying recorded sessions on real Durable Object SQLite and comparing with CPython sqlite3 (proof 3).

Each session runs on a fresh Durable Object, its groups in order (transactions inside
``transactionSync``, rolled back where CPython rolled back). Parameters go through the Workers adapter's
own conversion (``js_conversion.sql_params``), so a statement is replayed exactly as Python Workers
would bind it. A statement conforms when both engines succeed with equal rows, or both fail.
"""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tests.platform.recording import RecordedGroup, RecordedStatement, SqlRecording
from tests.platform.replay_client import ReplayServer, StatementGroup

from tsumugi.errors import UnsafeIntegerError
from tsumugi.runtimes.cloudflare.js_conversion import sql_params

MAX_STATEMENTS_PER_REQUEST = 3000  # keeps one loopback request well under a second of DO work
_run_ids = itertools.count(1)


@dataclass
class StatementCost:
    executions: int = 0
    rows_read: int = 0
    rows_written: int = 0


@dataclass
class ReplayReport:
    statements: int = 0
    identical: int = 0
    mismatches: list[dict[str, Any]] = field(default_factory=list)
    distinct_sql: set[str] = field(default_factory=set)
    rows_read: int = 0
    rows_written: int = 0
    per_sql: dict[str, StatementCost] = field(default_factory=lambda: defaultdict(StatementCost))
    kinds: Counter[str] = field(default_factory=Counter)
    mismatched_sql: Counter[str] = field(default_factory=Counter)

    @property
    def identical_share(self) -> float:
        return self.identical / self.statements if self.statements else 1.0


def same_rows(expected: Sequence[Sequence[Any]], actual: Sequence[Sequence[Any]]) -> bool:
    """Rows equal cell by cell; JS has one number type, so 3 and 3.0 are the same value."""
    if len(expected) != len(actual):
        return False
    for row_a, row_b in zip(expected, actual, strict=True):
        if len(row_a) != len(row_b):
            return False
        for a, b in zip(row_a, row_b, strict=True):
            if isinstance(a, bool | int | float) and isinstance(b, bool | int | float):
                if float(a) != float(b):
                    return False
            elif a != b:
                return False
    return True


def _chunks(groups: list[RecordedGroup]) -> list[list[RecordedGroup]]:
    chunks: list[list[RecordedGroup]] = [[]]
    size = 0
    for group in groups:
        if size and size + len(group.statements) > MAX_STATEMENTS_PER_REQUEST:
            chunks.append([])
            size = 0
        chunks[-1].append(group)
        size += len(group.statements)
    return chunks


def _bindable(statement: RecordedStatement) -> list[Any] | str:
    try:
        return list(sql_params(statement.params))
    except (UnsafeIntegerError, TypeError) as error:
        return str(error)


def replay(server: ReplayServer, recording: SqlRecording, report: ReplayReport | None = None) -> ReplayReport:
    """Replay every session of ``recording``; returns (or extends) the conformance and cost report."""
    report = report or ReplayReport()
    for session, groups in recording.sessions.items():
        database = f"replay-{next(_run_ids)}-{session}"
        for chunk in _chunks(groups):
            payload: list[StatementGroup] = []
            for group in chunk:
                stmts = []
                for st in group.statements:
                    params = _bindable(st)
                    stmts.append((st.sql, params if isinstance(params, list) else ["<unbindable>"]))
                payload.append(StatementGroup(stmts, group.transaction, group.rollback))
            results = server.run_groups(database, payload)
            for group, group_results in zip(chunk, results, strict=True):
                _compare_group(report, session, group, group_results)
    return report


def _compare_group(
    report: ReplayReport, session: str, group: RecordedGroup, results: list[dict[str, Any]]
) -> None:
    for index, statement in enumerate(group.statements):
        result = results[index] if index < len(results) else {"ok": False, "error": "not run"}
        report.statements += 1
        report.distinct_sql.add(statement.sql)
        report.kinds[statement.sql.split(None, 1)[0].upper()] += 1
        if result.get("ok"):
            cost = report.per_sql[statement.sql]
            cost.executions += 1
            cost.rows_read += int(result["rowsRead"])
            cost.rows_written += int(result["rowsWritten"])
            report.rows_read += int(result["rowsRead"])
            report.rows_written += int(result["rowsWritten"])
        conforms = (statement.ok and result.get("ok") and same_rows(statement.rows, result["rows"])) or (
            not statement.ok and not result.get("ok")
        )
        if conforms:
            report.identical += 1
            continue
        report.mismatched_sql[statement.sql] += 1
        if report.mismatched_sql[statement.sql] <= 3:
            report.mismatches.append(
                {
                    "session": session,
                    "sql": statement.sql,
                    "params": statement.params,
                    "cpython": statement.rows if statement.ok else statement.error,
                    "durable_object": result.get("rows") if result.get("ok") else result.get("error"),
                }
            )
