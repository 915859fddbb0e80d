"""OpenTelemetry's SDK with in-memory exporters, and an app on a real LocalRuntime under a FixedClock.

``tsumugi.telemetry.enable`` gets this test's providers, so no test touches the global ones. Waiting polls
with a deadline for work the runtime's tasks do; time itself only moves when a test advances the clock.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tests import polling

from tsumugi import telemetry
from tsumugi.application import define_tsumugi
from tsumugi.application.tsumugi import Tsumugi
from tsumugi.clock import FixedClock
from tsumugi.core.wire_format import shard_name_of
from tsumugi.performer import JobContext, Performer
from tsumugi.runtimes.local.runtime import LocalRuntime

START = 1_700_000_000_000
DEADLINE_S = 20.0


class Otel:
    """The SDK side: finished spans and collected metric points of this test."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])
        self.tracer = self.tracer_provider.get_tracer("tests")

    def spans(self, name: str) -> list[ReadableSpan]:
        return [span for span in self.exporter.get_finished_spans() if span.name == name]

    def points(self, metric: str) -> list[Any]:
        data = self.reader.get_metrics_data()
        found: list[Any] = []
        for resource in data.resource_metrics if data is not None else ():
            for scope in resource.scope_metrics:
                for item in scope.metrics:
                    if item.name == metric:
                        found.extend(item.data.data_points)
        return found

    def total(self, metric: str, **attributes: Any) -> float:
        """A counter's value summed over the points whose attributes include ``attributes``."""
        wanted = {f"tsumugi.{key.replace('_', '.')}": value for key, value in attributes.items()}
        return sum(
            point.value for point in self.points(metric) if wanted.items() <= dict(point.attributes).items()
        )


OTEL: list[Otel] = []  # the current test's, for performers that open spans of their own


@pytest.fixture
def otel() -> Iterator[Otel]:
    sdk = Otel()
    OTEL.append(sdk)
    telemetry.enable(tracer_provider=sdk.tracer_provider, meter_provider=sdk.meter_provider)
    yield sdk
    telemetry.disable()
    OTEL.remove(sdk)
    sdk.tracer_provider.shutdown()
    sdk.meter_provider.shutdown()


@dataclass
class Seen:
    attempt: int
    traceparent: str | None
    work_parent: int | None  # the span id the performer's own span had as parent


SEEN: list[Seen] = []
GATES: list[asyncio.Event] = []  # made per test, on its loop


class Work(Performer):
    """Opens a span of its own; ``{"fail_until": n}`` raises on attempts below n, ``{"hold": True}`` waits."""

    async def perform(self, payload: Mapping[str, Any], ctx: JobContext) -> Any:
        with OTEL[-1].tracer.start_as_current_span("work") as span:
            parent = getattr(span, "parent", None)
            SEEN.append(Seen(ctx.attempt, ctx.traceparent, parent.span_id if parent else None))
            if payload.get("hold"):
                await GATES[-1].wait()
            if ctx.attempt < payload.get("fail_until", 0):
                raise RuntimeError(f"attempt {ctx.attempt} fails on purpose")
            return {"done": ctx.attempt}


class Other(Work):
    pass


PERFORMERS = {"Work": Work, "Other": Other}


class Local:
    def __init__(self, app: Tsumugi, runtime: LocalRuntime, clock: FixedClock) -> None:
        self.app = app
        self.runtime = runtime
        self.clock = clock

    @property
    def env(self) -> Any:
        return self.runtime.env

    async def state(self, job_id: str) -> str | None:
        state: str | None = await self.env.JOB_SHARD.get(shard_name_of(job_id)).state_of(job_id)
        return state

    async def settled(self, job_id: str, state: str) -> None:
        async def reached() -> bool:
            return await self.state(job_id) == state

        await polling.until(reached, f"{job_id} to reach {state}", DEADLINE_S)

    async def advance(self, ms: int) -> None:
        self.clock.advance(ms)
        await self.runtime.alarms.fire_due()


@pytest.fixture
async def local(tmp_path: Path) -> AsyncIterator[Local]:
    SEEN.clear()
    GATES.append(asyncio.Event())
    app = define_tsumugi(performers=PERFORMERS, flows=FLOWS)
    clock = FixedClock(START)
    app.clock = clock
    runtime = LocalRuntime(app, tmp_path / "state", clock=clock, exports=PERFORMERS, cron=False)
    await runtime.start()
    yield Local(app, runtime, clock)
    GATES.pop().set()
    await runtime.stop(grace_s=1.0)


def _flows() -> dict[str, Any]:
    from tsumugi.flows import FlowBuilder, create_flow

    flow = create_flow(PERFORMERS)

    @flow
    def CHAIN(f: FlowBuilder) -> None:
        first = f.node("first", "Work", input=lambda i, d: {})
        fail = {"after": {"first": first}, "max_attempts": 1}
        f.node("second", "Other", input=lambda i, d: {"fail_until": i["fail"]}, **fail)

    return {"CHAIN": CHAIN}


FLOWS = _flows()
