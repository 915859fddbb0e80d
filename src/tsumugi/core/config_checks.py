"""Field checks shared by the configuration values and the enqueue options."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final, TypeGuard

from tsumugi.errors import InvalidConfigError

_CAMEL_HUMP: Final = re.compile(r"_([a-z])")


def camel_case(name: str) -> str:
    """``max_attempts`` -> ``maxAttempts`` (wire keys keep the original spelling)."""
    # J-1
    return _CAMEL_HUMP.sub(lambda m: m.group(1).upper(), name)


def is_number(value: object) -> TypeGuard[int | float]:
    """A finite int or float; bools are not numbers here."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and math.isfinite(value)


def from_mapping(what: str, value: Mapping[str, object], names: Iterable[str]) -> dict[str, Any]:
    """Keyword arguments from a mapping whose keys are snake_case or camelCase spellings of ``names``.

    The values are the caller's, unchecked: they go as keywords to a constructor that checks each one
    (``Policy``, ``Rate``, the backoffs), which is why they are typed ``Any`` rather than ``object``.
    """
    by_spelling: dict[str, str] = {}
    for name in names:
        by_spelling[name] = name
        by_spelling[camel_case(name)] = name
    kwargs: dict[str, Any] = {}
    for key, item in value.items():
        if key not in by_spelling:
            raise InvalidConfigError(f"{what}: unknown field {key!r}")
        name = by_spelling[key]
        if name in kwargs:
            raise InvalidConfigError(f"{what}: {name!r} is given twice")
        kwargs[name] = item
    return kwargs


def check_count(name: str, value: object) -> None:
    """An integer >= 0 (limits, counts)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidConfigError(f"{name} must be an integer >= 0, got {value!r}")


def check_duration(name: str, value: object) -> None:
    """A finite number of milliseconds >= 0."""
    if not is_number(value) or value < 0:
        raise InvalidConfigError(f"{name} must be a number of milliseconds >= 0, got {value!r}")


def check_number(name: str, value: object) -> None:
    if not is_number(value):
        raise InvalidConfigError(f"{name} must be a finite number, got {value!r}")


def check_positive_number(name: str, value: object) -> None:
    if not is_number(value) or value <= 0:
        raise InvalidConfigError(f"{name} must be a number > 0, got {value!r}")


def check_bool(name: str, value: object) -> None:
    if not isinstance(value, bool):
        raise InvalidConfigError(f"{name} must be True or False, got {value!r}")
