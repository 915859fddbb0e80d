"""The flow definition model: node specs, the Flow object and its persisted shape."""
# F-2, F-11..F-18

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Final

from tsumugi.core.json_types import JsonObject, JsonValue
from tsumugi.errors import InvalidFlowError

if TYPE_CHECKING:
    from tsumugi.core.flow.waits import WaitSpec


class NodeKind(StrEnum):
    JOB = "job"
    FAN_OUT = "fanOut"
    SUBFLOW = "subflow"
    WAIT = "wait"  # ADR-0147: a sleep or a wait for an event; runs no job


class Trigger(StrEnum):
    """When a node with dependencies runs (T-1)."""

    SUCCESS = "success"
    FAILURE = "failure"
    ALWAYS = "always"


# Python option name -> the camelCase key of the enqueue input (J-1: wire keys keep the original spelling).
JOB_OPTION_KEYS: Final[dict[str, str]] = {
    "max_attempts": "maxAttempts",
    "backoff": "backoff",
    "delay_ms": "delayMs",
    "run_at": "runAt",
    "timeout_ms": "timeoutMs",
    "priority": "priority",
    "guarantee": "guarantee",
}

# A user function of (input, deps) or (item, index) etc.; it declares as many of them as it reads.
Mapper = Callable[..., object]
ConcurrencyKey = str | Callable[..., str] | None


@dataclass(frozen=True, slots=True)
class NodeSpec:
    """One declared node. Functions live here only; the run stores the shape."""

    # F-18

    id: str
    kind: NodeKind
    binding: str
    after: Mapping[str, str]  # deps name -> node id (F-13)
    input: Mapper | None
    over: Mapper | None = None
    key: Mapper | None = None
    when: Mapper | None = None
    trigger: Trigger | None = None  # None: the default, "success" (T-1)
    options: Mapping[str, object] = field(default_factory=dict)  # camelCase job options (F-14)
    concurrency_key: ConcurrencyKey = None
    target: Flow | None = None  # subflow target, found by identity among registered flows (F-16)
    collect: bool = False  # ADR-0072: fan-out results readable downstream
    wait: WaitSpec | None = None  # ADR-0147: what a WAIT node waits for

    @property
    def edges(self) -> tuple[str, ...]:
        """The de-duplicated dependency ids in first-seen order."""
        # F-13
        return tuple(dict.fromkeys(self.after.values()))

    @property
    def effective_trigger(self) -> Trigger:
        return self.trigger or Trigger.SUCCESS


class Flow:
    """A DAG definition living in code. Build one with ``create_flow(performers)``."""

    # F-1

    __slots__ = ("_by_id", "deadline_ms", "nodes")

    def __init__(self, nodes: tuple[NodeSpec, ...], deadline_ms: int | None) -> None:
        if not nodes:
            raise InvalidFlowError("no nodes are declared")
        self.nodes = nodes
        self.deadline_ms = deadline_ms
        self._by_id = {n.id: n for n in nodes}

    def node(self, node_id: str) -> NodeSpec | None:
        """The spec of a static node, or None when the code no longer declares it."""
        # F-92
        return self._by_id.get(node_id)

    def __repr__(self) -> str:
        return f"Flow(nodes={[n.id for n in self.nodes]!r}, deadline_ms={self.deadline_ms!r})"


def validate_deadline_ms(value: object) -> int:
    """A positive integer of milliseconds; integral floats pass as in JS, bools never."""
    # F-11
    if isinstance(value, float) and value.is_integer() and value > 0:
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise InvalidFlowError(f"deadline_ms must be a positive integer: {value}")
    return value


def flow_name_of(flow: Flow, flows: Mapping[str, Flow]) -> str | None:
    """The first registered name whose value is ``flow`` itself (identity, first key wins)."""
    # F-16
    return next((name for name, candidate in flows.items() if candidate is flow), None)


def shape_of(flow: Flow, flows: Mapping[str, Flow]) -> list[JsonObject]:
    """The structure pinned at run start: ``{id, binding, container, after[], subflow?,...}``.

    ADR-0147 adds ``wait`` (the kind) and ``event`` to waiting nodes.
    """
    # F-18
    shape: list[JsonObject] = []
    for spec in flow.nodes:
        after: list[JsonValue] = list(spec.edges)
        entry: JsonObject = {
            "id": spec.id,
            "binding": spec.binding,
            "container": spec.kind is NodeKind.FAN_OUT,
            "after": after,
        }
        if spec.kind is NodeKind.SUBFLOW:
            name = flow_name_of(spec.target, flows) if spec.target is not None else None
            if name is None:
                raise InvalidFlowError(f"subflow target is not registered: {spec.id}")
            entry["subflow"] = name
        if spec.trigger is not None:
            entry["trigger"] = spec.trigger.value  # T-1: pinned with the edges it reads
        if spec.wait is not None:
            # ADR-0147: the kind and the event name are pinned, so an early event finds its node.
            entry["wait"] = spec.wait.kind.value
            if spec.wait.event is not None:
                entry["event"] = spec.wait.event
        shape.append(entry)
    return shape


def positional_arity(fn: Callable[..., object]) -> int | None:
    """How many positional arguments ``fn`` accepts; None means any number."""
    try:
        return _cached_arity(fn)
    except TypeError:  # an unhashable callable object is inspected every time
        return _arity(fn)


@functools.lru_cache(maxsize=1024)  # ADR-0115: a fan-out calls its mappers once per item
def _cached_arity(fn: Callable[..., object]) -> int | None:
    return _arity(fn)


def _arity(fn: Callable[..., object]) -> int | None:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    count = 0
    for param in params:
        if param.kind is inspect.Parameter.VAR_POSITIONAL:
            return None
        if param.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
            count += 1
    return count


def call_mapper(fn: Callable[..., object], *args: object) -> object:
    """Call a mapping function with only as many arguments as it declares."""
    arity = positional_arity(fn)
    return fn(*(args if arity is None else args[:arity]))


def mapper(fn: Callable[..., object]) -> Callable[..., object]:
    """``call_mapper`` for one function called many times: its arity is looked up once."""
    arity = positional_arity(fn)
    if arity is None:
        return fn
    return lambda *args: fn(*args[:arity])
