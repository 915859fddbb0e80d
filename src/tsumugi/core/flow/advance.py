"""The run-progress decision ``advance`` with trigger gating (T-1..T-5).

Pure: node views in, decisions and the run state out. The coordinator and ``simulate_flow`` apply the
decisions; ``when`` conditions are evaluated by whoever applies a start, because only they hold the code.
"""
# F-29..F-33

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Final, NamedTuple, Protocol, Required, TypedDict

from tsumugi.core.states import FAILED_NODE_STATES, TERMINAL_NODE_STATES, RunStateName

FAN_OUT_ORIGIN: Final = "fanOut"


class DecisionType(StrEnum):
    START = "start"
    START_RUN = "startRun"
    EXPAND = "expand"
    AGGREGATE = "aggregate"
    SKIP = "skip"
    CANCEL = "cancel"
    WAIT = "wait"  # ADR-0147: a sleep or wait-for-event node starts waiting


class NodeView(NamedTuple):
    """What ``advance`` needs to know about one node row (a tuple: a run makes one per node move)."""

    id: str
    state: str
    container: bool = False
    subflow: bool = False
    parent: str | None = None
    origin: str = "static"
    after: tuple[str, ...] = ()
    trigger: str = "success"
    waiting: bool = False  # ADR-0147: a sleep or wait-for-event node

    def with_state(self, state: str) -> NodeView:
        """This node in ``state`` (``_replace`` without its keyword handling)."""
        return NodeView(
            self.id,
            state,
            self.container,
            self.subflow,
            self.parent,
            self.origin,
            self.after,
            self.trigger,
            self.waiting,
        )


class Decision(NamedTuple):
    """What happens next to one node (a tuple: a run makes one per node it decides)."""

    type: DecisionType
    id: str
    reason: str | None = None  # T-6: why a node is skipped


@dataclass(frozen=True, slots=True)
class Progress:
    decisions: list[Decision] = field(default_factory=list)
    state: RunStateName = "RUNNING"


class PlainNode(TypedDict, total=False):
    """The spec's plain view of a node, as ``advance`` also takes it."""

    id: Required[str]
    state: Required[str]
    container: bool
    subflow: bool
    parent: str | None
    origin: str | None
    after: Sequence[str] | None
    trigger: str | None
    waiting: bool


def view_of(node: PlainNode) -> NodeView:
    """A NodeView from a plain mapping; absent fields take the static-node defaults."""
    return NodeView(
        id=node["id"],
        state=node["state"],
        container=bool(node.get("container", False)),
        subflow=bool(node.get("subflow", False)),
        parent=node.get("parent"),
        origin=node.get("origin") or "static",
        after=tuple(node.get("after") or ()),
        trigger=node.get("trigger") or "success",
        waiting=bool(node.get("waiting", False)),
    )


def is_node_terminal(state: str) -> bool:
    """Whether a node in ``state`` is done: completed, failed, cancelled, stalled or skipped."""
    # F-29
    return state in TERMINAL_NODE_STATES


class _Tree:
    """settled / succeeded / failed of every node, computed children-first without recursion.

    Spawn chains can nest thousands deep (a page spawning the next page), so recursion is not an option.
    """

    def __init__(self, nodes: Sequence[NodeView]) -> None:
        self.by_id = {n.id: n for n in nodes}
        self.children: dict[str, list[NodeView]] = {}
        for n in nodes:
            if n.parent is not None:
                self.children.setdefault(n.parent, []).append(n)
        self._settled: dict[str, bool] = {}
        self._succeeded: dict[str, bool] = {}
        self._failed: dict[str, bool] = {}
        depth = self._depths(nodes)
        for node in sorted(nodes, key=lambda n: depth[n.id], reverse=True):
            kids = self.kids(node)
            # F-30: terminal, and so is every descendant.
            self._settled[node.id] = is_node_terminal(node.state) and all(self._settled[c.id] for c in kids)
            # F-31: fan-out children never affect their container; spawned children always do.
            self._succeeded[node.id] = (
                self._settled[node.id]
                and node.state == "COMPLETED"
                and all(c.origin == FAN_OUT_ORIGIN or self._succeeded[c.id] for c in kids)
            )
            # T-1/T-5: the node or a non-fan-out descendant actually failed (SKIPPED is not a failure).
            self._failed[node.id] = node.state in FAILED_NODE_STATES or any(
                c.origin != FAN_OUT_ORIGIN and self._failed[c.id] for c in kids
            )

    def _depths(self, nodes: Sequence[NodeView]) -> dict[str, int]:
        """Distance from the root of each node's parent chain."""
        depth: dict[str, int] = {}
        for node in nodes:
            path: list[str] = []
            current: NodeView | None = node
            while current is not None and current.id not in depth and current.id not in path:
                path.append(current.id)
                current = self.by_id.get(current.parent) if current.parent is not None else None
            base = depth[current.id] if current is not None and current.id in depth else -1
            for offset, node_id in enumerate(reversed(path)):
                depth[node_id] = base + 1 + offset
        return depth

    def kids(self, node: NodeView) -> list[NodeView]:
        return self.children.get(node.id, [])

    def settled(self, node: NodeView) -> bool:
        return self._settled[node.id]

    def succeeded(self, node: NodeView) -> bool:
        return self._succeeded[node.id]

    def failed(self, node: NodeView) -> bool:
        return self._failed[node.id]


