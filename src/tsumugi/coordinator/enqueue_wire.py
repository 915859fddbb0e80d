"""Reading one enqueue input (the camelCase wire dict a client, a run or a notice sends) field by field.

Inputs were checked where they were made (``core.options``, the REST schemas, a flow's node options); these
narrow each field to the type the row stores, converting numbers as ``int()`` always did.
"""
# J-28

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeAlias

from tsumugi.errors import EnqueueError

EnqueueItem: TypeAlias = Mapping[str, object]


def number(value: object, key: str) -> int | float:
    """A numeric field; a numeric string converts as ``int()`` would."""
    if isinstance(value, int | float):
        return value
    if isinstance(value, str):
        return int(value)
    raise EnqueueError(f"{key} must be a number, got {value!r}")


def opt_int(item: EnqueueItem, key: str, default: int) -> int:
    """``int`` of the field; missing and explicit None both mean the default."""
    value = item.get(key)
    return default if value is None else int(number(value, key))


def required_int(item: EnqueueItem, key: str) -> int:
    """``int`` of a field its option requires (``debounceMs`` with ``debounceKey``)."""
    return int(number(item[key], key))


def maybe_int(item: EnqueueItem, key: str) -> int | None:
    value = item.get(key)
    return None if value is None else int(number(value, key))


def opt_number(item: EnqueueItem, key: str, default: float) -> float:
    """The field as given (an int stays an int); missing and None mean the default."""
    value = item.get(key)
    return default if value is None else number(value, key)


def text(item: EnqueueItem, key: str) -> str | None:
    """A string field, or None when missing."""
    value = item.get(key)
    if value is None or isinstance(value, str):
        return value
    raise EnqueueError(f"{key} must be a string, got {value!r}")


def mapping(item: EnqueueItem, key: str) -> Mapping[str, object]:
    """An object field (``throttle``)."""
    value = item.get(key)
    if isinstance(value, Mapping):
        return value
    raise EnqueueError(f"{key} must be an object, got {value!r}")
