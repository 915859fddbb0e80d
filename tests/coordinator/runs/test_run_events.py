"""Job events, spawns, synchronisation and trigger/when on the coordinator (flows.md §8, §10, §11, §21)."""

from __future__ import annotations

from typing import Any

from tsumugi.core.config import RunSettings
from tsumugi.flows import create_flow

flow = create_flow({})


def chain() -> Any:
    def build(f: Any) -> None:
        a = f.node("a", "A", input=lambda: {})
        f.node("b", "B", after={"a": a}, input=lambda: {})

    return flow(build)


async def started(world: Any, rid: str, name: str = "F") -> Any:
    await world.get(rid).start(name, {})
    await world.settle()
    return world.get(rid)


async def test_spawned_children_gate_dependents(make_world: Any) -> None:
    # F-5, F-55, F-56, F-58: b waits for a's spawned child
    world = make_world({"F": chain()})
    await started(world, "F:1")
    await world.finish(
        "F:1",
        "a",
        spawns=[{"id": "c1", "binding": "Crawl", "payload": {"u": 1}, "options": {"max_attempts": 2}}],
    )
    await world.settle()
    nodes = world.nodes("F:1")
    assert (nodes["a:c1"].parent, nodes["a:c1"].origin, nodes["a:c1"].state) == ("a", "spawn", "SCHEDULED")
    assert world.job_of("F:1", "a:c1")["maxAttempts"] == 2
    assert nodes["b"].state == "PENDING"
    await world.finish("F:1", "a:c1", spawns=[{"id": "deep", "binding": "Crawl", "payload": {}}])
    await world.settle()
    assert world.states("F:1")["a:c1:deep"] == "SCHEDULED"  # nesting stacks (F-5)
    assert world.states("F:1")["b"] == "PENDING"
    await world.finish("F:1", "a:c1:deep")
    await world.settle()
    assert world.states("F:1")["b"] == "SCHEDULED"


async def test_spawn_failure_fails_dependents_and_run(make_world: Any) -> None:
    # F-31, F-59
    world = make_world({"F": chain()})
    await started(world, "F:1")
    await world.finish("F:1", "a", spawns=[{"id": "c", "binding": "X", "payload": 1}])
    await world.settle()
    await world.finish("F:1", "a:c", "FAILED", error="bad")
    await world.settle()
    assert world.nodes("F:1")["b"].state == "SKIPPED"
    assert await world.get("F:1").state() == "FAILED"


async def test_duplicate_spawns_and_failed_attempt_spawns(make_world: Any) -> None:
    # F-55: same id once (first wins); spawns carried by a failure are dropped
    world = make_world({"F": chain()})
    await started(world, "F:1")
    spawns = [{"id": "c", "binding": "X", "payload": 1}, {"id": "c", "binding": "X", "payload": 2}]
    await world.finish("F:1", "a", "FAILED", spawns=spawns)
    assert "a:c" not in world.states("F:1")
    await world.finish("F:1", "a", spawns=spawns)
    await world.finish("F:1", "a", spawns=spawns)  # re-delivery is harmless (F-45)
    nodes = world.nodes("F:1")
    assert nodes["a:c"].payload == "1"
    assert len([n for n in nodes if n.startswith("a:")]) == 1


async def test_spawn_over_node_limit_keeps_parent_failed(make_world: Any) -> None:
    # F-56 (port decision over the quirk)
    world = make_world({"F": chain()}, settings=RunSettings(max_nodes=3))
    await started(world, "F:1")
    await world.finish(
        "F:1",
        "a",
        spawns=[{"id": "x", "binding": "X", "payload": 1}, {"id": "y", "binding": "X", "payload": 1}],
    )
    node = world.nodes("F:1")["a"]
    assert (node.state, node.error) == ("FAILED", "node count exceeded the limit: 3")
    assert set(world.states("F:1")) == {"a", "b"}


async def test_invalid_spawn_id_fails_the_parent(make_world: Any) -> None:
    # F-57 (port): never throws inside notify
    world = make_world({"F": chain()})
    await started(world, "F:1")
    await world.finish("F:1", "a", spawns=[{"id": "a:b", "binding": "X", "payload": 1}])
    node = world.nodes("F:1")["a"]
    assert node.state == "FAILED" and node.error.startswith('invalid node id: "a:b"')


