"""A performer class's payload and result types, and how values cross them (ADR-0140).

The types come from ``Performer[Payload, Result]`` (through generic subclasses too), or else from the
annotations of ``perform``. A payload type the standard library can check (JSON types, dataclasses,
TypedDicts, enums, ...) is checked here; one that holds a pydantic model, a pydantic constraint or
another type only pydantic knows goes to pydantic, which is imported then and only then.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol

from tsumugi.core.json_types import JsonValue
from tsumugi.core.mismatch import Mismatch
from tsumugi.core.wire_format import to_json
from tsumugi.errors import ConfigurationError, InvalidPayloadError, ResultNotJsonError
from tsumugi.payloads.type_compile import NeedsPydantic, compile_type, mentions_pydantic, type_name
from tsumugi.payloads.type_nodes import ANY
from tsumugi.performer import Performer

if TYPE_CHECKING:
    from typing_extensions import TypeForm

    from tsumugi.payloads.pydantic_codec import PydanticCodec

__all__ = ["Codec", "PerformerTypes", "dump_result", "types_of"]

_RESULT_HINT = "return JSON values, a dataclass or a pydantic model"


class Codec(Protocol):
    """Checks a payload: ``encode`` to the JSON stored, ``decode`` from it; both raise ``Mismatch``."""

    def encode(self, value: object) -> JsonValue: ...

    def decode(self, data: object) -> object: ...


class _ResultDumper(Protocol):
    def dump(self, value: object) -> JsonValue: ...


class _AnyJson:
    """The codec of a payload typed ``object``: any JSON value, converted as a result is; decoding keeps it.

    ``encode`` is ``to_json`` itself, so such a payload goes through no type node.
    """

    encode = staticmethod(to_json)

    @staticmethod
    def decode(data: object) -> object:
        return data


_ANY_JSON: Final = _AnyJson()


@dataclass(frozen=True, slots=True)
class PerformerTypes:
    """What one performer class declares; ``payload_codec`` is None for an untyped payload.

    ``decodes`` is False when ``perform`` receives the stored JSON as it is (an untyped payload, or one
    typed ``object``): decided once per class, so the consumer skips the decoding of each job.
    """

    payload_type: TypeForm[object]  # ``Any`` when undeclared
    result_type: TypeForm[object]
    payload_codec: Codec | None
    result_dumper: _ResultDumper | None  # only for a result type that needs pydantic
    decodes: bool = True

    def encode_payload(self, binding: str, payload: object) -> object:
        """The JSON stored for ``payload``; raises ``InvalidPayloadError`` naming every bad field.

        An untyped payload is passed on as it was given.
        """
        if self.payload_codec is None:
            return payload
        try:
            return self.payload_codec.encode(payload)
        except Mismatch as mismatch:
            raise self.invalid_payload(binding, mismatch) from None

    def decode_payload(self, binding: str, data: object) -> object:
        """The value ``perform`` receives for the stored ``data``."""
        if self.payload_codec is None:
            return data
        try:
            return self.payload_codec.decode(data)
        except Mismatch as mismatch:
            raise self.invalid_payload(binding, mismatch) from None

    @property
    def takes_any_json(self) -> bool:
        """Whether the payload is typed ``object``: any JSON value, made JSON by ``to_json`` alone."""
        return self.payload_codec is _ANY_JSON

    def invalid_payload(self, binding: str, mismatch: Mismatch) -> InvalidPayloadError:
        """The error that names every field of a payload that does not fit the payload type."""
        issues = mismatch.described("payload")
        listed = "; ".join(f"{field}: {problem}" for field, problem in issues)
        message = f"{binding}: the payload does not match {type_name(self.payload_type)}: {listed}"
        return InvalidPayloadError(message, issues)


_UNTYPED: Final = PerformerTypes(Any, Any, None, None, decodes=False)
_BUILT: Final[dict[object, PerformerTypes]] = {}  # per class: its checks are built once


def dump_result(binding: str, value: object, types: PerformerTypes | None = None) -> JsonValue:
    """The JSON stored for what ``perform`` returned; ``ResultNotJsonError`` when there is none."""
    if value is None:
        return None  # most performers return nothing: no walk
    try:
        if types is not None and types.result_dumper is not None and value is not None:
            return types.result_dumper.dump(value)
        return to_json(value)
    except Mismatch as mismatch:
        listed = "; ".join(f"{field}: {problem}" for field, problem in mismatch.described("result"))
        raise ResultNotJsonError(f"{binding}: the result is not JSON: {listed} ({_RESULT_HINT})") from None


def types_of(performer: object) -> PerformerTypes:
    """The declared types of a Performer subclass, their checks built once per class.

    Anything else (a ``remote()`` marker, a service binding's class) is untyped.
    """
    found = _BUILT.get(performer)
    if found is None:
        found = _BUILT[performer] = _build(performer)
    return found


def _build(performer: object) -> PerformerTypes:
    if not (isinstance(performer, type) and issubclass(performer, Performer)):
        return _UNTYPED
    payload_type, result_type = _declared(performer)
    owner = performer.__name__
    payload_codec = _codec(payload_type, owner) if payload_type is not Any else None
    result_dumper = _pydantic(result_type, owner) if mentions_pydantic(result_type) else None
    if payload_codec is None and result_dumper is None and result_type is Any:
        return _UNTYPED
    decodes = payload_codec is not None and payload_codec is not _ANY_JSON
    return PerformerTypes(payload_type, result_type, payload_codec, result_dumper, decodes)


def _codec(tp: TypeForm[object], owner: str) -> Codec:
    try:
        node = compile_type(tp)
    except NeedsPydantic:
        return _pydantic(tp, owner)
    return _ANY_JSON if node is ANY else node  # ``object``: any JSON value, checked without a type node


def _pydantic(tp: TypeForm[object], owner: str) -> PydanticCodec:
    try:
        from tsumugi.payloads.pydantic_codec import PydanticCodec
    except ImportError as error:
        raise ConfigurationError(
            f"{owner}: the type {type_name(tp)} needs pydantic, which cannot be imported here ({error}); "
            "use JSON types, dataclasses or TypedDicts"
        ) from None
    return PydanticCodec(tp, owner)


def _declared(performer: type[Performer]) -> tuple[TypeForm[object], TypeForm[object]]:
    payload, result = _generic_arguments(performer)
    if payload is Any or result is Any:
        hinted_payload, hinted_result = _perform_hints(performer)
        payload = hinted_payload if payload is Any else payload
        result = hinted_result if result is Any else result
    return payload, result


def _generic_arguments(cls: type) -> tuple[TypeForm[object], TypeForm[object]]:
    """``(Payload, Result)`` as ``cls`` fills Performer's parameters, through generic subclasses."""
    for base in cls.__dict__.get("__orig_bases__", ()):
        origin = typing.get_origin(base)
        if origin is Performer:
            arguments = typing.get_args(base)
            return _filled(arguments[0]), _filled(arguments[1] if len(arguments) > 1 else Any)
        if isinstance(origin, type) and issubclass(origin, Performer):
            inner = _generic_arguments(origin)
            given = dict(zip(getattr(origin, "__parameters__", ()), typing.get_args(base), strict=False))
            return _filled(given.get(inner[0], inner[0])), _filled(given.get(inner[1], inner[1]))
    for parent in cls.__bases__:
        if parent is not Performer and issubclass(parent, Performer):
            return _generic_arguments(parent)
    return Any, Any


def _filled(argument: TypeForm[object]) -> TypeForm[object]:
    return Any if isinstance(argument, typing.TypeVar) else argument


def _perform_hints(performer: type[Performer]) -> tuple[TypeForm[object], TypeForm[object]]:
    """The payload argument's and the return's annotations; ``ctx``'s is never read (it may be a name
    imported only for type checkers)."""
    perform = performer.perform
    if perform is Performer.perform:
        return Any, Any
    parameters = list(inspect.signature(perform).parameters.values())
    annotations = getattr(perform, "__annotations__", {})
    payload: TypeForm[object] = Any
    if len(parameters) > 1 and parameters[1].name in annotations:
        try:
            payload = _evaluated(perform, annotations[parameters[1].name])
        except Exception as error:  # a name imported only under TYPE_CHECKING, or none at all
            raise ConfigurationError(
                f"cannot read the payload annotation of {performer.__name__}.perform: {error} (import the "
                f"type at run time, or declare it as Performer[PayloadType, ResultType])"
            ) from None
    result: TypeForm[object] = Any
    if "return" in annotations:
        try:
            result = _evaluated(perform, annotations["return"])
        except Exception:
            pass  # unreadable, it stays Any: a result annotation only documents (ADR-0140)
    return _filled(payload), _filled(result)


def _evaluated(function: Callable[..., object], annotation: object) -> TypeForm[object]:
    """One annotation of ``function``, evaluated as ``typing.get_type_hints`` would."""

    def probe() -> None: ...

    probe.__annotations__ = {"value": annotation}
    namespace = getattr(inspect.unwrap(function), "__globals__", {})
    hint: TypeForm[object] = typing.get_type_hints(probe, globalns=namespace, include_extras=True)["value"]
    return hint
