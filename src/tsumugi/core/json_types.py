"""The JSON vocabulary every layer shares, so a wire value is typed rather than ``Any``.

``JsonValue`` is what ``json.loads`` can return. Functions that only read take ``JsonMapping`` (read-only,
so a ``dict[str, int]`` is accepted); functions that build a value return ``JsonObject``. Code that reads a
field narrows it (``isinstance``) or goes through a codec that checks it once at the edge.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias

__all__ = ["JsonArray", "JsonMapping", "JsonObject", "JsonScalar", "JsonSequence", "JsonValue"]

JsonScalar: TypeAlias = bool | int | float | str | None
JsonValue: TypeAlias = "JsonScalar | list[JsonValue] | dict[str, JsonValue]"
JsonObject: TypeAlias = dict[str, JsonValue]
JsonArray: TypeAlias = list[JsonValue]
JsonMapping: TypeAlias = Mapping[str, JsonValue]
JsonSequence: TypeAlias = Sequence[JsonValue]
