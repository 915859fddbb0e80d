"""Conformance with the seed page "Flow" (seeds/002_*.txt), through the public API only.

Each test quotes the seed statement it proves and cites the matching rule id of flows.md.
"""

from __future__ import annotations

from typing import Any

import pytest

from tsumugi import (
    ConfigurationError,
    Flow,
    InvalidFlowError,
    Performer,
    RunSettings,
    TsumugiError,
    create_flow,
    define_tsumugi,
)
from tsumugi.flows import FlowBuilder
from tsumugi.testing import simulate_flow

from .conftest import PERFORMERS, MakeLocal, nodes_by_id, path_id

flow = create_flow(PERFORMERS)
MINUTE_MS = 60_000


# ------------------------------------------------------------------------------- the seed's GREETINGS flow
@flow
def GREETINGS(f: FlowBuilder) -> None:
    # seed "const flow = createFlow(performers); ... GREETINGS: flow<{ prefix: string }>((f) => {...})"
    listed = f.node(
        "list", "MAIL", input=lambda i, d: {"prefix": i["prefix"], "result": {"names": i["names"]}}
    )
    each = f.fan_out(
        "greet",
        "MAIL",
        after={"list": listed},
        over=lambda _i, d: d["list"]["names"],
        input=lambda name: {"name": name, **({"fail": "bad"} if name == "bad" else {})},
    )
    f.node(
        "report",
        "AUDIT",
        after={"each": each},
        input=lambda _i, d: {"total": d["each"]["total"], "failed": d["each"]["failed"]},
    )


def test_simulate_flow_matches_the_seed_example() -> None:
    # seed "expect(result.nodes.map((node) => node.id)).toEqual(['list', 'greet:0', 'greet:1', 'greet',
    # 'report']); expect(result.nodes[1].payload).toEqual({ name: 'a' });" (F-94, F-95)
    result = simulate_flow(
        GREETINGS, {"prefix": "hello", "names": []}, results={"list": {"names": ["a", "b"]}}
    )
    assert [node.id for node in result.nodes] == ["list", "greet:0", "greet:1", "greet", "report"]
    assert result.nodes[1].payload == {"name": "a"}
    assert result.nodes[-1].payload == {"total": 2, "failed": 0}
    assert result.state == "COMPLETED"


def test_simulate_flow_fails_and_unset_results() -> None:
    # seed "The return value of a node you do not pass is undefined. A node you pass in fails fails, and
    # downstream nodes transition to SKIPPED. The Run transitions to FAILED." (F-94)
    result = simulate_flow(GREETINGS, {"prefix": "p", "names": []}, fails=["list"])
    states = {node.id: node.state for node in result.nodes}
    assert states == {"list": "FAILED", "greet": "SKIPPED", "report": "SKIPPED"}
    assert result.state == "FAILED"

    @flow
    def pair(f: FlowBuilder) -> None:
        first = f.node("first", "MAIL", input=lambda i, d: {})
        f.node("second", "MAIL", after={"first": first}, input=lambda i, d: {"seen": d["first"]})

    assert simulate_flow(pair, {}).nodes[1].payload == {"seen": None}


def test_simulate_flow_accepts_a_function_as_a_node_result() -> None:
    # seed "Pass the return value of each node in results, keyed by node ID. A value can be either the return
    # value itself or a function that produces it." (F-94)
    result = simulate_flow(
        GREETINGS, {"prefix": "p", "names": []}, results={"list": lambda *args: {"names": ["x", "y", "z"]}}
    )
    assert [node.id for node in result.nodes][:4] == ["list", "greet:0", "greet:1", "greet:2"]


def test_fan_out_children_are_indexed_and_summarised() -> None:
    # seed "The ID of a child node is the element's index. For example, greet:0 and greet:1." and
    # "{ total: 3, succeeded: 2, failed: 1 }" and "If a child node fails, the fan-out node itself does not
    # fail." (F-15, F-49)
    result = simulate_flow(
        GREETINGS,
        {"prefix": "p", "names": []},
        results={"list": {"names": ["a", "b", "c"]}},
        fails=["greet:2"],
    )
    nodes = {node.id: node for node in result.nodes}
    assert nodes["greet"].state == "COMPLETED"
    assert nodes["greet"].result == {"total": 3, "succeeded": 2, "failed": 1}
    assert nodes["report"].payload == {"total": 3, "failed": 1}


