"""simulate_flow (flows.md §20; seed page "Testing"; T-1..T-6; ADR-0072)."""

from __future__ import annotations

from typing import Any

import pytest

from tsumugi.core.flow.model import Flow
from tsumugi.errors import InvalidFlowError
from tsumugi.flows import create_flow
from tsumugi.testing import SimulatedNode, simulate_flow

flow = create_flow({})


def greetings(key: Any = None, collect: bool = False) -> Flow:
    def build(f: Any) -> None:
        lst = f.node("list", "ListNames", input=lambda i: {"prefix": i["prefix"]})
        each = f.fan_out(
            "greet",
            "Greet",
            after={"list": lst},
            over=lambda _i, d: d["list"]["names"],
            input=lambda name: {"name": name},
            key=key,
            collect=collect,
        )
        f.node(
            "report",
            "Report",
            after={"each": each},
            input=lambda _i, d: {"total": d["each"]["total"], "failed": d["each"]["failed"]},
        )

    return flow(build)


def test_canonical_example_order_and_payloads() -> None:
    # F-95, seed: ids, payloads, COMPLETED
    r = simulate_flow(greetings(), {"prefix": "hello"}, results={"list": {"names": ["a", "b"]}})
    assert [n.id for n in r.nodes] == ["list", "greet:0", "greet:1", "greet", "report"]
    assert r.nodes[0] == SimulatedNode(
        "list", "ListNames", {"prefix": "hello"}, "COMPLETED", {"names": ["a", "b"]}, None
    )
    assert r.nodes[1] == SimulatedNode("greet:0", "Greet", {"name": "a"}, "COMPLETED", None, "greet")
    assert r.nodes[3] == SimulatedNode(
        "greet", "Greet", None, "COMPLETED", {"total": 2, "succeeded": 2, "failed": 0}, None
    )
    assert r.nodes[4].payload == {"total": 2, "failed": 0}
    assert r.state == "COMPLETED"


def test_zero_items() -> None:
    # F-50, F-95
    r = simulate_flow(greetings(), {"prefix": "x"}, results={"list": {"names": []}})
    assert [n.id for n in r.nodes] == ["list", "greet", "report"]
    assert r.nodes[2].payload == {"total": 0, "failed": 0}


def test_failed_root_skips_dependents_and_fails_run() -> None:
    # F-95, F-59
    r = simulate_flow(greetings(), {"prefix": "x"}, fails=["list"])
    assert [(n.id, n.state) for n in r.nodes] == [
        ("list", "FAILED"),
        ("greet", "SKIPPED"),
        ("report", "SKIPPED"),
    ]
    assert r.nodes[1].payload is None and r.nodes[1].result is None
    assert r.state == "FAILED"


def test_failed_fan_out_child_is_counted_not_fatal() -> None:
    # F-53, F-95
    r = simulate_flow(
        greetings(), {"prefix": "x"}, results={"list": {"names": ["a", "b"]}}, fails=["greet:1"]
    )
    assert r.nodes[-1].payload == {"total": 2, "failed": 1}
    assert r.state == "COMPLETED"


def test_keys_and_duplicate_keys_collapse_like_production() -> None:
    # F-4, F-51 (ADR-0070: the simulation collapses duplicates as the coordinator does)
    r = simulate_flow(
        greetings(key=lambda name: name),
        {"prefix": "x"},
        results={"list": {"names": ["alice", "bob", "alice"]}},
    )
    assert [n.id for n in r.nodes][1:3] == ["greet:alice", "greet:bob"]
    assert r.nodes[-1].payload == {"total": 2, "failed": 0}


def test_invalid_key_raises() -> None:
    # F-94: InvalidFlowError propagates
    with pytest.raises(InvalidFlowError):
        simulate_flow(greetings(key=lambda n: "a b"), {"prefix": "x"}, results={"list": {"names": ["q"]}})


def test_results_function_and_missing_results() -> None:
    # F-94
    seen: list[dict[str, Any]] = []

    def results(node: dict[str, Any]) -> Any:
        seen.append(node)
        return {"names": ["z"]} if node["id"] == "list" else None

    r = simulate_flow(greetings(), {"prefix": "p"}, results=results)
    assert seen[0] == {"id": "list", "binding": "ListNames", "payload": {"prefix": "p"}}
    assert r.nodes[1].result is None


