"""Schemathesis hooks for the runs over a real local runtime (``SCHEMATHESIS_HOOKS``; not a test module).

The document cannot name the registered bindings and flows, so a generated create or start-run body
would almost always be refused as ``unknown binding``/``unknown flow`` before it reached the engine. Most
bodies are pointed at a registered one here, so extreme numbers and strings reach the shards, the run
coordinators and SQLite; the rest keep their generated names and exercise the refusals.
"""

from __future__ import annotations

from typing import Any

import schemathesis

BINDINGS = ("MAIL", "SMS")
FLOWS = ("signup",)
KEEP_GENERATED_EVERY = 5  # one body in five keeps its generated name


def _pick(names: tuple[str, ...], seed: str) -> str | None:
    score = sum(seed.encode("utf-8", "surrogatepass")) if seed else 0
    if score % KEEP_GENERATED_EVERY == 0:
        return None
    return names[score % len(names)]


@schemathesis.hook
def map_body(ctx: Any, body: Any) -> Any:
    operation = ctx.operation
    if operation is None or not isinstance(body, dict):
        return body
    method = str(operation.method).upper()
    if (method, operation.path) == ("POST", "/api/jobs") and isinstance(body.get("binding"), str):
        body["binding"] = _pick(BINDINGS, body["binding"]) or body["binding"]
    if (method, operation.path) == ("POST", "/api/runs") and isinstance(body.get("flow"), str):
        body["flow"] = _pick(FLOWS, body["flow"]) or body["flow"]
    return body
