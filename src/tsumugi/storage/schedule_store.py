"""The scheduler's SQLite: one row per schedule plus the definitions' fingerprint."""
# S-12

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Final

from tsumugi.core.json_types import JsonObject
from tsumugi.ports import SqlExecutor, SqlValue

SCHEDULE_DDL: Final = (
    """CREATE TABLE IF NOT EXISTS schedule (
  name TEXT PRIMARY KEY NOT NULL,
  kind TEXT NOT NULL,
  target TEXT NOT NULL,
  every_ms INTEGER,
  cron TEXT,
  overlap TEXT NOT NULL,
  next_run_at INTEGER NOT NULL,
  last_run_at INTEGER,
  last_fired_at INTEGER,
  last_job_id TEXT,
  last_run_id TEXT,
  last_skipped_at INTEGER,
  skipped_count INTEGER NOT NULL DEFAULT 0,
  last_error TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
)""",
    "CREATE INDEX IF NOT EXISTS schedule_next ON schedule(next_run_at)",
    "CREATE TABLE IF NOT EXISTS setting (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL)",
)
FINGERPRINT_KEY: Final = "defs_fingerprint"
DUE_BATCH: Final = 50  # S-16: schedules fired per tick; the rest are due at once on the next alarm


@dataclass(frozen=True, slots=True)
class ScheduleRow:
    name: str
    kind: str
    target: str
    every_ms: int | None
    cron: str | None
    overlap: str
    next_run_at: int
    last_run_at: int | None
    last_fired_at: int | None
    last_job_id: str | None
    last_run_id: str | None
    last_skipped_at: int | None
    skipped_count: int
    last_error: str | None
    created_at: int
    updated_at: int

    def listing(self) -> JsonObject:
        """The REST item: exactly the fields ``GET /api/schedules`` lists."""
        return {
            f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("created_at", "updated_at")
        }


COLUMNS: Final = tuple(f.name for f in fields(ScheduleRow))
_SELECT: Final = f"SELECT {', '.join(COLUMNS)} FROM schedule"


class ScheduleStore:
    def __init__(self, sql: SqlExecutor) -> None:
        self.sql = sql
        for ddl in SCHEDULE_DDL:
            sql.execute(ddl)

    def rows(self) -> list[ScheduleRow]:
        return [ScheduleRow(*r) for r in self.sql.execute(f"{_SELECT} ORDER BY name")]  # type: ignore[arg-type]

    def due(self, now_ms: int) -> list[ScheduleRow]:
        rows = self.sql.execute(
            f"{_SELECT} WHERE next_run_at <= ? ORDER BY next_run_at, name LIMIT ?", [now_ms, DUE_BATCH]
        )
        return [ScheduleRow(*r) for r in rows]  # type: ignore[arg-type]

    def earliest(self) -> int | None:
        value = self.sql.execute("SELECT MIN(next_run_at) FROM schedule")[0][0]
        return None if value is None else int(value)

    def insert(
        self,
        name: str,
        kind: str,
        target: str,
        every_ms: int | None,
        cron: str | None,
        overlap: str,
        next_run_at: int,
        now_ms: int,
    ) -> None:
        self.sql.execute(
            "INSERT INTO schedule (name, kind, target, every_ms, cron, overlap, next_run_at, created_at,"
            " updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [name, kind, target, every_ms, cron, overlap, next_run_at, now_ms, now_ms],
        )

    def update(self, name: str, now_ms: int, **values: SqlValue) -> None:
        values["updated_at"] = now_ms
        assignments = ", ".join(f"{column} = ?" for column in values)
        self.sql.execute(f"UPDATE schedule SET {assignments} WHERE name = ?", [*values.values(), name])

    def delete(self, name: str) -> None:
        self.sql.execute("DELETE FROM schedule WHERE name = ?", [name])

    def fingerprint(self) -> str | None:
        rows = self.sql.execute("SELECT value FROM setting WHERE key = ?", [FINGERPRINT_KEY])
        return str(rows[0][0]) if rows else None

    def set_fingerprint(self, value: str) -> None:
        self.sql.execute(
            "INSERT INTO setting (key, value) VALUES (?, ?)"
            " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            [FINGERPRINT_KEY, value],
        )
