"""The queue and scheduled handlers of the Tsumugi object (J-207)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from tsumugi.application import Tsumugi, define_tsumugi
from tsumugi.application.definition import parse_definition
from tsumugi.clock import FixedClock
from tsumugi.core.config import SweepOptions
from tsumugi.performer import JobContext, Performer


class Greet(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> str:
        return f"hello {payload['name']} from {self.env['NAME']}"


class Shard:
    def __init__(self) -> None:
        self.reports: list[tuple[str, dict[str, Any]]] = []

    async def report(self, job_id: str, outcome: dict[str, Any]) -> None:
        self.reports.append((job_id, outcome))


class Message:
    def __init__(self, body: dict[str, Any]) -> None:
        self.body = body
        self.attempts = 1
        self.acked = False

    def ack(self) -> None:
        self.acked = True

    def retry(self) -> None:
        raise AssertionError("never retried (J-118)")


async def test_queue_handler_runs_performers_from_the_map() -> None:
    tsumugi = define_tsumugi(performers={"GREET": Greet})
    shard = Shard()
    env = {"JOB_SHARD": SimpleNamespace(get=lambda name: shard), "NAME": "tsumugi"}
    message = Message(
        {
            "jobId": "GREET#0:a1",
            "binding": "GREET",
            "attempt": 1,
            "payload": {"name": "ann"},
            "timeoutMs": 1_000,
            "claimRequired": False,
        }
    )
    await tsumugi.queue(SimpleNamespace(messages=[message]), env)  # a Cloudflare-shaped MessageBatch
    assert message.acked
    assert shard.reports == [("GREET#0:a1", {"ok": True, "result": "hello ann from tsumugi", "attempt": 1})]


async def test_queue_handler_accepts_a_custom_resolver() -> None:
    class Exports:
        def resolve(self, binding: str, env: Any) -> Any:
            return Greet(None, {"NAME": "exports"})

    tsumugi = Tsumugi(
        parse_definition({"performers": {"GREET": Greet}}), resolver_factory=lambda ctx: Exports()
    )
    shard = Shard()
    message = Message({"jobId": "GREET#0:a1", "payload": {"name": "bo"}, "attempt": 2, "timeoutMs": 0})
    await tsumugi.queue([message], {"JOB_SHARD": SimpleNamespace(get=lambda name: shard)})
    assert shard.reports[0][1]["result"] == "hello bo from exports"  # J-61 via the runtime's resolver


async def test_scheduled_sweeps_the_read_model_with_the_retention_options() -> None:
    calls: list[tuple[Any, int, SweepOptions]] = []

    async def sweeper(db: Any, now_ms: int, retention: SweepOptions) -> int:
        calls.append((db, now_ms, retention))
        return 3

    db = object()
    tsumugi = Tsumugi(
        parse_definition(
            {"performers": {"GREET": Greet}, "retention": {"older_than_ms": 60_000, "limit": 5}}
        ),
        clock=FixedClock(1_000_000),
        read_model_sweeper=sweeper,
    )
    # J-172, J-207: the cron handler calls the projection's sweep
    assert await tsumugi.scheduled(None, {"TSUMUGI_DB": db}) == 3
    assert calls == [(db, 1_000_000, SweepOptions(older_than_ms=60_000, limit=5))]
    assert await tsumugi.scheduled(None, {}) == 0  # no database: logged, nothing swept
    assert len(calls) == 1
