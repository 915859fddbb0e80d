"""Any Python value as the JSON the stores keep, or the first place where it is not JSON (ADR-0140).

A pydantic model becomes its JSON dump, a dataclass its fields, an enum member its value, a tuple a
list; ``str``, ``int``, ``float``, ``bool``, ``None``, lists and dicts with JSON keys stay as they are.
Anything else (a datetime, a set, bytes, an arbitrary object) is refused with its path, so a result is
never stored as a silent ``null``. Containers are copied only where something changed.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping
from enum import Enum
from typing import Any, Final

from tsumugi.payloads.issues import Mismatch

__all__ = ["pydantic_model_base", "to_json"]

_SCALARS: Final = frozenset({str, int, float, bool, type(None)})
_KEYS: Final = (str, int, float, bool, type(None))  # what JSON text keys are printed from (jsonwire)


def pydantic_model_base() -> Any:
    """``pydantic.BaseModel`` if pydantic is loaded, else None: a value can only be a model once it is.

    Read from ``sys.modules``, so a plain app never imports pydantic (ADR-0128).
    """
    module = sys.modules.get("pydantic")
    base = getattr(module, "BaseModel", None) if module is not None else None
    return base if isinstance(base, type) else None


def to_json(value: Any) -> Any:
    """``value`` as a JSON value; raises ``Mismatch`` naming the first part that is not JSON."""
    try:
        return _walk(value)
    except RecursionError:
        raise Mismatch.at_root("is nested too deeply or refers to itself") from None


def _walk(value: Any) -> Any:
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is dict:
        return _mapping(value, value)
    if kind is list:
        return _items(value, value)
    return _convert(value)


def _mapping(value: Mapping[Any, Any], original: Any) -> Any:
    changed: dict[Any, Any] | None = None
    for key, item in value.items():
        if not isinstance(key, _KEYS):
            raise Mismatch.at_root(f"has a key of type {type(key).__name__}, which JSON cannot hold")
        try:
            converted = _walk(item)
        except Mismatch as mismatch:
            raise mismatch.under(str(key)) from None
        if converted is not item:
            if changed is None:
                changed = dict(value)
            changed[key] = converted
    if changed is not None:
        return changed
    return original


def _items(value: list[Any] | tuple[Any, ...], original: Any) -> Any:
    changed: list[Any] | None = None
    for index, item in enumerate(value):
        try:
            converted = _walk(item)
        except Mismatch as mismatch:
            raise mismatch.under(index) from None
        if converted is not item:
            if changed is None:
                changed = list(value)
            changed[index] = converted
    if changed is not None:
        return changed
    return original


def _convert(value: Any) -> Any:
    if isinstance(value, Enum):
        return _walk(value.value)
    model = pydantic_model_base()
    if model is not None and isinstance(value, model):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {field.name: getattr(value, field.name) for field in dataclasses.fields(value)}
        return _mapping(fields, fields)
    if isinstance(value, Mapping):
        return _mapping(value, dict(value))
    if isinstance(value, list | tuple):
        return _items(value, list(value) if isinstance(value, tuple) else value)
    if isinstance(value, str | int | float):
        return value  # a str, int or float subclass prints as its base type
    raise Mismatch.at_root(f"{type(value).__name__} is not JSON")
