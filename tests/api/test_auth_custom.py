"""Any auth middleware can be plugged in (A-77): a callable that refuses with a response or continues."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from tests.api.rest_harness import Harness


class HeaderGate:
    """A custom middleware: lets a request through only with ``x-team: ops``; records what it saw."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def __call__(self, request: Request, env: Any) -> Response | None:
        self.seen.append(request.url.path)
        if request.headers.get("x-team") == "ops":
            return None  # continue
        return JSONResponse({"error": "team only"}, status_code=403)


async def test_a_custom_middleware_decides_for_every_api_route(harness: Harness) -> None:
    # the middleware's own refusal goes out as it is; continuing reaches the route
    gate = HeaderGate()
    app = harness.app(auth=gate)
    async with harness.client(app, headers={}) as client:
        refused = await client.get("/api/stats")
        assert (refused.status_code, refused.json()) == (403, {"error": "team only"})
        allowed = await client.get("/api/stats", headers={"x-team": "ops"})
        assert allowed.status_code == 200 and "byState" in allowed.json()
    assert gate.seen == ["/api/stats", "/api/stats"]


async def test_a_custom_middleware_does_not_guard_the_dashboard_page(harness: Harness) -> None:
    # non-/api GETs get the data-free dashboard HTML without auth when a UI is configured
    gate = HeaderGate()
    app = harness.app(auth=gate, ui=lambda: "<html>dash</html>")
    async with harness.client(app, headers={}) as client:
        page = await client.get("/")
        assert page.status_code == 200 and "dash" in page.text
    assert gate.seen == []
