"""What a node turns into when it starts: deps, payload and job options, fan-out children.

Shared by the run coordinator and ``simulate_flow`` so both build exactly the same payloads.
Mapping functions are user code; exceptions they raise propagate to the caller.
"""
# F-40..F-52

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from typing import Final, NamedTuple

from tsumugi.core.config import backoff_from
from tsumugi.core.flow.ids import CHILD_SEPARATOR, child_node_id
from tsumugi.core.flow.model import JOB_OPTION_KEYS, NodeSpec, call_mapper, mapper
from tsumugi.errors import InvalidConfigError

DepValue = Callable[[str], object]  # node id -> what a dependent sees for it (F-42)
WHEN_FALSE: Final = "when condition was false"  # T-6: the reason written for a when-skip (ADR-0070)


class ChildDraft(NamedTuple):
    """A fan-out child before insertion: payload and options are frozen now (a tuple: a fan-out makes
    one per item; children without a concurrency key of their own share one ``options``)."""

    # F-49, F-52

    id: str
    key: str
    binding: str
    payload: object
    options: Mapping[str, object]


def build_deps(spec: NodeSpec, dep_value: DepValue) -> dict[str, object]:
    """``deps`` keyed by the current code's ``after`` names."""
    # F-42, F-91
    return {name: dep_value(node_id) for name, node_id in spec.after.items()}


def wire_option(value: object) -> object:
    """A job option as JSON-shaped data (backoff objects become their stored camelCase dict)."""
    to_wire = getattr(value, "to_wire", None)
    if callable(to_wire):
        return to_wire()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


def static_options(spec: NodeSpec) -> dict[str, object]:
    """The node's job options in camelCase, unset ones left out."""
    # F-14
    return {k: wire_option(v) for k, v in spec.options.items() if v is not None}


def build_job(spec: NodeSpec, flow_input: object, deps: Mapping[str, object]) -> dict[str, object]:
    """``{payload,...options, concurrencyKey?}`` of a static job node, from the current code."""
    # F-40
    assert spec.input is not None
    job: dict[str, object] = {"payload": call_mapper(spec.input, flow_input, deps), **static_options(spec)}
    key = spec.concurrency_key
    if callable(key):
        job["concurrencyKey"] = call_mapper(key, flow_input, deps)
    elif key is not None:
        job["concurrencyKey"] = key
    return job


def subflow_input(spec: NodeSpec, flow_input: object, deps: Mapping[str, object]) -> object:
    """The child run's input, evaluated when the child starts (``startRun``)."""
    # F-36
    assert spec.input is not None
    return call_mapper(spec.input, flow_input, deps)


def when_allows(spec: NodeSpec, flow_input: object, deps: Mapping[str, object]) -> bool:
    """T-4: a node without ``when`` always runs; an exception propagates (the node then FAILS)."""
    return spec.when is None or bool(call_mapper(spec.when, flow_input, deps))


def expand_fan_out(spec: NodeSpec, flow_input: object, deps: Mapping[str, object]) -> list[ChildDraft]:
    """The children of a fan-out container, first key wins.

    Raises InvalidFlowError for a key outside the node-id charset.
    """
    # F-49, F-51, F-3
    assert spec.over is not None and spec.input is not None
    over = call_mapper(spec.over, flow_input, deps)
    if not isinstance(over, Iterable):
        raise TypeError(f"'{type(over).__name__}' object is not iterable")  # what list() would say
    items = list(over)
    options: Mapping[str, object] = static_options(spec)
    concurrency_key = spec.concurrency_key
    key_of = mapper(spec.key) if spec.key is not None else None
    child_key_of = mapper(concurrency_key) if callable(concurrency_key) else None
    if concurrency_key is not None and child_key_of is None:
        options = {**options, "concurrencyKey": concurrency_key}
    input_of = mapper(spec.input)
    prefix = spec.id + CHILD_SEPARATOR
    drafts: dict[str, ChildDraft] = {}
    for index, item in enumerate(items):
        if key_of is None:
            key = str(index)
            child_id = prefix + key  # digits only: always a valid key (F-3)
        else:
            key = str(key_of(item, index))
            child_id = child_node_id(spec.id, key)
        if child_id in drafts:
            continue
        child_options = options
        if child_key_of is not None:
            child_options = {**options, "concurrencyKey": child_key_of(item, index)}
        payload = input_of(item, flow_input, index)
        drafts[child_id] = ChildDraft(child_id, key, spec.binding, payload, child_options)
    return list(drafts.values())


def spawn_options(options: Mapping[str, object] | None) -> dict[str, object]:
    """Spawn options in camelCase, whichever spelling the performer used."""
    # F-55
    wire_names = {**JOB_OPTION_KEYS, "concurrency_key": "concurrencyKey"}
    wire = {wire_names.get(k, k): wire_option(v) for k, v in (options or {}).items() if v is not None}
    backoff = wire.get("backoff")
    if isinstance(backoff, Mapping):
        wire["backoff"] = _stored_backoff(backoff)
    return wire


def _stored_backoff(value: Mapping[str, object]) -> Mapping[str, object]:
    """A backoff mapping in the camelCase form the shard reads; one it cannot read stays as is."""
    # J-101
    try:
        return backoff_from(value).to_wire()
    except InvalidConfigError:  # the shard's own enqueue check reports it (J-29)
        return dict(value)
