"""What a shard's alarm tick reads and writes beside single job rows: the job lanes, the settings and
token buckets, and the unique keys it sweeps.

The lanes (ADR-0043) are index-served reads of ``job``: ready merge, waiting, in flight, finished. Every
query is a range over ``job_lane`` (or ``job_key_in_flight``), so a tick reads what it uses plus one row
per distinct ready priority, whatever the backlog. The lane index orders every job (``shard_schema``): a
ready job by priority, an in-flight one by when its silence ends. Where that value is computed from the
stored row, it is a ``RowExpression`` over the *old* row, evaluated by SQLite in the same ``UPDATE``; the
functions of the lane values name every one, so no SQL is written outside ``storage/``.

``setting`` and ``key_bucket`` keep the settings in force, the pin, what last blocked dispatch and the
token buckets. ``unique_key`` keeps one row per live key, swept as it ages; a reservation lives
independently of its job's lifecycle, by design. The run and notice outboxes are in ``event_outbox``,
the debounce and throttle keys in ``enqueue_key_tables``.
"""
# J-111, J-149, J-170, J-33, ADR-0149, ADR-0150

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator, Mapping
from typing import Final, NamedTuple

from tsumugi.core import wire_format
from tsumugi.core.json_types import JsonObject, JsonValue
from tsumugi.core.schedule import Bucket, effective_priority
from tsumugi.core.states import IN_FLIGHT_STATES
from tsumugi.ports import SqlExecutor
from tsumugi.storage.job_rows import JOB_SELECT, JobRow, job_from_row
from tsumugi.storage.job_table import RowExpression
from tsumugi.storage.sql_values import changed_rows, chunks, integer, integer_or_real, literal_list

PAGE_ROWS: Final = 100  # rows fetched per priority stream per round trip
_IN_FLIGHT: Final = tuple(sorted(IN_FLIGHT_STATES))  # ("QUEUED", "RUNNING")
_IN_FLIGHT_LIST: Final = literal_list(_IN_FLIGHT)  # the partial index job_key_in_flight names these literals


class DispatchRow(NamedTuple):
    """What a tick reads of a ready job: what the dispatch decision (``core.job_view.SchedulableJob``),
    the queue message, the lifecycle log and the queue lag read. A tuple made in C from the row, never a
    dict: the candidates are read on every tick, and a row costs per column put in a dict."""

    id: str
    binding: str
    state: str
    priority: float
    attempts: int
    max_attempts: int
    concurrency_key: str | None
    guarantee: str
    timeout_ms: int
    run_after: int
    created_at: int
    dispatched_at: int | None
    heartbeat_at: int | None
    payload: str  # its JSON text
    expires_at: int | None
    traceparent: str | None
    cancel_requested_at: int | None
    # What a report of the attempt reads and the flight never changes (ADR-0181).
    run_id: str | None
    node_id: str | None
    backoff: str  # its JSON text


DISPATCH_SELECT: Final = ", ".join(DispatchRow._fields)


_dispatch_row: Final = DispatchRow._make  # in C, from the row's tuple


