"""Job rows: insert, conditional transitions, heartbeats, lookups (over ``SqlExecutor``), and the attempt
log, one row per reported attempt.

Every change bumps ``version`` (the snapshot ``seq``) and marks the job dirty in the outbox. A new
job waits in ``fresh`` instead, so a job that settles soon after it was created is projected once: its
later changes mark the outbox only once it has been projected, or when it finishes (ADR-0119).
"""
# J-30, J-92, J-190, J-95, J-96

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Final, NamedTuple, TypeAlias, TypedDict

from tsumugi.core.states import TERMINAL_STATES, JobState
from tsumugi.ports import SqlExecutor, SqlValue
from tsumugi.storage.job_rows import (
    JOB_COLUMNS,
    JOB_SELECT,
    MAX_BOUND_PARAMS,
    JobRow,
    chunks,
    integer,
    job_from_row,
    literal_list,
    seq_floor,
)
from tsumugi.storage.lane_queries import RowExpression
from tsumugi.storage.outboxes import MARK, JobMarks

# Columns every new job has; the others are mostly NULL and are left out of its INSERT, since binding a
# parameter costs more than the column's default (ADR-0120).
_ALWAYS_SET: Final = (
    "id",
    "binding",
    "state",
    "priority",
    "attempts",
    "max_attempts",
    "guarantee",
    "timeout_ms",
    "backoff",
    "run_after",
    "created_at",
    "updated_at",
    "payload",
    "version",
)
_OFTEN_NULL: Final = tuple(column for column in JOB_COLUMNS if column not in _ALWAYS_SET)
_NONE_OFTEN_NULL: Final = (None,) * len(_OFTEN_NULL)
_always_values = operator.itemgetter(*_ALWAYS_SET)  # in C
_often_null_values = operator.itemgetter(*_OFTEN_NULL)


def _insert_sql(extra: tuple[str, ...]) -> str:
    columns = ("ready", "lane_at", *_ALWAYS_SET, *extra)
    return f"INSERT INTO job ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"


_INSERT: Final = _insert_sql(())
_INSERT_FRESH: Final = "INSERT INTO fresh (created_at, job_id) VALUES (?, ?)"
assert _ALWAYS_SET[0] == "id" and _ALWAYS_SET[-2:] == ("payload", "version")  # insert_uniform's layout

# Reports of a batch settled in one statement per chunk: 4 parameters a row beside 5 shared ones (3 values
# and the 2 in-flight states), within the 100 that Durable Object SQL binds (ADR-0136).
_SETTLE_ROWS: Final = (MAX_BOUND_PARAMS - 5) // 4
_SETTLE_SQL: Final = (
    "UPDATE job SET state = v.column2, attempts = v.column3, result = v.column4, ready = 0, lane_at = ?, "
    "updated_at = ?, heartbeat_at = NULL, progress = NULL, cancel_requested_at = NULL, "
    "version = max(version + 1, ?) FROM (VALUES {values}) AS v "
    "WHERE job.id = v.column1 AND +job.state IN (?, ?) RETURNING job.id"
)
# What an update sets: a column's new value, or an expression over the old row (``lane_queries``).
Assignments: TypeAlias = dict[str, SqlValue | RowExpression]


class Settle(NamedTuple):
    """A finished report's row change: the terminal state, the attempts and the stored result text."""

    job_id: str
    to_state: str
    attempts: int
    result: str | None


_TERMINAL_LIST: Final = literal_list(sorted(TERMINAL_STATES))
_ACTIVE_LIST: Final = literal_list((JobState.SCHEDULED, JobState.QUEUED, JobState.RUNNING))  # ACTIVE_STATES


