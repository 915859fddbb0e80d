"""Whole-configuration checks of ``flows``, run when define_tsumugi() runs (T-1).

The builder already rejects most mistakes as they are made; this pass also covers flows assembled by
hand and the facts only the full configuration knows (registered bindings and subflow targets).
"""
# F-6, F-12, F-17

from __future__ import annotations

from collections.abc import Mapping

from tsumugi.core.flow.ids import is_valid_name, validate_flow_name
from tsumugi.core.flow.model import Flow, NodeKind, NodeSpec, flow_name_of, validate_deadline_ms
from tsumugi.errors import InvalidFlowError


def validate_flows(flows: Mapping[str, Flow], bindings: Mapping[str, object]) -> None:
    """Raise the first problem found in ``flows``; ``bindings`` are the registered performers."""
    for name, flow in flows.items():
        validate_flow_name(name)
        if not isinstance(flow, Flow):
            raise InvalidFlowError(f"flow is not a flow definition: {name}")
        if flow.deadline_ms is not None:
            validate_deadline_ms(flow.deadline_ms)
        seen: set[str] = set()
        _reject_shared_events(name, flow)
        for spec in flow.nodes:
            if spec.id in seen:
                raise InvalidFlowError(f"duplicate node id: {name}.{spec.id}")
            seen.add(spec.id)
            _validate_node(name, spec, flow, flows, bindings)
        _reject_cycles(name, flow)


def _validate_node(
    name: str, spec: NodeSpec, flow: Flow, flows: Mapping[str, Flow], bindings: Mapping[str, object]
) -> None:
    if not is_valid_name(spec.id):
        raise InvalidFlowError(
            f'invalid node id: "{spec.id}" in flow {name} (alphanumeric, hyphen and underscore only)'
        )
    if spec.kind is NodeKind.SUBFLOW:
        if spec.target is None or flow_name_of(spec.target, flows) is None:
            raise InvalidFlowError(f"subflow target is not registered: {name}.{spec.id}")
    elif spec.kind is NodeKind.WAIT:
        if spec.wait is None:
            raise InvalidFlowError(f"wait definition is missing: {name}.{spec.id}")
    elif spec.binding not in bindings:
        raise InvalidFlowError(f"binding is not registered: {name}.{spec.id} -> {spec.binding}")
    for dep in spec.after.values():
        if dep == spec.id or flow.node(dep) is None:
            raise InvalidFlowError(f"depends on an undeclared node: {name}.{spec.id} -> {dep}")
    if spec.trigger is not None and not spec.after:
        raise InvalidFlowError(f"trigger requires after: {name}.{spec.id}")


def _reject_shared_events(name: str, flow: Flow) -> None:
    """ADR-0148: one node per event name, so an event answers with the node it satisfied."""
    waiting: dict[str, str] = {}
    for spec in flow.nodes:
        event = spec.wait.event if spec.wait is not None else None
        if event is None:
            continue
        if event in waiting:
            raise InvalidFlowError(
                f"two nodes wait for event {event} in flow {name}: {waiting[event]}, {spec.id}"
            )
        waiting[event] = spec.id


def _reject_cycles(name: str, flow: Flow) -> None:
    """Depth-first search for a back edge; reports the cycle's path."""
    done: set[str] = set()
    for root in flow.nodes:
        if root.id in done:
            continue
        stack: list[tuple[str, list[str]]] = [(root.id, list(_deps(flow, root.id)))]
        on_path = [root.id]
        while stack:
            node_id, pending = stack[-1]
            if not pending:
                stack.pop()
                on_path.pop()
                done.add(node_id)
                continue
            dep = pending.pop()
            if dep in on_path:
                cycle = [*on_path[on_path.index(dep) :], dep]
                raise InvalidFlowError(f"cycle in flow {name}: {' -> '.join(cycle)}")
            if dep not in done:
                stack.append((dep, list(_deps(flow, dep))))
                on_path.append(dep)


def _deps(flow: Flow, node_id: str) -> tuple[str, ...]:
    spec = flow.node(node_id)
    return spec.edges if spec is not None else ()
