"""Reading a SQL value as the type its column holds: the SQL edge narrows once, then code is typed."""

from __future__ import annotations

from collections.abc import Iterable

from tsumugi.ports import SqlValue


def literal_list(values: Iterable[str]) -> str:
    """A fixed SQL ``IN`` list of string literals (``('FAILED', 'STALLED')``), for constant state sets.

    A partial index's ``WHERE state IN (...)`` matches only literals, never bound parameters.
    """
    return "(" + ", ".join(f"'{value}'" for value in values) + ")"


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
    return None if value is None else str(value)
