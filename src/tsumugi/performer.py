"""The performer API: what job code sees. Imports nothing of the shard, SQL or HTTP (J-8, 10.8)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from tsumugi.clock import Clock, SystemClock
from tsumugi.core.flow.ids import validate_node_id

__all__ = ["HeartbeatResult", "JobContext", "Performer", "SpawnRequest", "remote"]


@dataclass(frozen=True, slots=True)
class HeartbeatResult:
    """What ``ctx.heartbeat()`` answers (J-69a)."""

    cancel_requested: bool = False


@dataclass(frozen=True, slots=True)
class SpawnRequest:
    """A child node a flow performer asked for with ``ctx.spawn`` (shipped with a success report)."""

    id: str
    binding: str
    payload: Any
    options: dict[str, Any] = field(default_factory=dict)


HeartbeatFn = Callable[[Any], Awaitable[HeartbeatResult]]


class JobContext:
    """Per-attempt context handed to ``perform`` (spec §6.2)."""

    __slots__ = ("_clock", "_heartbeat", "attempt", "deadline_at", "job_id", "spawns", "traceparent")

    def __init__(
        self,
        *,
        job_id: str,
        attempt: int,
        deadline_at: int,
        heartbeat: HeartbeatFn | None = None,
        traceparent: str | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.job_id = job_id
        self.attempt = attempt
        self.deadline_at = deadline_at  # fixed for the attempt (J-68)
        self.traceparent = traceparent
        self.spawns: list[SpawnRequest] = []
        self._heartbeat = heartbeat
        self._clock: Clock = clock or SystemClock()

    @property
    def idempotency_key(self) -> str:
        """Equals the job id; stable across retries (J-21)."""
        return self.job_id

    async def heartbeat(self, progress: Any = None) -> HeartbeatResult:
        """Report liveness and optional progress in [0, 1]; never raises (J-64, J-65)."""
        if self._heartbeat is None:
            return HeartbeatResult()
        return await self._heartbeat(progress)

    def spawn(self, id: str, binding: str, payload: Any, options: dict[str, Any] | None = None) -> None:
        """Ask for a child node of the current flow node (flows only; dropped if the attempt fails).

        A bad ``id`` raises ``InvalidFlowError`` here, failing this attempt like any error, rather than
        the run's bookkeeping later (F-57, F-3).
        """
        validate_node_id(id)
        self.spawns.append(SpawnRequest(id, binding, payload, dict(options or {})))

    def remaining_ms(self) -> int:
        """Milliseconds left before ``deadline_at`` (0 or less means: stop now, J-75)."""
        return self.deadline_at - self._clock.now()

    def timeout(self) -> asyncio.Timeout:
        """``async with ctx.timeout():`` raises ``TimeoutError`` in the block at ``deadline_at`` (J-75).

        A deadline already past expires at the block's first await. Heartbeats do not move it (J-68).
        """
        return asyncio.timeout(max(0, self.remaining_ms()) / 1000)


class Performer:
    """Base class of job code. Subclass it and implement ``async def perform(self, payload, ctx)``.

    ``requires`` names the enqueue keys the typed paths insist on (J-70), e.g.
    ``requires = frozenset({"concurrency_key"})``.
    """

    requires: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, ctx: Any = None, env: Any = None) -> None:
        self.ctx = ctx
        self.env = env

    async def perform(self, payload: Any, ctx: JobContext) -> Any:
        raise NotImplementedError(f"{type(self).__name__}.perform is not implemented")


class _Remote:
    """Marks a binding whose performer lives in another Worker behind a service binding (J-62)."""

    __slots__ = ("performer",)

    def __init__(self, performer: type[Performer] | None) -> None:
        self.performer = performer

    def __repr__(self) -> str:
        name = self.performer.__name__ if self.performer else "?"
        return f"remote({name})"


def remote(performer: type[Performer] | None = None) -> Any:
    """The ``performers`` entry for a performer served by another Worker (J-62)."""
    return _Remote(performer)