def test_fan_out_key_replaces_the_index_and_uses_node_id_characters() -> None:
    # seed "If you pass key, the value returned by key is used instead of the index. The allowed characters
    # are the same as for node IDs." (F-15, F-49)
    @flow
    def keyed(f: FlowBuilder) -> None:
        f.fan_out(
            "greet", "MAIL", over=lambda i, d: i, input=lambda name: {"name": name}, key=lambda name: name
        )

    ids = [node.id for node in simulate_flow(keyed, ["alice", "bob"]).nodes]
    assert ids == ["greet:alice", "greet:bob", "greet"]
    with pytest.raises(InvalidFlowError):
        simulate_flow(keyed, ["not ok!"])


# ------------------------------------------------------------------------------------------------ Definition
@pytest.mark.parametrize("node_id", ["has space", "colon:no", "dot.no", "", "日本"])
def test_node_ids_are_alphanumeric_hyphen_underscore(node_id: str) -> None:
    # seed "A node ID consists of alphanumeric characters, hyphens, and underscores." (F-3, F-12)
    with pytest.raises(InvalidFlowError, match="invalid node id"):
        flow(lambda f: f.node(node_id, "MAIL", input=lambda i, d: {}))


def test_valid_node_ids_and_the_after_names_become_deps_keys() -> None:
    # seed "Its second argument is an object whose property names are the keys of the object passed to after."
    # (F-13)
    @flow
    def named(f: FlowBuilder) -> None:
        source = f.node("Source-1_a", "MAIL", input=lambda i, d: {})
        f.node("sink", "MAIL", after={"upstream": source}, input=lambda i, d: {"keys": sorted(d)})

    assert simulate_flow(named, {}).nodes[1].payload == {"keys": ["upstream"]}


def test_node_accepts_the_job_options() -> None:
    # seed "you can optionally specify the same options as when enqueuing a job (such as maxAttempts, backoff,
    # timeoutMs, priority, and concurrencyKey)." (F-14)
    @flow
    def tuned(f: FlowBuilder) -> None:
        f.node(
            "tuned",
            "MAIL",
            input=lambda i, d: {},
            max_attempts=5,
            backoff={"kind": "fixed", "delay_ms": 1_000},
            timeout_ms=10_000,
            priority=3,
            concurrency_key="k",
        )

    assert isinstance(tuned, Flow)


def test_a_binding_that_is_not_a_performer_is_rejected() -> None:
    # seed "The binding name must match the exported name." (F-12; J-60)
    bad = flow(lambda f: f.node("x", "NotAPerformer", input=lambda i, d: {}))
    with pytest.raises(TsumugiError):
        define_tsumugi(performers=PERFORMERS, flows={"BAD": bad})


def test_a_performer_requiring_unique_key_cannot_be_a_node() -> None:
    # seed "uniqueKey cannot be used with nodes. Specifying a performer that requires uniqueKey as a node
    # causes a type error." (F-14)
    class Unique(Performer):
        requires = frozenset({"unique_key"})

        async def perform(self, payload: Any, ctx: Any) -> None:
            return None

    with pytest.raises(InvalidFlowError):
        create_flow({"UNIQUE": Unique})(lambda f: f.node("u", "UNIQUE", input=lambda i, d: {}))


def test_trigger_without_after_is_an_error() -> None:
    # seed "Specifying trigger on a node without after causes an error." (T-1)
    with pytest.raises(InvalidFlowError):
        flow(lambda f: f.node("alone", "MAIL", trigger="always", input=lambda i, d: {}))


@pytest.mark.parametrize("deadline_ms", [0, -1, 1.5, "600000", True])
def test_deadline_ms_is_a_positive_integer(deadline_ms: Any) -> None:
    # seed "Specify deadlineMs as a positive integer (milliseconds)." (F-11)
    with pytest.raises(InvalidFlowError):
        flow(lambda f: f.node("n", "MAIL", input=lambda i, d: {}), deadline_ms=deadline_ms)
    assert (
        flow(lambda f: f.node("n", "MAIL", input=lambda i, d: {}), deadline_ms=10 * MINUTE_MS).deadline_ms
        == 600_000
    )


def test_run_settings_defaults() -> None:
    # seed "runs.sweepAfterMs (default 5 minutes)", "runs.failedRetentionMs (default 7 days)", "10,000 by
    # default", "3 levels by default" (F-81)
    settings = RunSettings()
    assert (settings.sweep_after_ms, settings.failed_retention_ms) == (5 * MINUTE_MS, 7 * 24 * 60 * MINUTE_MS)
    assert (settings.max_nodes, settings.max_depth) == (10_000, 3)


