"""From a type annotation to the node that checks and converts its values (ADR-0140).

JSON types, ``list``/``Sequence``/``tuple``, ``dict``/``Mapping`` with string keys, ``Literal``, unions,
enums, ``Annotated``, ``NewType``, dataclasses and TypedDicts are compiled here, with the standard library.
Anything else — a pydantic model, a pydantic dataclass, a ``Field`` constraint, a ``datetime`` — raises
``NeedsPydantic``, and the caller hands the whole type to pydantic instead.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import types
import typing
from enum import Enum
from typing import TYPE_CHECKING, Any, Final

import typing_extensions

from tsumugi.errors import ConfigurationError, TsumugiError
from tsumugi.payloads.type_nodes import (
    ANY,
    BOOL,
    FLOAT,
    INT,
    NONE,
    STR,
    DictNode,
    EnumNode,
    ListNode,
    LiteralNode,
    Node,
    TupleNode,
    UnionNode,
)
from tsumugi.payloads.type_records import DataclassNode, Field, TypedDictNode

if TYPE_CHECKING:
    from typing_extensions import TypeForm

__all__ = ["NeedsPydantic", "compile_type", "mentions_pydantic", "type_name"]

_SCALARS: Final[dict[object, Node]] = {
    bool: BOOL,
    str: STR,
    int: INT,
    float: FLOAT,
    type(None): NONE,
    None: NONE,
}
_LISTS: Final = frozenset({list, collections.abc.Sequence, collections.abc.MutableSequence})
_DICTS: Final = frozenset({dict, collections.abc.Mapping, collections.abc.MutableMapping})
_WRAPPERS: Final = frozenset({"Required", "NotRequired", "ReadOnly"})  # TypedDict key qualifiers
_PYDANTIC_MODULES: Final = frozenset({"pydantic", "pydantic_core", "annotated_types"})


class NeedsPydantic(TsumugiError):
    """The type holds something only pydantic can check; ``reason`` says what. Never seen by users."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def type_name(tp: TypeForm[object]) -> str:
    """``MailIn``, ``list[int]``, ``int | None``: how messages name a type."""
    if isinstance(tp, type) and not typing.get_args(tp):
        return tp.__name__
    return repr(tp).replace("typing.", "").replace("typing_extensions.", "")


def _from_pydantic(thing: object) -> bool:
    module = getattr(type(thing), "__module__", "") if not isinstance(thing, type) else thing.__module__
    return module.partition(".")[0] in _PYDANTIC_MODULES


def mentions_pydantic(tp: TypeForm[object]) -> bool:
    """Whether ``tp`` is or contains a pydantic model or pydantic metadata (no pydantic import)."""
    try:
        compile_type(tp)
    except NeedsPydantic as signal:
        return signal.reason != "unsupported"
    return False


def compile_type(tp: TypeForm[object], memo: dict[object, Node] | None = None) -> Node:
    """The node for ``tp``; raises ``NeedsPydantic`` for what the standard library cannot check."""
    memo = {} if memo is None else memo
    if tp is Any or tp is object or isinstance(tp, typing.TypeVar):
        return ANY  # an unfilled type parameter means any JSON value
    scalar = _scalar(tp)
    if scalar is not None:
        return scalar
    if isinstance(tp, type) and hasattr(tp, "__pydantic_validator__"):
        raise NeedsPydantic("model")  # a pydantic model or pydantic dataclass
    origin = typing.get_origin(tp)
    if origin is not None:
        return _generic(tp, origin, typing.get_args(tp), memo)
    if tp in _LISTS:
        return ListNode("list", ANY)
    if tp in _DICTS:
        return DictNode("dict", ANY)
    if tp is tuple:
        return ListNode("tuple", ANY, as_tuple=True)
    if isinstance(tp, type) and issubclass(tp, Enum):
        return EnumNode(tp)
    if isinstance(tp, type) and typing_extensions.is_typeddict(tp):  # a TypedDict is a class
        return _typed_dict(tp, memo)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _dataclass(tp, memo)
    supertype = getattr(tp, "__supertype__", None)  # typing.NewType
    if supertype is not None:
        return compile_type(supertype, memo)
    raise NeedsPydantic("unsupported")


def _scalar(tp: TypeForm[object]) -> Node | None:
    try:
        return _SCALARS.get(tp)
    except TypeError:  # an unhashable annotation is no scalar
        return None


def _generic(
    tp: TypeForm[object], origin: object, args: tuple[TypeForm[object], ...], memo: dict[object, Node]
) -> Node:
    name = type_name(tp)
    if origin is typing.Annotated or origin is typing_extensions.Annotated:
        if any(_from_pydantic(meta) for meta in args[1:]):  # Annotated[T, *metadata]
            raise NeedsPydantic("constraint")  # Field(gt=0) and the like: only pydantic applies them
        return compile_type(args[0], memo)
    if getattr(origin, "_name", None) in _WRAPPERS:
        return compile_type(args[0], memo)
    if origin is typing.Literal or origin is typing_extensions.Literal:
        return LiteralNode(name, args)
    if origin is typing.Union or origin is types.UnionType:
        return UnionNode(name, [compile_type(arg, memo) for arg in args])
    if origin in _LISTS:
        return ListNode(name, compile_type(args[0], memo) if args else ANY)
    if origin is tuple:
        written: tuple[object, ...] = args  # ``tuple[T, ...]`` holds an Ellipsis, ``tuple[()]`` may hold ()
        if len(written) == 2 and written[1] is Ellipsis:
            return ListNode(name, compile_type(args[0], memo), as_tuple=True)
        return TupleNode(name, [compile_type(args[i], memo) for i, arg in enumerate(written) if arg != ()])
    if origin in _DICTS:
        if args and args[0] not in (str, Any):
            raise NeedsPydantic("unsupported")  # JSON object keys are strings
        return DictNode(name, compile_type(args[1], memo) if args else ANY)
    raise NeedsPydantic("unsupported")


def _hints(cls: type) -> dict[str, TypeForm[object]]:
    try:
        return typing.get_type_hints(cls, include_extras=True)
    except Exception as error:  # a NameError for an annotation that names nothing importable
        raise ConfigurationError(f"cannot read the type hints of {cls.__name__}: {error}") from None


def _dataclass(cls: type, memo: dict[object, Node]) -> Node:
    if cls in memo:
        return memo[cls]  # a dataclass that refers to itself
    node = memo[cls] = DataclassNode(cls)
    hints = _hints(cls)
    fields = []
    for field in dataclasses.fields(cls):
        if not field.init:
            continue
        required = field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING
        fields.append(Field(field.name, compile_type(hints.get(field.name, Any), memo), required))
    node.define(fields)
    return node


def _typed_dict(cls: type, memo: dict[object, Node]) -> Node:
    if cls in memo:
        return memo[cls]
    node = memo[cls] = TypedDictNode(cls.__name__)
    hints = _hints(cls)
    declared = frozenset(getattr(cls, "__required_keys__", frozenset(hints)))
    fields = []
    for key, hint in hints.items():
        # A qualifier written as a string annotation is invisible to TypedDict itself on Python 3.11.
        qualifier = getattr(typing.get_origin(hint), "_name", None)
        required = qualifier == "Required" or (qualifier != "NotRequired" and key in declared)
        fields.append(Field(key, compile_type(hint, memo), required))
    node.define(fields)
    return node
