"""The REST app over real local D1 (Miniflare): migration ledger, projection and every read query.

Rules: D-11 (wrangler's ledger read by the check), A-28..A-35 and A-54 on D1, A-59..A-61, ADR-0062 (the
merged default listing is valid D1 SQL and reads only index ranges).
"""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace

import httpx
import pytest
from tests.api.rest_harness import AUTH, NOW, RecordingShards, job
from tests.platform.node_tooling import node_or_skip, run_wrangler
from tests.platform.replay_client import LoopbackD1Database, ReplayServer

from tsumugi.api import RestOptions, bearer_auth, create_rest_app
from tsumugi.clock import FixedClock
from tsumugi.storage.read_model_writer import D1ReadModelWriter

pytestmark = pytest.mark.platform

TOKEN = AUTH["authorization"].split(" ", 1)[1]


@pytest.fixture(scope="module")
def d1_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReplayServer]:
    persist = tmp_path_factory.mktemp("rest-d1")
    applied = run_wrangler(
        ["d1", "migrations", "apply", "TSUMUGI_DB", "--local", "--persist-to", str(persist)]
    )
    assert applied.returncode == 0, applied.stdout + applied.stderr
    server = ReplayServer(node_or_skip(), d1_persist=persist / "v3" / "d1")
    try:
        yield server
    finally:
        server.close()


async def test_rest_reads_real_d1(d1_server: ReplayServer) -> None:
    db = LoopbackD1Database(d1_server)
    writer = D1ReadModelWriter(db)
    await writer.upsert_jobs(
        [job(f"MAIL#0:d{i}", state=s, updated_at=NOW - i, created_at=i) for i, s in
         enumerate(("SCHEDULED", "FAILED", "COMPLETED", "RUNNING", "FAILED"))]
    )  # fmt: skip
    await writer.upsert_runs(
        [{"id": "signup:r1", "seq": 1, "flow": "signup", "state": "FAILED", "input": {"a": 1},
          "node_total": 1, "node_done": 1, "node_failed": 1, "created_at": 1, "updated_at": 2}]
    )  # fmt: skip
    await writer.upsert_run_nodes(
        [{"run_id": "signup:r1", "node_id": "n", "seq": 1, "binding": "MAIL", "state": "FAILED",
          "container": False, "parent": None, "origin": "static", "after": [], "job_id": "MAIL#0:d1",
          "child_run_id": None, "result": None, "error": "boom", "position": 0, "created_at": 1,
          "updated_at": 2}]
    )  # fmt: skip
    env = SimpleNamespace(TSUMUGI_DB=db, JOB_SHARD=RecordingShards())
    options = RestOptions(auth=bearer_auth(TOKEN), performers=("MAIL",), env=env, clock=FixedClock(NOW))
    transport = httpx.ASGITransport(app=create_rest_app(options))
    async with httpx.AsyncClient(transport=transport, base_url="http://d1.test", headers=AUTH) as api:
        listing = (await api.get("/api/jobs")).json()
        assert [j["id"] for j in listing["jobs"]] == [f"MAIL#0:d{i}" for i in range(5)]
        assert listing["total"] == 5
        asc = (await api.get("/api/jobs?order=asc&limit=2&offset=1")).json()
        assert [j["id"] for j in asc["jobs"]] == ["MAIL#0:d3", "MAIL#0:d2"]
        assert (await api.get("/api/jobs?state=FAILED&created_from=2")).json()["total"] == 1
        detail = (await api.get("/api/jobs/MAIL%230:d1")).json()["job"]
        assert detail["state"] == "FAILED" and detail["retryable"] is True
        stats = (await api.get("/api/stats")).json()
        assert stats == {"byState": {"COMPLETED": 1, "FAILED": 2, "RUNNING": 1, "SCHEDULED": 1},
                         "oldestScheduledMs": NOW}  # fmt: skip
        run = (await api.get("/api/runs/signup:r1")).json()
        assert run["run"]["input"] == '{"a":1}' and run["nodes"][0]["error"] == "boom"
        assert (await api.get("/api/runs?state=FAILED")).json()["total"] == 1
    # ADR-0062: the default page reads index ranges only, a few rows per state, not the table.
    before = db.rows_read
    async with httpx.AsyncClient(transport=transport, base_url="http://d1.test", headers=AUTH) as api:
        await api.get("/api/jobs?limit=2")
    assert db.rows_read - before < 40
