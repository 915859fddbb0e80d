"""Payload and result types that need pydantic, checked and converted by a ``TypeAdapter`` (ADR-0140).

Imported only when a performer's types need pydantic: the Python Worker cannot load pydantic-core, so
an app whose types are plain never loads this module (ADR-0128).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import PydanticUserError, TypeAdapter, ValidationError
from pydantic_core import PydanticSerializationError

from tsumugi.core.json_types import JsonValue
from tsumugi.core.mismatch import Issue, Mismatch
from tsumugi.core.wire_format import to_json
from tsumugi.errors import ConfigurationError

if TYPE_CHECKING:
    from typing_extensions import TypeForm

__all__ = ["PydanticCodec"]


def _issues(error: ValidationError) -> list[Issue]:
    return [(tuple(detail["loc"]), detail["msg"]) for detail in error.errors(include_url=False)]


class PydanticCodec:
    """``encode``/``decode``/``dump`` of one type through pydantic, with pydantic's own rules."""

    __slots__ = ("_adapter",)

    def __init__(self, tp: TypeForm[object], owner: str) -> None:
        try:
            self._adapter: TypeAdapter[object] = TypeAdapter(tp)
        except PydanticUserError as error:  # a schema pydantic cannot build
            raise ConfigurationError(f"{owner}: pydantic cannot check the type {tp!r}: {error}") from None

    def encode(self, value: object) -> JsonValue:
        """Check ``value`` (a model, or a mapping to validate into one) and dump it as JSON."""
        return self.dump(self.decode(value))

    def decode(self, data: object) -> object:
        try:
            return self._adapter.validate_python(data)
        except ValidationError as error:
            raise Mismatch(_issues(error)) from None

    def dump(self, value: object) -> JsonValue:
        try:
            dumped = self._adapter.dump_python(value, mode="json", warnings=False)
        except PydanticSerializationError as error:
            raise Mismatch.at_root(str(error)) from None
        return to_json(dumped)  # a value that was not of the type may still hold something unknown
