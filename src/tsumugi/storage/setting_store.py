"""The ``setting`` and ``key_bucket`` tables: settings, pin, last blocked flags, token buckets."""
# J-149

from __future__ import annotations

from collections.abc import Iterable, Mapping

from tsumugi.core import jsonwire
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
