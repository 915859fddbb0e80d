"""In-memory fakes of the runtime ports, shipped for tests of code built on Tsumugi (STYLE.md habit 10)."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence

from tsumugi.clock import FixedClock
from tsumugi.coordinator.job_shard import JobShard
from tsumugi.coordinator.snapshots import JobSnapshot, snapshot
from tsumugi.core.json_types import JsonMapping, JsonObject
from tsumugi.ports import ReadModelWriter, RunNamespace
from tsumugi.runtimes.local.sqlite_executor import SqliteExecutor


class FakeAlarm:
    """An ``AlarmPort`` that only records: tests decide when it fires (``due(now)``)."""

    def __init__(self) -> None:
        self.at: int | None = None
        self.history: list[int] = []  # every instant passed to set_alarm, in order

    async def get_alarm(self) -> int | None:
        return self.at

    async def set_alarm(self, at_ms: int) -> None:
        self.history.append(at_ms)
        self.at = at_ms

    @property
    def set_calls(self) -> int:
        """How many times the alarm was set; each counts one DO row written (COST.md)."""
        return len(self.history)

    async def delete_alarm(self) -> None:
        self.at = None

    def due(self, now_ms: int) -> bool:
        return self.at is not None and self.at <= now_ms


class FakeQueue:
    """A ``DispatchQueue`` that collects message bodies and counts ``send_batch`` calls."""

    def __init__(self) -> None:
        self.messages: list[JsonObject] = []
        self.batches = 0

    async def send_batch(self, messages: Sequence[JsonMapping]) -> None:
        if len(messages) > 100:  # the real Queue refuses more than 100 per call (J-161)
            raise ValueError("send_batch takes at most 100 messages")
        self.batches += 1
        self.messages.extend(dict(m) for m in messages)

    def take(self) -> list[JsonObject]:
        """Remove and return every message collected so far (a consumer's delivery)."""
        taken, self.messages = self.messages, []
        return taken


class FakeReadModel:
    """A ``ReadModelWriter`` keeping the newest snapshot per job id, honouring ``seq`` like D1."""

    # J-192

    def __init__(self) -> None:
        self.jobs: dict[str, dict[str, object]] = {}
        self.upserts = 0

    async def upsert_jobs(self, snapshots: Sequence[Mapping[str, object]]) -> None:
        for snap in snapshots:
            self.upserts += 1
            job_id = str(snap["id"])
            current = self.jobs.get(job_id)
            if current is None or _seq(snap) > _seq(current):
                self.jobs[job_id] = dict(snap)


def _seq(snapshot: Mapping[str, object]) -> int:
    seq = snapshot["seq"]
    if not isinstance(seq, int):
        raise TypeError(f"a job snapshot's seq is an integer, not {seq!r}")
    return seq


def current_snapshot(shard: JobShard, job_id: str) -> JobSnapshot:
    """The snapshot a shard would project for ``job_id`` now; KeyError if the shard has no such job.

    The read model shows it only after a projection, and a new job's first one waits (ADR-0119).
    """
    # J-190
    row = shard.ctx.jobs.get(job_id)
    if row is None:
        raise KeyError(job_id)
    return snapshot(row, shard.ctx.attempts.newest(job_id) if row["attempts"] else [])


class InProcessShards:
    """A ``ShardNamespace`` of JobShards on in-memory sqlite, sharing one FixedClock.

    ``await shards.run_due_alarms()`` fires every alarm that is due, as the platform would.
    """

    shard_checks_payloads = True  # in process, like the local runtime (client.SHARD_CHECKS_PAYLOADS)

    def __init__(
        self,
        clock: FixedClock | None = None,
        *,
        queue: FakeQueue | None = None,
        read_model: ReadModelWriter | None = None,
        runs: RunNamespace | None = None,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self.clock = clock or FixedClock()
        self.queue = queue or FakeQueue()
        self.read_model = read_model if read_model is not None else FakeReadModel()
        self.runs = runs
        self.rand = rand
        self.shards: dict[str, JobShard] = {}
        self.alarms: dict[str, FakeAlarm] = {}

    def get(self, name: str) -> JobShard:
        if name not in self.shards:
            self.alarms[name] = FakeAlarm()
            self.shards[name] = JobShard(
                name,
                SqliteExecutor(":memory:"),
                clock=self.clock,
                alarm=self.alarms[name],
                queue=self.queue,
                read_model=self.read_model,
                shards=self,
                runs=self.runs,
                rand=self.rand,
            )
        return self.shards[name]

    def next_alarm_at(self) -> int | None:
        pending = [a.at for a in self.alarms.values() if a.at is not None]
        return min(pending) if pending else None

    async def run_due_alarms(self) -> int:
        """Fire each due alarm once (cleared first, as a Durable Object does); returns how many ran."""
        fired = 0
        for name, alarm in list(self.alarms.items()):
            if alarm.due(self.clock.now()):
                alarm.at = None
                await self.shards[name].alarm()
                fired += 1
        return fired

    async def settle(self, max_rounds: int = 100) -> int:
        """Run due alarms until none is due at the current time; returns the ticks run."""
        total = 0
        for _ in range(max_rounds):
            fired = await self.run_due_alarms()
            if not fired:
                break
            total += fired
        return total


def job_ids_of(messages: Sequence[JsonMapping]) -> list[str]:
    return [str(m["jobId"]) for m in messages]
