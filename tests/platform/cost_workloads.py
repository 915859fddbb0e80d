"""COST.md workloads A, B and C, driven through the real engine with every DO statement recorded.

One binding, one shard, default policy, consumer batches of 10, ``sweep_after_ms`` of 5 minutes, and a
FixedClock only the driver moves. The consumer is the real one (``tsumugi.execution``); the read model
is the real projector writing to real D1 in Miniflare (``LoopbackD1Database``). DO rows read/written
come from replaying the recording on Durable Object SQLite (``do_replay``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from tests.platform.recording import RecordingExecutor, SqlRecording
from tests.platform.replay_client import LoopbackD1Database, ReplayServer

from tsumugi.clock import FixedClock
from tsumugi.coordinator.job_shard import JobShard
from tsumugi.core.json_types import JsonObject
from tsumugi.execution.consumer import handle_batch
from tsumugi.performer import JobContext, Performer, PerformersResolver
from tsumugi.runtimes.cloudflare.queue_producer import batch_chunks
from tsumugi.runtimes.local.sqlite_executor import SqliteExecutor
from tsumugi.storage.read_model_writer import D1ReadModelWriter
from tsumugi.testing.fakes import FakeAlarm

BINDING: Final = "NOOP"
CONSUMER_BATCH: Final = 10
SWEEP_AFTER_MS: Final = 300_000  # COST.md: sweep_after_ms of 5 minutes
START_MS: Final = 1_764_460_800_000
MAX_TICKS: Final = 10_000
MIGRATIONS: Final = Path(__file__).resolve().parents[2] / "migrations"
# Workload B fails every first attempt on purpose; its tracebacks would bury the cost table.
QUIET_LOG: Final = logging.getLogger("tsumugi.platform.cost")
QUIET_LOG.addHandler(logging.NullHandler())
QUIET_LOG.propagate = False


class NoopPerformer(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> None:
        return None


class FailOncePerformer(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> None:
        if ctx.attempt == 1:
            raise RuntimeError("first attempt fails (COST.md workload B)")


class CountingQueue:
    """The producer side with the real adapter's chunking (``batch_chunks``): what sendBatch would get."""

    def __init__(self) -> None:
        self.pending: list[JsonObject] = []
        self.send_batch_calls = 0
        self.messages = 0

    async def send_batch(self, messages: Sequence[JsonObject]) -> None:
        for chunk in batch_chunks(messages):
            self.send_batch_calls += 1
            self.messages += len(chunk)
            self.pending.extend(dict(m) for m in chunk)


class DeliveredFake:
    """A delivered message for the consumer (``ports.QueueMessage``)."""

    def __init__(self, body: JsonObject) -> None:
        self.body = body
        self.attempts = 1
        self.acked = False

    def ack(self) -> None:
        self.acked = True

    def retry(self) -> None:
        raise AssertionError("Tsumugi never uses Queue retries (J-118)")


class CountingShards:
    """``env.JOB_SHARD`` for the consumer: every RPC on the one shard counts one DO request."""

    def __init__(self, shard: JobShard) -> None:
        self.shard = shard
        self.requests = 0

    def get(self, name: str) -> Any:
        counter = self

        class Stub:
            def __getattr__(self, method: str) -> Any:
                target = getattr(counter.shard, method)

                async def call(*args: Any, **kwargs: Any) -> Any:
                    counter.requests += 1
                    return await target(*args, **kwargs)

                return call

        return Stub()


@dataclass
class WorkloadFigures:
    name: str
    jobs: int
    session: str
    do_requests: int
    alarm_runs: int
    set_alarm_calls: int
    queue_messages: int
    send_batch_calls: int
    d1_rows_read: int
    d1_rows_written: int
    do_rows_read: int = 0
    do_rows_written: int = 0  # from the replay on Durable Object SQLite, without setAlarm


async def apply_migrations(db: LoopbackD1Database) -> None:
    for path in sorted(MIGRATIONS.glob("*.sql")):
        text = "\n".join(line.split("--", 1)[0] for line in path.read_text(encoding="utf-8").splitlines())
        for statement in text.split(";"):
            if statement.strip():
                await db.run(statement)


async def run_workload(
    name: str, server: ReplayServer, recording: SqlRecording, *, jobs: int = 1000
) -> WorkloadFigures:
    """Run workload ``name`` (A, B or C) to the end: every job completed and swept."""
    clock = FixedClock(START_MS)
    database = SqliteExecutor()
    executor = RecordingExecutor(database, recording, recording.new_session(f"workload-{name}"))
    alarm, queue, d1 = FakeAlarm(), CountingQueue(), LoopbackD1Database(server)
    shard = JobShard(
        f"{BINDING}#0", executor, clock=clock, alarm=alarm, queue=queue, read_model=D1ReadModelWriter(d1)
    )
    namespace = CountingShards(shard)
    performer = FailOncePerformer if name == "B" else NoopPerformer
    resolver = PerformersResolver({BINDING: performer})
    settings = {"sweepAfterMs": SWEEP_AFTER_MS}
    options: JsonObject = {}
    if name == "B":
        options = {"maxAttempts": 3, "backoff": {"kind": "fixed", "delayMs": 1000, "jitter": False}}
    inputs = [{"binding": BINDING, "payload": {"n": n}, **options} for n in range(jobs)]
    if name == "C":
        for item in inputs:
            await namespace.get(f"{BINDING}#0").enqueue_many([item], settings)
    else:
        await namespace.get(f"{BINDING}#0").enqueue_many(inputs, settings)
    alarm_runs = 0
    while True:
        delivered = queue.pending
        queue.pending = []
        for start in range(0, len(delivered), CONSUMER_BATCH):
            batch = [DeliveredFake(body) for body in delivered[start : start + CONSUMER_BATCH]]
            await handle_batch(batch, {"JOB_SHARD": namespace}, resolver=resolver, clock=clock, log=QUIET_LOG)
        if alarm.at is None:
            break
        clock.set(max(clock.now(), alarm.at + 1))
        alarm.at = None
        await shard.alarm()
        alarm_runs += 1
        if alarm_runs > MAX_TICKS:
            raise AssertionError(f"workload {name} did not settle")
    left = [database.execute(f"SELECT count(*) FROM {table}") for table in ("job", "outbox", "attempt")]
    if left != [[(0,)], [(0,)], [(0,)]]:
        raise AssertionError(f"workload {name} left rows behind: {left}")
    return WorkloadFigures(
        name=name,
        jobs=jobs,
        session=executor.session,
        do_requests=namespace.requests + alarm_runs,
        alarm_runs=alarm_runs,
        set_alarm_calls=alarm.set_calls,
        queue_messages=queue.messages,
        send_batch_calls=queue.send_batch_calls,
        d1_rows_read=d1.rows_read,
        d1_rows_written=d1.rows_written,
    )
