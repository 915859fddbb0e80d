"""An app without auth stays closed (A-12, J-9), and the local runtime says why (ADR-0145)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import httpx
import pytest

from tsumugi import JobContext, Performer, bearer_auth, define_tsumugi
from tsumugi.clock import FixedClock
from tsumugi.runtimes.local.runtime import LocalRuntime


class Noop(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> None:
        return None


async def _get(asgi: Any, path: str, headers: dict[str, str] | None = None) -> httpx.Response:
    transport = httpx.ASGITransport(app=asgi)
    async with httpx.AsyncClient(transport=transport, base_url="http://local") as client:
        return await client.get(path, headers=headers)


async def test_a_closed_app_on_the_local_runtime_names_the_fix(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    app = define_tsumugi(performers={"Noop": Noop})
    async with LocalRuntime(app, tmp_path / "state", clock=FixedClock(1_000)) as runtime:
        with caplog.at_level(logging.WARNING, logger="tsumugi"):
            asgi = app.asgi(runtime.env)
        for path in ("/", "/api/jobs", "/api/openapi.json"):
            response = await _get(asgi, path)
            # still a plain-text 404 (fail-closed); the body explains it and names the fix
            assert response.status_code == 404, path
            assert response.headers["content-type"].startswith("text/plain"), path
            assert response.text.startswith("not found\n"), path
            assert "auth=bearer_auth(" in response.text, path
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, warnings  # said once, when the app is built, not per request
    assert "no auth" in warnings[0] and "auth=bearer_auth(...)" in warnings[0]


async def test_a_closed_app_elsewhere_reveals_nothing() -> None:
    # without the local runtime's binding (a Worker's env), the body is the bare "not found"
    app = define_tsumugi(performers={"Noop": Noop})
    response = await _get(app.asgi({}), "/api/jobs")
    assert (response.status_code, response.text) == (404, "not found")


async def test_a_configured_app_answers_as_before(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    app = define_tsumugi(performers={"Noop": Noop}, auth=bearer_auth("t0k"))
    async with LocalRuntime(app, tmp_path / "state", clock=FixedClock(1_000)) as runtime:
        with caplog.at_level(logging.WARNING, logger="tsumugi"):
            asgi = app.asgi(runtime.env)
        refused = await _get(asgi, "/api/jobs")
        assert (refused.status_code, refused.json()) == (401, {"error": "unauthorized"})
        listed = await _get(asgi, "/api/jobs", {"authorization": "Bearer t0k"})
        assert listed.status_code == 200
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
