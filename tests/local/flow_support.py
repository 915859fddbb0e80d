"""Helpers for the flow, schedule and REST tests on the local runtime (not a test module)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import quote

import httpx
from tests import polling

TOKEN = "local-test-token"
HEADERS = {"authorization": f"Bearer {TOKEN}"}
SETTLE_DEADLINE_S = 30.0


async def until(
    condition: Callable[[], Awaitable[Any]], what: str, deadline_s: float = SETTLE_DEADLINE_S
) -> Any:
    """Await ``condition`` until it returns something truthy; fail naming ``what`` after ``deadline_s``."""
    return await polling.until(condition, what, deadline_s, interval_s=0.02)


@asynccontextmanager
async def rest_client(asgi: Any) -> AsyncIterator[httpx.AsyncClient]:
    """An httpx client over an ASGI app in this process, authenticated with ``TOKEN``."""
    transport = httpx.ASGITransport(app=asgi)
    async with httpx.AsyncClient(transport=transport, base_url="http://local", headers=HEADERS) as client:
        yield client


def path_id(identifier: str) -> str:
    """A job or run id as one URL path segment (A-9)."""
    return quote(identifier, safe="")


async def run_detail(client: httpx.AsyncClient, run_id: str) -> dict[str, Any] | None:
    """``GET /api/runs/{id}`` as JSON, or None while the read model has not seen the run (A-60)."""
    answer = await client.get(f"/api/runs/{path_id(run_id)}")
    if answer.status_code == 404:
        return None
    answer.raise_for_status()
    body: dict[str, Any] = answer.json()
    return body


def nodes_by_id(detail: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {node["id"]: node for node in detail["nodes"]}


async def settled_run(
    client: httpx.AsyncClient, run_id: str, state: str, deadline_s: float = SETTLE_DEADLINE_S
) -> dict[str, Any]:
    """Wait until the read model shows the run in ``state`` with every node projected terminal."""

    async def check() -> dict[str, Any] | None:
        detail = await run_detail(client, run_id)
        if detail is None or detail["run"]["state"] != state:
            return None
        return detail if detail["run"]["node_done"] == detail["run"]["node_total"] else None

    result: dict[str, Any] = await until(check, f"run {run_id} {state}", deadline_s)
    return result
