"""Cancel, deadlines, resume, retention, projection and tick failures (flows.md §7, §14-§17, §19)."""

from __future__ import annotations

from typing import Any

from tsumugi.core.config import RunSettings
from tsumugi.flows import create_flow

flow = create_flow({})


def chain(deadline_ms: int | None = None) -> Any:
    def build(f: Any) -> None:
        a = f.node("a", "A", input=lambda: {})
        b = f.node("b", "B", after={"a": a}, input=lambda: {})
        f.node("c", "C", after={"b": b}, input=lambda: {})

    return flow(build, deadline_ms=deadline_ms)


async def started(world: Any, rid: str = "F:1", **kw: Any) -> Any:
    await world.get(rid).start("F", {}, **kw)
    await world.settle()
    return world.get(rid)


async def test_cancel_stops_pending_and_cancels_scheduled_jobs(make_world: Any) -> None:
    # F-69, F-70
    world = make_world({"F": chain()})
    run = await started(world)
    assert await run.cancel() == {"ok": True}
    await world.settle()
    assert world.states("F:1") == {"a": "CANCELLED", "b": "CANCELLED", "c": "CANCELLED"}
    assert await run.state() == "CANCELLED"
    assert await run.cancel() == {"ok": False, "reason": "invalid-state"}  # F-68
    assert await world.get("F:gone").cancel() == {"ok": False, "reason": "gone"}


async def test_cancel_waits_for_running_job_and_wins_over_success(make_world: Any) -> None:
    # F-69 refused/requested cancel, F-70, T-7, F-33: CANCELLED even if every node completed
    world = make_world({"F": flow(lambda f: f.node("a", "A", input=lambda: {}))})
    run = await started(world)
    job_id = world.nodes("F:1")["a"].job_id
    shard = world.shards.get(job_id.split(":")[0])
    shard.running.add(job_id)
    await run.cancel()
    await world.settle()
    assert world.states("F:1")["a"] == "SCHEDULED"
    assert shard.cancelled == [job_id]
    assert world.alarms["F:1"].at == world.clock.now() + 5000  # ADR-0073: re-sent on a 5 s beat
    await world.finish("F:1", "a")
    await world.settle()
    assert await run.state() == "CANCELLED"


async def test_deadline_fails_pending_nodes_and_the_run(make_world: Any) -> None:
    # F-72, F-73, F-74
    world = make_world({"F": chain(deadline_ms=10_000)})
    run = await started(world)
    assert run.ctx.store.run().deadline_at == world.clock.now() + 10_000
    assert world.alarms["F:1"].at == world.clock.now() + 10_000  # a quiet run wakes at its deadline
    await world.finish("F:1", "a")
    world.clock.advance(10_000)
    await world.settle()
    nodes = world.nodes("F:1")
    assert (nodes["b"].state, nodes["b"].error) == ("FAILED", "run deadline exceeded: 10000ms")
    assert nodes["c"].error == "run deadline exceeded: 10000ms"
    assert await run.state() == "FAILED"


async def test_start_deadline_overrides_flow_deadline(make_world: Any) -> None:
    # F-72
    world = make_world({"F": chain(deadline_ms=10_000)})
    run = await started(world, deadline_ms=500)
    assert run.ctx.store.run().deadline_ms == 500


async def test_expired_run_is_failed_even_if_everything_succeeds(make_world: Any) -> None:
    # F-33, F-73, F-74
    world = make_world({"F": flow(lambda f: f.node("a", "A", input=lambda: {}), deadline_ms=1000)})
    job_holder = await started(world)
    world.clock.advance(1000)
    job_id = world.nodes("F:1")["a"].job_id
    world.shards.get(job_id.split(":")[0]).running.add(job_id)
    await world.settle()
    await world.finish("F:1", "a")
    await world.settle()
    assert world.states("F:1")["a"] == "COMPLETED"
    assert await job_holder.state() == "FAILED"


async def test_finished_run_never_flips_on_deadline(make_world: Any) -> None:
    # F-73
    world = make_world({"F": flow(lambda f: f.node("a", "A", input=lambda: {}), deadline_ms=1000)})
    run = await started(world)
    await world.finish("F:1", "a")
    await world.settle()
    world.clock.advance(5000)
    await run.alarm()
    assert await run.state() == "COMPLETED"


