"""The flow builder through the public API, rule by rule (flows.md §1-§3, T-1, T-4).

Everything here goes through ``tsumugi.create_flow`` and ``tsumugi.InvalidFlowError`` only.
"""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

import tsumugi
from tsumugi import ExponentialBackoff, FixedBackoff, InvalidFlowError, Performer, create_flow
from tsumugi.testing import simulate_flow


class Plain(Performer):
    pass


class NeedsUnique(Performer):
    requires: ClassVar[frozenset[str]] = frozenset({"unique_key"})


class NeedsConcurrency(Performer):
    requires: ClassVar[frozenset[str]] = frozenset({"concurrency_key"})


flow = create_flow({"A": Plain, "U": NeedsUnique, "C": NeedsConcurrency})


def one_node(**options: Any) -> Any:
    return flow(lambda f: f.node("a", "A", input=lambda: 1, **options))


def raises(build: Any, message: str, **flow_options: Any) -> None:
    with pytest.raises(InvalidFlowError) as info:
        flow(build, **flow_options)
    assert str(info.value) == message


def test_public_names() -> None:
    # §1: create_flow and the error classes are exported from the package root
    assert tsumugi.create_flow is create_flow
    assert issubclass(InvalidFlowError, tsumugi.TsumugiError)
    assert issubclass(tsumugi.InvalidRunIdError, tsumugi.TsumugiError)


def test_flow_exposes_nodes_in_declaration_order_and_its_deadline() -> None:
    # F-11: nodes in declaration order; deadline_ms only when given
    def build(f: Any) -> None:
        f.node("z", "A", input=lambda: 1)
        f.node("a", "A", input=lambda: 1)
        f.fan_out("m", "A", over=lambda: [], input=lambda item: item)

    g = flow(build)
    assert [n.id for n in g.nodes] == ["z", "a", "m"]
    assert g.deadline_ms is None
    assert flow(build, deadline_ms=600_000).deadline_ms == 600_000


@pytest.mark.parametrize(
    ("deadline", "shown"), [(0, "0"), (-5, "-5"), (1.5, "1.5"), ("10", "10"), (True, "True")]
)
def test_deadline_message_and_check_before_build(deadline: Any, shown: str) -> None:
    # F-11, §22: positive integer, bools rejected, checked before build runs
    calls: list[str] = []

    def build(f: Any) -> None:
        calls.append("build")
        f.node("a", "A", input=lambda: 1)

    raises(build, f"deadline_ms must be a positive integer: {shown}", deadline_ms=deadline)
    assert calls == []


def test_integral_float_deadline_is_accepted_as_int() -> None:
    # F-11: integral floats MAY be accepted as JS does
    g = flow(lambda f: f.node("a", "A", input=lambda: 1), deadline_ms=5000.0)
    assert g.deadline_ms == 5000 and isinstance(g.deadline_ms, int)


def test_no_nodes_is_an_error_after_build() -> None:
    # F-11
    raises(lambda f: None, "no nodes are declared")


@pytest.mark.parametrize("node_id", ["", "a b", "a:b", "a.b", "ä", "a/b", "a\n"])
def test_node_id_charset(node_id: str) -> None:
    # F-3, F-12: the message quotes the id as JSON does
    quoted = '"a\\n"' if node_id == "a\n" else f'"{node_id}"'
    raises(
        lambda f: f.node(node_id, "A", input=lambda: 1),
        f"invalid node id: {quoted} (alphanumeric, hyphen and underscore only)",
    )


@pytest.mark.parametrize("node_id", ["a", "A-b_9", "0", "-", "_"])
def test_node_id_charset_accepts(node_id: str) -> None:
    # F-3: no length limit, digits, hyphen and underscore alone are fine
    assert [n.id for n in flow(lambda f: f.node(node_id, "A", input=lambda: 1)).nodes] == [node_id]
    long_id = "x" * 500
    assert flow(lambda f: f.node(long_id, "A", input=lambda: 1)).nodes[0].id == long_id


def test_duplicate_ids_across_node_kinds() -> None:
    # F-12: one id space for job nodes, fan-outs and subflows
    child = flow(lambda f: f.node("x", "A", input=lambda: 1))
    raises(
        lambda f: (f.node("a", "A", input=lambda: 1), f.fan_out("a", "A", over=lambda: [], input=lambda: 1)),
        "duplicate node id: a",
    )
    raises(
        lambda f: (
            f.fan_out("a", "A", over=lambda: [], input=lambda: 1),
            f.subflow("a", child, input=lambda: 1),
        ),
        "duplicate node id: a",
    )