class NodeFlags(Protocol):
    """What a decision reads about other nodes: ``_Tree`` here, ``LiveProgress`` incrementally."""

    @property
    def by_id(self) -> Mapping[str, NodeView]: ...

    def settled(self, node: NodeView) -> bool: ...

    def succeeded(self, node: NodeView) -> bool: ...

    def failed(self, node: NodeView) -> bool: ...


def decide(node: NodeView, tree: NodeFlags, *, halting: bool, kids_settled: bool) -> Decision | None:
    """The decision for one node, given whether all its children are settled."""
    # F-32, F-30
    if node.container and node.state == "RUNNING" and kids_settled:
        return Decision(DecisionType.AGGREGATE, node.id)
    if halting:
        # ADR-0147: a waiting node holds nothing to ask, so it is stopped like a pending one.
        running_stoppable = (node.subflow or node.waiting) and node.state == "RUNNING"
        if node.state in ("PENDING", "SCHEDULED") or running_stoppable:
            return Decision(DecisionType.CANCEL, node.id)
        return None
    return _gate(node, tree) if node.state == "PENDING" else None


def _gate(node: NodeView, tree: NodeFlags) -> Decision | None:
    """The decision for a PENDING node once its dependencies allow one (step 3, T-1, T-2)."""
    # F-32
    if not node.after:  # a node without dependencies: a fan-out or spawned child, or a first node
        if node.trigger == "failure":
            return Decision(DecisionType.SKIP, node.id, "trigger not met: no dependency failed")
        return _begin(node)
    missing = next((d for d in node.after if d not in tree.by_id), None)
    if missing is not None:
        return Decision(DecisionType.SKIP, node.id, f"dependency is missing: {missing}")
    deps = [tree.by_id[d] for d in node.after]
    if not all(tree.settled(d) for d in deps):
        return None
    if node.trigger == "failure":
        if not any(tree.failed(d) for d in deps):
            return Decision(DecisionType.SKIP, node.id, "trigger not met: no dependency failed")
    elif node.trigger != "always":
        blocker = next((d for d in deps if not tree.succeeded(d)), None)
        if blocker is not None:
            verb = "failed" if tree.failed(blocker) else "did not run"
            return Decision(DecisionType.SKIP, node.id, f"trigger not met: dependency {verb}: {blocker.id}")
    return _begin(node)


def _begin(node: NodeView) -> Decision:
    """How a PENDING node whose dependencies allow it begins."""
    if node.container:
        return Decision(DecisionType.EXPAND, node.id)
    if node.waiting:
        return Decision(DecisionType.WAIT, node.id)
    return Decision(DecisionType.START_RUN if node.subflow else DecisionType.START, node.id)


def advance(nodes: Sequence[NodeView | PlainNode], *, cancelling: bool, expired: bool = False) -> Progress:
    """Decide what happens next in a run and what state it is in (T-5).

    A node may also be given as the spec's plain view ``{id, state, container, subflow, parent, origin,
    after, trigger?}``.
    """
    # F-32, F-33, §6
    views = [node if isinstance(node, NodeView) else view_of(node) for node in nodes]
    tree = _Tree(views)
    halting = cancelling or expired
    decisions: list[Decision] = []
    for node in views:
        kids_settled = node.container and all(tree.settled(c) for c in tree.kids(node))
        decision = decide(node, tree, halting=halting, kids_settled=kids_settled)
        if decision is not None:
            decisions.append(decision)
    return Progress(decisions, _run_state(views, tree, cancelling=cancelling, expired=expired))


def _run_state(nodes: Sequence[NodeView], tree: _Tree, *, cancelling: bool, expired: bool) -> RunStateName:
    """The run's end state: FAILED only when some node actually failed, the run expired or never settled."""
    roots = [n for n in nodes if n.parent is None]
    if not all(tree.settled(r) for r in roots):
        return "RUNNING"
    if cancelling:
        return "CANCELLED"
    if expired or any(tree.failed(r) for r in roots):
        return "FAILED"
    return "COMPLETED"
