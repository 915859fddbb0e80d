"""Checking and converting values against JSON-shaped types, with the standard library only (ADR-0140).

Each node stands for one type: ``encode`` turns a Python value into the JSON value stored for it,
``decode`` turns a stored JSON value into the Python value ``perform`` receives. Both raise
``Mismatch`` with every problem found. Dataclasses and TypedDicts are in ``type_records``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from enum import Enum
from typing import TypeGuard, TypeVar, cast

from tsumugi.core.json_types import JsonScalar, JsonValue
from tsumugi.core.mismatch import Issue, Mismatch
from tsumugi.core.wire_format import to_json

__all__ = [
    "ANY",
    "BOOL",
    "FLOAT",
    "INT",
    "NONE",
    "STR",
    "DictNode",
    "EnumNode",
    "ListNode",
    "LiteralNode",
    "Node",
    "TupleNode",
    "UnionNode",
]

_T = TypeVar("_T")


def _got(value: object) -> str:
    return "null" if value is None else type(value).__name__


class Node:
    """One type: ``encode`` to the stored JSON, ``decode`` from it."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def encode(self, value: object) -> JsonValue:
        raise NotImplementedError

    def decode(self, data: object) -> object:
        raise NotImplementedError

    def refuse(self, value: object) -> Mismatch:
        return Mismatch.at_root(f"expected {self.name}, got {_got(value)}")


class _Any(Node):
    __slots__ = ()

    def encode(self, value: object) -> JsonValue:
        return to_json(value)

    def decode(self, data: object) -> object:
        return data


class _Scalar(Node):
    """``None``, ``bool`` or ``str``: the value passes when ``accepts`` says so."""

    __slots__ = ("accepts",)

    def __init__(self, name: str, accepts: Callable[[object], TypeGuard[JsonScalar]]) -> None:
        super().__init__(name)
        self.accepts = accepts

    def encode(self, value: object) -> JsonValue:
        if not self.accepts(value):
            raise self.refuse(value)
        return value

    def decode(self, data: object) -> object:
        return self.encode(data)


class _Int(Node):
    __slots__ = ()

    def encode(self, value: object) -> JsonValue:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.refuse(value)
        if isinstance(value, float):
            if not value.is_integer():
                raise Mismatch.at_root(f"expected int, got {value!r}")
            return int(value)  # JSON has one number type: 3.0 is the integer 3
        return value

    def decode(self, data: object) -> object:
        return self.encode(data)


class _Float(Node):
    __slots__ = ()

    def encode(self, value: object) -> int | float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.refuse(value)
        return value

    def decode(self, data: object) -> float:
        return float(self.encode(data))


def _is_none(value: object) -> TypeGuard[None]:
    return value is None


def _is_bool(value: object) -> TypeGuard[bool]:
    return isinstance(value, bool)


def _is_str(value: object) -> TypeGuard[str]:
    return isinstance(value, str)


ANY = _Any("Any")
NONE = _Scalar("None", _is_none)
BOOL = _Scalar("bool", _is_bool)
STR = _Scalar("str", _is_str)
INT = _Int("int")
FLOAT = _Float("float")


def _each(items: Sequence[object], convert: Callable[[int, object], _T]) -> list[_T]:
    issues: list[Issue] = []
    converted: list[_T] = []
    for index, item in enumerate(items):
        try:
            converted.append(convert(index, item))
        except Mismatch as mismatch:
            issues.extend(mismatch.under(index).issues)
    if issues:
        raise Mismatch(issues)
    return converted


class ListNode(Node):
    """``list[T]``, ``Sequence[T]`` or ``tuple[T, ...]`` (decoded as a tuple when ``as_tuple``)."""

    __slots__ = ("as_tuple", "item")

    def __init__(self, name: str, item: Node, as_tuple: bool = False) -> None:
        super().__init__(name)
        self.item = item
        self.as_tuple = as_tuple

    def encode(self, value: object) -> JsonValue:
        if not isinstance(value, list | tuple):
            raise self.refuse(value)
        return _each(value, lambda _index, item: self.item.encode(item))

    def decode(self, data: object) -> object:
        if not isinstance(data, list | tuple):
            raise self.refuse(data)
        decoded = _each(data, lambda _index, item: self.item.decode(item))
        return tuple(decoded) if self.as_tuple else decoded


