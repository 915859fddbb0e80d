"""Typed enqueue inputs made plain, before the one enqueue path takes them (ADR-0140, ADR-0141).

A performer class given as the binding becomes its binding name; a typed performer's payload is checked
against its payload type and replaced by the JSON stored for it; the performer's class-attribute job
options fill the options the input leaves unset. Inputs of bindings with neither types nor defaults pass
through untouched, so the plain enqueue fast path (ADR-0120) stays what it was.

``shaped`` names the bindings whose inputs change at all, and ``any_json`` those whose payload is only
made JSON (a payload typed ``object``): ``Tsumugi.enqueue`` handles the rest, and those, itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final, overload

from tsumugi.core.config_checks import camel_case
from tsumugi.errors import EnqueueError
from tsumugi.payloads import PerformerTypes, types_of
from tsumugi.performer import performer_defaults

__all__ = ["TypedInputs"]


class _Shape:
    """What one binding's inputs need: a payload check, class defaults, or both."""

    __slots__ = ("binding", "defaults", "types")

    def __init__(self, binding: str, types: PerformerTypes, defaults: Mapping[str, object]) -> None:
        self.binding = binding
        self.types = types
        # (snake name, camelCase name, value): an input may spell an option either way
        self.defaults = tuple((name, camel_case(name), value) for name, value in defaults.items())

    def apply(self, item: Mapping[str, object]) -> dict[str, object]:
        shaped = dict(item)
        if "payload" in item:
            shaped["payload"] = self.types.encode_payload(self.binding, item["payload"])
        for name, wire_name, value in self.defaults:
            if item.get(name) is None and item.get(wire_name) is None:
                shaped.pop(wire_name, None)  # an explicit None is "not given" (J-28)
                shaped[name] = value  # ADR-0141: below the caller, above on_enqueue
        return shaped


_NOT_GIVEN: Final = object()


class TypedInputs:
    """Shapes the inputs of the bindings in ``performers`` (a map of binding to class or marker)."""

    def __init__(self, performers: Mapping[str, type]) -> None:
        self._bindings_of: dict[type, list[str]] = {}
        self._shapes: dict[str, _Shape] = {}
        self.types: dict[type, PerformerTypes] = {}  # per class, for the consumer (ADR-0140)
        self.any_json: dict[str, PerformerTypes] = {}  # payload typed ``object``, no class defaults
        self.shaped = self._shapes.keys()  # the bindings whose inputs change; any other passes as it is
        for binding, cls in performers.items():
            self._bindings_of.setdefault(cls, []).append(binding)
            types = self.types[cls] = types_of(cls)
            defaults = performer_defaults(cls)
            if types.payload_codec is not None or defaults:
                self._shapes[binding] = _Shape(binding, types, defaults)
                if types.takes_any_json and not defaults:
                    self.any_json[binding] = types

    def binding_of(self, performer: type) -> str:
        """The binding a performer class is registered under."""
        names = self._bindings_of.get(performer)
        if not names:
            raise EnqueueError(f"{performer.__name__} is not in performers: register it to enqueue it")
        if len(names) > 1:
            listed = ", ".join(names)
            raise EnqueueError(f"{performer.__name__} is registered as {listed}: enqueue with binding=")
        return names[0]

    def input_for(self, performer: type, payload: object, options: Mapping[str, object]) -> dict[str, object]:
        """The input of ``enqueue(env, Performer, payload, **options)``."""
        for key in ("binding", "payload"):
            if key in options:
                raise TypeError(f"enqueue(env, {performer.__name__}, payload) takes no {key}= keyword")
        return {"binding": self.binding_of(performer), "payload": payload, **options}

    @overload
    def shape(self, item: Mapping[str, object]) -> Mapping[str, object]: ...

    @overload
    def shape(self, item: object) -> object: ...

    def shape(self, item: object) -> object:
        """``item`` ready for the enqueue path; the same object when nothing is to change."""
        if not isinstance(item, Mapping):
            return item  # the enqueue path names the mistake
        binding = item.get("binding", _NOT_GIVEN)
        if isinstance(binding, type):
            item = {**item, "binding": self.binding_of(binding)}
            binding = item["binding"]
        shape = self._shapes.get(binding) if isinstance(binding, str) else None
        return item if shape is None else shape.apply(item)

    def shape_all(self, items: Sequence[Mapping[str, object]]) -> Sequence[Mapping[str, object]]:
        """Every input shaped; the same sequence when none changed (checked before any RPC)."""
        # J-39
        if not self._shapes and not any(isinstance(_binding(item), type) for item in items):
            return items
        shaped: list[Mapping[str, object]] | None = None
        for index, item in enumerate(items):
            converted = self.shape(item)
            if converted is not item:
                if shaped is None:
                    shaped = list(items)
                shaped[index] = converted
        return items if shaped is None else shaped


def _binding(item: object) -> object:
    if type(item) is dict:  # the common case, without an ABC check
        return item.get("binding")
    return item.get("binding") if isinstance(item, Mapping) else None
