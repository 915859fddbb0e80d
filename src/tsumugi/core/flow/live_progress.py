"""``advance`` kept up to date node by node (ADR-0115): the same decisions, without re-reading the run.

``advance`` rebuilds the whole tree on every call, so a run re-evaluated on every tick costs O(n) per
tick. ``LiveProgress`` holds the same per-node flags (settled, succeeded, failed; T-1) as
counters over each node's children, changes them only along the parent chain of a node that moved,
and re-decides only the dirty nodes: the node itself, its parent and the nodes that depend on it.
Decisions come from ``advance.decide``, so both paths share one rule table.

The nodes holding a decision are kept in node order as a list that is only appended to and sorted when
read: a node whose decision goes stays in it until the list is compacted, and reading starts past the
run of such nodes at its front (the nodes that started first).
"""
# F-30, F-31

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final

from tsumugi.core.flow.advance import FAN_OUT_ORIGIN, Decision, NodeView, decide
from tsumugi.core.states import COUNTED_FAILED_NODE_STATES, FAILED_NODE_STATES, TERMINAL_NODE_STATES

_ABSENT: Final = (True, True, False)  # the flags a node that does not exist contributes: nothing
_PENDING: Final = (False, False, False)  # the flags of a PENDING node without children


@dataclass(slots=True)
class _Kids:
    """Counts over one node's children: unsettled, and non-fan-out ones not succeeded or failed."""

    unsettled: int = 0
    unsucceeded: int = 0
    failed: int = 0


_NO_KIDS: Final = _Kids()  # what a node without children counts, only ever read


