"""The injector: counts the events of each stream, says which faults fire on them, records what happened.

Every seam (``seams.py``) asks it ``hit(stream, target)`` as its event happens and gets the faults of
the schedule aimed at that event. A crash is requested here and carried out by the simulation: from
the moment of the crash every write of every store fails (``StorageFaults``, ADR-0131's injector), so
nothing the dying process still does reaches the disk, and whatever was waiting on it hangs.
"""

from __future__ import annotations

import asyncio
from typing import NoReturn

from tsumugi.clock import Clock
from tsumugi.testing.chaos.records import InjectedFault, PerformRecord, ReportRecord
from tsumugi.testing.chaos.schedule import Fault, FaultKind, FaultSchedule, Stream
from tsumugi.testing.faults import IO_ERROR, StorageFaults

__all__ = ["Injector"]


class Injector:
    """Event counters and records of one simulation; ``schedule=None`` counts without injecting."""

    def __init__(self, schedule: FaultSchedule | None, clock: Clock, faults: StorageFaults) -> None:
        self.schedule = schedule
        self.clock = clock
        self.faults = faults
        self.counts: dict[Stream, int] = {"delivery": 0, "perform": 0, "report": 0, "tick": 0}
        self.seq = 0  # every event, counted or not: orders performs against reports
        self.armed = False  # events count once the scenario has returned (the same in every run)
        self.generation = 0  # which incarnation of the runtime is alive; seams remember theirs
        self.crash_reason: str | None = None
        self.performs: list[PerformRecord] = []
        self.reports: list[ReportRecord] = []
        self.injected: list[InjectedFault] = []
        self.at_most_once: set[str] = set()  # job ids whose dispatch message asked for a claim (J-107)
        self._silenced: set[tuple[str, int]] = set()
        self._hung: set[asyncio.Future[None]] = set()

    # ------------------------------------------------------------------ events
    def hit(self, stream: Stream, target: str) -> dict[FaultKind, Fault]:
        """Count one event of ``stream`` on ``target``; the faults that fire on it, by kind."""
        self.seq += 1
        if not self.armed:
            return {}
        self.counts[stream] += 1
        faults: list[Fault] = [] if self.schedule is None else self.schedule.at(stream, self.counts[stream])
        for fault in faults:
            self.injected.append(InjectedFault(fault, target, self.clock.now()))
        return {fault.kind: fault for fault in faults}

    def started(self, job_id: str, attempt: int) -> PerformRecord:
        self.seq += 1
        record = PerformRecord(job_id, attempt, self.seq, self.clock.now())
        self.performs.append(record)
        return record

    def reported(self, job_id: str, attempt: int | None, ok: bool, seq: int, delivered: bool) -> None:
        self.reports.append(ReportRecord(job_id, attempt, ok, seq, delivered))

    # ------------------------------------------------------------------ heartbeats that stop
    def silence(self, job_id: str, attempt: int) -> None:
        self._silenced.add((job_id, attempt))

    def unsilence(self, job_id: str, attempt: int) -> None:
        self._silenced.discard((job_id, attempt))

    def silenced(self, job_id: str, attempt: int | None) -> bool:
        return attempt is not None and (job_id, attempt) in self._silenced

    # ------------------------------------------------------------------ crashes
    def alive(self, generation: int) -> bool:
        """Whether the incarnation ``generation`` still runs (not crashed, not replaced)."""
        return generation == self.generation and self.crash_reason is None

    def crash(self, reason: str) -> None:
        """The process dies now: no write lands any more; the simulation restarts it when it notices."""
        if self.crash_reason is not None:
            return
        self.crash_reason = reason
        self.faults.fail(IO_ERROR, times=None)

    async def hang(self) -> NoReturn:
        """Wait for ever, as a call into a dead process does; ``release`` ends the wait (cancelled)."""
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._hung.add(waiter)
        try:
            await waiter
        finally:
            self._hung.discard(waiter)
        raise asyncio.CancelledError  # only ``release`` resolves a waiter, by cancelling it

    def release(self) -> None:
        """Cancel every hung wait: their tasks belong to an incarnation that is gone."""
        for waiter in list(self._hung):
            if not waiter.done():
                waiter.cancel()
        self._hung.clear()
