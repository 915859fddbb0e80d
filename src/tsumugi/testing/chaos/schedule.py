"""Fault schedules: which fault hits which event of a simulation, drawn from a seed (ADR-0142).

A fault names an *event stream* and an ordinal in it: ``redeliver@2`` is "the second message the
consumer is handed is delivered again". Streams count events from the end of the scenario on, across
restarts, so a schedule replays the same faults on the same events. The text form
(``"redeliver@2, clock_jump@1:3600000"``) parses back into the schedule, for replays.
"""

from __future__ import annotations

import random
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Final, Literal

__all__ = [
    "CLOCK_JUMPS_MS",
    "FAULT_KINDS",
    "STREAM_OF",
    "Fault",
    "FaultKind",
    "FaultSchedule",
    "Stream",
]

FaultKind = Literal[
    "lose_report",
    "redeliver",
    "crash_before_perform",
    "crash_before_report",
    "timeout",
    "heartbeat_stop",
    "clock_jump",
    "restart_mid_tick",
]
Stream = Literal["delivery", "perform", "report", "tick"]

# The event each kind of fault waits for: the consumer being handed a message, a performer being
# called (after any claim), a report leaving the consumer, a coordinator's alarm tick.
STREAM_OF: Final[Mapping[FaultKind, Stream]] = {
    "redeliver": "delivery",
    "clock_jump": "delivery",
    "crash_before_perform": "perform",
    "timeout": "perform",
    "heartbeat_stop": "perform",
    "lose_report": "report",
    "crash_before_report": "report",
    "restart_mid_tick": "tick",
}
FAULT_KINDS: Final[tuple[FaultKind, ...]] = tuple(STREAM_OF)

# A clock jump is one of these: past a short timeout, past the default reaper deadline (60 s timeout +
# 30 s grace, J-111) and past the 5 minutes COMPLETED jobs are kept (J-170), and an hour (a laptop asleep).
CLOCK_JUMPS_MS: Final = (15_000, 95_000, 400_000, 3_600_000)
# restart_mid_tick: the process dies at the tick's n-th write, or as the tick ends if it writes fewer.
# A dispatching tick writes about a dozen: its plan (lanes, token buckets, settings, the jobs, the
# outbox) and that commit, the queue's insert and commit (between the two commits lies J-161's "QUEUED,
# but no message"), then its sweeps.
MAX_CRASH_WRITE: Final = 12
DEFAULT_FAULTS: Final = 4  # per schedule: enough to combine, few enough to shrink in a handful of runs
# Faults cause events of their own (a retry's delivery, perform and report): positions are drawn from
# twice the fault-free count, so one fault can also hit the retry another one caused.
EVENT_SLACK: Final = 2

_ITEM: Final = re.compile(r"^\s*([a-z_]+)@(\d+)(?::(\d+))?\s*$")


@dataclass(frozen=True, slots=True, order=True)
class Fault:
    """``kind`` hits the ``at``-th event of its stream; ``param`` is a jump in ms or a write number."""

    kind: FaultKind
    at: int
    param: int = 0

    @property
    def stream(self) -> Stream:
        return STREAM_OF[self.kind]

    def __str__(self) -> str:
        return f"{self.kind}@{self.at}" + (f":{self.param}" if self.param else "")


@dataclass(frozen=True, slots=True)
class FaultSchedule:
    """The faults of one simulation and the seed that drew them (the seed also drives jitter and ids)."""

    seed: int
    faults: tuple[Fault, ...] = field(default=())

    def __str__(self) -> str:
        return ", ".join(str(fault) for fault in self.faults) or "(no faults)"

    def without(self, index: int) -> FaultSchedule:
        """This schedule minus its ``index``-th fault (one shrinking step)."""
        return FaultSchedule(self.seed, self.faults[:index] + self.faults[index + 1 :])

    def at(self, stream: Stream, ordinal: int) -> list[Fault]:
        return [f for f in self.faults if f.stream == stream and f.at == ordinal]

    @classmethod
    def parse(cls, text: str, seed: int = 0) -> FaultSchedule:
        """The schedule ``str(schedule)`` printed: ``"redeliver@2, clock_jump@1:3600000"``."""
        faults: list[Fault] = []
        for item in filter(str.strip, text.split(",")):
            match = _ITEM.match(item)
            if match is None or match.group(1) not in STREAM_OF:
                raise ValueError(f"not a fault: {item.strip()!r} (kind@n or kind@n:param)")
            kind: FaultKind = match.group(1)  # type: ignore[assignment]  # checked against STREAM_OF
            faults.append(Fault(kind, int(match.group(2)), int(match.group(3) or 0)))
        return cls(seed, tuple(faults))

    @classmethod
    def generate(
        cls,
        seed: int,
        events: Mapping[Stream, int],
        count: int = DEFAULT_FAULTS,
        kinds: Collection[FaultKind] = FAULT_KINDS,
    ) -> FaultSchedule:
        """Draw ``count`` faults from ``seed``, on events a fault-free run of the app produced.

        ``events`` holds how many events of each stream that run saw; a kind whose stream saw none is
        left out. At most one fault lands on one event; one aimed past the events a run has does not fire.
        """
        rng = random.Random(seed)
        usable = [kind for kind in FAULT_KINDS if kind in kinds and events.get(STREAM_OF[kind], 0) > 0]
        chosen: dict[tuple[Stream, int], Fault] = {}
        for _ in range(count * 4):  # a few draws more than needed: some land on a taken event
            if not usable or len(chosen) == count:
                break
            kind = rng.choice(usable)
            stream = STREAM_OF[kind]
            at = rng.randint(1, events[stream] * EVENT_SLACK)
            param = 0
            if kind == "clock_jump":
                param = rng.choice(CLOCK_JUMPS_MS)
            elif kind == "restart_mid_tick":
                param = rng.randint(1, MAX_CRASH_WRITE)
            chosen.setdefault((stream, at), Fault(kind, at, param))
        return cls(seed, tuple(sorted(chosen.values(), key=lambda f: (f.stream, f.at))))