def test_flows_need_the_run_binding() -> None:
    # seed "If you specify flows, add the following two entries to your wrangler configuration." (F-93, J-205)
    app = define_tsumugi(performers=PERFORMERS, flows={"GREETINGS": GREETINGS})
    missing = app.missing_bindings({"JOB_SHARD": object(), "TSUMUGI_DB": object(), "TSUMUGI_QUEUE": object()})
    assert [entry["name"] for entry in missing] == ["RUN"]
    plain = define_tsumugi(performers=PERFORMERS)
    assert (
        plain.missing_bindings({"JOB_SHARD": object(), "TSUMUGI_DB": object(), "TSUMUGI_QUEUE": object()})
        == []
    )


# ---------------------------------------------------------------------------------------- trigger and when
@flow
def BACKUP(f: FlowBuilder) -> None:
    # seed "BACKUP: flow<{ target: string }>(...)" with an 'failure' alert and an 'always' unlock
    dump = f.node("dump", "MAIL", input=lambda i, d: {"target": i["target"], **i.get("dump", {})})
    f.node(
        "alert",
        "ALERT",
        after={"dump": dump},
        trigger="failure",
        input=lambda i, d: {"message": f"backup failed: {i['target']}"},
    )
    f.node(
        "unlock",
        "AUDIT",
        after={"dump": dump},
        trigger="always",
        input=lambda i, d: {"size": (d["dump"] or {}).get("size", 0)},
    )


def test_failure_and_always_triggers() -> None:
    # seed "'failure' At least one dependency is FAILED, STALLED, or CANCELLED" / "'always' All dependencies
    # have finished" / "With 'failure' and 'always', a failed node has no return value." / "Even if a trigger:
    # 'failure' node succeeds, the Run ends as FAILED if an upstream node failed." (T-1, T-3, T-5)
    ok = simulate_flow(BACKUP, {"target": "db"}, results={"dump": {"size": 7}})
    assert {n.id: n.state for n in ok.nodes} == {
        "dump": "COMPLETED",
        "alert": "SKIPPED",
        "unlock": "COMPLETED",
    }
    assert ok.nodes[-1].payload == {"size": 7} and ok.state == "COMPLETED"
    failed = simulate_flow(BACKUP, {"target": "db"}, fails=["dump"])
    states = {n.id: n.state for n in failed.nodes}
    assert states == {"dump": "FAILED", "alert": "COMPLETED", "unlock": "COMPLETED"}
    payloads = {n.id: n.payload for n in failed.nodes}
    assert payloads["alert"] == {"message": "backup failed: db"} and payloads["unlock"] == {"size": 0}
    assert failed.state == "FAILED"


def test_when_false_skips_the_node_and_its_dependents_and_a_skip_is_no_failure() -> None:
    # seed "If when returns false, the node transitions to SKIPPED, and downstream nodes that depend on it do
    # not run either." "If all the nodes it depends on are SKIPPED, a 'failure' node does not run." "Nodes
    # that did not run because of a trigger or when condition do not count as failures." "The reason a node
    # became SKIPPED is recorded in the node's error" (T-2, T-4, T-5, T-6)
    @flow
    def gated(f: FlowBuilder) -> None:
        listed = f.node("list", "MAIL", input=lambda i, d: {})
        detail = f.node(
            "detail",
            "MAIL",
            after={"list": listed},
            when=lambda i, d: i["verbose"] and len(d["list"]["items"]) > 0,
            input=lambda _i, d: {"items": d["list"]["items"]},
        )
        f.node("after_detail", "MAIL", after={"detail": detail}, input=lambda i, d: {})
        f.node("on_failure", "ALERT", after={"detail": detail}, trigger="failure", input=lambda i, d: {})

    result = simulate_flow(gated, {"verbose": False}, results={"list": {"items": [1]}})
    nodes = {n.id: n for n in result.nodes}
    assert {i: n.state for i, n in nodes.items()} == {
        "list": "COMPLETED",
        "detail": "SKIPPED",
        "after_detail": "SKIPPED",
        "on_failure": "SKIPPED",
    }
    assert nodes["detail"].error and nodes["after_detail"].error
    assert result.state == "COMPLETED"


def test_an_exception_in_when_fails_the_node() -> None:
    # seed "If an exception occurs inside when, the node transitions to FAILED." (T-4)
    @flow
    def broken(f: FlowBuilder) -> None:
        f.node("n", "MAIL", when=lambda i, d: i["missing"], input=lambda i, d: {})

    result = simulate_flow(broken, {})
    assert [(n.id, n.state) for n in result.nodes] == [("n", "FAILED")] and result.state == "FAILED"


