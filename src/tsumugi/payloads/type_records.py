"""Dataclasses and TypedDicts as payload types: named fields, some required (ADR-0140).

Encoding refuses fields the type does not declare, so a misspelt key is caught when the job is enqueued;
decoding ignores them, so jobs enqueued before a field was removed still run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from tsumugi.payloads.issues import Issue, Mismatch
from tsumugi.payloads.type_nodes import Node

__all__ = ["DataclassNode", "Field", "TypedDictNode"]


@dataclasses.dataclass(frozen=True, slots=True)
class Field:
    name: str
    node: Node
    required: bool


class _Record(Node):
    """A dataclass or a TypedDict: named fields, some required. ``fields`` is set once compiled."""

    __slots__ = ("fields", "known")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.fields: tuple[Field, ...] = ()
        self.known: frozenset[str] = frozenset()

    def define(self, fields: Sequence[Field]) -> None:
        self.fields = tuple(fields)
        self.known = frozenset(field.name for field in self.fields)

    def _convert(self, source: Mapping[str, Any], strict: bool, encoding: bool) -> dict[str, Any]:
        issues: list[Issue] = []
        if strict:
            issues.extend(((key,), "unexpected field") for key in source if key not in self.known)
        converted: dict[str, Any] = {}
        for field in self.fields:
            if field.name not in source:
                if field.required:
                    issues.append(((field.name,), "field required"))
                continue
            item = source[field.name]
            try:
                converted[field.name] = field.node.encode(item) if encoding else field.node.decode(item)
            except Mismatch as mismatch:
                issues.extend(mismatch.under(field.name).issues)
        if issues:
            raise Mismatch(issues)
        return converted


class DataclassNode(_Record):
    """A dataclass: stored as an object of its ``init`` fields, decoded by calling the class."""

    __slots__ = ("cls",)

    def __init__(self, cls: type) -> None:
        super().__init__(cls.__name__)
        self.cls = cls

    def encode(self, value: Any) -> Any:
        if isinstance(value, self.cls):
            return self._convert({f.name: getattr(value, f.name) for f in self.fields}, False, True)
        if isinstance(value, Mapping):
            return self._convert(value, True, True)
        raise self.refuse(value)

    def decode(self, data: Any) -> Any:
        if isinstance(data, self.cls):
            return data
        if not isinstance(data, Mapping):
            raise self.refuse(data)
        arguments = self._convert(data, False, False)
        try:
            return self.cls(**arguments)
        except (TypeError, ValueError) as error:  # e.g. a __post_init__ check
            raise Mismatch.at_root(f"{self.name}: {error}") from None


class TypedDictNode(_Record):
    """A TypedDict: a plain dict with the declared keys."""

    __slots__ = ()

    def encode(self, value: Any) -> Any:
        if not isinstance(value, Mapping):
            raise self.refuse(value)
        return self._convert(value, True, True)

    def decode(self, data: Any) -> Any:
        if not isinstance(data, Mapping):
            raise self.refuse(data)
        return self._convert(data, False, False)