class LiveProgress:
    """The run's nodes with their flags and current decisions, updated as nodes are added or move."""

    def __init__(self) -> None:
        self.by_id: dict[str, NodeView] = {}
        self._seq: dict[str, int] = {}
        self._kids: dict[str, _Kids] = {}
        self._dependents: dict[str, list[str]] = {}
        self._flags: dict[str, tuple[bool, bool, bool]] = {}
        self._dirty: set[str] = set()
        self._decisions: dict[str, Decision] = {}
        # (seq, id) of every node holding a decision, ascending (F-24), and of some that no longer do.
        self._order: list[tuple[int, str]] = []
        self._listed: set[str] = set()  # the ids in ``_order``
        self._sorted = True  # whether ``_order`` is in order: false after an append
        self._head = 0  # ``_order`` before this index holds no decision
        self._halting = False
        self.unsettled_roots = 0
        self.failed_roots = 0
        self.done = 0
        self.failed_count = 0

    # ------------------------------------------------------------------ NodeFlags
    def settled(self, node: NodeView) -> bool:
        return self._flags[node.id][0]

    def succeeded(self, node: NodeView) -> bool:
        return self._flags[node.id][1]

    def failed(self, node: NodeView) -> bool:
        return self._flags[node.id][2]

    # ------------------------------------------------------------------ changes
    def add(self, seq: int, node: NodeView) -> None:
        """A new node row (static at start, fan-out or spawned later); a known id is ignored."""
        # F-24
        if node.id in self.by_id:
            return
        self.by_id[node.id] = node
        self._seq[node.id] = seq
        for dep in dict.fromkeys(node.after):
            self._dependents.setdefault(dep, []).append(node.id)
        self._count(node.state, 1)
        self._flags[node.id] = _ABSENT
        self._refresh(node.id, was_present=False)  # also marks the nodes waiting for this id dirty

    def add_children(self, parent: str, children: Iterable[tuple[int, NodeView]]) -> None:
        """``add`` for each new PENDING child of ``parent`` without edges, refreshing ``parent`` once."""
        # F-49, F-56: fan-out and spawned children
        kids = self._kids.get(parent)
        if kids is None:
            kids = self._kids[parent] = _Kids()
        for seq, node in children:
            if node.id in self.by_id:
                continue
            assert node.state == "PENDING" and not node.after and node.parent == parent
            self.by_id[node.id] = node
            self._seq[node.id] = seq
            self._flags[node.id] = _PENDING
            self._dirty.add(node.id)
            self._dirty.update(self._dependents.get(node.id, ()))
            kids.unsettled += 1
            if node.origin != FAN_OUT_ORIGIN:
                kids.unsucceeded += 1
        if parent in self.by_id:
            self._refresh(parent, was_present=True)

    def set_state(self, node_id: str, state: str) -> None:
        self.set_states(((node_id, state),))

    def set_states(self, moves: Iterable[tuple[str, str]]) -> None:
        """``(node id, new state)`` for each node that moved; an unknown id is ignored."""
        by_id, kids, dirty = self.by_id, self._kids, self._dirty
        for node_id, state in moves:
            node = by_id.get(node_id)
            if node is None or node.state == state:
                continue
            was = node.state
            by_id[node_id] = node.with_state(state)
            if state not in TERMINAL_NODE_STATES and was not in TERMINAL_NODE_STATES and node_id not in kids:
                # Between two unfinished states (PENDING to SCHEDULED) a node without children keeps its
                # flags and the counters: only its own decision can change.
                dirty.add(node_id)
                continue
            # F-26: the counters, as ``_count`` keeps them, without a call per node
            self.done += (state in TERMINAL_NODE_STATES) - (was in TERMINAL_NODE_STATES)
            self.failed_count += (state in COUNTED_FAILED_NODE_STATES) - (was in COUNTED_FAILED_NODE_STATES)
            self._refresh(node_id, was_present=True)

    def _count(self, state: str, delta: int) -> None:
        self.done += delta if state in TERMINAL_NODE_STATES else 0  # F-26 node_done
        self.failed_count += delta if state in COUNTED_FAILED_NODE_STATES else 0  # F-26 node_failed

    def _refresh(self, node_id: str, *, was_present: bool) -> None:
        """Recompute the flags of ``node_id``, then of its ancestors for as long as they change."""
        by_id, flags, all_kids, dirty = self.by_id, self._flags, self._kids, self._dirty
        current = node_id
        present = was_present
        while True:
            dirty.add(current)  # its own decision reads its state and its children (AGGREGATE)
            node = by_id[current]
            old = flags[current]
            kids = all_kids.get(current, _NO_KIDS)
            state = node.state
            settled = state in TERMINAL_NODE_STATES and kids.unsettled == 0  # F-29, F-30
            succeeded = settled and state == "COMPLETED" and kids.unsucceeded == 0  # F-31
            new = (settled, succeeded, state in FAILED_NODE_STATES or kids.failed > 0)  # T-1
            if new == old and present:
                return
            flags[current] = new
            waiting = self._dependents.get(current)
            if waiting:
                dirty.update(waiting)
            before = old if present else _ABSENT
            parent_id = node.parent
            if parent_id is None:
                self.unsettled_roots += (not new[0]) - (not before[0])
                self.failed_roots += new[2] - before[2]
                return
            parent = all_kids.get(parent_id)
            if parent is None:
                parent = all_kids[parent_id] = _Kids()
            parent.unsettled += (not new[0]) - (not before[0])
            if node.origin != FAN_OUT_ORIGIN:
                parent.unsucceeded += (not new[1]) - (not before[1])
                parent.failed += new[2] - before[2]
            if parent_id not in by_id:
                return  # an orphan counts toward nobody, as in ``advance``
            current, present = parent_id, True

    # ------------------------------------------------------------------ reading
    def decisions(
        self, *, halting: bool, limit: int, skip: Callable[[Decision], bool] = lambda _: False
    ) -> list[Decision]:
        """The first ``limit`` current decisions in node order that ``skip`` does not reject."""
        self._flush(halting)
        order, current = self._ordered(), self._decisions
        head = self._head
        while head < len(order) and order[head][1] not in current:
            head += 1  # those nodes decided nothing since: the next read starts past them
        self._head = head
        picked: list[Decision] = []
        for index in range(head, len(order)):
            if len(picked) >= limit:
                break
            decision = current.get(order[index][1])
            if decision is not None and not skip(decision):
                picked.append(decision)
        return picked

    def state(self, *, cancelling: bool, expired: bool) -> str:
        """The run's end state, from the root counters."""
        if self.unsettled_roots:
            return "RUNNING"
        if cancelling:
            return "CANCELLED"
        return "FAILED" if expired or self.failed_roots else "COMPLETED"

    def counters(self) -> tuple[int, int, int]:
        """``(node_total, node_done, node_failed)``."""
        # F-26
        return len(self.by_id), self.done, self.failed_count

    def _flush(self, halting: bool) -> None:
        if halting != self._halting:
            self._halting = halting
            self._dirty.update(self.by_id)  # cancellation or expiry touches every node at once
        by_id, all_kids, current = self.by_id, self._kids, self._decisions
        for node_id in self._dirty:
            node = by_id.get(node_id)
            if node is None:
                continue
            if node.state != "PENDING" and not (halting or node.container):
                decision = None  # what ``decide`` answers for it, without the call
            else:
                kids = all_kids.get(node_id)
                decision = decide(
                    node, self, halting=halting, kids_settled=kids is None or kids.unsettled == 0
                )
            if decision is None:
                current.pop(node_id, None)  # its entry in ``_order`` stays, until compacted
            else:
                self._place(node_id, decision)
        self._dirty.clear()

    def _place(self, node_id: str, decision: Decision) -> None:
        if node_id not in self._decisions and node_id in self._listed:
            self._head = 0  # a node decides again; its entry may lie before the head
        self._decisions[node_id] = decision
        if node_id not in self._listed:
            self._listed.add(node_id)
            self._order.append((self._seq[node_id], node_id))
            self._sorted = False

    def _ordered(self) -> list[tuple[int, str]]:
        """``_order`` sorted, and compacted once most of its entries no longer hold a decision."""
        order = self._order
        if len(order) > 2 * len(self._decisions) + 64:
            current = self._decisions
            order = self._order = [key for key in order if key[1] in current]
            self._listed = {node_id for _, node_id in order}
            self._head = 0
        if not self._sorted:
            order.sort()
            self._sorted = True
            self._head = 0
        return order


def live_progress_of(nodes: Iterable[tuple[int, NodeView]]) -> LiveProgress:
    """A ``LiveProgress`` holding ``nodes`` (``(seq, view)`` pairs)."""
    live = LiveProgress()
    for seq, node in nodes:
        live.add(seq, node)
    return live