def test_nodes_independent_of_a_failure_run_to_the_end() -> None:
    # seed "When a node fails, downstream nodes that depend on it with 'success' transition to SKIPPED ...
    # Nodes that do not depend on the failed node run to the end. When all nodes have finished, the Run
    # transitions to FAILED." (F-60)
    @flow
    def two_lanes(f: FlowBuilder) -> None:
        a = f.node("a", "MAIL", input=lambda i, d: {})
        f.node("a2", "MAIL", after={"a": a}, input=lambda i, d: {})
        b = f.node("b", "MAIL", input=lambda i, d: {})
        f.node("b2", "MAIL", after={"b": b}, input=lambda i, d: {})

    result = simulate_flow(two_lanes, {}, fails=["a"])
    assert {n.id: n.state for n in result.nodes} == {
        "a": "FAILED",
        "a2": "SKIPPED",
        "b": "COMPLETED",
        "b2": "COMPLETED",
    }
    assert result.state == "FAILED"


# --------------------------------------------------------------------------------- runs on the local runtime
async def test_a_run_of_the_greetings_flow_end_to_end(local: MakeLocal) -> None:
    # seed "const runId = await tsumugi.start(env, 'GREETINGS', { prefix: 'hello' });" with a failing child:
    # "If a child node fails, the fan-out node itself does not fail. ... check the failed value" (F-19, F-49)
    app = await local(flows={"GREETINGS": GREETINGS})
    run_id = await app.app.start(app.env, "GREETINGS", {"prefix": "hello", "names": ["a", "bad", "c"]})
    assert run_id.startswith("GREETINGS:")
    async with app.rest() as client:
        detail = await app.run_detail(client, run_id, "COMPLETED")
    nodes = nodes_by_id(detail)
    assert {n: nodes[n]["state"] for n in ("greet:0", "greet:1", "greet:2", "greet")} == {
        "greet:0": "COMPLETED",
        "greet:1": "FAILED",
        "greet:2": "COMPLETED",
        "greet": "COMPLETED",
    }
    [report] = app.record.of("AUDIT")
    assert report.payload == {"total": 3, "failed": 1}


async def test_start_with_an_id_is_idempotent(local: MakeLocal) -> None:
    # seed "If you pass { id } as the fourth argument of start, the runId is fixed to <flow>:<id>. If you
    # start a Flow a second time with the same ID, no new Run is created and the existing runId is returned."
    # (F-20, F-21)
    app = await local(flows={"GREETINGS": GREETINGS})
    first = await app.app.start(app.env, "GREETINGS", {"prefix": "p", "names": []}, id="order-1")
    second = await app.app.start(app.env, "GREETINGS", {"prefix": "other", "names": ["x"]}, id="order-1")
    assert first == second == "GREETINGS:order-1"
    await app.run_settled(first, "COMPLETED")
    assert [s.payload["prefix"] for s in app.record.of("MAIL")] == ["p"]


@flow
def SPAWNING(f: FlowBuilder) -> None:
    crawl = f.node(
        "crawl",
        "MAIL",
        input=lambda i, d: i["crawl"],
        max_attempts=2,
        backoff={"kind": "fixed", "delay_ms": 1_000},
    )
    f.node("done", "AUDIT", after={"crawl": crawl}, input=lambda i, d: {})


async def test_spawned_children_are_named_deduplicated_and_awaited(local: MakeLocal) -> None:
    # seed "The ID of a child node is composed as <parent node ID>:<specified ID>" "Calling spawn multiple
    # times with the same ID does not create duplicate child nodes." "Downstream nodes ... run after ... the
    # descendant nodes added by spawn have finished." (F-55, F-56, F-58)
    app = await local(flows={"SPAWNING": SPAWNING})
    children = [
        ["p1", "MAIL", {"gate": "kids", "n": 1}],
        ["p1", "MAIL", {"n": "dup"}],
        ["p2", "MAIL", {"gate": "kids", "n": 2}],
    ]
    run_id = await app.app.start(app.env, "SPAWNING", {"crawl": {"spawn": children}})
    await app.until(lambda: len(app.record.of("MAIL")) == 3, "the crawl and its two children")
    assert app.record.of("AUDIT") == []  # "done" waits for the spawned descendants
    app.open("kids")
    async with app.rest() as client:
        detail = await app.run_detail(client, run_id, "COMPLETED")
    nodes = nodes_by_id(detail)
    spawned = sorted(i for i, n in nodes.items() if n["origin"] == "spawn")
    assert spawned == ["crawl:p1", "crawl:p2"]
    assert nodes["crawl:p1"]["parent"] == "crawl"
    assert len(app.record.of("AUDIT")) == 1