class LaneQueries:
    def __init__(self, sql: SqlExecutor) -> None:
        self.sql = sql

    # ------------------------------------------------------------------ ready (SCHEDULED, ready=1)
    def ready_priorities(self) -> list[float]:
        """Distinct priorities among ready jobs, one index seek each (highest first)."""
        found: list[float] = []
        rows = self.sql.execute("SELECT max(lane_at) FROM job WHERE state = 'SCHEDULED' AND ready = 1")
        while rows and rows[0][0] is not None:
            value = rows[0][0]
            assert isinstance(value, int | float)
            found.append(value)
            rows = self.sql.execute(
                "SELECT max(lane_at) FROM job WHERE state = 'SCHEDULED' AND ready = 1 AND lane_at < ?",
                (value,),
            )
        return found

    def _stream(self, priority: float, first_rows: int, page_rows: int) -> Iterator[DispatchRow]:
        """Ready jobs of one priority in ``created_at, id`` order, paged by keyset: ``first_rows``, then
        ``page_rows`` at a time."""
        after: tuple[int, str] | None = None
        limit = first_rows
        while True:
            if after is None:
                rows = self.sql.execute(
                    f"SELECT {DISPATCH_SELECT} FROM job WHERE state = 'SCHEDULED' AND ready = 1 "
                    "AND lane_at = ? ORDER BY created_at, id LIMIT ?",
                    (priority, limit),
                )
            else:
                rows = self.sql.execute(
                    f"SELECT {DISPATCH_SELECT} FROM job WHERE state = 'SCHEDULED' AND ready = 1 "
                    "AND lane_at = ? AND (created_at, id) > (?, ?) ORDER BY created_at, id LIMIT ?",
                    (priority, after[0], after[1], limit),
                )
            for row in rows:
                yield _dispatch_row(row)
            if len(rows) < limit:
                return
            last = _dispatch_row(rows[-1])
            after = (last.created_at, last.id)
            limit = page_rows

    def ready_in_order(
        self,
        now_ms: int,
        aging_interval_ms: int | None,
        page_rows: int = PAGE_ROWS,
        first_rows: int | None = None,
    ) -> Iterator[DispatchRow]:
        """All ready jobs in dispatch order: a k-way merge of the per-priority streams.

        Within one priority, ``created_at`` ascending means aged priority descending, so each stream is
        already sorted by the global key (ADR-0043). Each stream reads ``first_rows`` rows first (what the
        caller expects to take; ``page_rows`` unless given), then ``page_rows`` at a time.
        """
        first = max(1, page_rows if first_rows is None else first_rows)
        page_rows = max(1, page_rows)
        priorities = self.ready_priorities()
        if len(priorities) == 1:  # one stream is already in order: no merge, no key per row
            yield from self._stream(priorities[0], first, page_rows)
            return
        heap: list[tuple[float, int, str, int, DispatchRow, Iterator[DispatchRow]]] = []
        for n, priority in enumerate(priorities):
            stream = self._stream(priority, first, page_rows)
            head = next(stream, None)
            if head is not None:
                heap.append((*self._key(head, now_ms, aging_interval_ms), n, head, stream))
        heapq.heapify(heap)
        while heap:
            _, _, _, n, job, stream = heapq.heappop(heap)
            yield job
            head = next(stream, None)
            if head is not None:
                heapq.heappush(heap, (*self._key(head, now_ms, aging_interval_ms), n, head, stream))

    @staticmethod
    def _key(job: DispatchRow, now_ms: int, aging_interval_ms: int | None) -> tuple[float, int, str]:
        aged = effective_priority(job.priority, job.created_at, now_ms, aging_interval_ms)
        return (-aged, job.created_at, job.id)

    # ------------------------------------------------------------------ waiting (SCHEDULED, ready=0)
    def promote_due(self, now_ms: int, limit: int) -> int:
        """Move waiting jobs whose ``run_after`` has come into the ready lane; returns how many."""
        self.sql.execute(
            "UPDATE job SET ready = 1, lane_at = priority WHERE id IN ("
            "SELECT id FROM job WHERE state = 'SCHEDULED' AND ready = 0 AND lane_at <= ? "
            "ORDER BY lane_at LIMIT ?)",
            (now_ms, limit),
        )
        return changed_rows(self.sql)

    def earliest_waiting(self) -> int | None:
        rows = self.sql.execute("SELECT min(lane_at) FROM job WHERE state = 'SCHEDULED' AND ready = 0")
        value = rows[0][0] if rows else None
        return int(value) if value is not None else None

    # ------------------------------------------------------------------ in flight (QUEUED, RUNNING)
    def in_flight_due(self, now_ms: int, reaper_grace_ms: int, limit: int) -> list[JobRow]:
        """In-flight jobs whose silence deadline has passed (inclusive), oldest deadline first."""
        # J-111
        found: list[JobRow] = []
        for state in _IN_FLIGHT:
            rows = self.sql.execute(
                f"SELECT {JOB_SELECT} FROM job WHERE state = ? AND ready = 0 AND lane_at <= ? "
                "ORDER BY lane_at LIMIT ?",
                (state, now_ms - reaper_grace_ms, limit),
            )
            found.extend(job_from_row(r) for r in rows)
        return found[:limit]

    def next_in_flight(self, now_ms: int, reaper_grace_ms: int) -> list[JobRow]:
        """The in-flight job of each state with the earliest silence deadline still ahead."""
        found: list[JobRow] = []
        for state in _IN_FLIGHT:
            rows = self.sql.execute(
                f"SELECT {JOB_SELECT} FROM job WHERE state = ? AND ready = 0 AND lane_at > ? "
                "ORDER BY lane_at LIMIT 1",
                (state, now_ms - reaper_grace_ms),
            )
            found.extend(job_from_row(r) for r in rows)
        return found

    def count_in_flight(self) -> int:
        rows = self.sql.execute(f"SELECT count(*) FROM job WHERE state IN {_IN_FLIGHT_LIST}")
        return integer(rows[0][0])

    def key_in_flight(self) -> dict[str, int]:
        # INDEXED BY: without statistics the planner walks every in-flight job through job_lane instead
        # of the partial index that holds only the keyed ones (ADR-0105).
        rows = self.sql.execute(
            "SELECT concurrency_key, count(*) FROM job INDEXED BY job_key_in_flight "
            f"WHERE concurrency_key IS NOT NULL AND state IN {_IN_FLIGHT_LIST} GROUP BY concurrency_key"
        )
        return {str(k): integer(n) for k, n in rows}

    # ------------------------------------------------------------------ finished (sweep, J-170)
    def finished_before(self, states: tuple[str, ...], before_ms: int, limit: int) -> list[str]:
        found: list[str] = []
        for state in states:
            rows = self.sql.execute(
                "SELECT id FROM job WHERE state = ? AND ready = 0 AND lane_at < ? "
                "AND id NOT IN (SELECT job_id FROM outbox) ORDER BY lane_at LIMIT ?",
                (state, before_ms, limit - len(found)),
            )
            found.extend(str(r[0]) for r in rows)
            if len(found) >= limit:
                break
        return found

    def earliest_finished(self, state: str) -> int | None:
        rows = self.sql.execute("SELECT min(lane_at) FROM job WHERE state = ? AND ready = 0", (state,))
        value = rows[0][0] if rows else None
        return int(value) if value is not None else None


