"""The local runtime's part of ``GET /metrics`` (ADR-0139): bound as ``env.TSUMUGI_PROMETHEUS``.

The REST app reads the read model and the shards itself; only the runtime can see its dispatch queue,
and only it knows when it started, the instant its ``tsumugi_*_total`` counters count from.
"""

from __future__ import annotations

from tsumugi.runtimes.local.dispatch_queue import DurableQueue


class LocalRuntimeGauges:
    """``tsumugi.api.options.RuntimeGauges`` over one runtime's queue."""

    __slots__ = ("_queue", "_started_at_ms")

    def __init__(self, queue: DurableQueue, started_at_ms: int) -> None:
        self._queue = queue
        self._started_at_ms = started_at_ms

    @property
    def started_at_ms(self) -> int:
        return self._started_at_ms

    def queue_depth(self) -> int:
        return self._queue.depth()

    def __repr__(self) -> str:
        return f"LocalRuntimeGauges(started_at_ms={self._started_at_ms})"
