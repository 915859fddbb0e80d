"""``simulate_flow``: the order and payloads of a flow's nodes without actors or performers."""
# F-94, F-95

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Final, TypeAlias

from tsumugi.clock import FixedClock
from tsumugi.core.flow.advance import DecisionType, NodeView, advance
from tsumugi.core.flow.building import (
    WHEN_FALSE,
    build_deps,
    build_job,
    expand_fan_out,
    subflow_input,
    when_allows,
)
from tsumugi.core.flow.model import Flow, NodeKind, NodeSpec
from tsumugi.core.flow.results import collected_dep_value, fan_out_summary
from tsumugi.core.flow.waits import WaitKind, due_outcome, is_due, wake_at_of
from tsumugi.core.json_types import JsonObject, JsonValue

__all__ = ["SimulatedNode", "SimulationResult", "simulate_flow"]

MAX_ROUNDS: Final = 1000  # F-94: a bound on decision rounds; a finite flow settles long before


@dataclass(frozen=True, slots=True)
class SimulatedNode:
    """One recorded node; ``error`` carries a skip reason or a failing ``when`` (T-4, T-6)."""

    id: str
    binding: str
    payload: object
    state: str
    result: JsonValue
    parent: str | None
    error: str | None = field(default=None, compare=False)  # records compare by the spec's six fields
    at: int | None = field(default=None, compare=False)  # simulated epoch ms when the node settled


@dataclass(frozen=True, slots=True)
class SimulationResult:
    nodes: list[SimulatedNode] = field(default_factory=list)
    state: str = "RUNNING"


@dataclass(slots=True)
class _Child:
    view: NodeView
    binding: str
    payload: object


# Per node id a result or a function of ``{id, binding, payload}`` making it; or one such function for all.
# A result is JSON, as a performer's is once stored.
MakeResult: TypeAlias = Callable[[dict[str, object]], JsonValue]
Results: TypeAlias = "Mapping[str, JsonValue | MakeResult] | MakeResult | None"