async def test_children_spawned_by_a_failed_attempt_are_not_created(local: MakeLocal) -> None:
    # seed "Child nodes added during an attempt in which perform failed are not created. Add them again in the
    # perform of the retry." (F-55, F-56)
    app = await local(flows={"SPAWNING": SPAWNING})
    crawl = {"spawn": [["only-first", "MAIL", {"n": 1}]], "fail_attempt": 1}
    run_id = await app.app.start(app.env, "SPAWNING", {"crawl": crawl})
    await app.until(lambda: len(app.record.of("MAIL")) == 1, "the failing first attempt")
    await app.waiting_for_retry(app.record.of("MAIL")[0].job_id)
    await app.advance(1_000)
    async with app.rest() as client:
        detail = await app.run_detail(client, run_id, "COMPLETED")
    spawned = [n["id"] for n in detail["nodes"] if n["origin"] == "spawn"]
    assert spawned == ["crawl:only-first"]  # created once, by the successful retry
    assert [s.payload for s in app.record.of("MAIL")][1:] == [crawl, {"n": 1}]


REPORTING = flow(lambda f: f.node("r", "AUDIT", input=lambda i, d: {"ids": i["ids"]}))


@flow
def PIPELINE(f: FlowBuilder) -> None:
    # seed "const PIPELINE = flow<{ prefix: string }>((f) => { ... f.subflow('report', REPORTING, ...) ...})"
    listed = f.node("list", "MAIL", input=lambda i, d: {"result": {"ids": [1, 2]}})
    reported = f.subflow(
        "report", REPORTING, after={"list": listed}, input=lambda _i, d: {"ids": d["list"]["ids"]}
    )
    f.node("notify", "ALERT", after={"reported": reported}, input=lambda i, d: {"got": d["reported"]})


async def test_subflow_child_run_id_and_state(local: MakeLocal) -> None:
    # seed "The runId of the child Run is <child Flow name>:<local part of the parent runId>-<node ID>." "The
    # parent node does not receive a return value from the child Run." (F-16, F-61)
    app = await local(flows={"PIPELINE": PIPELINE, "REPORTING": REPORTING})
    run_id = await app.app.start(app.env, "PIPELINE", {"prefix": "p"}, id="p1")
    async with app.rest() as client:
        detail = await app.run_detail(client, run_id, "COMPLETED")
    node = nodes_by_id(detail)["report"]
    assert node["child_run_id"] == "REPORTING:p1-report" and node["state"] == "COMPLETED"
    assert await app.run_state("REPORTING:p1-report") == "COMPLETED"
    assert [s.payload for s in app.record.of("AUDIT")] == [{"ids": [1, 2]}]
    assert [s.payload for s in app.record.of("ALERT")] == [{"got": None}]


async def test_a_subflow_target_must_be_registered(local: MakeLocal) -> None:
    # seed "Register the Flow to be started in flows. If it is not registered, an error occurs at start time."
    # The port (F-17, J-204) raises already in define_tsumugi, before any run can start; either way the
    # unregistered child flow is never started.
    with pytest.raises(TsumugiError, match="not registered"):
        app = await local(flows={"PIPELINE": PIPELINE})
        await app.app.start(app.env, "PIPELINE", {})


@flow
def HOLD(f: FlowBuilder) -> None:
    held = f.node("held", "MAIL", input=lambda i, d: {"watch": "w", "n": "held"}, timeout_ms=10 * MINUTE_MS)
    f.node("later", "MAIL", after={"held": held}, input=lambda i, d: {"n": "later"})


async def test_cancelling_a_run_requests_cancel_of_running_nodes(local: MakeLocal) -> None:
    # seed "When you cancel a Run, nodes that have not yet run are not started. A cancellation request is sent
    # to running nodes. ... The Run transitions to CANCELLED when the performer checks the request and
    # finishes" (F-69, T-7)
    app = await local(flows={"HOLD": HOLD})
    run_id = await app.app.start(app.env, "HOLD", {})
    await app.until(lambda: len(app.record.of("MAIL")) == 1, "the held node to run")
    async with app.rest() as client:
        answer = await client.post(f"/api/runs/{path_id(run_id)}/cancel")
        assert answer.status_code == 200

        async def cancelled() -> bool:
            return await app.run_state(run_id) == "CANCELLED"

        # steps past the heartbeat throttle, so the performer's next heartbeat reaches the shard
        elapsed = await app.advance_until(cancelled, "the run's cancellation", 5_000, 25_000)
        detail = await app.run_detail(client, run_id, "CANCELLED")
    assert elapsed < 30_000  # the performer stopped on the request, well before reaperGraceMs
    assert app.record.cancel_seen and [s.payload["n"] for s in app.record.of("MAIL")] == ["held"]
    assert nodes_by_id(detail)["later"]["state"] in ("CANCELLED", "SKIPPED")