def test_registration_check_order() -> None:
    # F-12: charset before duplicate before dependencies
    def bad_id_and_dep(f: Any) -> None:
        f.node("a", "A", input=lambda: 1)
        f.node("b c", "A", after={"x": _ref_from_another_flow("ghost")}, input=lambda: 1)

    raises(bad_id_and_dep, 'invalid node id: "b c" (alphanumeric, hyphen and underscore only)')

    def duplicate_and_dep(f: Any) -> None:
        f.node("a", "A", input=lambda: 1)
        f.node("a", "A", after={"x": _ref_from_another_flow("ghost")}, input=lambda: 1)

    raises(duplicate_and_dep, "duplicate node id: a")


def _ref_from_another_flow(node_id: str) -> Any:
    refs: list[Any] = []
    flow(lambda f: refs.append(f.node(node_id, "A", input=lambda: 1)))
    return refs[0]


def test_undeclared_dependency_names_first_missing_target() -> None:
    # F-12: a reference from another flow is not declared here
    def build(f: Any) -> None:
        a = f.node("a", "A", input=lambda: 1)
        f.node("b", "A", after={"a": a, "g": _ref_from_another_flow("ghost")}, input=lambda: 1)

    raises(build, "depends on an undeclared node: b -> ghost")


def test_a_node_cannot_depend_on_itself() -> None:
    # F-12 [INFERRED]: the port rejects a forged self-reference
    def build(f: Any) -> None:
        f.node("a", "A", after={"me": _ref_from_another_flow("a")}, input=lambda: 1)

    raises(build, "depends on an undeclared node: a -> a")


def test_after_must_be_a_mapping() -> None:
    # F-13: after maps names to references
    def build(f: Any) -> None:
        a = f.node("a", "A", input=lambda: 1)
        f.node("b", "A", after=[a], input=lambda: 1)

    raises(build, "after must be a mapping of names to node references: b")


def test_after_names_become_deps_keys_and_edges_dedupe() -> None:
    # F-13, F-42: two names for one node give one edge and two deps keys
    seen: list[dict[str, Any]] = []

    def build(f: Any) -> None:
        a = f.node("a", "A", input=lambda: 1)
        f.node("b", "A", after={"first": a, "second": a}, input=lambda i, d: seen.append(dict(d)))

    g = flow(build)
    assert g.nodes[1].edges == ("a",)
    simulate_flow(g, None, results={"a": {"v": 1}})
    assert seen == [{"first": {"v": 1}, "second": {"v": 1}}]


def test_unique_key_is_refused_on_nodes() -> None:
    # F-14 (ADR-0033): never accepted; the error is also a TypeError like any bad keyword
    with pytest.raises(InvalidFlowError, match="unique_key is not allowed in a node: a") as info:
        one_node(unique_key="k")
    assert isinstance(info.value, TypeError)
    with pytest.raises(InvalidFlowError, match="unique_key is not allowed in a node: g"):
        flow(lambda f: f.fan_out("g", "A", over=lambda: [], input=lambda: 1, unique_key="k"))


def test_performer_requiring_unique_key_cannot_be_a_node() -> None:
    # F-14: the port raises InvalidFlowError at definition time
    with pytest.raises(InvalidFlowError, match="unique_key"):
        flow(lambda f: f.node("a", "U", input=lambda: 1))
    with pytest.raises(InvalidFlowError, match="unique_key"):
        flow(lambda f: f.fan_out("a", "U", over=lambda: [], input=lambda: 1))


def test_required_concurrency_key_static_or_function() -> None:
    # F-14, F-15
    with pytest.raises(InvalidFlowError, match="concurrency_key"):
        flow(lambda f: f.node("a", "C", input=lambda: 1))
    assert flow(lambda f: f.node("a", "C", input=lambda: 1, concurrency_key="k")).nodes[0].id == "a"
    assert flow(
        lambda f: f.fan_out("a", "C", over=lambda: [], input=lambda: 1, concurrency_key=lambda i, n: "k")
    )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"when": True}, "when must be a function: a"),
        ({"concurrency_key": 5}, "concurrency_key must be a string or a function: a"),
        ({"max_attempts": 0}, "invalid job option in node a: max_attempts must be an integer >= 1, got 0"),
        ({"priority": "high"}, "invalid job option in node a: priority must be a finite number, got 'high'"),
        ({"timeout_ms": -1}, "invalid job option in node a: timeout_ms must be a number >= 0, got -1"),
        (
            {"guarantee": "exactly-once"},
            "invalid job option in node a: "
            "guarantee must be 'at-least-once' or 'at-most-once', got 'exactly-once'",
        ),
        (
            {"delay_ms": 5, "run_at": 10},
            "invalid job option in node a: run_at and delay_ms are mutually exclusive",
        ),
    ],
)
def test_node_options_are_checked_at_definition(options: dict[str, Any], message: str) -> None:
    # F-14: a bad option fails the definition, not every tick of every run reaching the node
    with pytest.raises(InvalidFlowError) as info:
        one_node(**options)
    assert str(info.value) == message


