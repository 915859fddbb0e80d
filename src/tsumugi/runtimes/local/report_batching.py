"""Reports to one local shard, gathered while the shard is busy and applied in one transaction (ADR-0106).

A consumer batch of no-op jobs sends its reports all at once; applying each in its own transaction (and
its own alarm write) was most of the cost of a job. Each caller still waits until its own report was
applied, and sees its own error: a failed batch is retried one report at a time.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Protocol, TypeGuard

from tsumugi.runtimes.local.serial_coordinators import Coordinator, SerialCoordinators

Outcome = Mapping[str, object]  # a report's outcome, as ``JobShard.report`` takes it
_Waiting = tuple[str, Outcome, "asyncio.Future[None]"]


class _Reported(Protocol):
    """The job shard, as its reports reach it."""

    async def report(self, job_id: str, outcome: Outcome) -> None: ...

    async def report_many(self, reports: Sequence[tuple[str, Outcome]]) -> None: ...


def _takes_reports(coordinator: Coordinator) -> TypeGuard[_Reported]:
    """Whether ``coordinator`` is a job shard (or a wrapper of one): it has ``report_many``."""
    return callable(getattr(coordinator, "report_many", None))


class ReportBatcher:
    """Collects ``report`` calls for one shard; one task at a time applies what has gathered."""

    __slots__ = ("_coordinators", "_flushes", "_name", "_waiting")

    def __init__(self, coordinators: SerialCoordinators, name: str) -> None:
        self._coordinators = coordinators
        self._name = name
        self._waiting: list[_Waiting] = []
        self._flushes: set[asyncio.Task[None]] = set()

    async def report(self, job_id: str, outcome: Outcome) -> None:
        if self._coordinators.holds(self._name):  # a call from inside the shard's turn cannot wait for it
            await self._coordinators.call(self._name, "report", job_id, outcome)
            return
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        self._waiting.append((job_id, outcome, future))
        if len(self._waiting) == 1:  # the first of a new group starts the task that applies the group
            task = loop.create_task(self._flush())
            self._flushes.add(task)
            task.add_done_callback(self._flushes.discard)
        await future

    async def _flush(self) -> None:
        group: list[_Waiting] = []

        async def in_turn(shard: Coordinator) -> None:
            # Everything gathered until the shard's turn came; later reports start a new group.
            group.extend(self._waiting)
            self._waiting = []
            if not _takes_reports(shard):
                raise TypeError(f"{self._name} is not a job shard: it takes no reports")
            await self._apply(shard, group)

        try:
            await self._coordinators.call_with(self._name, in_turn)
        except BaseException as error:  # the shard could not be opened, or shutdown cancelled the wait
            if not group:
                group.extend(self._waiting)
                self._waiting = []
            for _, _, future in group:
                if future.done():
                    continue
                if isinstance(error, Exception):
                    future.set_exception(error)  # every caller sees the error
                else:
                    future.cancel()
            if not isinstance(error, Exception):
                raise

    @staticmethod
    async def _apply(shard: _Reported, group: list[_Waiting]) -> None:
        try:
            if len(group) > 1:
                try:
                    await shard.report_many([(job_id, outcome) for job_id, outcome, _ in group])
                except Exception:
                    pass  # nothing was applied: one report at a time, so each caller gets its own error
                else:
                    for _, _, future in group:
                        _resolve(future, None)
                    return
            for job_id, outcome, future in group:
                try:
                    await shard.report(job_id, outcome)
                except Exception as error:
                    _resolve(future, error)
                else:
                    _resolve(future, None)
        finally:
            for _, _, future in group:  # cancelled mid-way (shutdown): no caller waits forever
                if not future.done():
                    future.cancel()


def _resolve(future: asyncio.Future[None], error: Exception | None) -> None:
    if future.done():  # its caller was cancelled meanwhile; the report was applied all the same
        return
    if error is None:
        future.set_result(None)
    else:
        future.set_exception(error)