def _assignments(
    now_ms: int, assignments: Mapping[str, SqlValue | RowExpression], transition: bool
) -> tuple[str, list[SqlValue]]:
    """The ``SET`` list and its parameters; a transition also stamps ``updated_at`` and clears the
    heartbeat, progress and cancel request, and every change bumps ``version``."""
    # J-69, J-135
    sets: list[str] = []
    params: list[SqlValue] = []
    merged: Assignments = {}
    if transition:
        merged.update(
            {"updated_at": now_ms, "heartbeat_at": None, "progress": None, "cancel_requested_at": None}
        )
    merged.update(assignments)
    for column, value in merged.items():
        if isinstance(value, RowExpression):
            sets.append(f"{column} = {value.sql}")
            params.extend(value.params)
        else:
            sets.append(f"{column} = ?")
            params.append(value)
    sets.append("version = max(version + 1, ?)")
    params.append(seq_floor(now_ms))
    return ", ".join(sets), params


class JobStore(JobMarks):
    """The ``job`` table of one shard, and (from ``JobMarks``) its ``outbox`` and ``fresh`` tables."""

    def __init__(self, sql: SqlExecutor) -> None:
        self.sql = sql

    # ------------------------------------------------------------------ reads
    def get(self, job_id: str) -> JobRow | None:
        rows = self.sql.execute(f"SELECT {JOB_SELECT} FROM job WHERE id = ?", (job_id,))
        return job_from_row(rows[0]) if rows else None

    def get_many(self, job_ids: Iterable[str], columns: tuple[str, ...] = JOB_COLUMNS) -> list[JobRow]:
        """The rows of ``job_ids`` the shard holds, with only ``columns`` (every column by default)."""
        found: list[JobRow] = []
        select = JOB_SELECT if columns is JOB_COLUMNS else ", ".join(columns)
        for part in chunks(list(job_ids)):
            marks = ", ".join("?" * len(part))
            rows = self.sql.execute(f"SELECT {select} FROM job WHERE id IN ({marks})", part)
            found.extend(job_from_row(r, columns) for r in rows)
        return found

    def state_of(self, job_id: str) -> str | None:
        rows = self.sql.execute("SELECT state FROM job WHERE id = ?", (job_id,))
        return str(rows[0][0]) if rows else None

    def existing(self, job_ids: list[str]) -> set[str]:
        """Which of ``job_ids`` the shard holds: one statement per chunk of ids."""
        found: set[str] = set()
        for part in chunks(job_ids):
            marks = ", ".join("?" * len(part))
            found.update(
                str(r[0]) for r in self.sql.execute(f"SELECT id FROM job WHERE id IN ({marks})", part)
            )
        return found

    def count_active(self) -> int:
        rows = self.sql.execute(f"SELECT count(*) FROM job WHERE state IN {_ACTIVE_LIST}")
        return integer(rows[0][0])

    # ------------------------------------------------------------------ writes
    def insert(self, job: JobRow, ready: int, lane_at: float) -> None:
        self.insert_many([(job, ready, lane_at)])

    def insert_many(self, rows: list[tuple[JobRow, int, float]]) -> None:
        """Insert ``(job, ready, lane_at)`` rows, each waiting for its first projection (ADR-0105, 0119)."""
        if not rows:
            return
        plain: list[tuple[SqlValue, ...]] = []
        shaped: dict[tuple[str, ...], list[tuple[SqlValue, ...]]] = {}
        for job, ready, lane_at in rows:
            often = _often_null_values(job)
            if often == _NONE_OFTEN_NULL:
                plain.append((ready, lane_at, *_always_values(job)))
            else:
                extra = tuple(
                    column for column, value in zip(_OFTEN_NULL, often, strict=True) if value is not None
                )
                values = (
                    ready,
                    lane_at,
                    *_always_values(job),
                    *(value for value in often if value is not None),
                )
                shaped.setdefault(extra, []).append(values)
        if plain:
            self.sql.execute_many(_INSERT, plain)
        for extra, values_list in shaped.items():
            self.sql.execute_many(_insert_sql(extra), values_list)
        self.sql.execute_many(_INSERT_FRESH, [(job["created_at"], job["id"]) for job, _, _ in rows])
        settled = [(job["id"],) for job, _, _ in rows if job["state"] in TERMINAL_STATES]
        if settled:
            self.sql.execute_many(MARK, settled)

    def insert_uniform(
        self, template: JobRow, ready: int, lane_at: float, ids_and_payloads: list[tuple[str, str]]
    ) -> None:
        """Insert SCHEDULED jobs that differ from ``template`` only in id and payload text (ADR-0120).

        The rows ``insert_many`` would write, built without a dict per job: a plain ``enqueue_many``.
        """
        if _often_null_values(template) != _NONE_OFTEN_NULL or template["state"] in TERMINAL_STATES:
            self.insert_many(
                [({**template, "id": i, "payload": p}, ready, lane_at) for i, p in ids_and_payloads]
            )
            return
        shared = _always_values(template)[1:-2]  # binding .. updated_at, between id and payload
        version = template["version"]
        self.sql.execute_many(
            _INSERT,
            [(ready, lane_at, job_id, *shared, payload, version) for job_id, payload in ids_and_payloads],
        )
        created_at = template["created_at"]
        self.sql.execute_many(_INSERT_FRESH, [(created_at, job_id) for job_id, _ in ids_and_payloads])

    def update(
        self,
        job_id: str,
        from_states: Iterable[str],
        now_ms: int,
        assignments: Mapping[str, SqlValue | RowExpression],
        *,
        transition: bool = True,
    ) -> JobRow | None:
        """One conditional update: ``SET... WHERE id = ? AND state IN (...)``.

        ``assignments`` maps a column to a value, or to a ``RowExpression`` over the *old* row
        (``lane_queries``). A transition also stamps ``updated_at`` and clears the
        heartbeat, progress and cancel request. Returns the new row, or None if no row
        matched.
        """
        # J-92, J-69, J-135
        sets, params = _assignments(now_ms, assignments, transition)
        states = list(from_states)
        marks = ", ".join("?" * len(states))
        rows = self.sql.execute(
            # "+state": the id picks the row through the primary key, never the lane index (ADR-0136).
            f"UPDATE job SET {sets} WHERE id = ? AND +state IN ({marks}) RETURNING {JOB_SELECT}",
            (*params, job_id, *states),
        )
        if not rows:
            return None
        job = job_from_row(rows[0])
        self.mark_changed(job)
        return job

    def update_many(
        self,
        job_ids: list[str],
        from_states: Iterable[str],
        now_ms: int,
        assignments: Mapping[str, SqlValue | RowExpression],
        columns: tuple[str, ...] = JOB_COLUMNS,
    ) -> dict[str, JobRow]:
        """``update`` of many jobs with the same assignments, one statement per chunk of ids.

        Returns the new rows (only ``columns``, which hold id and state) of the jobs that were in one of
        ``from_states``, by id; every one is marked."""
        sets, params = _assignments(now_ms, assignments, True)
        states = list(from_states)
        room = MAX_BOUND_PARAMS - len(params) - len(states)  # DO SQL binds at most 100 per statement
        changed: dict[str, JobRow] = {}
        for part in chunks(job_ids, room):
            rows = self.sql.execute(
                # "+state": the ids pick the rows through the primary key, never the lane index.
                f"UPDATE job SET {sets} WHERE +state IN ({', '.join('?' * len(states))}) "
                f"AND id IN ({', '.join('?' * len(part))}) RETURNING {', '.join(columns)}",
                (*params, *states, *part),
            )
            for row in rows:
                job = job_from_row(row, columns)
                changed[job["id"]] = job
        self.mark_changed_many(list(changed.values()))
        return changed

    def settle_many(self, settled: Sequence[Settle], from_states: Sequence[str], now_ms: int) -> set[str]:
        """Finish many in-flight jobs as ``update`` would, one statement per chunk; the ids of those that
        moved, for the caller to mark (``mark_changed_many``). The caller read the rows in this
        transaction, so the statement returns nothing else (ADR-0158)."""
        changed: set[str] = set()
        for start in range(0, len(settled), _SETTLE_ROWS):
            part = settled[start : start + _SETTLE_ROWS]
            values = ", ".join(["(?, ?, ?, ?)"] * len(part))
            params: list[SqlValue] = [now_ms, now_ms, seq_floor(now_ms)]
            for row in part:
                params.extend(row)
            sql = _SETTLE_SQL.format(values=values)
            changed.update(str(row[0]) for row in self.sql.execute(sql, (*params, *from_states)))
        return changed

    def delete_many(self, job_ids: list[str]) -> None:
        self.sql.execute_many("DELETE FROM attempt WHERE job_id = ?", ((i,) for i in job_ids))
        self.sql.execute_many("DELETE FROM job WHERE id = ?", ((i,) for i in job_ids))


