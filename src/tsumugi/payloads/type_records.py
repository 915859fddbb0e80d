"""Dataclasses and TypedDicts as payload types: named fields, some required (ADR-0140).

Encoding refuses fields the type does not declare, so a misspelt key is caught when the job is enqueued;
decoding ignores them, so jobs enqueued before a field was removed still run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from tsumugi.core.json_types import JsonObject
from tsumugi.core.mismatch import Issue, Mismatch
from tsumugi.payloads.type_nodes import Node

__all__ = ["DataclassNode", "Field", "TypedDictNode"]


@dataclasses.dataclass(frozen=True, slots=True)
class Field:
    name: str
    node: Node
    required: bool


class _Record(Node):
    """A dataclass or a TypedDict: named fields, some required. ``fields`` is set once compiled.

    Encoding and decoding walk the fields in two loops, not one behind a flag, so each returns its own
    type without a call per field.
    """

    __slots__ = ("fields", "known")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.fields: tuple[Field, ...] = ()
        self.known: frozenset[str] = frozenset()

    def define(self, fields: Sequence[Field]) -> None:
        self.fields = tuple(fields)
        self.known = frozenset(field.name for field in self.fields)

    def _encoded(self, source: Mapping[str, object], strict: bool) -> JsonObject:
        """The stored JSON of the fields; ``strict`` also refuses keys the type does not declare."""
        issues: list[Issue] = []
        if strict:
            issues.extend(((key,), "unexpected field") for key in source if key not in self.known)
        converted: JsonObject = {}
        for field in self.fields:
            if field.name not in source:
                if field.required:
                    issues.append(((field.name,), "field required"))
                continue
            try:
                converted[field.name] = field.node.encode(source[field.name])
            except Mismatch as mismatch:
                issues.extend(mismatch.under(field.name).issues)
        if issues:
            raise Mismatch(issues)
        return converted

    def _decoded(self, source: Mapping[str, object]) -> dict[str, object]:
        """The declared fields as their types; keys the type does not declare are ignored."""
        issues: list[Issue] = []
        converted: dict[str, object] = {}
        for field in self.fields:
            if field.name not in source:
                if field.required:
                    issues.append(((field.name,), "field required"))
                continue
            try:
                converted[field.name] = field.node.decode(source[field.name])
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

    def encode(self, value: object) -> JsonObject:
        if isinstance(value, self.cls):
            return self._encoded({f.name: getattr(value, f.name) for f in self.fields}, False)
        if isinstance(value, Mapping):
            return self._encoded(value, True)
        raise self.refuse(value)

    def decode(self, data: object) -> object:
        if isinstance(data, self.cls):
            return data
        if not isinstance(data, Mapping):
            raise self.refuse(data)
        arguments = self._decoded(data)
        try:
            return self.cls(**arguments)
        except (TypeError, ValueError) as error:  # e.g. a __post_init__ check
            raise Mismatch.at_root(f"{self.name}: {error}") from None


class TypedDictNode(_Record):
    """A TypedDict: a plain dict with the declared keys."""

    __slots__ = ()

    def encode(self, value: object) -> JsonObject:
        if not isinstance(value, Mapping):
            raise self.refuse(value)
        return self._encoded(value, True)

    def decode(self, data: object) -> dict[str, object]:
        if not isinstance(data, Mapping):
            raise self.refuse(data)
        return self._decoded(data)