# ---------------------------------------------------------------------- lane values computed from the row
def by_priority() -> RowExpression:
    """A job that is ready: it sorts by its own priority."""
    return RowExpression("priority")


def silence_ends_after(now_ms: int) -> RowExpression:
    """Dispatched at ``now_ms``: its silence ends ``timeout_ms`` later."""
    # J-111
    return RowExpression("? + timeout_ms", (now_ms,))


def silence_ends_after_dispatch() -> RowExpression:
    """Claimed: the silence still counts from the dispatch (claiming does not move it)."""
    # J-111
    return RowExpression("dispatched_at + timeout_ms")


def silence_ends_after_heartbeat(now_ms: int) -> RowExpression:
    """A heartbeat at ``now_ms`` moves the silence's origin, never before a pending cancel."""
    # J-111, J-135
    return RowExpression(
        "CASE WHEN cancel_requested_at IS NULL THEN max(dispatched_at, ?) + timeout_ms "
        "ELSE min(max(dispatched_at, ?) + timeout_ms, cancel_requested_at) END",
        (now_ms, now_ms),
    )


def no_later_than(now_ms: int) -> RowExpression:
    """A cancel request at ``now_ms``: the reaper looks at the job by then at the latest."""
    # J-135
    return RowExpression("min(lane_at, ?)", (now_ms,))


