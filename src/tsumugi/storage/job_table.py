"""The ``job`` table of one shard: its reads by id and its writes (the row itself is in ``job_rows``).

A job is inserted, then moved by conditional updates (``WHERE id = ? AND state IN (...)``). Every change
bumps ``version`` (the snapshot ``seq``) and marks the job in the ``outbox`` for projection. A new job
waits in ``fresh`` instead, so a job that settles soon after it was created is projected once: its later
changes mark the outbox only once it has been projected, or when it finishes (ADR-0042, ADR-0119).
The lane reads are in ``tick_tables``, the projection's reads in
``read_model_writer``, the reads off the plain path in ``job_lookups``.
"""
# J-30, J-92, J-190

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, NamedTuple, TypeAlias

from tsumugi.core.states import TERMINAL_STATES
from tsumugi.ports import SqlExecutor, SqlValue
from tsumugi.storage.job_rows import JOB_COLUMNS, JOB_SELECT, JobRow, job_from_row, row_reader, seq_floor
from tsumugi.storage.sql_values import MAX_BOUND_PARAMS, changed_rows, chunks


# ---------------------------------------------------------------------- what an update sets
@dataclass(frozen=True, slots=True)
class RowExpression:
    """A column value SQLite computes from the row being updated, with its parameters (the lane values
    of ``tick_tables``)."""

    sql: str
    params: tuple[SqlValue, ...] = ()


# A column's new value, or an expression over the old row.
Assignments: TypeAlias = dict[str, SqlValue | RowExpression]


class Settle(NamedTuple):
    """A finished report's row change: the terminal state, the attempts and the stored result text."""

    job_id: str
    to_state: str
    attempts: int
    result: str | None


