"""The SQL values a shard's tables read and bind: each column's value read as its type, fixed ``IN``
lists, and the statement size Durable Object SQL allows.

A value is narrowed once, here, at the SQL edge; code past it is typed (ADR-0042, ADR-0043).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from tsumugi.ports import SqlExecutor, SqlValue

MAX_BOUND_PARAMS: Final = 100  # Durable Object SQL binds at most 100 parameters per statement


def chunks(values: list[str], size: int = MAX_BOUND_PARAMS) -> list[list[str]]:
    """Split an ``IN (...)`` list so no statement binds more parameters than DO SQL allows."""
    return [values[i : i + size] for i in range(0, len(values), size)]


def literal_list(values: Iterable[str]) -> str:
    """A fixed SQL ``IN`` list of string literals (``('FAILED', 'STALLED')``), for constant state sets.

    A partial index's ``WHERE state IN (...)`` matches only literals, never bound parameters.
    """
    return "(" + ", ".join(f"'{value}'" for value in values) + ")"


def changed_rows(sql: SqlExecutor) -> int:
    """How many rows the last ``INSERT``, ``UPDATE`` or ``DELETE`` on ``sql`` changed.

    Asked of SQLite (``changes()``) instead of returned by the statement: an ``UPDATE`` with
    ``RETURNING`` costs about twice one without (ADR-0176).
    """
    return integer(sql.execute("SELECT changes()")[0][0])


def integer(value: SqlValue) -> int:
    """An INTEGER column's value (Durable Object SQL may hand a whole number over as a float)."""
    if isinstance(value, int | float):
        return int(value)
    raise TypeError(f"expected a number from SQL, read {value!r}")


def integer_or_real(value: SqlValue) -> int | float:
    """A REAL (or INTEGER) column's value."""
    if isinstance(value, int | float):
        return value
    raise TypeError(f"expected a number from SQL, read {value!r}")


def optional_integer(value: SqlValue) -> int | None:
    """``integer`` of a nullable column."""
    return None if value is None else integer(value)


def optional_text(value: SqlValue) -> str | None:
    """A nullable TEXT column's value."""
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"expected text from SQL, read {value!r}")