def test_fan_out_functions_are_checked() -> None:
    # F-15
    raises(lambda f: f.fan_out("a", "A", over=[1], input=lambda: 1), "over must be a function: a")
    raises(
        lambda f: f.fan_out("a", "A", over=lambda: [1], input=lambda: 1, key="k"), "key must be a function: a"
    )
    raises(lambda f: f.node("a", "A", input={"x": 1}), "input must be a function: a")


def test_node_job_options_are_stored_in_wire_form() -> None:
    # F-14, J-101: a backoff mapping or object is stored as the shard reads it (camelCase)
    g = one_node(max_attempts=2, backoff={"kind": "fixed", "delay_ms": 250}, timeout_ms=500, priority=3)
    assert dict(g.nodes[0].options) == {
        "maxAttempts": 2,
        "backoff": {"kind": "fixed", "delayMs": 250, "jitter": False},
        "timeoutMs": 500,
        "priority": 3,
    }
    assert one_node(backoff=FixedBackoff(delay_ms=7)).nodes[0].options["backoff"]["delayMs"] == 7
    assert one_node(backoff=ExponentialBackoff(base_ms=9)).nodes[0].options["backoff"]["baseMs"] == 9
    assert dict(one_node().nodes[0].options) == {}  # F-14: unset options fall back to job defaults


@pytest.mark.parametrize("trigger", ["success", "failure", "always"])
def test_trigger_without_after_is_an_error(trigger: str) -> None:
    # T-1: on every node kind, also with an empty mapping
    child = flow(lambda f: f.node("x", "A", input=lambda: 1))
    message = "trigger requires after: a"
    raises(lambda f: f.node("a", "A", trigger=trigger, input=lambda: 1), message)
    raises(lambda f: f.node("a", "A", after={}, trigger=trigger, input=lambda: 1), message)
    raises(lambda f: f.fan_out("a", "A", trigger=trigger, over=lambda: [], input=lambda: 1), message)
    raises(lambda f: f.subflow("a", child, trigger=trigger, input=lambda: 1), message)


def test_trigger_values() -> None:
    # T-1: only success / failure / always
    def build(value: str) -> Any:
        def inner(f: Any) -> None:
            a = f.node("a", "A", input=lambda: 1)
            f.node("b", "A", after={"a": a}, trigger=value, input=lambda: 1)

        return inner

    for value in ("success", "failure", "always"):
        assert flow(build(value)).nodes[1].effective_trigger == value
    raises(build("on-failure"), "trigger must be 'success', 'failure' or 'always': b")
    assert flow(lambda f: f.node("a", "A", input=lambda: 1)).nodes[0].effective_trigger == "success"


def test_subflow_has_no_job_options_and_needs_a_flow() -> None:
    # F-16: the target is the flow object itself; no job options
    child = flow(lambda f: f.node("x", "A", input=lambda: 1))
    raises(lambda f: f.subflow("s", "CHILD", input=lambda: 1), "subflow target must be a flow: s")
    with pytest.raises(TypeError):
        flow(lambda f: f.subflow("s", child, input=lambda: 1, max_attempts=2))
    node = flow(lambda f: f.subflow("s", child, input=lambda: 1)).nodes[0]
    assert node.binding == ""  # F-2: stored binding is ""
    assert node.target is child


def test_deadline_may_be_passed_positionally_or_through_the_decorator() -> None:
    # F-11: flow(build, deadline_ms=None); §1 signature, the seed's second argument
    def build(f: Any) -> None:
        f.node("a", "A", input=lambda: 1)

    assert flow(build, 1000).deadline_ms == 1000
    assert flow(deadline_ms=2000)(build).deadline_ms == 2000
    with pytest.raises(InvalidFlowError, match="deadline_ms must be a positive integer: 0"):
        flow(build, 0)


def test_requirements_of_remote_performers_are_enforced_too() -> None:
    # F-14: a remote() entry declares the same requirements as its performer class (J-62)
    remote_flow = create_flow({"R": tsumugi.remote(NeedsConcurrency), "Q": tsumugi.remote(NeedsUnique)})
    with pytest.raises(InvalidFlowError, match="concurrency_key"):
        remote_flow(lambda f: f.node("a", "R", input=lambda: 1))
    with pytest.raises(InvalidFlowError, match="unique_key"):
        remote_flow(lambda f: f.node("a", "Q", input=lambda: 1))
    assert remote_flow(lambda f: f.node("a", "R", input=lambda: 1, concurrency_key="k")).nodes[0].id == "a"
    bare = create_flow({"X": tsumugi.remote()})
    assert bare(lambda f: f.node("a", "X", input=lambda: 1)).nodes[0].binding == "X"


def test_build_must_be_synchronous() -> None:
    # F-11: build(f) is called synchronously; an async build is refused instead of declaring nothing
    async def build(f: Any) -> None:
        f.node("a", "A", input=lambda: 1)

    raises(build, "build must be a plain function, not async")
