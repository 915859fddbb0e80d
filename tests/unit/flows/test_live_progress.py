"""``LiveProgress`` agrees with the pure ``advance`` on random runs (ADR-0115; F-26, F-30..F-33, T-1..T-5)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tsumugi.core.flow.advance import NodeView, advance
from tsumugi.core.flow.live_progress import LiveProgress, live_progress_of

STATES = ("PENDING", "SCHEDULED", "RUNNING", "COMPLETED", "FAILED", "CANCELLED", "STALLED", "SKIPPED")
# Mostly COMPLETED, so runs often settle and the success paths (F-31, T-1) are reached too.
WEIGHTED_STATES = st.sampled_from(("COMPLETED",) * 5 + STATES)
ORIGINS = ("fanOut", "spawn")
TRIGGERS = ("success", "failure", "always")


@st.composite
def run_histories(draw: Any) -> tuple[list[NodeView], list[tuple[str, Any]]]:
    """Static DAG nodes, then a history of state changes and dynamic children added under any node."""
    static_count = draw(st.integers(1, 6))
    nodes: list[NodeView] = []
    for i in range(static_count):
        deps = draw(st.lists(st.integers(0, static_count), max_size=3))  # index static_count: a missing dep
        nodes.append(
            NodeView(
                f"n{i}",
                draw(WEIGHTED_STATES),
                container=draw(st.booleans()),
                subflow=draw(st.booleans()),
                after=tuple(f"n{d}" for d in deps if d != i),
                trigger=draw(st.sampled_from(TRIGGERS)),
            )
        )
    steps: list[tuple[str, Any]] = []
    ids = [n.id for n in nodes]
    for step in range(draw(st.integers(0, 25))):
        kind = draw(st.sampled_from(("add", "kids", "state")))
        if kind == "kids":  # a fan-out's expansion or a batch of spawns: PENDING children without edges
            parent = draw(st.sampled_from(ids))
            origin = draw(st.sampled_from(ORIGINS))
            count = draw(st.integers(1, 4))
            kids = [
                NodeView(f"{parent}:{step}.{k}", "PENDING", parent=parent, origin=origin)
                for k in range(count)
            ]
            ids += [kid.id for kid in kids]
            steps.append(("kids", (parent, kids)))
        elif kind == "add":
            parent = draw(st.sampled_from(ids))
            child = NodeView(
                f"{parent}:{step}",
                draw(WEIGHTED_STATES),
                container=draw(st.booleans()),
                parent=parent,
                origin=draw(st.sampled_from(ORIGINS)),
            )
            ids.append(child.id)
            steps.append(("add", child))
        else:
            steps.append(("state", (draw(st.sampled_from(ids)), draw(WEIGHTED_STATES))))
    return nodes, steps


def _agree(live: LiveProgress, nodes: list[NodeView], cancelling: bool, expired: bool) -> None:
    expected = advance(nodes, cancelling=cancelling, expired=expired)
    assert live.decisions(halting=cancelling or expired, limit=len(nodes) + 1) == expected.decisions
    assert live.state(cancelling=cancelling, expired=expired) == expected.state
    done = sum(n.state in ("COMPLETED", "FAILED", "CANCELLED", "STALLED", "SKIPPED") for n in nodes)
    failed = sum(n.state in ("FAILED", "STALLED") for n in nodes)
    assert live.counters() == (len(nodes), done, failed)  # F-26


@settings(max_examples=500, deadline=None)
@given(run_histories(), st.integers(0, 30), st.sampled_from([(True, False), (False, True), (True, True)]))
def test_incremental_progress_matches_advance_after_every_change(
    history: tuple[list[NodeView], list[tuple[str, Any]]], halt_at: int, halt: tuple[bool, bool]
) -> None:
    # F-30..F-33, T-1..T-5: every decision and the run state equal the pure function's, step by step;
    # from step ``halt_at`` on the run is cancelling and/or expired (F-69, F-74)
    nodes, steps = history
    live = live_progress_of(enumerate(nodes))
    current = list(nodes)
    _agree(live, current, *(halt if halt_at == 0 else (False, False)))
    for index, (kind, value) in enumerate(steps, start=1):
        if kind == "add":
            live.add(len(current), value)
            current.append(value)
        elif kind == "kids":
            parent, kids = value
            live.add_children(parent, enumerate(kids, len(current)))
            current += kids
        else:
            node_id, state = value
            live.set_state(node_id, state)
            current = [NodeView(**{**_fields(n), "state": state}) if n.id == node_id else n for n in current]
        _agree(live, current, *(halt if index >= halt_at else (False, False)))


def test_limit_and_skip_pick_the_first_decisions_in_node_order() -> None:
    # F-35: a tick takes decisions in node order, skipping those it already applied
    live = live_progress_of((i, NodeView(f"c{i}", "PENDING", parent=None)) for i in range(5))
    picked = live.decisions(halting=False, limit=2, skip=lambda d: d.id == "c0")
    assert [d.id for d in picked] == ["c1", "c2"]
    live.set_state("c1", "SCHEDULED")
    assert [d.id for d in live.decisions(halting=False, limit=10)] == ["c0", "c2", "c3", "c4"]


def _fields(node: NodeView) -> dict[str, Any]:
    return node._asdict()


def test_nodes_deciding_again_behind_many_started_ones_come_back_in_node_order() -> None:
    # F-35, F-24: after many of a wide fan-out's children started, a resumed child and a cancellation's
    # decisions are still taken in node order, as the pure function orders them
    container = NodeView("each", "RUNNING", container=True)
    kids = [NodeView(f"each:{i:03}", "PENDING", parent="each", origin="fanOut") for i in range(300)]
    nodes = {node.id: node for node in [container, *kids]}
    live = live_progress_of([(0, container)])
    live.add_children("each", ((1, kid) for kid in kids))

    def move(node_ids: list[str], state: str) -> None:
        live.set_states((node_id, state) for node_id in node_ids)
        nodes.update((node_id, nodes[node_id].with_state(state)) for node_id in node_ids)

    move([d.id for d in live.decisions(halting=False, limit=100)], "SCHEDULED")  # a third started
    assert live.decisions(halting=False, limit=1)[0].id == "each:100"
    move(["each:050"], "PENDING")  # resumed
    assert [d.id for d in live.decisions(halting=False, limit=2)] == ["each:050", "each:100"]
    _agree(live, list(nodes.values()), cancelling=False, expired=False)
    move([d.id for d in live.decisions(halting=False, limit=151)], "SCHEDULED")  # most started
    assert live.decisions(halting=False, limit=1)[0].id == "each:250"
    move(["each:007"], "PENDING")
    assert [d.id for d in live.decisions(halting=False, limit=2)] == ["each:007", "each:250"]
    _agree(live, list(nodes.values()), cancelling=False, expired=False)
    _agree(live, list(nodes.values()), cancelling=True, expired=False)
