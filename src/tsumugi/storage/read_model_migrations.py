"""The read-model migration check behind the REST API's 503s, cached per database.

It lives in storage rather than projection because the REST API (a sibling of projection, which it may
not import) runs it on every request (ADR-0061).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Literal

from tsumugi.ports import SqlDatabase
from tsumugi.storage.read_model_schema import EXPECTED_MIGRATIONS

UNAVAILABLE_CACHE_MS: Final = 5_000  # D-14: a database outage is re-checked after five seconds
_NO_LEDGER: Final = re.compile(r"no such table", re.IGNORECASE)


@dataclass(frozen=True)
class MigrationStatus:
    kind: Literal["ok", "missing", "unavailable"]
    missing: tuple[str, ...] = ()

    def error_message(self) -> str:
        """The 503 body text (empty for ok)."""
        if self.kind == "missing":
            names = ", ".join(self.missing)
            return (
                f"database schema is out of date: {names} not applied. "
                'run "wrangler d1 migrations apply <database> --remote"'
            )
        if self.kind == "unavailable":
            return "database temporarily unavailable"
        return ""


OK: Final = MigrationStatus("ok")


async def read_migration_status(db: SqlDatabase) -> MigrationStatus:
    """Compare wrangler's ledger (``d1_migrations``) with the shipped list."""
    # D-11, D-12, D-15
    try:
        rows = await db.all("SELECT name FROM d1_migrations")
    except Exception as exc:  # D-12: any driver error; only a missing ledger means "nothing applied"
        text = str(exc)
        if _NO_LEDGER.search(text) and "d1_migrations" in text:
            return MigrationStatus("missing", EXPECTED_MIGRATIONS)
        return MigrationStatus("unavailable")
    applied = {str(r["name"]) for r in rows}
    missing = tuple(name for name in EXPECTED_MIGRATIONS if name not in applied)
    return MigrationStatus("missing", missing) if missing else OK


@dataclass
class _Entry:
    status: MigrationStatus | None = None
    checked_at_ms: int = 0
    in_flight: asyncio.Future[MigrationStatus] | None = None


class MigrationGate:
    """Caches the check per database object: ok forever, unavailable for 5 s, missing never.

    Concurrent requests share one in-flight check. Keyed by ``id(db)`` with the database held alive so
    the id cannot be reused while cached.
    """

    # D-14

    def __init__(self, now_ms: Callable[[], int]) -> None:
        self._now_ms = now_ms
        self._entries: dict[int, tuple[SqlDatabase, _Entry]] = {}

    async def check(self, db: SqlDatabase) -> MigrationStatus:
        held = self._entries.get(id(db))
        if held is None or held[0] is not db:
            held = (db, _Entry())
            self._entries[id(db)] = held
        entry = held[1]
        if entry.status is OK:
            return OK
        if (
            entry.status is not None
            and entry.status.kind == "unavailable"
            and self._now_ms() - entry.checked_at_ms < UNAVAILABLE_CACHE_MS
        ):
            return entry.status
        if entry.in_flight is None:
            entry.in_flight = asyncio.ensure_future(self._refresh(db, entry))
        return await asyncio.shield(entry.in_flight)

    async def _refresh(self, db: SqlDatabase, entry: _Entry) -> MigrationStatus:
        try:
            status = await read_migration_status(db)
            entry.status = status if status.kind != "missing" else None
            entry.checked_at_ms = self._now_ms()
            return status
        finally:
            entry.in_flight = None