@flow
def PARENT(f: FlowBuilder) -> None:
    f.subflow("child", HOLD, input=lambda i, d: {})


async def test_cancelling_the_parent_run_cancels_the_child_run(local: MakeLocal) -> None:
    # seed "Cancelling the parent Run also cancels the child Run." (F-64)
    app = await local(flows={"PARENT": PARENT, "HOLD": HOLD})
    run_id = await app.app.start(app.env, "PARENT", {}, id="x")
    await app.until(lambda: len(app.record.of("MAIL")) == 1, "the child's node to run")
    assert (await app.app.run_for(app.env, run_id).cancel())["ok"] is True

    async def child_cancelled() -> bool:
        return await app.run_state("HOLD:x-child") == "CANCELLED"

    await app.advance_until(child_cancelled, "the child run's cancellation", 5_000, 25_000)
    await app.run_settled(run_id, "CANCELLED")


async def test_a_failed_run_resumes_reusing_succeeded_results(local: MakeLocal) -> None:
    # seed "Resume a FAILED Run from the dashboard or the REST API. The results of nodes that succeeded are
    # reused as they are, and all other nodes are treated as not yet run and are executed again." (F-77, F-78)
    @flow
    def chain(f: FlowBuilder) -> None:
        first = f.node("first", "MAIL", input=lambda i, d: {"n": "first", "result": 1})
        second = f.node(
            "second",
            "MAIL",
            after={"first": first},
            input=lambda i, d: {"n": "second", "fail_once": "second"},
            max_attempts=1,
        )
        f.node("third", "MAIL", after={"second": second}, input=lambda i, d: {"n": "third"})

    app = await local(flows={"CHAIN": chain})
    run_id = await app.app.start(app.env, "CHAIN", {})
    await app.run_settled(run_id, "FAILED")
    async with app.rest() as client:
        answer = await client.post(f"/api/runs/{path_id(run_id)}/retry")
        assert answer.status_code == 200
        await app.run_detail(client, run_id, "COMPLETED")
    assert [s.payload["n"] for s in app.record.of("MAIL")] == ["first", "second", "second", "third"]


@flow(deadline_ms=10 * MINUTE_MS)
def SLOW(f: FlowBuilder) -> None:
    # seed "const GREETINGS = flow<...>((f) => {...}, { deadlineMs: 10 * 60 * 1000 });"
    first = f.node(
        "first", "MAIL", input=lambda i, d: {"gate": "slow", "n": "first"}, timeout_ms=60 * MINUTE_MS
    )
    f.node("second", "MAIL", after={"first": first}, input=lambda i, d: {"n": "second"})


async def test_a_run_past_its_deadline_fails_and_resumes_with_a_fresh_deadline(local: MakeLocal) -> None:
    # seed "Nodes that have not yet run transition to FAILED with the error run deadline exceeded. Running
    # jobs are not stopped, and the Run transitions to FAILED when those jobs finish." "A Run that does not
    # finish by its deadline transitions to FAILED even if all remaining nodes succeed. Such a Run can be
    # resumed ... the deadline is measured anew from the time of resumption." (F-72, F-74, F-75)
    app = await local(flows={"SLOW": SLOW})
    run_id = await app.app.start(app.env, "SLOW", {})
    await app.until(lambda: len(app.record.of("MAIL")) == 1, "the first node to run")
    await app.advance(10 * MINUTE_MS)
    # "Running jobs are not stopped, and the Run transitions to FAILED when those jobs finish."
    assert app.record.running["MAIL/None"] == 1
    assert await app.run_state(run_id) == "RUNNING"
    app.open("slow")
    await app.run_settled(run_id, "FAILED")
    async with app.rest() as client:
        detail = await app.run_detail(client, run_id, "FAILED")
        second = nodes_by_id(detail)["second"]
        assert second["state"] == "FAILED" and second["error"].startswith("run deadline exceeded")
        assert [s.payload["n"] for s in app.record.of("MAIL")] == ["first"]
        assert (await client.post(f"/api/runs/{path_id(run_id)}/retry")).status_code == 200
        await app.run_detail(client, run_id, "COMPLETED")
    assert [s.payload["n"] for s in app.record.of("MAIL")][-1] == "second"


async def test_the_start_deadline_takes_precedence(local: MakeLocal) -> None:
    # seed "If you pass { deadlineMs } in the fourth argument of start, that value takes precedence."
    # (F-20, F-72)
    app = await local(flows={"SLOW": SLOW})
    run_id = await app.app.start(app.env, "SLOW", {}, deadline_ms=MINUTE_MS)
    await app.until(lambda: len(app.record.of("MAIL")) == 1, "the first node to run")
    await app.advance(MINUTE_MS)
    app.open("slow")
    await app.run_settled(run_id, "FAILED")


