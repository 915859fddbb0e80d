"""``env.JOB_SHARD`` locally: a ``ports.ShardNamespace`` whose stubs call coordinators one at a time."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from tsumugi.ports import JsonDict
from tsumugi.runtimes.local.report_batching import ReportBatcher
from tsumugi.runtimes.local.serial_coordinators import SerialCoordinators


class SerialStub:
    """A stub for any coordinator kind (``env.RUN``, ``env.SCHEDULER``): every method waits its turn."""

    __slots__ = ("_coordinators", "name")

    def __init__(self, coordinators: SerialCoordinators, name: str) -> None:
        self._coordinators = coordinators
        self.name = name

    def __getattr__(self, method: str) -> Callable[..., Awaitable[Any]]:
        if method.startswith("_"):
            raise AttributeError(method)

        async def call(*args: Any, **kwargs: Any) -> Any:
            return await self._coordinators.call(self.name, method, *args, **kwargs)

        return call


class SerialShardStub(SerialStub):
    """A Durable Object stub for one job shard: every RPC waits its turn on the shard's lock (ADR-0050)."""

    __slots__ = ("_reports",)

    def __init__(self, coordinators: SerialCoordinators, name: str) -> None:
        super().__init__(coordinators, name)
        self._reports = ReportBatcher(coordinators, name)

    async def enqueue_many(self, inputs: Sequence[JsonDict], settings: JsonDict | None = None) -> list[str]:
        result: list[str] = await self._coordinators.call(self.name, "enqueue_many", inputs, settings)
        return result

    async def enqueue_outcomes(
        self, inputs: Sequence[JsonDict], settings: JsonDict | None = None
    ) -> list[JsonDict]:
        result: list[JsonDict] = await self._coordinators.call(
            self.name, "enqueue_outcomes", inputs, settings
        )
        return result

    async def report(self, job_id: str, outcome: JsonDict) -> None:
        """Applied together with the reports that arrive while the shard is busy (ADR-0106)."""
        await self._reports.report(job_id, outcome)

    async def heartbeat(self, job_id: str, progress: Any = None, attempt: int | None = None) -> JsonDict:
        result: JsonDict = await self._coordinators.call(self.name, "heartbeat", job_id, progress, attempt)
        return result

    async def claim(self, job_id: str) -> bool:
        return bool(await self._coordinators.call(self.name, "claim", job_id))

    async def expire(self, job_id: str) -> bool:
        return bool(await self._coordinators.call(self.name, "expire", job_id))

    async def retry(self, job_id: str) -> JsonDict:
        result: JsonDict = await self._coordinators.call(self.name, "retry", job_id)
        return result

    async def cancel(self, job_id: str) -> JsonDict:
        result: JsonDict = await self._coordinators.call(self.name, "cancel", job_id)
        return result

    async def reschedule(
        self,
        job_id: str,
        run_at: int | None = None,
        delay_ms: int | None = None,
        priority: float | None = None,
    ) -> JsonDict:
        result: JsonDict = await self._coordinators.call(
            self.name, "reschedule", job_id, run_at=run_at, delay_ms=delay_ms, priority=priority
        )
        return result

    async def mutate_many(self, action: str, job_ids: Sequence[str]) -> JsonDict:
        result: JsonDict = await self._coordinators.call(self.name, "mutate_many", action, job_ids)
        return result

    async def configure(self, settings: JsonDict) -> JsonDict:
        result: JsonDict = await self._coordinators.call(self.name, "configure", settings)
        return result

    async def update_policy(self, patch: JsonDict, settings: JsonDict | None = None) -> JsonDict:
        result: JsonDict = await self._coordinators.call(self.name, "update_policy", patch, settings)
        return result

    async def reset_policy(self, settings: JsonDict | None = None) -> JsonDict:
        result: JsonDict = await self._coordinators.call(self.name, "reset_policy", settings)
        return result

    async def diagnostics(self) -> JsonDict:
        result: JsonDict = await self._coordinators.call(self.name, "diagnostics")
        return result

    async def state_of(self, job_id: str) -> str | None:
        result: str | None = await self._coordinators.call(self.name, "state_of", job_id)
        return result


class LocalShardNamespace:
    """``env.JOB_SHARD``: ``get("<binding>#<n>")`` returns the stub of that shard."""

    # J-17

    shard_checks_payloads = (
        True  # the stub hands the shard the caller's objects (client.SHARD_CHECKS_PAYLOADS)
    )

    def __init__(self, coordinators: SerialCoordinators) -> None:
        self.coordinators = coordinators
        self._stubs: dict[str, SerialShardStub] = {}

    def get(self, name: str) -> SerialShardStub:
        stub = self._stubs.get(name)
        if stub is None:
            stub = self._stubs[name] = SerialShardStub(self.coordinators, name)
        return stub


class LocalNamespace:
    """A Durable Object namespace of any coordinator kind: ``get(name)`` returns its serialised stub.

    A stub holds nothing but the name, so none is kept: one per run id would grow with every run ever
    addressed (ADR-0132).
    """

    def __init__(self, coordinators: SerialCoordinators) -> None:
        self.coordinators = coordinators

    def get(self, name: str) -> SerialStub:
        return SerialStub(self.coordinators, name)
