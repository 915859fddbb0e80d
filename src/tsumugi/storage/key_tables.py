"""The shard's keyed tables beside its jobs: settings and token buckets, and the keys an enqueue holds.

``setting`` and ``key_bucket`` keep the settings in force, the pin, what last blocked dispatch and the
token buckets. ``unique_key``, ``debounce_key`` and ``throttle_key`` keep one row per live key, swept as
it ages; a unique-key reservation lives independently of its job's lifecycle, by design.
"""
# J-149, J-33..J-37, ADR-0149, ADR-0150

from __future__ import annotations

from collections.abc import Iterable, Mapping

from tsumugi.core import jsonwire
from tsumugi.core.enqueue_keys import DebounceHolder
from tsumugi.core.json_types import JsonObject, JsonValue
from tsumugi.core.token_bucket import Bucket
from tsumugi.ports import SqlExecutor
from tsumugi.storage.job_rows import chunks, integer, integer_or_real

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
        value: JsonValue = jsonwire.loads(str(rows[0][0])) if rows else None
        return value

    def get_object(self, key: str) -> JsonObject | None:
        """``get`` of a key that holds an object (settings, a bucket, what blocked dispatch)."""
        value = self.get(key)
        return value if isinstance(value, dict) else None

    def put(self, key: str, value: JsonValue) -> None:
        self.sql.execute(
            "INSERT INTO setting (key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, jsonwire.dumps(value)),
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


class DebounceKeys:
    """``debounce_key`` -> the waiting job it points at, until the window's end (``until``)."""

    def __init__(self, sql: SqlExecutor) -> None:
        self.sql = sql

    def delete_expired(self, now_ms: int) -> None:
        """Windows that ended at or before now: their job is due, the next enqueue opens a new one."""
        self.sql.execute("DELETE FROM debounce_key WHERE until <= ?", (now_ms,))

    def holder(self, key: str) -> DebounceHolder | None:
        rows = self.sql.execute("SELECT job_id, max_at FROM debounce_key WHERE key = ?", (key,))
        if not rows:
            return None
        job_id, max_at = rows[0]
        return DebounceHolder(str(job_id), None if max_at is None else int(max_at))

    def put(self, key: str, job_id: str, until: int, max_at: int | None) -> None:
        self.sql.execute(
            "INSERT OR REPLACE INTO debounce_key (key, job_id, until, max_at) VALUES (?, ?, ?, ?)",
            (key, job_id, until, max_at),
        )

    def extend(self, key: str, until: int) -> None:
        self.sql.execute("UPDATE debounce_key SET until = ? WHERE key = ?", (until, key))


class ThrottleKeys:
    """``throttle_key`` -> its theoretical arrival time (``tat``); a passed ``tat`` is a full bucket."""

    def __init__(self, sql: SqlExecutor) -> None:
        self.sql = sql

    def delete_expired(self, now_ms: int) -> None:
        self.sql.execute("DELETE FROM throttle_key WHERE tat <= ?", (now_ms,))

    def tat(self, key: str) -> float | None:
        rows = self.sql.execute("SELECT tat FROM throttle_key WHERE key = ?", (key,))
        if not rows:
            return None
        tat = rows[0][0]
        return float(tat) if isinstance(tat, int | float) else None

    def put(self, key: str, tat: float) -> None:
        self.sql.execute("INSERT OR REPLACE INTO throttle_key (key, tat) VALUES (?, ?)", (key, tat))