async def test_a_result_over_8192_characters_fails_the_attempt_and_is_retried(local: MakeLocal) -> None:
    # seed "If the return value of a node exceeds 8,192 characters or cannot be serialized, the attempt is
    # treated as a failure. After a failure, retries are made up to maxAttempts." (F-46)
    @flow
    def big(f: FlowBuilder) -> None:
        f.node(
            "big",
            "MAIL",
            input=lambda i, d: {"big": 9_000},
            max_attempts=2,
            backoff={"kind": "fixed", "delay_ms": 1_000},
        )

    app = await local(flows={"BIG": big})
    run_id = await app.app.start(app.env, "BIG", {})
    await app.until(lambda: len(app.record.of("MAIL")) == 1, "the first attempt")
    await app.waiting_for_retry(app.record.of("MAIL")[0].job_id)
    await app.advance(1_000)
    await app.run_settled(run_id, "FAILED")
    assert [s.attempt for s in app.record.of("MAIL")] == [1, 2]


async def test_max_nodes_is_configurable(local: MakeLocal) -> None:
    # seed "Change these limits with runs.maxNodes and runs.maxDepth in defineTsumugi." (F-81, F-83)
    @flow
    def wide(f: FlowBuilder) -> None:
        f.fan_out("each", "MAIL", over=lambda i, d: list(range(10)), input=lambda n: {"n": n})

    app = await local(flows={"WIDE": wide}, runs={"max_nodes": 5})
    run_id = await app.app.start(app.env, "WIDE", {})
    async with app.rest() as client:
        detail = await app.run_detail(client, run_id, "FAILED")
    assert "node count exceeded the limit: 5" in (nodes_by_id(detail)["each"]["error"] or "")


@flow
def IGNORING(f: FlowBuilder) -> None:
    f.node("deaf", "MAIL", input=lambda i, d: {"gate": "deaf", "n": "deaf"}, timeout_ms=60 * MINUTE_MS)


async def test_a_cancelled_run_ends_after_grace_when_the_performer_ignores_the_request(
    local: MakeLocal,
) -> None:
    # seed "Running jobs are not stopped. The Run transitions to CANCELLED ... when no result has been
    # reported after reaperGraceMs (default 30 seconds) has passed since the request." (F-69, J-135)
    app = await local(flows={"IGNORING": IGNORING})
    run_id = await app.app.start(app.env, "IGNORING", {})
    await app.until(lambda: len(app.record.of("MAIL")) == 1, "the node to run")
    assert (await app.app.run_for(app.env, run_id).cancel())["ok"] is True

    async def cancelled() -> bool:
        return await app.run_state(run_id) == "CANCELLED"

    elapsed = await app.advance_until(cancelled, "the run's cancellation", 1_000, 40_000)
    assert elapsed >= 30_000  # not before reaperGraceMs after the request
    assert app.record.running["MAIL/None"] == 1  # the job was not stopped


@flow(deadline_ms=MINUTE_MS)
def DEADLINED_PARENT(f: FlowBuilder) -> None:
    f.subflow("child", IGNORING, input=lambda i, d: {})


async def test_a_run_past_its_deadline_cancels_its_running_child_runs(local: MakeLocal) -> None:
    # seed "A Run that passes its deadline is aborted by the same procedure as cancellation. ... Running child
    # Runs are cancelled." (F-64, F-74)
    app = await local(flows={"DEADLINED_PARENT": DEADLINED_PARENT, "IGNORING": IGNORING})
    run_id = await app.app.start(app.env, "DEADLINED_PARENT", {}, id="d")
    await app.until(lambda: len(app.record.of("MAIL")) == 1, "the child's node to run")
    await app.advance(MINUTE_MS)

    async def child_cancelled() -> bool:
        return await app.run_state("IGNORING:d-child") == "CANCELLED"

    # the child's running job ignores the request, so the child ends reaperGraceMs after it
    await app.advance_until(child_cancelled, "the child run's cancellation", 1_000, 40_000)
    await app.run_settled(run_id, "FAILED")