# Columns every new job has; the others are mostly NULL and are left out of its INSERT, since binding a
# parameter costs more than the column's default (ADR-0120).
_ALWAYS_SET: Final[tuple[str, ...]] = tuple(
    "id binding state priority attempts max_attempts guarantee timeout_ms backoff run_after "
    "created_at updated_at payload version".split()
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
# What settling sets beside the state, attempts and result: the lane, the stamps, a cleared heartbeat,
# progress and cancel request, the new version (3 parameters: lane_at, updated_at, the version's floor).
_SETTLED: Final = (
    "ready = 0, lane_at = ?, updated_at = ?, heartbeat_at = NULL, progress = NULL, "
    "cancel_requested_at = NULL, version = max(version + 1, ?)"
)
_SETTLE_SQL: Final = (
    f"UPDATE job SET state = v.column2, attempts = v.column3, result = v.column4, {_SETTLED} "
    "FROM (VALUES {values}) AS v WHERE job.id = v.column1 AND +job.state IN (?, ?)"
)
# Jobs that end alike, by id: 6 shared parameters and the in-flight states, the rest ids.
_SETTLE_ALIKE_SQL: Final = (
    f"UPDATE job SET state = ?, attempts = ?, result = ?, {_SETTLED} "
    "WHERE +state IN ({states}) AND id IN ({ids})"
)
# First attempts that finished with nothing to keep, by id: only those still in flight on that attempt.
_COMPLETE_FIRST_SQL: Final = (
    f"UPDATE job SET state = 'COMPLETED', attempts = 1, result = NULL, {_SETTLED} "
    "WHERE +state IN ({states}) AND attempts = 0 AND id IN ({ids})"
)
MARK: Final = "INSERT OR IGNORE INTO outbox (job_id) VALUES (?)"
# A change to a job still waiting for its first projection needs no mark: that projection reads the row.
_MARK_UNLESS_FRESH: Final = (
    "INSERT OR IGNORE INTO outbox (job_id) SELECT ? "
    "WHERE NOT EXISTS (SELECT 1 FROM fresh WHERE created_at = ? AND job_id = ?)"
)

_ANY_FRESH: Final = "SELECT EXISTS (SELECT 1 FROM fresh)"


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


class JobStore:
    """The ``job`` table of one shard: lookups by id, inserts, transitions, and the marks they leave."""

    def __init__(self, sql: SqlExecutor) -> None:
        self.sql = sql

    def get(self, job_id: str) -> JobRow | None:
        rows = self.sql.execute(f"SELECT {JOB_SELECT} FROM job WHERE id = ?", (job_id,))
        return job_from_row(rows[0]) if rows else None

    def get_many(self, job_ids: Iterable[str], columns: tuple[str, ...] = JOB_COLUMNS) -> list[JobRow]:
        """The rows of ``job_ids`` the shard holds, with only ``columns`` (every column by default)."""
        found: list[JobRow] = []
        select = JOB_SELECT if columns is JOB_COLUMNS else ", ".join(columns)
        read = row_reader(columns)
        for part in chunks(list(job_ids)):
            marks = ", ".join("?" * len(part))
            found.extend(map(read, self.sql.execute(f"SELECT {select} FROM job WHERE id IN ({marks})", part)))
        return found

    # ------------------------------------------------------------------ inserts (ADR-0105, ADR-0120)
    def insert_many(self, rows: list[tuple[JobRow, int, float]]) -> None:
        """Insert ``(job, ready, lane_at)`` rows, each waiting for its first projection (ADR-0119)."""
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
        self,
        template: JobRow,
        ready: int,
        lane_at: float,
        rows: Sequence[tuple[SqlValue, ...]],
        extra: tuple[str, ...] = (),
    ) -> None:
        """Insert SCHEDULED jobs that differ from ``template`` only in id, payload text and ``extra``.

        Each row is ``(id, payload, *extra values)``, with ``extra`` naming mostly-NULL columns. The rows
        ``insert_many`` would write, built without a dict per job: a plain ``enqueue_many``, or a run's
        job nodes.
        """
        if _often_null_values(template) != _NONE_OFTEN_NULL or template["state"] in TERMINAL_STATES:
            jobs = [{**template, **dict(zip(("id", "payload", *extra), row, strict=True))} for row in rows]
            self.insert_many([(job, ready, lane_at) for job in jobs])  # type: ignore[misc]
            return
        shared = _always_values(template)[1:-2]  # binding .. updated_at, between id and payload
        version = template["version"]
        self.sql.execute_many(
            _insert_sql(extra) if extra else _INSERT,
            [(ready, lane_at, row[0], *shared, row[1], version, *row[2:]) for row in rows],
        )
        created_at = template["created_at"]
        self.sql.execute_many(_INSERT_FRESH, [(created_at, row[0]) for row in rows])

    # ------------------------------------------------------------------ transitions (J-92)
    def update(
        self,
        job_id: str,
        from_states: Iterable[str],
        now_ms: int,
        assignments: Mapping[str, SqlValue | RowExpression],
        *,
        transition: bool = True,
    ) -> JobRow | None:
        """One conditional update: ``SET... WHERE id = ? AND state IN (...)``; the new row, or None if no
        row matched.

        ``assignments`` maps a column to a value, or to a ``RowExpression`` over the *old* row. A
        transition also stamps ``updated_at`` and clears the heartbeat, progress and cancel request.
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
    ) -> set[str]:
        """``update`` of many jobs with the same assignments, one statement per chunk of ids; every job
        moves and is marked, and their ids are returned.

        The caller read these rows in this transaction, each in one of ``from_states``, and
        ``assignments`` names the new ``state``. So the statement returns nothing: in SQLite an
        ``UPDATE`` with ``RETURNING`` costs about twice one without. Its count of changed rows is
        checked instead, and a shortfall raises, which rolls the transaction back (ADR-0176).
        """
        to_state = assignments["state"]
        assert isinstance(to_state, str), "update_many needs the new state"
        sets, params = _assignments(now_ms, assignments, True)
        states = list(from_states)
        room = MAX_BOUND_PARAMS - len(params) - len(states)  # DO SQL binds at most 100 per statement
        for part in chunks(job_ids, room):
            self.sql.execute(
                # "+state": the ids pick the rows through the primary key, never the lane index.
                f"UPDATE job SET {sets} WHERE +state IN ({', '.join('?' * len(states))}) "
                f"AND id IN ({', '.join('?' * len(part))})",
                (*params, *states, *part),
            )
            self._check_changed(len(part), to_state)
        if to_state in TERMINAL_STATES:
            self._mark_ids(job_ids, [])
        else:
            self._mark_ids([], job_ids)
        return set(job_ids)

    def _check_changed(self, expected: int, to_state: str) -> None:
        """Raise unless the last statement changed ``expected`` rows: a batch write's rows were read in
        the same transaction, so every one of them must have moved."""
        changed = changed_rows(self.sql)
        if changed != expected:
            raise RuntimeError(
                f"moving jobs to {to_state} changed {changed} of {expected} rows read in the same "
                "transaction; the transaction is rolled back"
            )

    def settle_many(self, settled: Sequence[Settle], from_states: Sequence[str], now_ms: int) -> set[str]:
        """Finish many in-flight jobs as ``update`` would, one statement per chunk; the ids of those that
        moved (every one), for the caller to mark (``mark_changed_many``). The caller read the rows in
        this transaction, each in one of ``from_states``, so the statement returns nothing; its count
        of changed rows is checked as ``update_many`` checks it (ADR-0158, ADR-0176).

        Jobs that end alike (same state, attempts and result: most often no result at all) are written by
        id, the others with their values beside each id."""
        changed: set[str] = set()
        alike: dict[tuple[str, int, str | None], list[Settle]] = {}
        for row in settled:
            alike.setdefault(row[1:], []).append(row)
        apart: list[Settle] = []
        for (to_state, attempts, result), group in alike.items():
            if len(group) == 1:
                apart.extend(group)
                continue
            job_ids = [row.job_id for row in group]
            shared: tuple[SqlValue, ...] = (to_state, attempts, result, now_ms, now_ms, seq_floor(now_ms))
            for part in chunks(job_ids, MAX_BOUND_PARAMS - len(shared) - len(from_states)):
                marks = ", ".join("?" * len(part))
                sql = _SETTLE_ALIKE_SQL.format(states=", ".join("?" * len(from_states)), ids=marks)
                self.sql.execute(sql, (*shared, *from_states, *part))
                self._check_changed(len(part), to_state)
                changed.update(part)
        for start in range(0, len(apart), _SETTLE_ROWS):
            rows = apart[start : start + _SETTLE_ROWS]
            values = ", ".join(["(?, ?, ?, ?)"] * len(rows))
            params: list[SqlValue] = [now_ms, now_ms, seq_floor(now_ms)]
            for row in rows:
                params.extend(row)
            sql = _SETTLE_SQL.format(values=values)
            self.sql.execute(sql, (*params, *from_states))
            self._check_changed(len(rows), "their end")
            changed.update(row.job_id for row in rows)
        return changed

    def complete_first_attempts(self, job_ids: list[str], from_states: Sequence[str], now_ms: int) -> None:
        """Finish ``job_ids`` as ``settle_many`` finishes a first attempt that returned nothing: each must
        still be in one of ``from_states`` on its first attempt, or this raises and the transaction is
        rolled back (ADR-0181)."""
        shared: tuple[SqlValue, ...] = (now_ms, now_ms, seq_floor(now_ms), *from_states)
        states = ", ".join("?" * len(from_states))
        for part in chunks(job_ids, MAX_BOUND_PARAMS - len(shared)):
            self.sql.execute(
                _COMPLETE_FIRST_SQL.format(states=states, ids=", ".join("?" * len(part))), (*shared, *part)
            )
            self._check_changed(len(part), "COMPLETED")

    def delete_many(self, job_ids: list[str]) -> None:
        """The sweep's delete: the jobs' attempt rows first, then the jobs."""
        # J-170
        self.sql.execute_many("DELETE FROM attempt WHERE job_id = ?", ((i,) for i in job_ids))
        self.sql.execute_many("DELETE FROM job WHERE id = ?", ((i,) for i in job_ids))

    # ------------------------------------------------------------------ outbox marks (J-190)
    def mark_changed(self, job: JobRow) -> None:
        """Mark a changed job for projection; free when already marked (ADR-0042).

        A finished job is marked at once; a job still waiting for its first projection is left to it.
        """
        if job["state"] in TERMINAL_STATES:
            self.sql.execute(MARK, (job["id"],))
        else:
            self.sql.execute(_MARK_UNLESS_FRESH, (job["id"], job["created_at"], job["id"]))

    def mark_changed_many(self, jobs: list[JobRow]) -> None:
        """``mark_changed`` for many jobs: one statement per chunk, finished and unfinished apart."""
        self._mark_ids(
            [job["id"] for job in jobs if job["state"] in TERMINAL_STATES],
            [job["id"] for job in jobs if job["state"] not in TERMINAL_STATES],
        )

    def _mark_ids(self, finished: list[str], unfinished: list[str]) -> None:
        if unfinished and not self.sql.execute(_ANY_FRESH)[0][0]:
            # Nothing waits for a first projection, so no job is left to it: each is marked by its id alone,
            # without a read of its row and of ``fresh`` (ADR-0183).
            finished, unfinished = [*finished, *unfinished], []
        for part in chunks(finished):
            values = ", ".join(["(?)"] * len(part))
            self.sql.execute(f"INSERT OR IGNORE INTO outbox (job_id) VALUES {values}", part)
        for part in chunks(unfinished):
            self.sql.execute(
                "INSERT OR IGNORE INTO outbox (job_id) SELECT j.id FROM job j "
                f"WHERE j.id IN ({', '.join('?' * len(part))}) AND NOT EXISTS "
                "(SELECT 1 FROM fresh f WHERE f.created_at = j.created_at AND f.job_id = j.id)",
                part,
            )
