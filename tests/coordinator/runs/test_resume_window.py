"""Resume only while the run still exists, and resume keeps `cancelling` (F-80, F-81, F-82, F-83)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import httpx

from tsumugi.api import bearer_auth
from tsumugi.application import define_tsumugi
from tsumugi.core.config import RunSettings
from tsumugi.flows import create_flow
from tsumugi.performer import JobContext, Performer
from tsumugi.runtimes.local.sql_database import SqliteDatabase, apply_migrations
from tsumugi.storage.read_model_writer import D1ReadModelWriter

RETENTION_MS = 50_000
TOKEN = "resume-window-token"
RUN_GONE = "run is no longer available: removed from the coordinator after the retention period"


class Mail(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> None:
        return None


flow = create_flow({"Mail": Mail})
ONE = flow(lambda f: f.node("a", "Mail", input=lambda: {}))


def short_retention() -> RunSettings:
    return RunSettings(sweep_after_ms=1000, failed_retention_ms=RETENTION_MS)


async def failed_run(world: Any, run_id: str) -> Any:
    """Start ``run_id`` of ``ONE`` and fail its only node; returns the coordinator."""
    run = world.get(run_id)
    await run.start("ONE", {})
    await world.settle()
    await world.finish(run_id, "a", "FAILED", error="smtp down")
    await world.settle()
    assert await run.state() == "FAILED"
    return run


async def test_retry_is_accepted_until_the_failed_run_is_swept(make_world: Any) -> None:
    # F-80, F-81 failed_retention_ms, F-82: the window is counted from the run's last update
    world = make_world({"ONE": ONE}, settings=short_retention())
    late = await failed_run(world, "ONE:late")
    swept = await failed_run(world, "ONE:swept")
    failed_at = swept.ctx.store.run().updated_at
    assert world.alarms["ONE:swept"].at == failed_at + RETENTION_MS
    world.clock.advance(RETENTION_MS - 1)
    await world.settle()
    assert await late.retry() == {"ok": True}  # the last millisecond of the window
    world.clock.advance(1)
    await world.settle()
    assert await swept.state() is None
    assert await swept.retry() == {"ok": False, "reason": "gone"}
    assert await swept.cancel() == {"ok": False, "reason": "gone"}
    assert swept.ctx.store.run() is None and swept.ctx.store.nodes() == []  # retry re-created nothing (F-82)
    assert world.alarms["ONE:swept"].at is None
    assert await late.state() == "RUNNING"  # resumed in time, so it was not swept with the other


async def test_retry_of_a_swept_run_answers_410_over_rest(make_world: Any) -> None:
    # F-80, F-83, F-89: the read model still lists the run as retryable, the coordinator says gone
    db = SqliteDatabase(":memory:")
    apply_migrations(db)
    world = make_world({"ONE": ONE}, settings=short_retention())
    world.read_model = D1ReadModelWriter(db)
    await failed_run(world, "ONE:x")
    world.clock.advance(RETENTION_MS)
    await world.settle()
    assert await world.get("ONE:x").state() is None
    app = define_tsumugi(
        performers={"Mail": Mail},
        flows={"ONE": ONE},
        auth=bearer_auth(lambda env: env.TSUMUGI_TOKEN),
    )
    bindings = {"RUN": world, "TSUMUGI_DB": db, "JOB_SHARD": world.shards, "TSUMUGI_QUEUE": object()}
    env = SimpleNamespace(**bindings, TSUMUGI_TOKEN=TOKEN)  # complete, so no 503
    transport = httpx.ASGITransport(app=app.asgi(env))
    headers = {"authorization": f"Bearer {TOKEN}"}
    async with httpx.AsyncClient(transport=transport, base_url="http://t", headers=headers) as client:
        detail = (await client.get("/api/runs/ONE%3Ax")).json()["run"]
        assert (detail["state"], detail["retryable"]) == ("FAILED", True)
        answer = await client.post("/api/runs/ONE%3Ax/retry")
    assert (answer.status_code, answer.json()) == (410, {"ok": False, "error": RUN_GONE})
    assert await world.get("ONE:x").state() is None


async def test_resume_does_not_reset_cancelling(make_world: Any) -> None:
    # F-80, F-92, F-33: a cancelling run failed by its removed flow stays cancelling after resume
    def build(f: Any) -> None:
        head = f.node("a", "Mail", input=lambda: {})
        f.node("b", "Mail", after={"a": head}, input=lambda: {})

    flows: dict[str, Any] = {"TWO": flow(build)}
    world = make_world(flows)
    run = world.get("TWO:1")
    await run.start("TWO", {})
    assert await run.cancel() == {"ok": True}
    registered = flows.pop("TWO")  # removed before the first tick: F-92 wins over the cancellation
    await world.settle()
    nodes = world.nodes("TWO:1")
    assert {n.state for n in nodes.values()} == {"FAILED"}
    assert nodes["a"].error == "flow is not registered: TWO"
    assert (await run.state(), run.ctx.store.run().cancelling) == ("FAILED", 1)
    flows["TWO"] = registered
    assert await run.retry() == {"ok": True}
    row = run.ctx.store.run()
    assert (row.state, row.cancelling) == ("RUNNING", 1)
    await world.settle()
    # Still halting: the reset nodes are cancelled instead of started, and cancellation decides the run.
    assert world.states("TWO:1") == {"a": "CANCELLED", "b": "CANCELLED"}
    assert world.shards.all_jobs() == {}
    assert await run.state() == "CANCELLED"
