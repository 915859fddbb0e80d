"""The run-progress function ``advance`` (flows.md §6, §11, §21)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tsumugi.core.flow.advance import Decision, DecisionType, NodeView, advance, is_node_terminal

T = DecisionType


def v(node_id: str, state: str = "PENDING", **kw: Any) -> NodeView:
    after = kw.pop("after", ())
    return NodeView(node_id, state, after=tuple(after), **kw)


def kinds(progress: Any) -> list[tuple[str, str]]:
    return [(d.type.value, d.id) for d in progress.decisions]


def test_terminal_states() -> None:
    # F-29
    assert all(is_node_terminal(s) for s in ("COMPLETED", "FAILED", "CANCELLED", "STALLED", "SKIPPED"))
    assert not any(is_node_terminal(s) for s in ("PENDING", "SCHEDULED", "RUNNING"))


def test_roots_start_and_kinds_map_to_decisions() -> None:
    # F-32 step 3
    p = advance([v("a"), v("b", container=True), v("c", subflow=True)], cancelling=False)
    assert kinds(p) == [("start", "a"), ("expand", "b"), ("startRun", "c")]
    assert p.state == "RUNNING"


def test_dependent_waits_until_dependency_and_descendants_settle() -> None:
    # F-30, F-58: a completed node with a running spawned child is not settled
    nodes = [v("a", "COMPLETED"), v("a:x", "SCHEDULED", parent="a", origin="spawn"), v("b", after=["a"])]
    assert kinds(advance(nodes, cancelling=False)) == []
    nodes[1] = v("a:x", "COMPLETED", parent="a", origin="spawn")
    assert kinds(advance(nodes, cancelling=False)) == [("start", "b")]


def test_spawned_child_failure_fails_parent_but_fan_out_child_does_not() -> None:
    # F-31, F-53
    spawn = [v("a", "COMPLETED"), v("a:x", "FAILED", parent="a", origin="spawn"), v("b", after=["a"])]
    p = advance(spawn, cancelling=False)
    assert p.decisions == [Decision(T.SKIP, "b", "trigger not met: dependency failed: a")]
    fan = [
        v("g", "COMPLETED", container=True),
        v("g:0", "FAILED", parent="g", origin="fanOut"),
        v("b", after=["g"]),
    ]
    assert kinds(advance(fan, cancelling=False)) == [("start", "b")]


def test_spawn_failure_under_fan_out_child_is_masked() -> None:
    # F-54
    nodes = [
        v("g", "COMPLETED", container=True),
        v("g:0", "COMPLETED", parent="g", origin="fanOut"),
        v("g:0:s", "FAILED", parent="g:0", origin="spawn"),
    ]
    assert advance(nodes, cancelling=False).state == "COMPLETED"


def test_container_aggregates_when_children_settle_even_when_halting() -> None:
    # F-32 step 1, F-50
    assert kinds(advance([v("g", "RUNNING", container=True)], cancelling=True)) == [("aggregate", "g")]
    running = [v("g", "RUNNING", container=True), v("g:0", "SCHEDULED", parent="g", origin="fanOut")]
    assert kinds(advance(running, cancelling=False)) == []


def test_halting_cancels_pending_scheduled_and_running_subflows_only() -> None:
    # F-32 step 2, F-71
    nodes = [
        v("a", "PENDING"),
        v("b", "SCHEDULED"),
        v("c", "RUNNING", subflow=True),
        v("d", "COMPLETED"),
        v("e", "SKIPPED"),
        v("g", "RUNNING", container=True),
        v("g:0", "PENDING", parent="g", origin="fanOut"),
    ]
    for flags in ({"cancelling": True}, {"cancelling": False, "expired": True}):
        assert kinds(advance(nodes, **flags)) == [
            ("cancel", "a"),
            ("cancel", "b"),
            ("cancel", "c"),
            ("cancel", "g:0"),
        ]


def test_missing_dependency_skips_at_once() -> None:
    # F-32 step 3
    p = advance([v("a", after=["gone"])], cancelling=False)
    assert p.decisions == [Decision(T.SKIP, "a", "dependency is missing: gone")]


def test_run_state_rules() -> None:
    # F-33, F-70, F-73, T-5
    done = [v("a", "COMPLETED")]
    assert advance(done, cancelling=False).state == "COMPLETED"
    assert advance(done, cancelling=True).state == "CANCELLED"
    assert advance(done, cancelling=False, expired=True).state == "FAILED"
    assert advance(done, cancelling=True, expired=True).state == "CANCELLED"
    assert advance([v("a", "STALLED")], cancelling=False).state == "FAILED"
    assert advance([v("a", "COMPLETED"), v("b", "RUNNING")], cancelling=True).state == "RUNNING"


def test_trigger_failure_runs_only_on_actual_failure() -> None:
    # T-1, T-2
    for failed_state in ("FAILED", "STALLED", "CANCELLED"):
        p = advance([v("a", failed_state), v("b", after=["a"], trigger="failure")], cancelling=False)
        assert kinds(p) == [("start", "b")]
    ok = advance([v("a", "COMPLETED"), v("b", after=["a"], trigger="failure")], cancelling=False)
    assert ok.decisions == [Decision(T.SKIP, "b", "trigger not met: no dependency failed")]
    skipped = advance([v("a", "SKIPPED"), v("b", after=["a"], trigger="failure")], cancelling=False)
    assert kinds(skipped) == [("skip", "b")]


def test_trigger_always_runs_once_settled() -> None:
    # T-1
    for state in ("COMPLETED", "FAILED", "SKIPPED"):
        assert kinds(advance([v("a", state), v("b", after=["a"], trigger="always")], cancelling=False)) == [
            ("start", "b")
        ]
    assert (
        kinds(advance([v("a", "SCHEDULED"), v("b", after=["a"], trigger="always")], cancelling=False)) == []
    )


def test_skips_are_not_failures_and_handler_success_does_not_rescue() -> None:
    # T-5: a when-skipped node leaves the run COMPLETED; a failed node keeps it FAILED
    assert (
        advance([v("a", "COMPLETED"), v("b", "SKIPPED", after=["a"])], cancelling=False).state == "COMPLETED"
    )
    rescued = [v("a", "FAILED"), v("b", "COMPLETED", after=["a"], trigger="failure")]
    assert advance(rescued, cancelling=False).state == "FAILED"


def test_skip_reason_names_a_skipped_dependency() -> None:
    # T-6, F-59: skipping cascades to success dependents
    p = advance([v("a", "SKIPPED"), v("b", after=["a"])], cancelling=False)
    assert p.decisions == [Decision(T.SKIP, "b", "trigger not met: dependency did not run: a")]


# ----------------------------------------------------------------------------- property test
TERMINAL = {"COMPLETED", "FAILED", "CANCELLED", "STALLED", "SKIPPED"}
STATES = ["PENDING", "SCHEDULED", "RUNNING", *sorted(TERMINAL)]


Kids = dict[str | None, list[NodeView]]


def closure(nodes: list[NodeView], start: set[str], grows: Any) -> set[str]:
    """The least fixed point of ``grows(node, current)`` starting from ``start``."""
    current = set(start)
    changed = True
    while changed:
        changed = False
        for n in nodes:
            if n.id not in current and grows(n, current):
                current.add(n.id)
                changed = True
    return current


def classify(nodes: list[NodeView], kids: Kids) -> tuple[set[str], set[str], set[str]]:
    """Settled, failed and succeeded, each as a fixed point instead of a recursion (F-30, F-31, T-1)."""
    settled = closure(
        nodes, set(), lambda n, s: n.state in TERMINAL and all(k.id in s for k in kids.get(n.id, []))
    )
    failed = closure(
        nodes,
        {n.id for n in nodes if n.state in {"FAILED", "STALLED", "CANCELLED"}},
        lambda n, f: any(k.origin != "fanOut" and k.id in f for k in kids.get(n.id, [])),
    )
    succeeded = closure(
        nodes,
        set(),
        lambda n, ok: (
            n.id in settled
            and n.state == "COMPLETED"
            and all(k.origin == "fanOut" or k.id in ok for k in kids.get(n.id, []))
        ),
    )
    return settled, failed, succeeded


def pending_decision(n: NodeView, ids: set[str], sets: tuple[set[str], set[str], set[str]]) -> str | None:
    settled, failed, succeeded = sets
    if any(d not in ids for d in n.after):
        return "skip"
    if not all(d in settled for d in n.after):
        return None
    go = {
        "success": all(d in succeeded for d in n.after),
        "failure": any(d in failed for d in n.after),
        "always": True,
    }[n.trigger]
    kind = "expand" if n.container else "startRun" if n.subflow else "start"
    return kind if go else "skip"


def reference(nodes: list[NodeView], cancelling: bool, expired: bool) -> tuple[list[tuple[str, str]], str]:
    """An independent model written from the spec text."""
    kids: Kids = {}
    for n in nodes:
        kids.setdefault(n.parent, []).append(n)
    sets = classify(nodes, kids)
    settled, failed, _ = sets
    ids = {n.id for n in nodes}
    out: list[tuple[str, str]] = []
    for n in nodes:
        if n.container and n.state == "RUNNING" and all(k.id in settled for k in kids.get(n.id, [])):
            out.append(("aggregate", n.id))
        elif cancelling or expired:
            if n.state in ("PENDING", "SCHEDULED") or (n.subflow and n.state == "RUNNING"):
                out.append(("cancel", n.id))
        elif n.state == "PENDING" and (kind := pending_decision(n, ids, sets)) is not None:
            out.append((kind, n.id))
    roots = kids.get(None, [])
    if not all(r.id in settled for r in roots):
        return out, "RUNNING"
    if cancelling:
        return out, "CANCELLED"
    if expired or any(r.id in failed for r in roots):
        return out, "FAILED"
    return out, "COMPLETED"


@st.composite
def runs(draw: Any) -> tuple[list[NodeView], bool, bool]:
    count = draw(st.integers(1, 7))
    nodes: list[NodeView] = []
    for i in range(count):
        kind = draw(st.sampled_from(["job", "job", "container", "subflow"]))
        after = draw(st.lists(st.integers(0, max(i - 1, 0)), max_size=3)) if i else []
        deps = tuple(dict.fromkeys(f"n{d}" for d in after))
        if draw(st.integers(0, 20)) == 0:
            deps = (*deps, "ghost")
        trigger = draw(st.sampled_from(["success", "failure", "always"])) if deps else "success"
        nodes.append(
            NodeView(
                f"n{i}",
                draw(st.sampled_from(STATES)),
                container=kind == "container",
                subflow=kind == "subflow",
                after=deps,
                trigger=trigger,
            )
        )
    for _ in range(draw(st.integers(0, 8))):
        parent = draw(st.sampled_from(nodes))
        origin = "fanOut" if parent.container and parent.parent is None else "spawn"
        nodes.append(
            NodeView(
                f"{parent.id}:{len(nodes)}", draw(st.sampled_from(STATES)), parent=parent.id, origin=origin
            )
        )
    return nodes, draw(st.booleans()), draw(st.booleans())


@settings(max_examples=400)
@given(runs())
def test_advance_matches_independent_model(case: tuple[list[NodeView], bool, bool]) -> None:
    # F-29..F-33, T-1, T-2, T-5 against a reference model
    nodes, cancelling, expired = case
    progress = advance(nodes, cancelling=cancelling, expired=expired)
    assert (kinds(progress), progress.state) == reference(nodes, cancelling, expired)
    assert len({d.id for d in progress.decisions}) == len(progress.decisions)  # at most one per node
    assert all((d.reason is not None) == (d.type is T.SKIP) for d in progress.decisions)  # T-6


def test_deep_spawn_chains_do_not_recurse() -> None:
    # F-30: a page spawning the next page nests thousands deep
    nodes = [v("p", "COMPLETED")]
    for depth in range(1, 5000):
        nodes.append(v(f"p{depth}", "COMPLETED", parent=nodes[-1].id, origin="spawn"))
    nodes.append(v("after", after=["p"]))
    assert kinds(advance(nodes, cancelling=False)) == [("start", "after")]
    nodes[-2] = v("p4999", "RUNNING", parent="p4998", origin="spawn")
    assert advance(nodes, cancelling=False).decisions == []
