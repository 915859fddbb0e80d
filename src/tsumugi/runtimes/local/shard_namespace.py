"""``env.JOB_SHARD`` locally: a ``ports.ShardNamespace`` whose stubs call coordinators one at a time."""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine, Mapping
from typing import TYPE_CHECKING

from tsumugi.ports import ShardRpc, rpc_method_names
from tsumugi.runtimes.local.report_batching import Answer, ReportBatcher
from tsumugi.runtimes.local.serial_coordinators import SerialCoordinators

Forwarder = Callable[..., Coroutine[object, object, object]]


class SerialStub:
    """A stub for any coordinator kind (``env.RUN``, ``env.SCHEDULER``): every method waits its turn.

    What a method takes and answers is the coordinator's own; the caller states the protocol it
    expects (``RunPeer``, ...), as it would of a Durable Object stub.
    """

    __slots__ = ("_coordinators", "name")

    def __init__(self, coordinators: SerialCoordinators, name: str) -> None:
        self._coordinators = coordinators
        self.name = name

    def __getattr__(self, method: str) -> Forwarder:
        if method.startswith("_"):
            raise AttributeError(method)

        async def call(*args: object, **kwargs: object) -> object:
            return await self._coordinators.call(self.name, method, *args, **kwargs)

        return call


if TYPE_CHECKING:
    _ShardSurface = ShardRpc  # what callers see: every ShardRpc method, typed by the protocol
else:
    _ShardSurface = object  # at run time the methods come from _serialised, installed below


class SerialShardStub(SerialStub, _ShardSurface):
    """A Durable Object stub for one job shard: every RPC waits its turn on the shard's lock (ADR-0050).

    Only ``report`` and ``report_later`` are written here; every other ``ShardRpc`` method is a plain
    serialised call, installed from the protocol below the class (the same call ``SerialStub`` makes,
    without building it on each access: these stubs carry the engine's hot path).
    """

    __slots__ = ("_reports",)

    def __init__(self, coordinators: SerialCoordinators, name: str) -> None:
        super().__init__(coordinators, name)
        self._reports = ReportBatcher(coordinators, name)

    async def report(self, job_id: str, outcome: Mapping[str, object]) -> None:
        """Applied together with the reports that arrive while the shard is busy (ADR-0106)."""
        await self._reports.report(job_id, outcome)

    def report_later(self, job_id: str, outcome: Mapping[str, object], answer: Answer) -> bool:
        """``report`` for a caller that does not wait: ``answer`` is told once it was applied (ADR-0167).

        False, taking nothing, from inside the shard's own turn: ``report`` then."""
        return self._reports.report_later(job_id, outcome, answer)


def _serialised(method: str) -> Forwarder:
    async def call(self: SerialShardStub, *args: object, **kwargs: object) -> object:
        return await self._coordinators.call(self.name, method, *args, **kwargs)

    return functools.update_wrapper(call, getattr(ShardRpc, method))  # its name, doc and signature


for _method in rpc_method_names(ShardRpc):
    if _method not in vars(SerialShardStub):
        setattr(SerialShardStub, _method, _serialised(_method))


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
            # mypy counts the installed ShardRpc methods as missing (see _ShardSurface).
            stub = self._stubs[name] = SerialShardStub(self.coordinators, name)  # type: ignore[abstract]
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
