"""``f.sleep`` and ``f.wait_for_event``: flow nodes that wait instead of running a job (ADR-0147, ADR-0148).

::

    @flow
    def ORDER(f):
        placed = f.node("place", "PlaceOrder", input=lambda i, d: i)
        approval = f.wait_for_event("approval", after={"placed": placed}, event="order.approved",
                                    timeout_ms=86_400_000, on_timeout="fail")
        cool = f.sleep("cool_down", after={"approval": approval}, ms=3_600_000)
        f.node("ship", "Ship", after={"cool": cool, "approval": approval}, input=lambda i, d: d["approval"])
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from tsumugi.core.flow.model import Mapper, NodeKind, NodeSpec
from tsumugi.core.flow.node_options import trigger_of
from tsumugi.core.flow.waits import WaitSpec, event_spec, sleep_spec
from tsumugi.errors import InvalidFlowError

if TYPE_CHECKING:
    from tsumugi.flows import NodeRef

__all__ = ["WaitNodeBuilder"]


class WaitNodeBuilder:
    """The waiting nodes of the builder ``f``; ``FlowBuilder`` mixes this in."""

    _nodes: dict[str, NodeSpec]

    def _edges(self, node_id: str, after: Mapping[str, NodeRef] | None) -> dict[str, str]:
        raise NotImplementedError  # FlowBuilder's own F-12 checks

    def sleep(
        self,
        id: str,
        *,
        ms: int | None = None,
        until: Mapper | None = None,
        after: Mapping[str, NodeRef] | None = None,
        trigger: str | None = None,
        when: Mapper | None = None,
    ) -> NodeRef:
        """A node that completes ``ms`` after it starts, or at ``until(flow_input, deps)`` (epoch ms).

        It holds no job while it sleeps; the run wakes for it, also after a restart. Its result is None.
        """
        edges = self._edges(id, after)  # F-12 checks come first
        return self._add_wait(id, edges, after, trigger, when, sleep_spec(id, ms, until))

    def wait_for_event(
        self,
        id: str,
        *,
        event: str,
        timeout_ms: int | None = None,
        on_timeout: str = "fail",
        after: Mapping[str, NodeRef] | None = None,
        trigger: str | None = None,
        when: Mapper | None = None,
    ) -> NodeRef:
        """A node that completes when ``event`` is sent to the run; the event's payload is its result.

        ``send_event`` may come before the node starts: the event is kept and the node takes it at once.
        Without an event within ``timeout_ms`` the node fails, or with ``on_timeout="skip"`` is skipped.
        """
        edges = self._edges(id, after)  # F-12 checks come first
        return self._add_wait(id, edges, after, trigger, when, event_spec(id, event, timeout_ms, on_timeout))

    def _add_wait(
        self,
        node_id: str,
        edges: dict[str, str],
        after: Mapping[str, NodeRef] | None,
        trigger: str | None,
        when: Mapper | None,
        wait: WaitSpec,
    ) -> NodeRef:
        from tsumugi.flows import NodeRef  # the builder's own module, already loaded

        if when is not None and not callable(when):
            raise InvalidFlowError(f"when must be a function: {node_id}")
        if wait.event is not None:
            other = next((n.id for n in self._nodes.values() if n.wait and n.wait.event == wait.event), None)
            if other is not None:
                raise InvalidFlowError(f"two nodes wait for event {wait.event}: {other}, {node_id}")
        self._nodes[node_id] = NodeSpec(
            id=node_id,
            kind=NodeKind.WAIT,
            binding="",
            after=edges,
            input=None,
            when=when,
            trigger=trigger_of(node_id, trigger, after),
            wait=wait,
        )
        return NodeRef(node_id)
