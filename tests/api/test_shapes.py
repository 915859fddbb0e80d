"""The bodies the server shapes by hand (``tsumugi.api.shapes``) against the pydantic models that document
them (``tsumugi.api.models``): same names, same fields in the same order, same JSON types (ADR-0128)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, TypeAdapter

from tsumugi.api import models, shapes

PAIRS = [
    name
    for name, value in vars(shapes).items()
    if isinstance(value, type) and hasattr(value, "__required_keys__") and hasattr(models, name)
]


def _types(schema: dict[str, Any], defs: dict[str, Any]) -> Any:
    """The JSON types a property schema admits, refs resolved, constraints and descriptions dropped."""
    if "$ref" in schema:
        return ("ref", schema["$ref"].rsplit("/", 1)[-1])
    if "anyOf" in schema:
        return frozenset(_types(s, defs) for s in schema["anyOf"])
    kind = schema.get("type")
    if kind == "array":
        return ("array", _types(schema.get("items", {}), defs))
    if kind == "object":
        return "object"
    if kind == "integer":
        return "number-int"
    return kind or "any"


def _properties(schema: dict[str, Any]) -> dict[str, Any]:
    return {name: _types(prop, {}) for name, prop in schema.get("properties", {}).items()}


def test_every_shape_has_a_model() -> None:
    shaped = {n for n, v in vars(shapes).items() if isinstance(v, type) and hasattr(v, "__required_keys__")}
    assert shaped - set(PAIRS) == set()
    assert len(PAIRS) >= 25


@pytest.mark.parametrize("name", PAIRS)
def test_shape_fields_match_the_model(name: str) -> None:
    shape = getattr(shapes, name)
    model: type[BaseModel] = getattr(models, name)
    assert shapes.fields_of(shape) == tuple(model.model_fields), name


@pytest.mark.parametrize("name", PAIRS)
def test_shape_json_types_match_the_model(name: str) -> None:
    shape_schema = TypeAdapter(getattr(shapes, name)).json_schema()
    model_schema = getattr(models, name).model_json_schema()
    shape_props, model_props = _properties(shape_schema), _properties(model_schema)
    for field, kind in model_props.items():
        if kind == "any" or shape_props[field] == "any":
            continue
        shaped, declared = _normalise(shape_props[field]), _normalise(kind)
        if name.endswith("Request"):
            # An omitted request field is None once accepted, on both sides; on the wire it is absent.
            shaped, declared = _without_null(shaped), _without_null(declared)
        assert shaped == declared, (name, field)


def _without_null(kind: Any) -> Any:
    if isinstance(kind, frozenset):
        rest = kind - {"null"}
        return next(iter(rest)) if len(rest) == 1 else rest
    return kind


def _normalise(kind: Any) -> Any:
    """integer and number are one JSON number; a nullable scalar is a set with "null"."""
    if isinstance(kind, frozenset):
        members = frozenset(_normalise(k) for k in kind)
        return next(iter(members)) if len(members) == 1 else members
    if isinstance(kind, tuple):
        return tuple(_normalise(k) for k in kind)
    return "number" if kind == "number-int" else kind
