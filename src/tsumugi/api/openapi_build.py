"""Generates the OpenAPI 3.1 document from the pydantic models, at build time.

The server ships the result as ``openapi.json`` beside this module and serves that file (``openapi.py``),
so answering ``/api/openapi.json`` needs no pydantic (ADR-0128). ``scripts/build-openapi`` rewrites the
file; ``tests/api/test_openapi.py`` fails when it differs from what the models generate.
"""
# A-69..A-71

from __future__ import annotations

import json
from typing import Final

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue, models_json_schema
from pydantic_core import core_schema

from tsumugi.api import models as m
from tsumugi.api.openapi_paths import OPERATIONS, Operation, Param
from tsumugi.core.json_types import JsonObject

DESCRIPTION: Final = (
    "Tsumugi's REST API. Endpoints that depend on optional configuration (job creation, runs, "
    "schedules, metrics) answer 501 when it is not configured."
)
SCHEMA_MODELS: Final[tuple[type[BaseModel], ...]] = (
    m.Error, m.Mutation, m.JobSummary, m.AttemptRecord, m.JobDetail, m.JobList, m.JobDetailResponse,
    m.CreateJobRequest, m.Created, m.RescheduleRequest, m.BulkRequest, m.BulkFailure, m.BulkResult,
    m.Stats, m.BlockedFlags, m.BindingDiagnostics, m.Diagnostics, m.BindingList, m.FlowList, m.Schedule,
    m.ScheduleList, m.RunSummary, m.RunDetail, m.RunNode, m.RunList, m.RunDetailResponse,
    m.StartRunRequest, m.BindingMetrics, m.MetricsPoint, m.MetricsResponse, m.RateLimit, m.PolicyPatch,
    m.PolicyResult, m.OpenApiDocument, m.ThrottleRequest, m.EnqueueAnswer, m.BulkActionRequest, m.BulkFilter,
    m.BulkCount, m.BulkProgress,
    m.EventAccepted, m.EventRefused,  # ADR-0148
)  # fmt: skip
_SIMPLE_KEYS: Final = frozenset(
    {"type", "enum", "format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength",
     "maxLength", "pattern", "description", "default"}
)  # fmt: skip


class OpenApiSchema(GenerateJsonSchema):
    """nullable scalars as type arrays (never anyOf), single literals as enums, no field titles."""

    #

    def nullable_schema(self, schema: core_schema.NullableSchema) -> JsonSchemaValue:
        inner = self.generate_inner(schema["schema"])
        if isinstance(inner.get("type"), str) and set(inner) <= _SIMPLE_KEYS:
            nullable = dict(inner)
            nullable["type"] = [inner["type"], "null"]
            if "enum" in nullable:
                nullable["enum"] = [*nullable["enum"], None]
            return nullable
        return super().nullable_schema(schema)

    def literal_schema(self, schema: core_schema.LiteralSchema) -> JsonSchemaValue:
        value = super().literal_schema(schema)
        if "const" in value:
            value["enum"] = [value.pop("const")]
        return value

    def field_title_should_be_set(self, schema: object) -> bool:
        return False

    def default_schema(self, schema: core_schema.WithDefaultSchema) -> JsonSchemaValue:
        value = super().default_schema(schema)
        if value.get("default", 0) is None:
            del value["default"]  # an omitted field has no default to document
        return value


def _parameter(param: Param) -> JsonObject:
    out: JsonObject = {"name": param.name, "in": param.location, "schema": dict(param.schema)}
    if param.location == "path":
        out["required"] = True
    return out


def _operation(op: Operation) -> JsonObject:
    responses: JsonObject = {
        str(op.success): {
            "description": "success",
            "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{op.response}"}}},
        }
    }
    for status, (schema, description) in op.alternatives.items():
        responses[str(status)] = {
            "description": description,
            "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{schema}"}}},
        }
    for status in op.errors:
        responses[str(status)] = {
            "description": op.error_descriptions.get(status, "error"),
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
        }
    out: JsonObject = {"operationId": op.operation_id, "summary": op.summary}
    if op.params:
        out["parameters"] = [_parameter(p) for p in op.params]
    if op.request is not None:
        out["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{op.request}"}}},
        }
    out["responses"] = responses
    return out


def build_document() -> JsonObject:
    """The document as generated now, with an empty ``info.version`` (filled in when served)."""
    _, defs = models_json_schema(
        [(model, "validation") for model in SCHEMA_MODELS],
        ref_template="#/components/schemas/{model}",
        schema_generator=OpenApiSchema,
    )
    by_path: dict[str, JsonObject] = {}
    for op in OPERATIONS:
        by_path.setdefault(op.path, {})[op.method.lower()] = _operation(op)
    paths: JsonObject = {path: methods for path, methods in by_path.items()}
    return {
        "openapi": "3.1.0",
        "info": {"title": "Tsumugi REST API", "version": "", "description": DESCRIPTION},
        "security": [{"bearerAuth": []}, {"cookieAuth": []}],
        "paths": paths,
        "components": {
            "schemas": defs.get("$defs", {}),
            "securitySchemes": {
                "bearerAuth": {"type": "http", "scheme": "bearer"},
                "cookieAuth": {
                    "type": "apiKey",
                    "in": "cookie",
                    "name": "tsumugi_token",
                    "description": "the cookie name is chosen per deployment (bearer_auth(cookie=...))",
                },
            },
        },
    }


def document_text() -> str:
    """``build_document()`` as the shipped ``openapi.json`` holds it: indented, keys in order, one newline."""
    return json.dumps(build_document(), indent=1, ensure_ascii=False) + "\n"
