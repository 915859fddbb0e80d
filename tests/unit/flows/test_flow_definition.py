"""The flow builder, ids and configuration checks (flows.md §2, §3; T-1)."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from tsumugi.core.flow.ids import (
    child_node_id,
    format_run_id,
    parse_run_id,
    scheduled_run_id,
    subflow_run_id,
    validate_flow_name,
)
from tsumugi.core.flow.model import Flow, NodeKind, NodeSpec, shape_of
from tsumugi.errors import InvalidFlowError, InvalidRunIdError
from tsumugi.flows import create_flow, validate_flows
from tsumugi.performer import Performer


class Plain(Performer):
    pass


class NeedsUnique(Performer):
    requires: ClassVar[frozenset[str]] = frozenset({"unique_key"})


class NeedsConcurrency(Performer):
    requires: ClassVar[frozenset[str]] = frozenset({"concurrency_key"})


PERFORMERS = {"A": Plain, "B": Plain, "U": NeedsUnique, "C": NeedsConcurrency}
flow = create_flow(PERFORMERS)


def test_ids_for_children_runs_and_subflows() -> None:
    # F-4, F-5, F-7, F-8, F-10
    assert child_node_id("greet", "0") == "greet:0"
    assert child_node_id("greet:0", "child") == "greet:0:child"
    assert format_run_id("GREET", "abc") == "GREET:abc"
    assert parse_run_id("GREET:abc") == ("GREET", "abc")
    assert subflow_run_id("REPORTING", "PIPELINE:abc", "report") == "REPORTING:abc-report"
    assert subflow_run_id("X", "REPORTING:abc-report", "n2") == "X:abc-report-n2"
    assert scheduled_run_id("REPORT", "nightly", 1700000000000) == "REPORT:nightly-1700000000000"


@pytest.mark.parametrize(
    ("run_id", "message"),
    [
        ("GREET", 'missing ":": "GREET"'),
        ("GR EET:x", 'invalid flow name: "GR EET"'),
        ("G:a:b", 'invalid localId: "a:b"'),
        ("G:", 'invalid localId: ""'),
    ],
)
def test_run_id_errors(run_id: str, message: str) -> None:
    # F-7: parse splits at the first colon, the local part must be a plain id
    with pytest.raises(InvalidRunIdError) as info:
        parse_run_id(run_id)
    assert str(info.value) == message


def test_flow_name_error_text() -> None:
    # F-6
    with pytest.raises(InvalidRunIdError) as info:
        validate_flow_name("bad name")
    assert str(info.value) == 'invalid flow name: "bad name" (alphanumeric, hyphen and underscore only)'


def test_child_key_charset() -> None:
    # F-3
    with pytest.raises(InvalidFlowError, match=r'invalid node id: "a:b"'):
        child_node_id("greet", "a:b")


def greetings() -> Flow:
    def build(f: Any) -> None:
        lst = f.node("list", "A", input=lambda i, d: {"prefix": i["prefix"]})
        each = f.fan_out(
            "greet",
            "B",
            after={"list": lst},
            over=lambda i, d: d["list"]["names"],
            input=lambda name: {"name": name},
            max_attempts=2,
            timeout_ms=500,
        )
        f.node("report", "A", after={"each": each, "again": each}, input=lambda i, d: d["each"])

    return flow(build, deadline_ms=600_000)


def test_builder_records_nodes_in_declaration_order() -> None:
    # F-11, F-13, F-15
    g = greetings()
    assert [n.id for n in g.nodes] == ["list", "greet", "report"]
    assert g.deadline_ms == 600_000
    assert g.nodes[1].kind is NodeKind.FAN_OUT
    assert g.nodes[1].options == {"maxAttempts": 2, "timeoutMs": 500}
    assert g.nodes[2].edges == ("greet",)  # two names, one edge
    assert dict(g.nodes[2].after) == {"each": "greet", "again": "greet"}


def test_decorator_forms() -> None:
    # F-11 (ADR-0070: @flow and @flow(deadline_ms=...))
    @flow
    def one(f: Any) -> None:
        f.node("a", "A", input=lambda: {})

    @flow(deadline_ms=5.0)
    def two(f: Any) -> None:
        f.node("a", "A", input=lambda: {})

    assert isinstance(one, Flow) and one.deadline_ms is None
    assert isinstance(two, Flow) and two.deadline_ms == 5


def test_shape_is_pinned_structure_only() -> None:
    # F-18
    child = flow(lambda f: f.node("x", "A", input=lambda: {}))

    def build(f: Any) -> None:
        a = f.node("a", "A", input=lambda: {})
        s = f.subflow("s", child, after={"a": a}, input=lambda: {})
        f.node("z", "A", after={"s": s}, trigger="always", input=lambda: {})

    parent = flow(build)
    assert shape_of(parent, {"P": parent, "C": child, "C2": child}) == [
        {"id": "a", "binding": "A", "container": False, "after": []},
        {"id": "s", "binding": "", "container": False, "after": ["a"], "subflow": "C"},
        {"id": "z", "binding": "A", "container": False, "after": ["s"], "trigger": "always"},
    ]
    with pytest.raises(InvalidFlowError, match="subflow target is not registered: s"):
        shape_of(parent, {"P": parent})


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda f: f.node("bad id", "A", input=lambda: 1),
            'invalid node id: "bad id" (alphanumeric, hyphen and underscore only)',
        ),
        (
            lambda f: (f.node("a", "A", input=lambda: 1), f.node("a", "A", input=lambda: 1)),
            "duplicate node id: a",
        ),
        (
            lambda f: f.node("a", "A", after={"x": _foreign()}, input=lambda: 1),
            "depends on an undeclared node: a -> elsewhere",
        ),
        (lambda f: None, "no nodes are declared"),
        (lambda f: f.node("a", "A", trigger="always", input=lambda: 1), "trigger requires after: a"),
        (
            lambda f: f.node(
                "b", "A", after={"a": f.node("a", "A", input=lambda: 1)}, trigger="sometimes", input=lambda: 1
            ),
            "trigger must be 'success', 'failure' or 'always': b",
        ),
        (lambda f: f.node("a", "U", input=lambda: 1), "U requires unique_key, which nodes cannot set: a"),
        (lambda f: f.node("a", "C", input=lambda: 1), "concurrency_key is required by C: a"),
        (
            lambda f: f.fan_out("a", "C", over=lambda: [], input=lambda: 1),
            "concurrency_key is required by C: a",
        ),
    ],
)
def test_definition_errors(build: Any, message: str) -> None:
    # F-11, F-12, F-14, T-1
    with pytest.raises(InvalidFlowError) as info:
        flow(build)
    assert str(info.value) == message


def _foreign() -> Any:
    holder: list[Any] = []
    flow(lambda f: holder.append(f.node("elsewhere", "A", input=lambda: 1)))
    return holder[0]


@pytest.mark.parametrize("deadline", [0, -1, True, 1.5, "10"])
def test_deadline_must_be_positive_integer_checked_before_build(deadline: Any) -> None:
    # F-11
    calls: list[int] = []
    with pytest.raises(InvalidFlowError, match="deadline_ms must be a positive integer"):
        flow(lambda f: calls.append(1), deadline_ms=deadline)
    assert calls == []


def test_concurrency_key_satisfies_requirement() -> None:
    # F-14
    f1 = flow(lambda f: f.node("a", "C", input=lambda: 1, concurrency_key=lambda i, d: "k"))
    assert callable(f1.nodes[0].concurrency_key)


def test_validate_flows_accepts_a_good_configuration() -> None:
    # F-17: a registered subflow target passes
    child = flow(lambda f: f.node("x", "A", input=lambda: {}))
    parent = flow(lambda f: f.subflow("s", child, input=lambda: {}))
    validate_flows({"P": parent, "C": child, "G": greetings()}, PERFORMERS)


def spec(node_id: str, after: dict[str, str] | None = None, binding: str = "A", **kw: Any) -> NodeSpec:
    return NodeSpec(id=node_id, kind=NodeKind.JOB, binding=binding, after=after or {}, input=lambda: 1, **kw)


@pytest.mark.parametrize(
    ("flows", "error", "message"),
    [
        (
            lambda: {"bad name": greetings()},
            InvalidRunIdError,
            'invalid flow name: "bad name" (alphanumeric, hyphen and underscore only)',
        ),
        (
            lambda: {"F": flow(lambda f: f.node("a", "Nope", input=lambda: 1))},
            InvalidFlowError,
            "binding is not registered: F.a -> Nope",
        ),
        (
            lambda: {"F": flow(lambda f: f.subflow("s", greetings(), input=lambda: 1))},
            InvalidFlowError,
            "subflow target is not registered: F.s",
        ),
        (
            lambda: {"F": Flow((spec("a", {"x": "b"}), spec("b", {"y": "a"})), None)},
            InvalidFlowError,
            "cycle in flow F: a -> b -> a",
        ),
        (
            lambda: {"F": Flow((spec("a", {"x": "a"}),), None)},
            InvalidFlowError,
            "depends on an undeclared node: F.a -> a",
        ),
        (lambda: {"F": Flow((spec("a b"),), None)}, InvalidFlowError, 'invalid node id: "a b" in flow F'),
        (lambda: {"F": Flow((spec("a"), spec("a")), None)}, InvalidFlowError, "duplicate node id: F.a"),
        (
            lambda: {"F": Flow((spec("a", trigger="always"),), None)},
            InvalidFlowError,
            "trigger requires after: F.a",
        ),
        (lambda: {"F": object()}, InvalidFlowError, "flow is not a flow definition: F"),
    ],
)
def test_validate_flows_errors(flows: Any, error: type[Exception], message: str) -> None:
    # F-6, F-12, F-17, T-1; cycles can only come from hand-built flows
    with pytest.raises(error) as info:
        validate_flows(flows(), PERFORMERS)
    assert str(info.value).startswith(message)
