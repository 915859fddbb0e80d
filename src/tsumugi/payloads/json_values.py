"""Any Python value as the JSON the stores keep, or the first place where it is not JSON (ADR-0140).

A pydantic model becomes its JSON dump, a dataclass its fields, an enum member its value, a tuple a
list; ``str``, ``int``, ``float``, ``bool``, ``None``, lists and dicts with JSON keys stay as they are.
Anything else (a datetime, a set, bytes, an arbitrary object) is refused with its path, so a result is
never stored as a silent ``null``. Containers are copied only where something changed.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping, Sequence
from enum import Enum
from typing import Final, Protocol, TypeGuard, cast

from tsumugi.core.json_types import JsonValue
from tsumugi.payloads.issues import Mismatch

__all__ = ["pydantic_model_base", "to_json"]

_SCALARS: Final = frozenset({str, int, float, bool, type(None)})
_KEYS: Final = (str, int, float, bool, type(None))  # what JSON text keys are printed from (jsonwire)


class _Model(Protocol):
    """What a ``pydantic.BaseModel`` offers here."""

    def model_dump(self, *, mode: str) -> object: ...


def pydantic_model_base() -> type | None:
    """``pydantic.BaseModel`` if pydantic is loaded, else None: a value can only be a model once it is.

    Read from ``sys.modules``, so a plain app never imports pydantic (ADR-0128).
    """
    module = sys.modules.get("pydantic")
    base = getattr(module, "BaseModel", None) if module is not None else None
    return base if isinstance(base, type) else None


def _is_model(value: object) -> TypeGuard[_Model]:
    model = pydantic_model_base()
    return model is not None and isinstance(value, model)


def to_json(value: object) -> JsonValue:
    """``value`` as a JSON value; raises ``Mismatch`` naming the first part that is not JSON."""
    try:
        walked = _walk(value)
    except RecursionError:
        raise Mismatch.at_root("is nested too deeply or refers to itself") from None
    # The walk hands back its input, or a copy with parts converted, only once every part is JSON;
    # mypy cannot follow a check on ``type(value)``, so the claim is made here, once.
    return cast("JsonValue", walked)


def _walk(value: object) -> object:
    kind = type(value)
    if kind in _SCALARS:
        return value
    if type(value) is dict:  # not ``kind is dict``: mypy narrows only this spelling
        return _mapping(value, value)
    if type(value) is list:
        return _items(value, value)
    return _convert(value)


def _mapping(value: Mapping[object, object], original: object) -> object:
    changed: dict[object, object] | None = None
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


def _items(value: Sequence[object], original: object) -> object:
    changed: list[object] | None = None
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


def _convert(value: object) -> object:
    if isinstance(value, Enum):
        return _walk(value.value)
    if _is_model(value):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields: dict[object, object] = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        return _mapping(fields, fields)
    if isinstance(value, Mapping):
        return _mapping(value, dict(value))
    if isinstance(value, list | tuple):
        return _items(value, list(value) if isinstance(value, tuple) else value)
    if isinstance(value, str | int | float):
        return value  # a str, int or float subclass prints as its base type
    raise Mismatch.at_root(f"{type(value).__name__} is not JSON")
