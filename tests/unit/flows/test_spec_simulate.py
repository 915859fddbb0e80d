"""``simulate_flow`` against the spec: failures, skips, triggers, when, fan-outs, subflows.

F-94, F-95, T-1..T-6.
Public API only: ``tsumugi.create_flow`` and ``tsumugi.testing.simulate_flow``.
"""

from __future__ import annotations

from typing import Any

import pytest

from tsumugi import InvalidFlowError, create_flow
from tsumugi.testing import SimulatedNode, SimulationResult, simulate_flow

flow = create_flow({})


def states(result: SimulationResult) -> dict[str, tuple[str, str | None]]:
    return {n.id: (n.state, n.error) for n in result.nodes}


def test_result_shape_and_defaults() -> None:
    # F-94: SimulationResult(nodes=[SimulatedNode(id, binding, payload, state, result, parent)], state)
    r = simulate_flow(flow(lambda f: f.node("a", "A", input=lambda i: {"x": i})), 7)
    assert isinstance(r, SimulationResult)
    assert r.nodes == [SimulatedNode("a", "A", {"x": 7}, "COMPLETED", None, None)]
    assert r.state == "COMPLETED"


def test_failing_node_skips_each_downstream_with_a_reason() -> None:
    # F-59, F-94, T-6: the failure cascades as SKIPPED; independent branches run to the end
    def build(f: Any) -> None:
        a = f.node("a", "A", input=lambda: 1)
        b = f.node("b", "B", after={"a": a}, input=lambda: 2)
        f.node("c", "C", after={"b": b}, input=lambda: 3)
        f.node("other", "O", input=lambda: 4)

    r = simulate_flow(flow(build), None, fails=["a"])
    assert [n.id for n in r.nodes] == ["a", "other", "b", "c"]
    assert states(r) == {
        "a": ("FAILED", None),
        "other": ("COMPLETED", None),
        "b": ("SKIPPED", "trigger not met: dependency failed: a"),
        "c": ("SKIPPED", "trigger not met: dependency did not run: b"),
    }
    failed = r.nodes[0]
    assert failed.payload == 1 and failed.result is None  # F-94: payload built, result None
    skipped = r.nodes[2]
    assert (skipped.binding, skipped.payload, skipped.result, skipped.parent) == ("B", None, None, None)
    assert r.state == "FAILED"


def test_fails_wins_over_results_and_unknown_ids_are_ignored() -> None:
    # F-94: a listed node is FAILED with result None even when results has a value
    r = simulate_flow(
        flow(lambda f: f.node("a", "A", input=lambda: 1)), None, results={"a": 5}, fails=["a", "nope"]
    )
    assert [(n.id, n.state, n.result) for n in r.nodes] == [("a", "FAILED", None)]


def test_results_values_are_literal_and_missing_ones_are_none() -> None:
    # F-94, F-42: values taken literally, a node without a value returns None
    marker = object()

    def build(f: Any) -> None:
        a = f.node("a", "A", input=lambda: 1)
        f.node("b", "B", after={"a": a}, input=lambda _i, d: {"got": d["a"]})
        f.node("c", "C", input=lambda: 3)

    r = simulate_flow(flow(build), None, results={"a": marker})
    assert r.nodes[0].result is marker
    by_id = {n.id: n for n in r.nodes}
    assert by_id["b"].payload == {"got": marker}
    assert by_id["c"].result is None


