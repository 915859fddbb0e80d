"""What the engine tells telemetry, as protocols and plain records; nothing here imports OpenTelemetry."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

T = TypeVar("T")
R = TypeVar("R")
Inputs = Sequence[Mapping[str, object]]


@dataclass(frozen=True, slots=True)
class RunRecord:
    """A run that just settled, as its span shows it (epoch ms on the engine's clock)."""

    run_id: str
    flow: str
    state: str
    created_at: int
    settled_at: int


@dataclass(frozen=True, slots=True)
class NodeRecord:
    """One node of a settled run: from its creation to its last change (epoch ms)."""

    node_id: str
    binding: str
    state: str
    job_id: str | None
    child_run_id: str | None
    error: str | None
    created_at: int
    updated_at: int


class AttemptTrace(Protocol):
    """One attempt's span, from the consumer's start to its outcome."""

    def run(self, pending: Awaitable[T]) -> Awaitable[T]:
        """Await ``pending`` (the perform) with the attempt's span current; record what it raises."""
        ...

    def end(self, outcome: Mapping[str, object], now_ms: int, error: BaseException | None = None) -> None:
        """End the span with the reported outcome; only the first call counts."""
        ...


class Telemetry(Protocol):
    """The hooks engine code calls when ``tsumugi.telemetry.active`` is set."""

    def enqueue(self, inputs: Inputs, send: Callable[[Inputs], Awaitable[list[R]]]) -> Awaitable[list[R]]:
        """Run ``send`` in a ``tsumugi.enqueue`` span; inputs without a traceparent get the span's.

        ``send`` answers one value per input: a job id, or any answer that names one.
        """
        ...

    def attempt(self, body: Mapping[str, object], binding: str, job_id: str, now_ms: int) -> AttemptTrace:
        """Start the span of the attempt a dispatch message ``body`` asks for."""
        ...

    def jobs_moved(self, binding: str, state: str, count: int = 1, *, retried: bool = False) -> None:
        """``count`` jobs of ``binding`` entered ``state``; ``retried``: a failed attempt goes again."""
        ...

    def jobs_dispatched(self, binding: str, lags_ms: Sequence[int]) -> None:
        """Jobs entered QUEUED (sent to the queue), each ``lag_ms`` after its ``run_after``."""
        ...

    def run_settled(self, run: RunRecord, nodes: Sequence[NodeRecord]) -> None:
        """A run left RUNNING: emit its span and its settled nodes' spans."""
        ...