# ---------------------------------------------------------------------- settings, token buckets, unique keys
SETTINGS = "settings"  # the settings in force (JSON)
STATIC_SETTINGS = "static_settings"  # the last settings carried by an enqueue, for reset (J-176)
PINNED = "settings_pinned"  # "1" once configure/update_policy pinned the settings (J-175)
LAST_BLOCKED = "last_blocked"  # J-185
BUCKET = "bucket"  # J-149


class SettingStore:
    """The ``setting`` table (a JSON value per key) and the per-key token buckets (``key_bucket``)."""

    def __init__(self, sql: SqlExecutor) -> None:
        self.sql = sql

    def get(self, key: str) -> JsonValue:
        """The stored JSON value, or None when the key is not set."""
        rows = self.sql.execute("SELECT value FROM setting WHERE key = ?", (key,))
        value: JsonValue = wire_format.loads(str(rows[0][0])) if rows else None
        return value

    def get_object(self, key: str) -> JsonObject | None:
        """``get`` of a key that holds an object (settings, a bucket, what blocked dispatch)."""
        value = self.get(key)
        return value if isinstance(value, dict) else None

    def put(self, key: str, value: JsonValue) -> None:
        self.sql.execute(
            "INSERT INTO setting (key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, wire_format.dumps(value)),
        )

    def delete(self, key: str) -> None:
        self.sql.execute("DELETE FROM setting WHERE key = ?", (key,))

    # ------------------------------------------------------------------ per-key buckets (J-149a)
    def key_buckets(self, keys: Iterable[str]) -> dict[str, Bucket]:
        found: dict[str, Bucket] = {}
        for part in chunks(list(keys)):
            marks = ", ".join("?" * len(part))
            rows = self.sql.execute(
                f"SELECT key, tokens, refilled_at FROM key_bucket WHERE key IN ({marks})", part
            )
            found.update({str(k): Bucket(float(integer_or_real(t)), integer(r)) for k, t, r in rows})
        return found

    def save_key_buckets(self, buckets: Mapping[str, Bucket], full: Iterable[str]) -> None:
        """Store buckets that are not full; drop stored rows of full ones (a missing bucket is full)."""
        self.sql.execute_many(
            "INSERT INTO key_bucket (key, tokens, refilled_at) VALUES (?, ?, ?) "
            "ON CONFLICT(key) DO UPDATE SET tokens = excluded.tokens, refilled_at = excluded.refilled_at",
            ((k, b.tokens, b.refilled_at) for k, b in buckets.items()),
        )
        self.sql.execute_many("DELETE FROM key_bucket WHERE key = ?", ((k,) for k in full))


class UniqueKeys:
    """``unique_key`` -> the job that reserved it, until ``expires_at``."""

    def __init__(self, sql: SqlExecutor) -> None:
        self.sql = sql

    def delete_expired(self, now_ms: int) -> None:
        self.sql.execute("DELETE FROM unique_key WHERE expires_at <= ?", (now_ms,))

    def reserve(self, key: str, job_id: str, expires_at: int) -> str | None:
        """Reserve ``key`` for ``job_id``; returns the holder's id when a live reservation exists."""
        landed = self.sql.execute(
            "INSERT OR IGNORE INTO unique_key (key, job_id, expires_at) VALUES (?, ?, ?) RETURNING job_id",
            (key, job_id, expires_at),
        )
        if landed:
            return None
        rows = self.sql.execute("SELECT job_id FROM unique_key WHERE key = ?", (key,))
        return str(rows[0][0])

    def live_holder(self, key: str, now_ms: int) -> str | None:
        """The job holding ``key`` now, without reserving it (ADR-0150: a duplicate spends no token)."""
        rows = self.sql.execute(
            "SELECT job_id FROM unique_key WHERE key = ? AND expires_at > ?", (key, now_ms)
        )
        return str(rows[0][0]) if rows else None