async def test_resume_reuses_completed_and_reruns_the_rest(make_world: Any) -> None:
    # F-77, F-78, F-75, F-68
    world = make_world({"F": chain(deadline_ms=60_000)})
    run = await started(world)
    assert await run.retry() == {"ok": False, "reason": "invalid-state"}
    await world.finish("F:1", "a", result={"v": 1})
    await world.settle()
    old_b = world.nodes("F:1")["b"].job_id
    await world.finish("F:1", "b", "FAILED", error="x")
    await world.settle()
    assert await run.state() == "FAILED"
    world.clock.advance(1000)
    assert await run.retry() == {"ok": True}
    row = run.ctx.store.run()
    assert (row.state, row.deadline_at, row.expired) == ("RUNNING", world.clock.now() + 60_000, 0)
    nodes = world.nodes("F:1")
    assert (nodes["a"].state, nodes["b"].state, nodes["b"].job_id, nodes["b"].error) == (
        "COMPLETED",
        "PENDING",
        None,
        None,
    )
    assert (nodes["c"].state, nodes["c"].error) == ("PENDING", None)  # F-60: SKIPPED is reset too
    await world.settle()
    new_b = world.nodes("F:1")["b"].job_id
    assert new_b != old_b and world.states("F:1")["b"] == "SCHEDULED"
    await run.notify([{"nodeId": "b", "jobId": old_b, "state": "FAILED", "result": None, "error": "old"}])
    assert world.states("F:1")["b"] == "SCHEDULED"  # stale event ignored
    await world.finish("F:1", "b")
    await world.settle()
    await world.finish("F:1", "c")
    await world.settle()
    assert await run.state() == "COMPLETED"
    assert await world.get("F:none").retry() == {"ok": False, "reason": "gone"}


async def test_resume_keeps_containers_unexpanded(make_world: Any) -> None:
    # F-77, F-78, F-79: reset children re-run with frozen payloads; the container keeps its summary
    calls: list[int] = []

    def build(f: Any) -> None:
        g = f.fan_out("g", "G", over=lambda: calls.append(1) or [1, 2], input=lambda v: {"v": v})
        f.node("b", "B", after={"g": g}, input=lambda _i, d: d["g"])

    world = make_world({"F": flow(build)})
    run = await started(world)
    await world.finish("F:1", "g:0", "FAILED")
    await world.finish("F:1", "g:1")
    await world.settle()
    await world.finish("F:1", "b", "FAILED")
    await world.settle()
    assert await run.state() == "FAILED"
    assert await run.retry() == {"ok": True}
    assert world.states("F:1") == {"g": "COMPLETED", "b": "PENDING", "g:0": "PENDING", "g:1": "COMPLETED"}
    await world.settle()
    assert world.job_of("F:1", "g:0")["payload"] == {"v": 1}
    assert world.states("F:1")["b"] == "PENDING"  # waits for the re-run child (F-58)
    await world.finish("F:1", "g:0")
    await world.settle()
    assert world.job_of("F:1", "b")["payload"] == {"total": 2, "succeeded": 1, "failed": 1}  # F-79
    assert calls == [1]


async def test_sweep_after_retention(make_world: Any) -> None:
    # F-82, F-35 step 9
    world = make_world(
        {"F": flow(lambda f: f.node("a", "A", input=lambda: {}))}, settings=RunSettings(sweep_after_ms=60_000)
    )
    run = await started(world)
    await world.finish("F:1", "a")
    await world.settle()
    assert await run.state() == "COMPLETED"
    assert world.alarms["F:1"].at == run.ctx.store.run().updated_at + 60_000
    world.clock.advance(60_000)
    await world.settle()
    assert await run.state() is None
    assert await run.cancel() == {"ok": False, "reason": "gone"}
    assert world.alarms["F:1"].at is None


async def test_failed_runs_keep_longer(make_world: Any) -> None:
    # F-81: failed_retention_ms
    world = make_world(
        {"F": flow(lambda f: f.node("a", "A", input=lambda: {}))},
        settings=RunSettings(sweep_after_ms=1000, failed_retention_ms=50_000),
    )
    run = await started(world)
    await world.finish("F:1", "a", "FAILED")
    await world.settle()
    world.clock.advance(10_000)
    await world.settle()
    assert await run.state() == "FAILED"
    world.clock.advance(40_000)
    await world.settle()
    assert await run.state() is None


