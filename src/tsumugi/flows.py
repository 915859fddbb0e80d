"""Flow definitions: ``create_flow(performers)`` and the builder ``f`` (T-1, T-4; ADR-0070).

::

    flow = create_flow(performers)

    @flow(deadline_ms=600_000)          # or: GREETINGS = flow(build, deadline_ms=600_000)
    def GREETINGS(f):
        lst = f.node("list", "ListNames", input=lambda i, d: {"prefix": i["prefix"]})
        each = f.fan_out("greet", "Greet", after={"list": lst},
                         over=lambda i, d: d["list"]["names"], input=lambda name: {"name": name})
        f.node("report", "Report", after={"each": each}, input=lambda i, d: d["each"])
"""
# F-11..F-17

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping
from typing import TypeAlias, overload

from tsumugi.core.config import ExponentialBackoff, FixedBackoff
from tsumugi.core.flow.ids import validate_node_id
from tsumugi.core.flow.model import ConcurrencyKey, Flow, Mapper, NodeKind, NodeSpec, validate_deadline_ms
from tsumugi.core.flow.node_options import job_options, refuse_unique_key, trigger_of
from tsumugi.core.flow.validation import validate_flows
from tsumugi.errors import EnqueueError, InvalidFlowError
from tsumugi.flow_waits import WaitNodeBuilder
from tsumugi.performer import performer_defaults_wire

__all__ = ["Flow", "FlowBuilder", "FlowFactory", "NodeRef", "create_flow", "validate_flows"]

# A node's retry backoff, as a job's: a backoff object or its mapping (checked when the node is declared).
Backoff: TypeAlias = FixedBackoff | ExponentialBackoff | Mapping[str, object] | None


class NodeRef:
    """What a builder call returns: name it in ``after`` to depend on the node."""

    # F-12

    __slots__ = ("id",)

    def __init__(self, node_id: str) -> None:
        self.id = node_id

    def __repr__(self) -> str:
        return f"NodeRef({self.id!r})"