def test_results_function_sees_fan_out_children_with_frozen_payloads() -> None:
    # F-94: results(node) gets {id, binding, payload}; children use their expansion payloads
    seen: list[dict[str, Any]] = []

    def results(node: dict[str, Any]) -> Any:
        seen.append(node)
        return len(seen)

    def build(f: Any) -> None:
        f.fan_out("g", "Greet", over=lambda: ["x", "y"], input=lambda item, _i, n: {"item": item, "n": n})

    r = simulate_flow(flow(build), None, results=results)
    assert seen == [
        {"id": "g:0", "binding": "Greet", "payload": {"item": "x", "n": 0}},
        {"id": "g:1", "binding": "Greet", "payload": {"item": "y", "n": 1}},
    ]
    assert [(n.id, n.parent, n.result) for n in r.nodes] == [
        ("g:0", "g", 1),
        ("g:1", "g", 2),
        ("g", None, {"total": 2, "succeeded": 2, "failed": 0}),
    ]
    assert r.nodes[2].payload is None  # F-94: an aggregate records no payload


def test_fails_on_a_container_has_no_effect() -> None:
    # F-94 [INFERRED]: a container runs no job
    def build(f: Any) -> None:
        g = f.fan_out("g", "G", over=lambda: [1], input=lambda n: n)
        f.node("after", "A", after={"g": g}, input=lambda _i, d: d["g"])

    r = simulate_flow(flow(build), None, fails=["g"])
    assert states(r)["g"] == ("COMPLETED", None)
    assert r.nodes[-1].payload == {"total": 1, "succeeded": 1, "failed": 0}
    assert r.state == "COMPLETED"


def test_all_fan_out_children_failing_keeps_the_run_completed() -> None:
    # F-53: children failures only show in the summary
    def build(f: Any) -> None:
        g = f.fan_out("g", "G", over=lambda: ["a", "b"], key=lambda item, _n: item, input=lambda n: n)
        f.node("report", "R", after={"g": g}, input=lambda _i, d: d["g"])

    r = simulate_flow(flow(build), None, fails=["g:a", "g:b"])
    assert r.nodes[-1].payload == {"total": 2, "succeeded": 0, "failed": 2}
    assert r.state == "COMPLETED"


def test_a_failure_trigger_does_not_fire_for_failed_fan_out_children() -> None:
    # T-1, F-31: a container whose children failed still succeeded; nothing actually failed
    def build(f: Any) -> None:
        g = f.fan_out("g", "G", over=lambda: [1], input=lambda n: n)
        f.node("alert", "A", after={"g": g}, trigger="failure", input=lambda: 1)

    r = simulate_flow(flow(build), None, fails=["g:0"])
    assert states(r)["alert"] == ("SKIPPED", "trigger not met: no dependency failed")
    assert r.state == "COMPLETED"


def test_empty_fan_out_with_key_and_concurrency_key_functions_never_called() -> None:
    # F-50: zero items aggregate at once to {0, 0, 0}
    calls: list[str] = []

    def build(f: Any) -> None:
        g = f.fan_out(
            "g",
            "G",
            over=lambda: [],
            key=lambda item, n: calls.append("key") or "k",
            input=lambda item: calls.append("input"),
        )
        f.node("next", "N", after={"g": g}, input=lambda _i, d: d["g"])

    r = simulate_flow(flow(build), None)
    assert [n.id for n in r.nodes] == ["g", "next"]
    assert r.nodes[1].payload == {"total": 0, "succeeded": 0, "failed": 0}
    assert calls == []


def test_fan_out_keys_are_strings_of_the_key_function() -> None:
    # F-4, F-15: key(item, index); the default key is the decimal index
    def build(f: Any) -> None:
        f.fan_out(
            "g", "G", over=lambda: [{"id": 10}, {"id": 20}], key=lambda item, n: item["id"], input=lambda i: i
        )

    assert [n.id for n in simulate_flow(flow(build), None).nodes][:2] == ["g:10", "g:20"]


@pytest.mark.parametrize("bad_key", ["", "a:b", "a b"])
def test_fan_out_key_outside_the_charset_raises(bad_key: str) -> None:
    # F-3, F-94: InvalidFlowError propagates to the caller
    g = flow(lambda f: f.fan_out("g", "G", over=lambda: [1], key=lambda item: bad_key, input=lambda i: i))
    with pytest.raises(InvalidFlowError, match="invalid node id"):
        simulate_flow(g, None)


