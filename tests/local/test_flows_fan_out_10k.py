"""A 10,000-child fan-out run completes on the local runtime (F-15, F-35, F-56, ADR-0115)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from tests.local.flow_support import until

from tsumugi.application import define_tsumugi
from tsumugi.flows import FlowBuilder, create_flow
from tsumugi.performer import JobContext, Performer
from tsumugi.runtimes.local.runtime import LocalRuntime

CHILDREN = 10_000
DEADLINE_S = 120.0  # about 5 s here; the margin is for a loaded CI machine
CONSUMER_BATCH = 1_000  # one consumer batch reports a thousand children to their shard at once


class Noop(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> None:
        return None


class Summary(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> Any:
        return payload


PERFORMERS = {"Noop": Noop, "Summary": Summary}
flow = create_flow(PERFORMERS)


@flow
def WIDE(f: FlowBuilder) -> None:
    # The items come from the flow input: a node result is capped at 8 KiB (J-72).
    each = f.fan_out(
        "each", "Noop", over=lambda i, d: range(i["n"]), input=lambda item, i, index: {"n": item}
    )
    f.node("summary", "Summary", after={"each": each}, input=lambda i, d: d["each"])


@pytest.mark.slow
async def test_ten_thousand_children_complete(tmp_path: Path) -> None:
    app = define_tsumugi(
        performers=PERFORMERS,
        flows={"WIDE": WIDE},
        runs={"max_nodes": CHILDREN + 2},  # F-56: the container and the summary count too
        bindings={"Noop": {"policy": {"concurrency": 2_000}}},
    )
    started = time.monotonic()
    async with LocalRuntime(
        app, tmp_path / "state", exports=PERFORMERS, batch_size=CONSUMER_BATCH, cron=False
    ) as rt:
        run_id = await app.start(rt.env, "WIDE", {"n": CHILDREN})
        run = app.run_for(rt.env, run_id)

        async def finished() -> str | None:
            state = await run.state()
            return None if state == "RUNNING" else state

        assert await until(finished, "the 10,000-child run", DEADLINE_S) == "COMPLETED"
        coordinator = rt.env.RUN.coordinators.coordinator(run_id)
        counters = coordinator.ctx.store.counters()
        nodes = coordinator.ctx.store.nodes()
    assert len(nodes) == CHILDREN + 2
    assert {node.state for node in nodes} == {"COMPLETED"}
    assert counters == (CHILDREN + 2, CHILDREN + 2, 0)  # F-26
    summary = next(node for node in nodes if node.id == "summary")
    assert json.loads(summary.result or "null") == {"total": CHILDREN, "succeeded": CHILDREN, "failed": 0}
    assert time.monotonic() - started < DEADLINE_S