class FlowBuilder(WaitNodeBuilder):
    """The ``f`` handed to a flow's build function; ``sleep`` and ``wait_for_event`` come from the mixin."""

    def __init__(self, performers: Mapping[str, object]) -> None:
        self._performers = performers
        self._nodes: dict[str, NodeSpec] = {}

    def node(
        self,
        id: str,
        binding: str,
        *,
        input: Mapper,
        after: Mapping[str, NodeRef] | None = None,
        trigger: str | None = None,
        when: Mapper | None = None,
        max_attempts: int | None = None,
        backoff: Backoff = None,
        delay_ms: int | None = None,
        run_at: int | None = None,
        timeout_ms: int | None = None,
        priority: float | None = None,
        guarantee: str | None = None,
        concurrency_key: ConcurrencyKey = None,
        unique_key: None = None,
    ) -> NodeRef:
        """A job node: one job whose payload is ``input(flow_input, deps)``."""
        # F-14
        edges = self._edges(id, after)  # F-12 checks come first
        refuse_unique_key(id, unique_key)
        options = job_options(id, max_attempts, backoff, delay_ms, run_at, timeout_ms, priority, guarantee)
        return self._add(
            NodeSpec(
                id=id,
                kind=NodeKind.JOB,
                binding=binding,
                after=edges,
                input=input,
                when=when,
                trigger=trigger_of(id, trigger, after),
                options=options,
                concurrency_key=concurrency_key,
            )
        )

    def fan_out(
        self,
        id: str,
        binding: str,
        *,
        over: Mapper,
        input: Mapper,
        key: Mapper | None = None,
        after: Mapping[str, NodeRef] | None = None,
        trigger: str | None = None,
        when: Mapper | None = None,
        collect: bool = False,
        max_attempts: int | None = None,
        backoff: Backoff = None,
        delay_ms: int | None = None,
        run_at: int | None = None,
        timeout_ms: int | None = None,
        priority: float | None = None,
        guarantee: str | None = None,
        concurrency_key: ConcurrencyKey = None,
        unique_key: None = None,
    ) -> NodeRef:
        """One child job per item of ``over(flow_input, deps)``; dependents see the summary.

        ``collect=True`` adds ``results`` (child key -> result) to that summary (ADR-0072).
        """
        # F-15
        edges = self._edges(id, after)  # F-12 checks come first
        refuse_unique_key(id, unique_key)
        options = job_options(id, max_attempts, backoff, delay_ms, run_at, timeout_ms, priority, guarantee)
        return self._add(
            NodeSpec(
                id=id,
                kind=NodeKind.FAN_OUT,
                binding=binding,
                after=edges,
                input=input,
                over=over,
                key=key,
                when=when,
                trigger=trigger_of(id, trigger, after),
                options=options,
                concurrency_key=concurrency_key,
                collect=bool(collect),
            )
        )

    def subflow(
        self,
        id: str,
        flow: Flow,
        *,
        input: Mapper,
        after: Mapping[str, NodeRef] | None = None,
        trigger: str | None = None,
        when: Mapper | None = None,
    ) -> NodeRef:
        """Start ``flow`` as a child run and mirror its final state."""
        # F-16
        if not isinstance(flow, Flow):
            raise InvalidFlowError(f"subflow target must be a flow: {id}")
        return self._add(
            NodeSpec(
                id=id,
                kind=NodeKind.SUBFLOW,
                binding="",
                after=self._edges(id, after),
                input=input,
                when=when,
                trigger=trigger_of(id, trigger, after),
                target=flow,
            )
        )

    def _edges(self, node_id: str, after: Mapping[str, NodeRef] | None) -> dict[str, str]:
        """Check the id and the dependencies in the original's order; a node cannot depend on itself."""
        validate_node_id(node_id)
        if node_id in self._nodes:
            raise InvalidFlowError(f"duplicate node id: {node_id}")
        if after is not None and not isinstance(after, Mapping):
            raise InvalidFlowError(f"after must be a mapping of names to node references: {node_id}")
        edges: dict[str, str] = {}
        for name, ref in (after or {}).items():
            dep = ref.id if isinstance(ref, NodeRef) else str(ref)
            if dep not in self._nodes:
                raise InvalidFlowError(f"depends on an undeclared node: {node_id} -> {dep}")
            edges[name] = dep
        return edges

    def _add(self, spec: NodeSpec) -> NodeRef:
        if spec.input is None or not callable(spec.input):
            raise InvalidFlowError(f"input must be a function: {spec.id}")
        if spec.kind is NodeKind.FAN_OUT and not callable(spec.over):
            raise InvalidFlowError(f"over must be a function: {spec.id}")
        for name, fn in (("key", spec.key), ("when", spec.when)):
            if fn is not None and not callable(fn):
                raise InvalidFlowError(f"{name} must be a function: {spec.id}")
        key = spec.concurrency_key
        if key is not None and not isinstance(key, str) and not callable(key):
            raise InvalidFlowError(f"concurrency_key must be a string or a function: {spec.id}")
        if spec.kind is not NodeKind.SUBFLOW:
            self._check_performer(spec)
            spec = self._with_class_defaults(spec)
        self._nodes[spec.id] = spec
        return NodeRef(spec.id)

    def _with_class_defaults(self, spec: NodeSpec) -> NodeSpec:
        """ADR-0141: the performer's class-attribute job options, under the node's own."""
        entry = self._performers.get(spec.binding)
        cls = entry if isinstance(entry, type) else getattr(entry, "performer", None)
        if not isinstance(cls, type):
            return spec
        try:
            defaults = performer_defaults_wire(cls)
        except EnqueueError as error:
            raise InvalidFlowError(f"invalid job option in node {spec.id}: {error}") from None
        if not defaults:
            return spec
        return dataclasses.replace(spec, options={**defaults, **spec.options})

    def _check_performer(self, spec: NodeSpec) -> None:
        """a node can never set unique_key; a required concurrency_key must be given."""
        # F-14
        entry = self._performers.get(spec.binding)
        # A remote() marker carries the performer class it stands for (J-62).
        cls = entry if isinstance(entry, type) else getattr(entry, "performer", None)
        requires: frozenset[str] = frozenset(getattr(cls, "requires", None) or ())
        if "unique_key" in requires:
            raise InvalidFlowError(f"{spec.binding} requires unique_key, which nodes cannot set: {spec.id}")
        if "concurrency_key" in requires and spec.concurrency_key is None:
            raise InvalidFlowError(f"concurrency_key is required by {spec.binding}: {spec.id}")

    def build(self, deadline_ms: int | None) -> Flow:
        return Flow(tuple(self._nodes.values()), deadline_ms)


BuildFn = Callable[[FlowBuilder], object]


class FlowFactory:
    """``flow(build, deadline_ms=None)``; also usable as ``@flow`` or ``@flow(deadline_ms=...)``."""

    def __init__(self, performers: Mapping[str, object]) -> None:
        self._performers = performers

    @overload
    def __call__(self, build: BuildFn, deadline_ms: int | None = None) -> Flow: ...

    @overload
    def __call__(
        self, build: None = None, *, deadline_ms: int | None = None
    ) -> Callable[[BuildFn], Flow]: ...

    def __call__(
        self, build: BuildFn | None = None, deadline_ms: int | None = None
    ) -> Flow | Callable[[BuildFn], Flow]:
        if build is None:
            return lambda fn: self(fn, deadline_ms=deadline_ms)
        # F-11: the deadline is checked before build runs.
        deadline = None if deadline_ms is None else validate_deadline_ms(deadline_ms)
        builder = FlowBuilder(self._performers)
        returned = build(builder)
        if inspect.iscoroutine(returned):  # F-11: build runs synchronously; an async one declared nothing
            returned.close()
            raise InvalidFlowError("build must be a plain function, not async")
        return builder.build(deadline)


def create_flow(performers: Mapping[str, object]) -> FlowFactory:
    """The ``flow`` factory for these performers (the seed's ``createFlow``)."""
    # F-11
    return FlowFactory(performers)