async def test_outbox_is_projected_with_seq(make_world: Any) -> None:
    # F-25, F-26, F-84
    world = make_world({"F": chain()})
    await started(world)
    await world.finish("F:1", "a", "FAILED", error="e")
    await world.settle()
    last_run = world.read_model.runs[-1]
    assert {k: last_run[k] for k in ("id", "flow", "state", "node_total", "node_done", "node_failed")} == {
        "id": "F:1",
        "flow": "F",
        "state": "FAILED",
        "node_total": 3,
        "node_done": 3,
        "node_failed": 1,
    }
    node = [n for n in world.read_model.nodes if n["node_id"] == "b"][-1]
    assert (node["state"], node["error"], node["position"], node["after"]) == (
        "SKIPPED",
        "trigger not met: dependency failed: a",
        1,
        '["a"]',
    )
    seqs = [s["seq"] for s in world.read_model.runs + world.read_model.nodes]
    assert len(seqs) == len(set(seqs))
    assert world.get("F:1").ctx.outbox.is_empty()


async def test_tick_failure_keeps_reserved_ids_and_retries(make_world: Any) -> None:
    # F-38, F-41
    world = make_world({"F": flow(lambda f: f.node("a", "A", input=lambda: {}))})
    await world.get("F:1").start("F", {})
    world.shards.get("A#0").fail_enqueue = True
    await world.settle()
    reserved = world.nodes("F:1")["a"].job_id
    assert reserved is not None and world.states("F:1")["a"] == "PENDING"
    assert world.alarms["F:1"].at == world.clock.now() + 5000
    world.shards.get("A#0").fail_enqueue = False
    world.clock.advance(5000)
    await world.settle()
    assert world.nodes("F:1")["a"].job_id == reserved
    assert world.states("F:1")["a"] == "SCHEDULED"


async def test_reentrant_alarm_rearms(make_world: Any) -> None:
    # F-34
    world = make_world({"F": chain()})
    run = world.get("F:1")
    await run.start("F", {})
    run.ctx.ticking = True
    world.alarms["F:1"].at = None
    await run.alarm()
    assert world.alarms["F:1"].at == world.clock.now()
    assert world.states("F:1")["a"] == "PENDING"


async def test_removed_node_and_removed_flow(make_world: Any) -> None:
    # F-91, F-92
    flows: dict[str, Any] = {"F": chain()}
    world = make_world(flows)
    run = await started(world)
    flows["F"] = flow(lambda f: f.node("a", "A", input=lambda: {}))
    await world.finish("F:1", "a")
    await world.settle()
    nodes = world.nodes("F:1")
    assert (nodes["b"].state, nodes["b"].error) == ("FAILED", "node definition is missing: b")
    assert nodes["c"].state == "SKIPPED"
    world2 = make_world(flows)
    run2 = world2.get("F:2")
    await run2.start("F", {})
    del flows["F"]
    await world2.settle()
    assert (world2.nodes("F:2")["a"].error, await run2.state()) == ("flow is not registered: F", "FAILED")
    assert world2.alarms["F:2"].at is not None  # F-92 (port): the sweep is still armed
    assert await run.state() == "FAILED"


async def test_missing_fan_out_and_subflow_definitions(make_world: Any) -> None:
    # F-36, F-92: the pinned shape still names them; the current code no longer does
    child = flow(lambda f: f.node("c", "C", input=lambda: 1))

    def build(f: Any) -> None:
        f.fan_out("g", "G", over=lambda: [1], input=lambda v: v)
        f.subflow("s", child, input=lambda: {})

    flows: dict[str, Any] = {"F": flow(build), "C": child}
    world = make_world(flows)
    run = world.get("F:1")
    await run.start("F", {})
    flows["F"] = flow(lambda f: f.node("other", "O", input=lambda: 1))
    await world.settle()
    nodes = world.nodes("F:1")
    assert nodes["g"].error == "fan-out definition is missing: g"
    assert nodes["s"].error == "subflow definition is missing: s"
    assert "other" not in nodes  # F-91: nodes added later are not part of existing runs
    assert await run.state() == "FAILED"


async def test_resume_of_expired_run_measures_deadline_anew(make_world: Any) -> None:
    # F-75, F-74: an expired run can be resumed; the deadline restarts from the resume
    world = make_world({"F": chain(deadline_ms=1000)})
    run = await started(world)
    world.clock.advance(1000)
    await world.settle()
    await world.finish("F:1", "a", "CANCELLED")  # the shard recorded the cancel (ignored, F-45)
    assert await run.state() == "FAILED" and run.ctx.store.run().expired == 1
    world.clock.advance(500)
    assert await run.retry() == {"ok": True}
    row = run.ctx.store.run()
    assert (row.expired, row.deadline_at) == (0, world.clock.now() + 1000)
    await world.settle()
    assert world.states("F:1")["a"] == "SCHEDULED"