def test_trigger_always_runs_after_failed_and_skipped_dependencies() -> None:
    # T-1, T-3: always runs once deps settled; failed and skipped deps contribute None
    def build(f: Any) -> None:
        a = f.node("a", "A", input=lambda: 1)
        b = f.node("b", "B", when=lambda: False, input=lambda: 2)
        c = f.node("c", "C", input=lambda: 3)
        f.node("z", "Z", after={"a": a, "b": b, "c": c}, trigger="always", input=lambda _i, d: dict(d))

    r = simulate_flow(flow(build), None, results={"a": "A!", "c": "C!"}, fails=["a"])
    z = r.nodes[-1]
    assert (z.id, z.state) == ("z", "COMPLETED")
    assert z.payload == {"a": None, "b": None, "c": "C!"}
    assert r.state == "FAILED"  # T-5: a still actually failed


def test_trigger_failure_only_counts_real_failures() -> None:
    # T-2: SKIPPED dependencies are not failures; one real failure among them is enough
    def build(f: Any) -> None:
        a = f.node("a", "A", input=lambda: 1)
        b = f.node("b", "B", after={"a": a}, input=lambda: 2)  # SKIPPED when a fails
        c = f.node("c", "C", input=lambda: 3, when=lambda: False)  # SKIPPED by when
        f.node("h", "H", after={"b": b, "c": c}, trigger="failure", input=lambda: 4)

    only_skipped = simulate_flow(flow(build), None, fails=["a"])
    assert states(only_skipped)["h"] == ("SKIPPED", "trigger not met: no dependency failed")
    with_failure = simulate_flow(flow(build), None, fails=["b"])
    assert states(with_failure)["h"] == ("COMPLETED", None)
    assert with_failure.state == "FAILED"  # T-5: the handler does not rescue the run


def test_successful_failure_handler_and_untriggered_nodes_are_not_failures() -> None:
    # T-5: nothing failed -> COMPLETED even though the failure handler was SKIPPED
    def build(f: Any) -> None:
        a = f.node("a", "A", input=lambda: 1)
        f.node("alert", "AL", after={"a": a}, trigger="failure", input=lambda: 1)

    assert simulate_flow(flow(build), None).state == "COMPLETED"


@pytest.mark.parametrize(
    ("value", "runs"),
    [
        (True, True),
        (False, False),
        (1, True),
        (0, False),
        ("yes", True),
        ("", False),
        (None, False),
        ([], False),
    ],
)
def test_when_uses_truthiness(value: Any, runs: bool) -> None:
    # T-4: a non-bool result counts by truthiness, as the JS original does
    def build(f: Any) -> None:
        a = f.node("a", "A", input=lambda: 1)
        b = f.node("b", "B", after={"a": a}, when=lambda i, d: value, input=lambda: 2)
        f.node("c", "C", after={"b": b}, input=lambda: 3)

    r = simulate_flow(flow(build), None)
    if runs:
        assert states(r)["b"] == ("COMPLETED", None) and states(r)["c"] == ("COMPLETED", None)
    else:
        assert states(r)["b"] == ("SKIPPED", "when condition was false")
        assert states(r)["c"] == ("SKIPPED", "trigger not met: dependency did not run: b")
    assert r.state == "COMPLETED"  # T-5: a when-skip is never a failure


def test_when_runs_only_after_the_trigger_is_met_and_sees_deps() -> None:
    # T-4: evaluated after the trigger, from (flow_input, deps)
    seen: list[Any] = []

    def build(f: Any) -> None:
        a = f.node("a", "A", input=lambda: 1)
        f.node("b", "B", after={"a": a}, when=lambda i, d: seen.append((i, dict(d))) or True, input=lambda: 2)
        f.node(
            "h",
            "H",
            after={"a": a},
            trigger="failure",
            when=lambda: seen.append("h") or True,
            input=lambda: 3,
        )

    simulate_flow(flow(build), {"verbose": True}, results={"a": {"n": 1}})
    assert seen == [({"verbose": True}, {"a": {"n": 1}})]


