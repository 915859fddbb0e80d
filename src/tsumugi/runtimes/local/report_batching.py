"""Reports to one local shard, gathered while the shard is busy and applied in one transaction (ADR-0106).

A consumer batch of no-op jobs sends its reports all at once; applying each in its own transaction (and
its own alarm write) was most of the cost of a job. Each caller is still told when its own report was
applied, and sees its own error: a failed batch is retried one report at a time. ``report`` waits for
that; ``report_later`` hands over a callback instead, so a consumer whose job is done need not stay
suspended on its report (ADR-0167).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol, TypeGuard

from tsumugi.runtimes.local.serial_coordinators import Coordinator, SerialCoordinators

Outcome = Mapping[str, object]  # a report's outcome, as ``JobShard.report`` takes it
# Told exactly once: None when the report was applied, else why not (a CancelledError at shutdown).
Answer = Callable[[BaseException | None], None]
_Waiting = tuple[str, Outcome, Answer]


class _Reported(Protocol):
    """The job shard, as its reports reach it."""

    async def report(self, job_id: str, outcome: Outcome) -> None: ...

    async def report_many(self, reports: Sequence[tuple[str, Outcome]]) -> None: ...


def _takes_reports(coordinator: Coordinator) -> TypeGuard[_Reported]:
    """Whether ``coordinator`` is a job shard (or a wrapper of one): it has ``report_many``."""
    return callable(getattr(coordinator, "report_many", None))


class ReportBatcher:
    """Collects reports for one shard; one task at a time applies what has gathered."""

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
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._add(job_id, outcome, functools.partial(_resolve, future))
        await future

    def report_later(self, job_id: str, outcome: Outcome, answer: Answer) -> bool:
        """``report`` without waiting: ``answer`` is told once the report was applied, or why not.

        Takes nothing and returns False when called from inside the shard's own turn, which a gathered
        report would wait for: the caller uses ``report`` then.
        """
        if self._coordinators.holds(self._name):
            return False
        self._add(job_id, outcome, answer)
        return True

    def _add(self, job_id: str, outcome: Outcome, answer: Answer) -> None:
        self._waiting.append((job_id, outcome, answer))
        if len(self._waiting) == 1:  # the first of a new group starts the task that applies the group
            task = asyncio.get_running_loop().create_task(self._flush())
            self._flushes.add(task)
            task.add_done_callback(self._flushes.discard)

    async def _flush(self) -> None:
        group: list[_Waiting] = []

        async def in_turn(shard: Coordinator) -> None:
            # Everything gathered until the shard's turn came; later reports start a new group.
            group.extend(self._waiting)
            self._waiting = []
            await _apply(self._name, shard, group)  # answers the whole group, whatever happens

        try:
            await self._coordinators.call_with(self._name, in_turn)
        except BaseException as error:  # the shard could not be opened, or shutdown cancelled the wait
            if not group:  # the turn never came: nobody was answered
                unanswered, self._waiting = self._waiting, []
                _answer_all(unanswered, error)
            if not isinstance(error, Exception):
                raise


async def _apply(name: str, shard: Coordinator, group: list[_Waiting]) -> None:
    answered = 0
    try:
        if not _takes_reports(shard):
            raise TypeError(f"{name} is not a job shard: it takes no reports")
        if len(group) > 1:
            try:
                await shard.report_many([(job_id, outcome) for job_id, outcome, _ in group])
            except Exception:
                pass  # nothing was applied: one report at a time, so each caller gets its own error
            else:
                answered = len(group)
                for _, _, answer in group:
                    answer(None)
                return
        for job_id, outcome, answer in group:
            try:
                await shard.report(job_id, outcome)
            except Exception as error:
                answered += 1
                answer(error)
            else:
                answered += 1
                answer(None)
    except BaseException as error:  # not a shard, or cancelled mid-way (shutdown): no caller waits forever
        _answer_all(group[answered:], error)
        raise


def _answer_all(group: Sequence[_Waiting], error: BaseException) -> None:
    told = error if isinstance(error, Exception) else asyncio.CancelledError()
    for _, _, answer in group:
        answer(told)


def _resolve(future: asyncio.Future[None], error: BaseException | None) -> None:
    if future.done():  # its caller was cancelled meanwhile; the report was applied all the same
        return
    if error is None:
        future.set_result(None)
    elif isinstance(error, asyncio.CancelledError):
        future.cancel()
    else:
        future.set_exception(error)