async def test_stale_and_unknown_events_are_ignored(make_world: Any) -> None:
    # F-45
    world = make_world({"F": chain()})
    run = await started(world, "F:1")
    await run.notify(
        [
            {"nodeId": "a", "jobId": "A#0:other", "state": "COMPLETED", "result": None, "error": None},
            {"nodeId": "zz", "jobId": "A#0:x", "state": "COMPLETED", "result": None, "error": None},
        ]
    )
    assert world.states("F:1")["a"] == "SCHEDULED"
    await world.finish("F:1", "a", "FAILED", error="e")
    await world.finish("F:1", "a", "CANCELLED")  # never overwrites a terminal node
    assert world.nodes("F:1")["a"].error == "e" and world.states("F:1")["a"] == "FAILED"
    await world.get("F:none").notify([{"nodeId": "a", "jobId": "x", "state": "COMPLETED"}])
    assert await world.get("F:none").state() is None  # F-45: storage is not re-created


async def test_manual_job_retry_event_is_applied(make_world: Any) -> None:
    # F-48: a later COMPLETED for the same job id moves the node; skipped dependents stay skipped
    world = make_world({"F": chain()})
    await started(world, "F:1")
    await world.finish("F:1", "a", "FAILED", error="e")
    await world.settle()
    assert await world.get("F:1").state() == "FAILED"
    await world.finish("F:1", "a", "COMPLETED")
    await world.settle()
    assert world.states("F:1") == {"a": "COMPLETED", "b": "SKIPPED"}
    assert await world.get("F:1").state() == "COMPLETED"  # T-5: skips are not failures


def backup() -> Any:
    def build(f: Any) -> None:
        dump = f.node("dump", "DUMP", input=lambda i: {"t": i.get("t")})
        f.node("alert", "ALERT", after={"dump": dump}, trigger="failure", input=lambda: {})
        f.node(
            "unlock",
            "UNLOCK",
            after={"dump": dump},
            trigger="always",
            input=lambda _i, d: {"size": (d["dump"] or {}).get("size", 0)},
        )
        f.node(
            "verify",
            "VERIFY",
            after={"dump": dump},
            when=lambda i, d: i.get("verify", True),
            input=lambda: {},
        )

    return flow(build)


async def test_triggers_on_failure(make_world: Any) -> None:
    # T-1, T-3, T-5, T-6
    world = make_world({"B": backup()})
    await started(world, "B:1", "B")
    await world.finish("B:1", "dump", "FAILED", error="disk")
    await world.settle()
    nodes = world.nodes("B:1")
    assert nodes["alert"].state == "SCHEDULED"
    assert world.job_of("B:1", "unlock")["payload"] == {"size": 0}
    assert (nodes["verify"].state, nodes["verify"].error) == (
        "SKIPPED",
        "trigger not met: dependency failed: dump",
    )
    await world.finish("B:1", "alert")
    await world.finish("B:1", "unlock")
    await world.settle()
    assert await world.get("B:1").state() == "FAILED"


async def test_triggers_on_success_and_when(make_world: Any) -> None:
    # T-1, T-2, T-4, T-5, T-6
    world = make_world({"B": backup()})
    await world.get("B:1").start("B", {"verify": False})
    await world.settle()
    await world.finish("B:1", "dump", result={"size": 9})
    await world.settle()
    nodes = world.nodes("B:1")
    assert (nodes["alert"].state, nodes["alert"].error) == (
        "SKIPPED",
        "trigger not met: no dependency failed",
    )
    assert (nodes["verify"].state, nodes["verify"].error) == ("SKIPPED", "when condition was false")
    assert world.job_of("B:1", "unlock")["payload"] == {"size": 9}
    await world.finish("B:1", "unlock")
    await world.settle()
    assert await world.get("B:1").state() == "COMPLETED"


async def test_when_exception_fails_node(make_world: Any) -> None:
    # T-4
    world = make_world({"F": flow(lambda f: f.node("a", "A", input=lambda: {}, when=lambda: {}["x"]))})
    await started(world, "F:1")
    node = world.nodes("F:1")["a"]
    assert (node.state, node.error) == ("FAILED", "'x'")
    assert await world.get("F:1").state() == "FAILED"


async def test_spawn_requests_as_performer_objects(make_world: Any) -> None:
    # F-55: in-process reports may carry performer.SpawnRequest objects instead of wire dicts
    from tsumugi.performer import SpawnRequest

    world = make_world({"F": chain()})
    await started(world, "F:1")
    await world.finish("F:1", "a", spawns=[SpawnRequest("k", "Crawl", {"u": 2}, {"priority": 4})])  # type: ignore[list-item]
    await world.settle()
    assert world.job_of("F:1", "a:k")["payload"] == {"u": 2}
    assert world.job_of("F:1", "a:k")["priority"] == 4
