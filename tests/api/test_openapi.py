"""The generated OpenAPI document (A-69..A-71)."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tsumugi.api import openapi_document
from tsumugi.api.app import ROUTES

SPEC_OPERATIONS = {
    ("get", "/api/jobs"): "listJobs", ("post", "/api/jobs"): "createJob", ("get", "/api/jobs/{id}"): "getJob",
    ("post", "/api/jobs/{id}/retry"): "retryJob", ("post", "/api/jobs/{id}/reschedule"): "rescheduleJob",
    ("post", "/api/jobs/{id}/cancel"): "cancelJob", ("post", "/api/jobs/bulk-retry"): "bulkRetryJobs",
    ("post", "/api/jobs/bulk-cancel"): "bulkCancelJobs", ("get", "/api/bindings"): "listBindings",
    ("get", "/api/metrics"): "getMetrics", ("get", "/api/stats"): "getStats",
    ("get", "/api/diagnostics"): "getDiagnostics", ("get", "/api/schedules"): "listSchedules",
    ("get", "/api/runs"): "listRuns", ("post", "/api/runs"): "startRun", ("get", "/api/runs/{id}"): "getRun",
    ("post", "/api/runs/{id}/retry"): "retryRun", ("post", "/api/runs/{id}/cancel"): "cancelRun",
    ("get", "/api/flows"): "listFlows", ("get", "/api/openapi.json"): "getOpenApi",
    # A-26 superseded / J-176
    ("post", "/api/bindings/{binding}/policy"): "updateBindingPolicy",
    ("post", "/api/bindings/{binding}/policy/reset"): "resetBindingPolicy",
    ("post", "/api/runs/{id}/events/{event}"): "sendRunEvent",  # ADR-0148
    ("post", "/api/bulk"): "startBulkAction", ("get", "/api/bulk/{id}"): "getBulkAction",  # ADR-0151
}  # fmt: skip
NAMED_SCHEMAS = {
    "Error", "Mutation", "JobSummary", "AttemptRecord", "JobDetail", "CreateJobRequest", "RunSummary",
    "RunDetail", "RunNode", "BulkRequest", "BulkResult", "RescheduleRequest", "StartRunRequest",
    "BindingMetrics", "MetricsPoint", "Diagnostics", "Schedule",
}  # fmt: skip


def _operations(doc: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(m, p): op for p, item in doc["paths"].items() for m, op in item.items()}


def _walk(node: Any) -> Any:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


def test_document_header_and_security() -> None:
    #
    doc = openapi_document("1.2.3")
    assert doc["openapi"] == "3.1.0"
    assert doc["info"]["title"] == "Tsumugi REST API" and doc["info"]["version"] == "1.2.3"
    assert "501" in doc["info"]["description"]
    assert doc["security"] == [{"bearerAuth": []}, {"cookieAuth": []}]
    schemes = doc["components"]["securitySchemes"]
    assert schemes["bearerAuth"] == {"type": "http", "scheme": "bearer"}
    assert {k: schemes["cookieAuth"][k] for k in ("type", "in", "name")} == {
        "type": "apiKey", "in": "cookie", "name": "tsumugi_token",
    }  # fmt: skip


def test_operations_match_the_catalogue_and_the_routes() -> None:
    # every operation id; the router serves exactly the documented paths.
    ops = _operations(openapi_document())
    assert {k: v["operationId"] for k, v in ops.items()} == SPEC_OPERATIONS
    routed = {(m.lower(), p) for m, p, _ in ROUTES} | {("get", "/api/openapi.json")}
    assert routed == set(SPEC_OPERATIONS)


def test_statuses_per_operation() -> None:
    # A-4 table, A-71: every operation but getOpenApi lists 503.
    ops = _operations(openapi_document())
    # ADR-0149, ADR-0150: 200 answers an enqueue that debounced or was dropped.
    assert set(ops[("post", "/api/jobs")]["responses"]) == {"200", "201", "400", "401", "501", "503"}
    assert set(ops[("get", "/api/metrics")]["responses"]) == {"200", "400", "401", "501", "502", "503"}
    assert set(ops[("post", "/api/runs/{id}/retry")]["responses"]) == {
        "200",
        "400",
        "401",
        "409",
        "410",
        "501",
        "503",
    }
    assert set(ops[("get", "/api/openapi.json")]["responses"]) == {"200", "401"}
    for key, op in ops.items():
        if key != ("get", "/api/openapi.json"):
            assert "503" in op["responses"], key
        assert op.get("parameters", [None]) != [], key
        assert "tags" not in op


def test_schema_conventions() -> None:
    # named schemas, nullable scalars as type arrays, ok enum [true], no explode/required:false.
    doc = openapi_document()
    schemas = doc["components"]["schemas"]
    assert NAMED_SCHEMAS <= set(schemas)
    assert schemas["Mutation"]["properties"]["ok"] == {"enum": [True], "type": "boolean"}
    assert "allOf" not in json.dumps(schemas["JobDetail"])
    assert schemas["JobSummary"]["properties"]["dispatched_at"] == {"type": ["integer", "null"]}
    assert schemas["Stats"]["properties"]["byState"]["additionalProperties"] == {"type": "integer"}
    for node in _walk(doc):
        assert "unevaluatedProperties" not in node
        if "anyOf" in node:  # only nullable objects (a $ref or null) may use anyOf
            assert any("$ref" in option for option in node["anyOf"]), node
    for op in _operations(doc).values():
        for param in op.get("parameters", []):
            assert "explode" not in param and param.get("required", True) is not False


def test_query_defaults_are_documented() -> None:
    #
    ops = _operations(openapi_document())
    params = {p["name"]: p["schema"] for p in ops[("get", "/api/jobs")]["parameters"]}
    assert params["sort"]["default"] == "updated_at" and len(params["sort"]["enum"]) == 6
    assert params["order"] == {"type": "string", "enum": ["asc", "desc"], "default": "desc"}
    assert params["limit"]["maximum"] == 100 and params["limit"]["default"] == 20
    assert params["offset"]["default"] == 0
    hours = next(p["schema"] for p in ops[("get", "/api/metrics")]["parameters"] if p["name"] == "hours")
    assert (hours["minimum"], hours["maximum"], hours["default"]) == (1, 720, 24)
    bulk = openapi_document()["components"]["schemas"]["BulkRequest"]["properties"]
    assert (bulk["ids"]["minItems"], bulk["ids"]["maxItems"]) == (1, 200)
    assert (bulk["limit"]["minimum"], bulk["limit"]["maximum"], bulk["limit"]["default"]) == (1, 200, 200)


async def test_served_document_carries_the_configured_version(api: httpx.AsyncClient) -> None:
    # version injected at serve time.
    response = await api.get("/api/openapi.json")
    assert response.status_code == 200 and response.json()["info"]["version"] == "0.6.0"


def test_version_defaults_to_the_installed_package() -> None:
    # info.version is the package version unless the application names one.
    from tsumugi.api.openapi import package_version

    assert openapi_document()["info"]["version"] == package_version() != ""


def test_shipped_document_is_what_the_models_generate() -> None:
    # ADR-0128: the server serves openapi.json as shipped; it must equal a fresh generation from the
    # pydantic models, byte for byte (run scripts/build-openapi after changing a model).
    from importlib import resources

    from tsumugi.api.openapi_build import document_text

    shipped = resources.files("tsumugi.api").joinpath("openapi.json").read_text(encoding="utf-8")
    assert shipped == document_text(), "openapi.json is stale: run scripts/build-openapi"