def test_subflow_nodes_act_as_plain_nodes() -> None:
    # F-94
    child = flow(lambda f: f.node("x", "X", input=lambda: {}))

    def build(f: Any) -> None:
        a = f.node("a", "A", input=lambda i: i)
        f.subflow("s", child, after={"a": a}, input=lambda _i, d: {"ids": d["a"]})

    r = simulate_flow(flow(build), 1, results={"a": [1, 2]})
    assert r.nodes[1] == SimulatedNode("s", "", {"ids": [1, 2]}, "COMPLETED", None, None)


def backup() -> Flow:
    def build(f: Any) -> None:
        dump = f.node("dump", "DUMP", input=lambda i: {"target": i["target"]})
        f.node("alert", "ALERT", after={"dump": dump}, trigger="failure", input=lambda i: {"t": i["target"]})
        f.node(
            "unlock",
            "UNLOCK",
            after={"dump": dump},
            trigger="always",
            input=lambda _i, d: {"size": (d["dump"] or {}).get("size", 0)},
        )
        f.node("verify", "VERIFY", after={"dump": dump}, input=lambda _i, d: d["dump"])

    return flow(build)


def test_trigger_failure_and_always_on_failure() -> None:
    # T-1, T-3, T-5, T-6
    r = simulate_flow(backup(), {"target": "db"}, fails=["dump"])
    by_id = {n.id: n for n in r.nodes}
    assert by_id["alert"].state == "COMPLETED"
    assert by_id["unlock"].payload == {"size": 0}  # failed dependency contributes None
    assert by_id["verify"].state == "SKIPPED"
    assert by_id["verify"].error == "trigger not met: dependency failed: dump"
    assert r.state == "FAILED"  # a successful failure handler does not rescue the run


def test_trigger_failure_skipped_on_success() -> None:
    # T-1, T-2, T-5
    r = simulate_flow(backup(), {"target": "db"}, results={"dump": {"size": 3}})
    by_id = {n.id: n for n in r.nodes}
    assert by_id["alert"].state == "SKIPPED"
    assert by_id["alert"].error == "trigger not met: no dependency failed"
    assert by_id["unlock"].payload == {"size": 3}
    assert r.state == "COMPLETED"


def test_when_false_skips_and_cascades_exception_fails() -> None:
    # T-4, T-5, T-6
    def build(f: Any) -> None:
        a = f.node("a", "A", input=lambda: {})
        b = f.node("b", "B", after={"a": a}, when=lambda i, d: i["verbose"], input=lambda: {})
        f.node("c", "C", after={"b": b}, input=lambda: {})
        f.node("d", "D", after={"a": a}, when=lambda i, d: 1 / 0, input=lambda: {})

    r = simulate_flow(flow(build), {"verbose": False})
    states = {n.id: (n.state, n.error) for n in r.nodes}
    assert states["b"] == ("SKIPPED", "when condition was false")
    assert states["c"] == ("SKIPPED", "trigger not met: dependency did not run: b")
    assert states["d"] == ("FAILED", "division by zero")
    assert r.state == "FAILED"
    ok = simulate_flow(flow(lambda f: f.node("a", "A", input=lambda: 1, when=lambda: False)), None)
    assert ok.state == "COMPLETED"  # T-5: a when-skip is not a failure


def test_collect_passes_child_results_downstream() -> None:
    # ADR-0072
    r = simulate_flow(
        greetings(key=lambda n: n, collect=True),
        {"prefix": "x"},
        results=lambda node: {"names": ["a", "b"]} if node["id"] == "list" else node["payload"],
        fails=["greet:b"],
    )
    report_flow_deps = r.nodes[-1]
    assert report_flow_deps.payload == {"total": 2, "failed": 1}
    assert r.nodes[-2].result == {"total": 2, "succeeded": 1, "failed": 1}  # stored summary unchanged

    def build(f: Any) -> None:
        each = f.fan_out("g", "G", over=lambda: [1, 2], input=lambda n: n, collect=True)
        f.node("sum", "S", after={"each": each}, input=lambda _i, d: d["each"])

    out = simulate_flow(flow(build), None, results={"g:0": 10, "g:1": 20})
    assert out.nodes[-1].payload == {"total": 2, "succeeded": 2, "failed": 0, "results": {"0": 10, "1": 20}}


def test_fewer_declared_parameters_are_accepted() -> None:
    # §1 port decision: mapping functions may declare fewer parameters
    r = simulate_flow(flow(lambda f: f.node("a", "A", input=lambda: {"k": 1})), {"x": 1})
    assert r.nodes[0].payload == {"k": 1}
