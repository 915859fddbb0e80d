"""Storage faults on demand: ``SqlExecutor`` and ``SqlDatabase`` wrappers whose writes fail when told to.

A full disk, an I/O error or a write lock held too long reach code as ``sqlite3.OperationalError`` with
SQLite's own message (and ``sqlite_errorcode``/``sqlite_errorname``), so the code under test sees what
it would see from a real disk. One ``StorageFaults`` drives every wrapper made from it::

    faults = StorageFaults()
    shard_sql = faults.executor(SqliteExecutor(path), label="MAIL%230.sqlite3")
    faults.fail(DISK_FULL, times=None)         # every write from now on, until clear()
    faults.fail(IO_ERROR, nth=3)                # the third write from now on, once
    faults.fail(LOCKED, matching=r"^DELETE FROM alarm", where="alarms")
    faults.clear()                               # the disk has room again

A *write* is a statement that starts with INSERT, UPDATE, DELETE, REPLACE, CREATE, DROP or ALTER (after
an optional ``WITH``), or the ``COMMIT`` that ends a transaction which wrote. A failed statement never
reaches the wrapped store; a failed ``COMMIT`` rolls the whole transaction back, as SQLite does when a
full disk stops it (``SQLITE_FULL`` rolls back automatically).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final, TypeVar

from tsumugi.ports import Row, SqlDatabase, SqlExecutor, SqlValue

__all__ = [
    "COMMIT",
    "DISK_FULL",
    "IO_ERROR",
    "LOCKED",
    "FaultRule",
    "FaultySqlDatabase",
    "FaultySqlExecutor",
    "InjectedFault",
    "StorageFaults",
    "is_write",
    "storage_error",
]

T = TypeVar("T")

DISK_FULL: Final = "database or disk is full"  # SQLITE_FULL
IO_ERROR: Final = "disk I/O error"  # SQLITE_IOERR
LOCKED: Final = "database is locked"  # SQLITE_BUSY: another connection kept the write lock past busy_timeout
COMMIT: Final = "COMMIT"  # the statement text a transaction's commit is matched and recorded as

_CODES: Final = {
    DISK_FULL: (sqlite3.SQLITE_FULL, "SQLITE_FULL"),
    IO_ERROR: (sqlite3.SQLITE_IOERR, "SQLITE_IOERR"),
    LOCKED: (sqlite3.SQLITE_BUSY, "SQLITE_BUSY"),
}
_WRITE: Final = re.compile(r"^\s*(INSERT|UPDATE|DELETE|REPLACE|CREATE|DROP|ALTER)\b", re.IGNORECASE)
_CTE_WRITE: Final = re.compile(r"^\s*WITH\b.*\b(INSERT|UPDATE|DELETE|REPLACE)\b", re.IGNORECASE | re.DOTALL)


def is_write(sql: str) -> bool:
    """Whether ``sql`` is a statement that writes (see the module docstring), or a ``COMMIT``."""
    return sql == COMMIT or bool(_WRITE.match(sql) or _CTE_WRITE.match(sql))


def storage_error(message: str) -> sqlite3.OperationalError:
    """The error SQLite raises for ``message``, with its result code when it is one of ours."""
    error = sqlite3.OperationalError(message)
    code = _CODES.get(message)
    if code is not None:
        error.sqlite_errorcode, error.sqlite_errorname = code
    return error


@dataclass(frozen=True)
class InjectedFault:
    """One write that was made to fail: which store (its label), which statement, which error."""

    label: str
    sql: str
    message: str


@dataclass
class FaultRule:
    """Fails matching writes: the ``nth`` one seen after the rule was added, and ``times`` in all from it.

    ``times=None`` fails every matching write until the rule is removed. ``matching`` is a regular
    expression searched in the statement; ``where`` a substring of the store's label.
    """

    message: str = DISK_FULL
    nth: int = 1
    times: int | None = 1
    matching: re.Pattern[str] | None = None
    where: str | None = None
    seen: int = 0
    failed: int = 0

    def __post_init__(self) -> None:
        if self.nth < 1:
            raise ValueError(f"nth counts from 1, got {self.nth}")
        if self.times is not None and self.times < 1:
            raise ValueError(f"times must be at least 1 or None, got {self.times}")

    @property
    def spent(self) -> bool:
        return self.times is not None and self.failed >= self.times

    def applies(self, label: str, sql: str) -> bool:
        if self.where is not None and self.where not in label:
            return False
        return self.matching is None or self.matching.search(sql) is not None

    def fires(self) -> bool:
        """Count one matching write; whether it is one to fail."""
        self.seen += 1
        if self.seen < self.nth or self.spent:
            return False
        self.failed += 1
        return True


@dataclass
class StorageFaults:
    """The switchboard: rules to fail writes, and a record of every fault it injected."""

    rules: list[FaultRule] = field(default_factory=list)
    injected: list[InjectedFault] = field(default_factory=list)
    writes: int = 0  # every write the wrappers saw, failed or not

    def fail(
        self,
        message: str = DISK_FULL,
        *,
        nth: int = 1,
        times: int | None = 1,
        matching: str | None = None,
        where: str | None = None,
    ) -> FaultRule:
        """Add a rule (see ``FaultRule``); ``message`` is the SQLite error text (``DISK_FULL``, ...)."""
        pattern = None if matching is None else re.compile(matching, re.IGNORECASE)
        rule = FaultRule(message, nth, times, pattern, where)
        self.rules.append(rule)
        return rule

    def clear(self) -> None:
        """Remove every rule: from now on every write goes through."""
        self.rules.clear()

    def check(self, label: str, sql: str) -> None:
        """Raise the fault a rule holds for this write, if any; called before the write runs."""
        if not is_write(sql):
            return
        self.writes += 1
        for rule in list(self.rules):
            if rule.applies(label, sql) and rule.fires():
                self.injected.append(InjectedFault(label, sql, rule.message))
                raise storage_error(rule.message)

    def executor(self, inner: SqlExecutor, label: str = "") -> FaultySqlExecutor:
        return FaultySqlExecutor(inner, self, label)

    def database(self, inner: SqlDatabase, label: str = "") -> FaultySqlDatabase:
        return FaultySqlDatabase(inner, self, label)


class FaultySqlExecutor:
    """A ``ports.SqlExecutor`` that lets ``faults`` fail its writes; anything else goes to ``inner``."""

    def __init__(self, inner: SqlExecutor, faults: StorageFaults, label: str = "") -> None:
        self.inner = inner
        self.faults = faults
        self.label = label
        self._depth = 0
        self._wrote = False

    def execute(self, sql: str, params: Sequence[SqlValue] = ()) -> list[Row]:
        self._check(sql)
        return self.inner.execute(sql, params)

    def execute_many(self, sql: str, rows: Iterable[Sequence[SqlValue]]) -> None:
        self._check(sql)
        self.inner.execute_many(sql, rows)

    def transaction(self, fn: Callable[[], T]) -> T:
        if self._depth > 0:
            return fn()  # joins the outer transaction, whose commit is checked once

        def body() -> T:
            result = fn()
            if self._wrote:
                self._check(COMMIT)  # raising here rolls the transaction back: a commit that failed
            return result

        self._depth, self._wrote = 1, False
        try:
            return self.inner.transaction(body)
        finally:
            self._depth, self._wrote = 0, False

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)  # close(), exists(), ...: whatever the wrapped store offers

    def _check(self, sql: str) -> None:
        self.faults.check(self.label, sql)
        if self._depth > 0 and is_write(sql):
            self._wrote = True


class FaultySqlDatabase:
    """A ``ports.SqlDatabase`` (the D1-shaped read model) that lets ``faults`` fail its writes.

    A ``batch`` is atomic, so it fails as a whole, before any of its statements runs.
    """

    def __init__(self, inner: SqlDatabase, faults: StorageFaults, label: str = "") -> None:
        self.inner = inner
        self.faults = faults
        self.label = label

    async def all(self, sql: str, params: Sequence[SqlValue] = ()) -> list[dict[str, SqlValue]]:
        self.faults.check(self.label, sql)
        return await self.inner.all(sql, params)

    async def run(self, sql: str, params: Sequence[SqlValue] = ()) -> int:
        self.faults.check(self.label, sql)
        return await self.inner.run(sql, params)

    async def batch(self, statements: Sequence[tuple[str, Sequence[SqlValue]]]) -> None:
        for sql, _ in statements:
            self.faults.check(self.label, sql)
        if any(is_write(sql) for sql, _ in statements):
            self.faults.check(self.label, COMMIT)
        await self.inner.batch(statements)

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)  # executescript(), close(), holds_metrics, ...
