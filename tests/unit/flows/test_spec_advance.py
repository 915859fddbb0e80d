"""``advance`` fed the spec's plain node views (flows.md §6: F-29..F-33, T-1, T-2, T-5)."""

from __future__ import annotations

from typing import Any

import pytest

from tsumugi.core.flow.advance import advance, is_node_terminal


def view(node_id: str, state: str = "PENDING", **fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": node_id,
        "state": state,
        "container": False,
        "subflow": False,
        "parent": None,
        "origin": "static",
        "after": [],
    }
    return {**base, **fields}


def decisions(nodes: list[dict[str, Any]], **flags: Any) -> list[tuple[str, str]]:
    return [
        (d.type, d.id) for d in advance(nodes, cancelling=flags.pop("cancelling", False), **flags).decisions
    ]


def test_terminal_states() -> None:
    # F-29
    assert [
        s
        for s in ("PENDING", "SCHEDULED", "RUNNING", "COMPLETED", "FAILED", "CANCELLED", "STALLED", "SKIPPED")
        if is_node_terminal(s)
    ] == [
        "COMPLETED",
        "FAILED",
        "CANCELLED",
        "STALLED",
        "SKIPPED",
    ]


def test_plain_views_give_the_same_decisions() -> None:
    # F-32: start / startRun / expand once dependencies succeeded
    nodes = [
        view("a", "COMPLETED"),
        view("job", after=["a"]),
        view("sub", after=["a"], subflow=True),
        view("fan", after=["a"], container=True),
        view("wait", after=["job"]),
    ]
    assert decisions(nodes) == [("start", "job"), ("startRun", "sub"), ("expand", "fan")]
    assert advance(nodes, cancelling=False).state == "RUNNING"


def test_missing_dependency_skips_at_once() -> None:
    # F-32 step 3: an after id absent from the run -> skip
    assert decisions([view("a", after=["gone"])]) == [("skip", "a")]


def test_aggregate_even_while_halting_and_cancel_pending() -> None:
    # F-32 steps 1-2, F-50: an empty RUNNING container aggregates
    nodes = [view("fan", "RUNNING", container=True), view("p"), view("s", "SCHEDULED"), view("r", "RUNNING")]
    assert decisions(nodes, cancelling=True) == [("aggregate", "fan"), ("cancel", "p"), ("cancel", "s")]
    assert decisions(nodes, expired=True) == [("aggregate", "fan"), ("cancel", "p"), ("cancel", "s")]


@pytest.mark.parametrize(
    ("cancelling", "expired", "state"),
    [
        (True, False, "CANCELLED"),
        (False, True, "FAILED"),
        (True, True, "CANCELLED"),
        (False, False, "COMPLETED"),
    ],
)
def test_run_state_precedence(cancelling: bool, expired: bool, state: str) -> None:
    # F-33: cancellation wins, an expired run is FAILED even if everything completed
    nodes = [view("a", "COMPLETED")]
    assert advance(nodes, cancelling=cancelling, expired=expired).state == state


def test_triggers_on_plain_views() -> None:
    # T-1, T-2: failure needs a real failure; always needs only settled deps
    nodes = [
        view("ok", "COMPLETED"),
        view("bad", "STALLED"),
        view("skipped", "SKIPPED"),
        view("on_fail", after=["ok", "skipped"], trigger="failure"),
        view("on_fail2", after=["bad"], trigger="failure"),
        view("always", after=["bad", "skipped"], trigger="always"),
        view("normal", after=["ok", "skipped"]),
    ]
    assert decisions(nodes) == [
        ("skip", "on_fail"),
        ("start", "on_fail2"),
        ("start", "always"),
        ("skip", "normal"),
    ]


def test_skipped_roots_alone_do_not_fail_the_run() -> None:
    # T-5: FAILED only when some node actually failed; fan-out children excluded
    ok = [view("a", "COMPLETED"), view("b", "SKIPPED", after=["a"])]
    assert advance(ok, cancelling=False).state == "COMPLETED"
    children = [
        view("fan", "COMPLETED", container=True),
        view("fan:0", "FAILED", parent="fan", origin="fanOut"),
    ]
    assert advance(children, cancelling=False).state == "COMPLETED"
    spawned = [view("p", "COMPLETED"), view("p:c", "FAILED", parent="p", origin="spawn")]
    assert advance(spawned, cancelling=False).state == "FAILED"  # F-31: spawned children count


def test_advance_is_exported_for_tests() -> None:
    # §1: advance and is_node_terminal are "exported for tests", like the original's tsumugi/testing
    from tsumugi import testing

    assert testing.advance is advance  # type: ignore[attr-defined]
    assert testing.is_node_terminal is is_node_terminal  # type: ignore[attr-defined]