def test_when_raising_fails_the_node_with_the_message() -> None:
    # T-4: an exception in when -> FAILED; dependents are skipped; the run FAILED
    def build(f: Any) -> None:
        a = f.node("a", "A", input=lambda: 1)
        b = f.node("b", "B", after={"a": a}, when=lambda: {}["missing"], input=lambda: 2)
        f.node("c", "C", after={"b": b}, trigger="failure", input=lambda: 3)

    r = simulate_flow(flow(build), None)
    assert states(r)["b"] == ("FAILED", "'missing'")
    assert states(r)["c"] == ("COMPLETED", None)
    assert r.state == "FAILED"


def test_when_on_a_fan_out_and_on_a_subflow() -> None:
    # T-4: when applies to every node kind; a skipped container expands nothing
    child = flow(lambda f: f.node("x", "X", input=lambda: 1))

    def build(f: Any) -> None:
        g = f.fan_out("g", "G", over=lambda: [1, 2], input=lambda n: n, when=lambda i: i["fan"])
        f.subflow("s", child, input=lambda i: i, when=lambda i: not i["fan"])
        f.node("after", "A", after={"g": g}, input=lambda: 1)

    r = simulate_flow(flow(build), {"fan": False})
    assert states(r) == {
        "g": ("SKIPPED", "when condition was false"),
        "s": ("COMPLETED", None),
        "after": ("SKIPPED", "trigger not met: dependency did not run: g"),
    }
    assert r.state == "COMPLETED"


def test_subflow_in_fails_and_its_reference_resolves_to_none() -> None:
    # F-16, F-94: a subflow node acts as a plain node (binding "", payload = child input)
    child = flow(lambda f: f.node("x", "X", input=lambda: 1))

    def build(f: Any) -> None:
        s = f.subflow("s", child, input=lambda i: {"ids": i})
        f.node("n", "N", after={"s": s}, input=lambda _i, d: {"child": d["s"]})
        f.node("alert", "AL", after={"s": s}, trigger="failure", input=lambda: 1)

    ok = simulate_flow(flow(build), [1])
    assert ok.nodes[0] == SimulatedNode("s", "", {"ids": [1]}, "COMPLETED", None, None)
    assert {n.id: n.payload for n in ok.nodes}["n"] == {"child": None}
    bad = simulate_flow(flow(build), [1], fails=["s"])
    assert states(bad)["s"] == ("FAILED", None)
    assert states(bad)["alert"] == ("COMPLETED", None)
    assert bad.state == "FAILED"


def test_diamond_waits_for_both_branches() -> None:
    # F-58, F-95: recording order follows the decision rounds
    def build(f: Any) -> None:
        a = f.node("a", "A", input=lambda: 1)
        b = f.node("b", "B", after={"a": a}, input=lambda: 2)
        c = f.node("c", "C", after={"a": a}, input=lambda: 3)
        f.node("d", "D", after={"c": c, "b": b}, input=lambda _i, d: sorted(d))

    r = simulate_flow(flow(build), None)
    assert [n.id for n in r.nodes] == ["a", "b", "c", "d"]
    assert r.nodes[-1].payload == ["b", "c"]


def test_a_skipped_record_equals_the_spec_six_field_form() -> None:
    # F-94, F-95: SimulatedNode(id, binding, payload, state, result, parent); the skip reason is extra
    r = simulate_flow(
        flow(lambda f: f.node("b", "B", after={"a": f.node("a", "A", input=lambda: 1)}, input=lambda: 2)),
        None,
        fails=["a"],
    )
    assert r.nodes[1] == SimulatedNode("b", "B", None, "SKIPPED", None, None)