class _Simulation:
    def __init__(
        self,
        flow: Flow,
        flow_input: object,
        results: Results,
        fails: Collection[str],
        events: Mapping[str, JsonValue],
        clock: FixedClock | None,
    ) -> None:
        self.flow = flow
        self.flow_input = flow_input
        self.results = results
        self.fails = frozenset(fails)
        self.events = events
        self.clock = clock
        self.now = clock.now() if clock is not None else 0
        self.wakes: dict[str, int] = {}  # waiting node -> when it stops waiting (ADR-0147)
        self.views: dict[str, NodeView] = {
            spec.id: NodeView(
                spec.id,
                "PENDING",
                container=spec.kind is NodeKind.FAN_OUT,
                after=spec.edges,
                trigger=spec.effective_trigger.value,
                waiting=spec.wait is not None,
            )
            for spec in flow.nodes
        }
        self.children: dict[str, _Child] = {}
        self.recorded: dict[str, JsonValue] = {}
        self.out: list[SimulatedNode] = []

    def run(self) -> SimulationResult:
        for _ in range(MAX_ROUNDS):
            progress = advance(list(self.views.values()), cancelling=False)
            if not progress.decisions:
                if not self.wakes:
                    break
                self.wake_next()
                continue
            for decision in progress.decisions:
                self.apply(decision.type, decision.id, decision.reason)
        return SimulationResult(self.out, advance(list(self.views.values()), cancelling=False).state)

    def dep_value(self, node_id: str) -> object:
        spec = self.flow.node(node_id)
        value = self.recorded.get(node_id)
        if spec is not None and spec.collect and isinstance(value, dict):
            kids = {c.view.id.rpartition(":")[2]: self.recorded.get(c.view.id) for c in self._kids(node_id)}
            return collected_dep_value(value, kids)
        return value

    def apply(self, kind: DecisionType, node_id: str, reason: str | None) -> None:
        view = self.views[node_id]
        if kind is DecisionType.SKIP:
            self.record(view, self._binding(node_id), None, "SKIPPED", None, reason)
        elif kind is DecisionType.AGGREGATE:
            summary: JsonObject = {**fan_out_summary(c.view.state for c in self._kids(node_id))}
            self.record(view, self._binding(node_id), None, "COMPLETED", summary)
        elif kind is DecisionType.EXPAND:
            self.expand(self._spec(node_id))
        elif kind is DecisionType.WAIT:
            self.wait(view)
        else:
            self.start(view)

    def start(self, view: NodeView) -> None:
        child = self.children.get(view.id)
        if child is not None:
            binding, payload = child.binding, child.payload
        else:
            spec = self._spec(view.id)
            deps = build_deps(spec, self.dep_value)
            try:
                allowed = when_allows(spec, self.flow_input, deps)
            except Exception as exc:
                self.record(view, spec.binding, None, "FAILED", None, str(exc))
                return
            if not allowed:
                self.record(view, spec.binding, None, "SKIPPED", None, WHEN_FALSE)
                return
            binding = spec.binding
            if spec.kind is NodeKind.SUBFLOW:
                payload = subflow_input(spec, self.flow_input, deps)
            else:
                payload = build_job(spec, self.flow_input, deps)["payload"]
        if view.id in self.fails:
            self.record(view, binding, payload, "FAILED", None)
            return
        self.record(view, binding, payload, "COMPLETED", self._result(view.id, binding, payload))

    def wait(self, view: NodeView) -> None:
        """ADR-0147/0148: a given event completes the node at once; otherwise it waits on the clock."""
        spec = self._spec(view.id)
        assert spec.wait is not None
        deps = build_deps(spec, self.dep_value)
        try:
            allowed = when_allows(spec, self.flow_input, deps)
            wake_at = wake_at_of(spec.id, spec.wait, self.flow_input, deps, self.now) if allowed else None
        except Exception as exc:
            self.record(view, "", None, "FAILED", None, str(exc))
            return
        if not allowed:
            self.record(view, "", None, "SKIPPED", None, WHEN_FALSE)
        elif spec.wait.event is not None and spec.wait.event in self.events:
            self.record(view, "", None, "COMPLETED", self.events[spec.wait.event])
        elif spec.wait.kind is WaitKind.SLEEP and is_due(wake_at, self.now):
            self.record(view, "", None, "COMPLETED", None)
        else:
            self.views[view.id] = view.with_state("RUNNING")  # no timeout: it waits for ever
            if wake_at is not None:
                self.wakes[view.id] = wake_at

    def wake_next(self) -> None:
        """Move the clock to the earliest wake and settle every node due then."""
        self.now = max(self.now, min(self.wakes.values()))
        if self.clock is not None and self.clock.now() < self.now:
            self.clock.advance(self.now - self.clock.now())
        for node_id in [n for n, at in self.wakes.items() if at <= self.now]:
            del self.wakes[node_id]
            wait = self._spec(node_id).wait
            assert wait is not None
            outcome = due_outcome(wait.kind.value, wait.event, wait.on_timeout.value)
            self.record(self.views[node_id], "", None, outcome.state, None, outcome.error)

    def expand(self, spec: NodeSpec) -> None:
        deps = build_deps(spec, self.dep_value)
        view = self.views[spec.id]
        try:
            allowed = when_allows(spec, self.flow_input, deps)
        except Exception as exc:
            self.record(view, spec.binding, None, "FAILED", None, str(exc))
            return
        if not allowed:
            self.record(view, spec.binding, None, "SKIPPED", None, WHEN_FALSE)
            return
        for draft in expand_fan_out(spec, self.flow_input, deps):
            child_view = NodeView(draft.id, "PENDING", parent=spec.id, origin="fanOut")
            self.children[draft.id] = _Child(child_view, draft.binding, draft.payload)
            self.views[draft.id] = child_view
        self.views[spec.id] = view.with_state("RUNNING")  # F-94: nothing is recorded for an expansion

    def record(
        self,
        view: NodeView,
        binding: str,
        payload: object,
        state: str,
        result: JsonValue,
        error: str | None = None,
    ) -> None:
        updated = view.with_state(state)
        self.views[view.id] = updated
        if view.id in self.children:
            self.children[view.id].view = updated
        self.recorded[view.id] = result
        self.out.append(SimulatedNode(view.id, binding, payload, state, result, view.parent, error, self.now))

    def _result(self, node_id: str, binding: str, payload: object) -> JsonValue:
        node: dict[str, object] = {"id": node_id, "binding": binding, "payload": payload}
        if callable(self.results):
            return self.results(node)
        value = (self.results or {}).get(node_id)
        # Seed page "Testing": a value "can be either the return value itself or a function that produces it";
        # a node's real return value is JSON, so a callable can only mean the latter.
        return value(node) if callable(value) else value

    def _binding(self, node_id: str) -> str:
        child = self.children.get(node_id)
        return child.binding if child is not None else self._spec(node_id).binding

    def _spec(self, node_id: str) -> NodeSpec:
        spec = self.flow.node(node_id)
        assert spec is not None  # the views come from this flow's own declarations
        return spec

    def _kids(self, parent: str) -> list[_Child]:
        return [c for c in self.children.values() if c.view.parent == parent]


def simulate_flow(
    flow: Flow,
    input: object,
    *,
    results: Results = None,
    fails: Collection[str] = (),
    events: Mapping[str, JsonValue] | None = None,
    clock: FixedClock | None = None,
) -> SimulationResult:
    """Run ``advance`` to the end with made-up node outcomes.

    ``results`` maps node ids to return values, or to functions of ``{id, binding, payload}`` that produce
    them; or it is one such function for every node. Nodes listed in ``fails`` fail. Subflow nodes act as
    plain nodes whose payload is the child run's input; spawns, deadlines and the node limit are not
    simulated.

    ``events`` maps event names to payloads: a wait-for-event node whose event is given completes with
    it as its result as soon as it waits; one whose event is not given times out (or, without a
    timeout, keeps the run RUNNING). Sleeps and timeouts pass on a simulated clock that starts at
    ``clock.now()`` (0 without a clock); a ``FixedClock`` given here is advanced to each wake, and
    every record's ``at`` says when the node settled.
    """
    # F-94
    return _Simulation(flow, input, results, fails, events or {}, clock).run()
