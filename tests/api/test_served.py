"""The REST app served by uvicorn on 127.0.0.1: wire checks, the REST client, and Schemathesis."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tests.api.rest_harness import TOKEN, Harness
from tests.api.served import app_of, seeded_harness, serve, serve_runtime

from tsumugi.rest_client import AsyncTsumugiClient, RestApiError, TsumugiClient


@pytest.fixture
async def served(tmp_path: Path) -> Iterator[tuple[str, Harness]]:
    harness = await seeded_harness(str(tmp_path / "read-model.sqlite"))
    with serve(app_of(harness)) as base_url:
        yield base_url, harness


async def test_wire_over_a_real_socket(served: tuple[str, Harness]) -> None:
    # ..A-17 through a real HTTP server.
    base_url, _ = served
    async with httpx.AsyncClient(base_url=base_url) as client:
        assert (await client.get("/api/jobs")).status_code == 401
        page = await client.get("/")
        assert page.status_code == 200 and page.headers["content-type"] == "text/html; charset=UTF-8"
        auth = {"authorization": f"Bearer {TOKEN}"}
        listing = await client.get("/api/jobs?sort=created_at&order=asc", headers=auth)
        assert listing.headers["content-type"] == "application/json; charset=UTF-8"
        assert listing.json()["total"] == 3
        detail = await client.get("/api/jobs/MAIL%230%3Aa1", headers=auth)
        assert detail.json()["job"]["id"] == "MAIL#0:a1"
        cookie = await client.get("/api/stats", headers={"cookie": f"tsumugi_token={TOKEN}"})
        assert cookie.json()["byState"] == {"COMPLETED": 1, "FAILED": 1, "SCHEDULED": 1}
        bad = await client.post("/api/jobs", headers=auth, content=b"{nope")
        assert (bad.status_code, bad.json()) == (400, {"error": "body must be valid JSON"})


def test_sync_client(served: tuple[str, Harness]) -> None:
    base_url, harness = served
    with TsumugiClient(base_url, TOKEN) as api:
        assert api.list_jobs(state="FAILED").total == 1
        assert api.get_job("MAIL#0:a1").state == "SCHEDULED"
        assert api.create_job("MAIL", {"to": "x"}, max_attempts=2, unique_key="u") == "MAIL#0:new1"
        assert harness.enqueued[-1] == {
            "binding": "MAIL",
            "payload": {"to": "x"},
            "maxAttempts": 2,
            "uniqueKey": "u",
        }
        assert api.retry_job("MAIL#0:f1") == {"ok": False, "reason": "gone"}
        assert api.reschedule_job("MAIL#0:a1", delay_ms=5) == {"ok": False, "reason": "gone"}
        assert api.bulk_cancel(ids=["MAIL#0:a1"]).failed[0].reason == "gone"
        assert api.stats().byState["SCHEDULED"] == 1
        assert api.bindings() == ["MAIL", "SMS"] and api.flows() == ["signup"]
        assert set(api.diagnostics().bindings) == {"MAIL", "SMS"}
        assert api.update_policy("MAIL", paused=True).shards == 1
        assert api.reset_policy("MAIL").ok is True
        assert api.start_run("signup", {"a": 1}, run_id="r1") == "signup:r1"
        assert api.cancel_run("signup:r1") == {"ok": False, "reason": "gone"}
        assert api.list_runs().total == 0
        assert api.schedules()[0].name == "nightly"
        assert api.metrics(hours=2).bindings[0].binding == "SMS"
        assert api.openapi()["openapi"] == "3.1.0"
        with pytest.raises(RestApiError) as refused:
            api.get_run("signup:none")
        assert (refused.value.status, refused.value.message) == (404, "not found")
    with TsumugiClient(base_url, "wrong") as api, pytest.raises(RestApiError) as denied:
        api.stats()
    assert denied.value.status == 401


async def test_async_client(served: tuple[str, Harness]) -> None:
    base_url, _ = served
    async with AsyncTsumugiClient(base_url, TOKEN) as api:
        assert (await api.list_jobs(binding="SMS")).jobs[0].id == "SMS#0:c1"
        assert (await api.get_job("SMS#0:c1")).attempts_log == []
        assert await api.cancel_job("MAIL#0:a1") == {"ok": False, "reason": "gone"}
        assert (await api.bulk_retry(binding="MAIL")).remaining == 0
        with pytest.raises(RestApiError) as refused:
            await api.create_job("NOPE", 1)
        assert refused.value.message == "unknown binding: NOPE"


SCHEMATHESIS = shutil.which("schemathesis", path=str(Path(sys.executable).parent))
# Checks the spec itself contradicts: lenient query parsing and arrays-as-objects,
# 404 rather than 405 for undeclared methods, and 4xx answers for well-formed but refused input.
SPEC_EXCLUDED_CHECKS = "negative_data_rejection,positive_data_acceptance,unsupported_method"


def _schemathesis(base_url: str, max_examples: int, hooks: str | None = None) -> tuple[int, float]:
    """Run schemathesis over the served document; (cases generated, seconds). Fails on any failure."""
    assert SCHEMATHESIS is not None
    command = [
        SCHEMATHESIS, "run", f"{base_url}/api/openapi.json", "-H", f"Authorization: Bearer {TOKEN}",
        "--checks", "all", "--exclude-checks", SPEC_EXCLUDED_CHECKS, "--max-examples", str(max_examples),
        "--seed", "7", "--generation-database", "none",
    ]  # fmt: skip
    env = dict(os.environ)
    if hooks is not None:
        env |= {"SCHEMATHESIS_HOOKS": hooks, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    started = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, timeout=280, check=False, env=env)
    seconds = time.perf_counter() - started
    output = result.stdout + result.stderr
    assert "not_a_server_error" not in output and "Server error" not in output, output[-4000:]
    assert result.returncode == 0, output[-4000:]
    generated = re.search(r"(\d+) generated, \1 passed", output)
    assert generated is not None, output[-2000:]
    return int(generated.group(1)), seconds


@pytest.mark.slow
@pytest.mark.skipif(SCHEMATHESIS is None, reason="schemathesis is not installed (pip install schemathesis)")
def test_schemathesis_finds_no_server_errors(served: tuple[str, Harness]) -> None:
    base_url, _ = served
    cases, seconds = _schemathesis(base_url, 15)
    assert cases > 500
    print(f"schemathesis over the harness: {cases} cases, 0 failures, {seconds:.0f} s")


@pytest.mark.slow
@pytest.mark.skipif(SCHEMATHESIS is None, reason="schemathesis is not installed (pip install schemathesis)")
def test_schemathesis_over_the_real_engine_finds_no_server_errors(tmp_path: Path) -> None:
    # Issue 13 (ADR-0133): extreme numbers and strings reach the shards, run coordinators and SQLite files
    # of a real local runtime; server-error, status-code and response-schema checks among all the others.
    with serve_runtime(tmp_path / "state") as base_url:
        cases, seconds = _schemathesis(base_url, 100, hooks="tests.api.schemathesis_hooks")
    assert cases >= 2_000
    print(f"schemathesis over the local runtime: {cases} cases, 0 failures, {seconds:.0f} s")