async def test_finished_runs_are_deleted_after_their_retention(local: MakeLocal) -> None:
    # seed "A finished Run is deleted after runs.sweepAfterMs (default 5 minutes) has elapsed. A FAILED Run is
    # deleted after runs.failedRetentionMs (default 7 days) has elapsed." (F-81, F-82)
    @flow
    def single(f: FlowBuilder) -> None:
        f.node("only", "MAIL", input=lambda i, d: i, max_attempts=1)

    app = await local(flows={"SINGLE": single})
    done = await app.app.start(app.env, "SINGLE", {"n": 1})
    failed = await app.app.start(app.env, "SINGLE", {"fail": "x"})
    await app.run_settled(done, "COMPLETED")
    await app.run_settled(failed, "FAILED")
    await app.advance(5 * MINUTE_MS)
    await app.advance(1_000)
    await app.run_settled(done, None)  # type: ignore[arg-type]
    assert await app.run_state(failed) == "FAILED"
    await app.advance(7 * 24 * 60 * MINUTE_MS)
    await app.advance(1_000)
    await app.run_settled(failed, None)  # type: ignore[arg-type]


async def test_a_failed_child_run_fails_the_subflow_node(local: MakeLocal) -> None:
    # seed "The state of the child Run is reflected as-is as the state of the node. The state is one of
    # COMPLETED, FAILED, or CANCELLED." (F-63)
    failing = flow(lambda f: f.node("boom", "MAIL", input=lambda i, d: {"fail": "child"}, max_attempts=1))

    @flow
    def parent(f: FlowBuilder) -> None:
        f.subflow("sub", failing, input=lambda i, d: {})

    app = await local(flows={"PARENT": parent, "FAILING": failing})
    run_id = await app.app.start(app.env, "PARENT", {}, id="f")
    async with app.rest() as client:
        detail = await app.run_detail(client, run_id, "FAILED")
    node = nodes_by_id(detail)["sub"]
    assert (node["state"], node["child_run_id"]) == ("FAILED", "FAILING:f-sub")


async def test_max_depth_is_configurable(local: MakeLocal) -> None:
    # seed "The nesting depth of subflows is 3 levels by default. Change these limits with runs.maxNodes and
    # runs.maxDepth in defineTsumugi." (F-81)
    app = await local(flows={"PIPELINE": PIPELINE, "REPORTING": REPORTING}, runs={"max_depth": 0})
    run_id = await app.app.start(app.env, "PIPELINE", {}, id="deep")
    async with app.rest() as client:
        detail = await app.run_detail(client, run_id, "FAILED")
    assert "subflow nesting exceeded the limit: 0" in (nodes_by_id(detail)["report"]["error"] or "")


def test_define_tsumugi_returns_the_run_class_to_export() -> None:
    # seed "Export TsumugiRun by extending the runClass included in the return value of defineTsumugi."
    # (F-93, J-203: run_class and scheduler_class are always present). Outside Workers the class can be
    # subclassed, so an entry module imports anywhere, and says why it cannot be created (ADR-0123).
    app = define_tsumugi(performers=PERFORMERS, flows={"GREETINGS": GREETINGS})

    class TsumugiRun(app.run_class):  # type: ignore[misc, name-defined]
        pass

    assert TsumugiRun.app is app  # type: ignore[attr-defined]
    assert isinstance(app.scheduler_class, type)
    with pytest.raises(ConfigurationError, match="runs only inside workerd"):
        TsumugiRun()


async def test_a_node_removed_by_a_deploy_fails_in_a_running_run(local: MakeLocal) -> None:
    # seed "A running Run continues with the node configuration it had when it started." "If you remove a node
    # from the definition, any running Run that contains that node fails at that node." (F-91, F-92)
    def before(f: FlowBuilder) -> None:
        first = f.node("first", "MAIL", input=lambda i, d: {"gate": "deploy", "n": "first"})
        f.node("removed", "MAIL", after={"first": first}, input=lambda i, d: {"n": "removed"})

    def after(f: FlowBuilder) -> None:
        f.node("first", "MAIL", input=lambda i, d: {"gate": "deploy", "n": "first"})

    old = await local(flows={"DEPLOYED": flow(before)}, state="deployed")
    run_id = await old.app.start(old.env, "DEPLOYED", {}, id="r")
    await old.until(lambda: len(old.record.of("MAIL")) == 1, "the first node to run")
    await old.runtime.stop(grace_s=0.1)  # the deploy: the old code stops while "first" runs
    new = await local(flows={"DEPLOYED": flow(after)}, state="deployed")
    new.open("deploy")
    await new.advance(90_000)  # the interrupted attempt is reaped and runs again under the new code
    async with new.rest() as client:
        detail = await new.run_detail(client, run_id, "FAILED")
    removed = nodes_by_id(detail)["removed"]
    assert (removed["state"], removed["error"]) == ("FAILED", "node definition is missing: removed")
    assert "removed" not in [s.payload["n"] for s in new.record.of("MAIL")]
