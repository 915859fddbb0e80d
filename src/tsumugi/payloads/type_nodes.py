"""Checking and converting values against JSON-shaped types, with the standard library only (ADR-0140).

Each node stands for one type: ``encode`` turns a Python value into the JSON value stored for it,
``decode`` turns a stored JSON value into the Python value ``perform`` receives. Both raise
``Mismatch`` with every problem found. Dataclasses and TypedDicts are in ``type_records``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from enum import Enum
from typing import Any

from tsumugi.payloads.issues import Issue, Mismatch
from tsumugi.payloads.json_values import to_json

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


def _got(value: Any) -> str:
    return "null" if value is None else type(value).__name__


class Node:
    """One type: ``encode`` to the stored JSON, ``decode`` from it."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def encode(self, value: Any) -> Any:
        raise NotImplementedError

    def decode(self, data: Any) -> Any:
        raise NotImplementedError

    def refuse(self, value: Any) -> Mismatch:
        return Mismatch.at_root(f"expected {self.name}, got {_got(value)}")


class _Any(Node):
    __slots__ = ()

    def encode(self, value: Any) -> Any:
        return to_json(value)

    def decode(self, data: Any) -> Any:
        return data


class _Scalar(Node):
    """``None``, ``bool`` or ``str``: the value passes when ``accepts`` says so."""

    __slots__ = ("accepts",)

    def __init__(self, name: str, accepts: Callable[[Any], bool]) -> None:
        super().__init__(name)
        self.accepts = accepts

    def encode(self, value: Any) -> Any:
        if not self.accepts(value):
            raise self.refuse(value)
        return value

    def decode(self, data: Any) -> Any:
        return self.encode(data)


class _Int(Node):
    __slots__ = ()

    def encode(self, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.refuse(value)
        if isinstance(value, float):
            if not value.is_integer():
                raise Mismatch.at_root(f"expected int, got {value!r}")
            return int(value)  # JSON has one number type: 3.0 is the integer 3
        return value

    def decode(self, data: Any) -> Any:
        return self.encode(data)


class _Float(Node):
    __slots__ = ()

    def encode(self, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.refuse(value)
        return value

    def decode(self, data: Any) -> Any:
        return float(self.encode(data))


ANY = _Any("Any")
NONE = _Scalar("None", lambda value: value is None)
BOOL = _Scalar("bool", lambda value: isinstance(value, bool))
STR = _Scalar("str", lambda value: isinstance(value, str))
INT = _Int("int")
FLOAT = _Float("float")


def _each(items: Sequence[Any], convert: Callable[[int, Any], Any]) -> list[Any]:
    issues: list[Issue] = []
    converted: list[Any] = []
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

    def encode(self, value: Any) -> Any:
        if not isinstance(value, list | tuple):
            raise self.refuse(value)
        return _each(value, lambda _index, item: self.item.encode(item))

    def decode(self, data: Any) -> Any:
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

    def _check(self, value: Any) -> None:
        if not isinstance(value, list | tuple):
            raise self.refuse(value)
        if len(value) != len(self.items):
            raise Mismatch.at_root(f"expected {len(self.items)} items, got {len(value)}")

    def encode(self, value: Any) -> Any:
        self._check(value)
        return _each(value, lambda index, item: self.items[index].encode(item))

    def decode(self, data: Any) -> Any:
        self._check(data)
        return tuple(_each(data, lambda index, item: self.items[index].decode(item)))


class DictNode(Node):
    """``dict[str, T]`` or ``Mapping[str, T]``."""

    __slots__ = ("value",)

    def __init__(self, name: str, value: Node) -> None:
        super().__init__(name)
        self.value = value

    def _convert(self, given: Any, convert: Callable[[Any], Any]) -> dict[str, Any]:
        if not isinstance(given, Mapping):
            raise self.refuse(given)
        issues: list[Issue] = []
        converted: dict[str, Any] = {}
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

    def encode(self, value: Any) -> Any:
        return self._convert(value, self.value.encode)

    def decode(self, data: Any) -> Any:
        return self._convert(data, self.value.decode)


def _same(value: Any, literal: Any) -> bool:
    return type(value) is type(literal) and bool(value == literal)  # True is not 1, 1 is not 1.0


class LiteralNode(Node):
    """``Literal[...]`` of strings, numbers, booleans, None or enum members."""

    __slots__ = ("values",)

    def __init__(self, name: str, values: Sequence[Any]) -> None:
        super().__init__(name)
        self.values = tuple(values)

    def encode(self, value: Any) -> Any:
        for literal in self.values:
            if value is literal or _same(value, literal):
                return literal.value if isinstance(literal, Enum) else literal
            if isinstance(literal, Enum) and _same(value, literal.value):
                return value
        raise self._refused(value)

    def decode(self, data: Any) -> Any:
        for literal in self.values:
            if _same(data, literal.value if isinstance(literal, Enum) else literal):
                return literal
        raise self._refused(data)

    def _refused(self, value: Any) -> Mismatch:
        allowed = ", ".join(repr(v.value if isinstance(v, Enum) else v) for v in self.values)
        return Mismatch.at_root(f"expected one of {allowed}, got {value!r}")


class UnionNode(Node):
    """``A | B``: the first option the value fits."""

    __slots__ = ("options",)

    def __init__(self, name: str, options: Sequence[Node]) -> None:
        super().__init__(name)
        self.options = tuple(options)

    def _first(self, value: Any, convert: Callable[[Node, Any], Any]) -> Any:
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

    def encode(self, value: Any) -> Any:
        return self._first(value, lambda option, item: option.encode(item))

    def decode(self, data: Any) -> Any:
        return self._first(data, lambda option, item: option.decode(item))


class EnumNode(Node):
    """An ``Enum`` subclass, stored as its member's value."""

    __slots__ = ("enum",)

    def __init__(self, enum: type[Enum]) -> None:
        super().__init__(enum.__name__)
        self.enum = enum

    def encode(self, value: Any) -> Any:
        member = value if isinstance(value, self.enum) else self.decode(value)
        return to_json(member.value)

    def decode(self, data: Any) -> Any:
        try:
            return self.enum(data)
        except ValueError:
            allowed = ", ".join(repr(member.value) for member in self.enum)
            raise Mismatch.at_root(f"expected one of {allowed}, got {data!r}") from None