class TupleNode(Node):
    """``tuple[A, B]``: exactly that many items, each of its own type."""

    __slots__ = ("items",)

    def __init__(self, name: str, items: Sequence[Node]) -> None:
        super().__init__(name)
        self.items = tuple(items)

    def _check(self, value: object) -> list[object] | tuple[object, ...]:
        if not isinstance(value, list | tuple):
            raise self.refuse(value)
        if len(value) != len(self.items):
            raise Mismatch.at_root(f"expected {len(self.items)} items, got {len(value)}")
        return value

    def encode(self, value: object) -> JsonValue:
        return _each(self._check(value), lambda index, item: self.items[index].encode(item))

    def decode(self, data: object) -> object:
        return tuple(_each(self._check(data), lambda index, item: self.items[index].decode(item)))


class DictNode(Node):
    """``dict[str, T]`` or ``Mapping[str, T]``."""

    __slots__ = ("value",)

    def __init__(self, name: str, value: Node) -> None:
        super().__init__(name)
        self.value = value

    def _convert(self, given: object, convert: Callable[[object], _T]) -> dict[str, _T]:
        if not isinstance(given, Mapping):
            raise self.refuse(given)
        issues: list[Issue] = []
        converted: dict[str, _T] = {}
        for key, item in given.items():
            if not isinstance(key, str):
                issues.append(((), f"has the key {key!r}, which is not a string"))
                continue
            try:
                converted[key] = convert(item)
            except Mismatch as mismatch:
                issues.extend(mismatch.under(key).issues)
        if issues:
            raise Mismatch(issues)
        return converted

    def encode(self, value: object) -> JsonValue:
        return self._convert(value, self.value.encode)

    def decode(self, data: object) -> object:
        return self._convert(data, self.value.decode)


def _same(value: object, literal: _T) -> TypeGuard[_T]:
    return type(value) is type(literal) and bool(value == literal)  # True is not 1, 1 is not 1.0


def _stored(literal: object) -> JsonValue:
    """The JSON of one ``Literal[...]`` value: itself, or an enum member's value.

    ``Literal`` admits only str, int, bool, None, bytes and enum members; the value is stored as it is,
    unchecked, as it always was (a bytes literal or a member with a non-JSON value is the caller's to fix).
    """
    return cast("JsonValue", literal.value if isinstance(literal, Enum) else literal)


class LiteralNode(Node):
    """``Literal[...]`` of strings, numbers, booleans, None or enum members."""

    __slots__ = ("stored", "values")

    def __init__(self, name: str, values: Sequence[object]) -> None:
        super().__init__(name)
        self.values = tuple(values)
        self.stored = tuple(_stored(literal) for literal in self.values)

    def encode(self, value: object) -> JsonValue:
        for literal, stored in zip(self.values, self.stored, strict=True):
            if value is literal or _same(value, literal):
                return stored
            if isinstance(literal, Enum) and _same(value, stored):
                return value
        raise self._refused(value)

    def decode(self, data: object) -> object:
        for literal, stored in zip(self.values, self.stored, strict=True):
            if _same(data, stored):
                return literal
        raise self._refused(data)

    def _refused(self, value: object) -> Mismatch:
        allowed = ", ".join(repr(stored) for stored in self.stored)
        return Mismatch.at_root(f"expected one of {allowed}, got {value!r}")


class UnionNode(Node):
    """``A | B``: the first option the value fits."""

    __slots__ = ("options",)

    def __init__(self, name: str, options: Sequence[Node]) -> None:
        super().__init__(name)
        self.options = tuple(options)

    def _first(self, value: object, convert: Callable[[Node, object], _T]) -> _T:
        failures: list[Mismatch] = []
        for option in self.options:
            try:
                return convert(option, value)
            except Mismatch as mismatch:
                failures.append(mismatch)
        others = [f for option, f in zip(self.options, failures, strict=True) if option is not NONE]
        if value is not None and len(others) == 1:
            raise others[0]  # Optional[X]: say what is wrong with the X
        raise self.refuse(value)

    def encode(self, value: object) -> JsonValue:
        return self._first(value, lambda option, item: option.encode(item))

    def decode(self, data: object) -> object:
        return self._first(data, lambda option, item: option.decode(item))


class EnumNode(Node):
    """An ``Enum`` subclass, stored as its member's value."""

    __slots__ = ("enum",)

    def __init__(self, enum: type[Enum]) -> None:
        super().__init__(enum.__name__)
        self.enum = enum

    def encode(self, value: object) -> JsonValue:
        member = value if isinstance(value, self.enum) else self.decode(value)
        return to_json(member.value)

    def decode(self, data: object) -> Enum:
        try:
            return self.enum(data)
        except ValueError:
            allowed = ", ".join(repr(member.value) for member in self.enum)
            raise Mismatch.at_root(f"expected one of {allowed}, got {data!r}") from None