# ---------------------------------------------------------------------- the attempt log (J-95, J-96)
SNAPSHOT_ATTEMPTS: Final = 20  # J-96: snapshots carry at most the 20 newest attempt rows
_KEYS: Final = ("job_id", "attempt", "state", "started_at", "finished_at", "error")


class AttemptEntry(TypedDict):
    """One ``attempt`` row, as a snapshot's ``attempts_log`` lists it."""

    job_id: str
    attempt: int
    state: str  # COMPLETED or FAILED
    started_at: int | None
    finished_at: int
    error: str | None


# ``dict`` typed as what it builds from an ``attempt`` row read in ``_KEYS`` order (the table's types).
_entry: Final[Callable[[Iterable[tuple[str, SqlValue]]], AttemptEntry]] = dict  # type: ignore[assignment]


class AttemptLog:
    def __init__(self, sql: SqlExecutor) -> None:
        self.sql = sql

    def record(
        self,
        job_id: str,
        attempt: int,
        state: str,
        started_at: int | None,
        finished_at: int,
        error: str | None,
    ) -> None:
        """Upsert: a duplicate report for the same attempt overwrites its row."""
        # J-95
        self.sql.execute(
            "INSERT OR REPLACE INTO attempt (job_id, attempt, state, started_at, finished_at, error) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (job_id, attempt, state, started_at, finished_at, error),
        )

    def newest(self, job_id: str, limit: int = SNAPSHOT_ATTEMPTS) -> list[AttemptEntry]:
        rows = self.sql.execute(
            "SELECT job_id, attempt, state, started_at, finished_at, error FROM attempt "
            "WHERE job_id = ? ORDER BY attempt DESC LIMIT ?",
            (job_id, limit),
        )
        return [_entry(zip(_KEYS, r, strict=True)) for r in rows]

    def newest_many(
        self, job_ids: list[str], limit: int = SNAPSHOT_ATTEMPTS
    ) -> dict[str, list[AttemptEntry]]:
        """``newest`` for many jobs at once: one statement per chunk of ids; a job without rows is absent."""
        found: dict[str, list[AttemptEntry]] = {}
        for start in range(0, len(job_ids), MAX_BOUND_PARAMS):
            part = job_ids[start : start + MAX_BOUND_PARAMS]
            rows = self.sql.execute(
                "SELECT job_id, attempt, state, started_at, finished_at, error FROM attempt "
                f"WHERE job_id IN ({', '.join('?' * len(part))}) ORDER BY job_id, attempt DESC",
                part,
            )
            for row in rows:
                entries = found.setdefault(str(row[0]), [])
                if len(entries) < limit:
                    entries.append(_entry(zip(_KEYS, row, strict=True)))
        return found

    def last_error(self, job_id: str) -> str | None:
        rows = self.sql.execute(
            "SELECT error FROM attempt WHERE job_id = ? ORDER BY attempt DESC LIMIT 1", (job_id,)
        )
        return str(rows[0][0]) if rows and rows[0][0] is not None else None
