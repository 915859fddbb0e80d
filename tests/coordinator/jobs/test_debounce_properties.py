"""Debounce never loses the last payload and never makes two jobs of one window (ADR-0149)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tsumugi.clock import FixedClock
from tsumugi.testing.fakes import InProcessShards

START = 1_700_000_000_000
DEBOUNCE_MS = 1000

steps = st.lists(
    st.tuples(
        st.integers(0, 1500),  # ms to advance before the step
        st.sampled_from(["a", "b"]),  # the debounce key
        st.booleans(),  # tick before enqueueing (dispatches what is due)
        st.one_of(st.none(), st.integers(1000, 3000)),  # debounce_max_ms
    ),
    min_size=1,
    max_size=30,
)


@dataclass
class Window:
    """The reference model, from the rule: a window stays open while now < its end."""

    end: int
    max_at: int | None
    payloads: list[int] = field(default_factory=list)


def model(sequence: list[tuple[int, str, bool, int | None]]) -> list[tuple[str, list[int]]]:
    now = START
    open_windows: dict[str, Window] = {}
    closed: list[tuple[str, Window]] = []
    for n, (advance, key, _tick, max_ms) in enumerate(sequence):
        now += advance
        window = open_windows.get(key)
        if window is not None and now < window.end:
            window.end = now + DEBOUNCE_MS if window.max_at is None else min(now + DEBOUNCE_MS, window.max_at)
            window.payloads.append(n)
            continue
        if window is not None:
            closed.append((key, window))
        max_at = None if max_ms is None else now + max_ms
        end = now + DEBOUNCE_MS if max_at is None else min(now + DEBOUNCE_MS, max_at)
        open_windows[key] = Window(end, max_at, [n])
    return [(k, w.payloads) for k, w in closed + list(open_windows.items())]


async def run(sequence: list[tuple[int, str, bool, int | None]]) -> list[tuple[str, list[int]]]:
    clock = FixedClock(START)
    shards = InProcessShards(clock, rand=lambda: 0.5)
    shard = shards.get("D#0")
    by_job: dict[str, tuple[str, list[int]]] = {}
    for n, (advance, key, tick, max_ms) in enumerate(sequence):
        clock.advance(advance)
        if tick:
            await shards.run_due_alarms()
        item: dict[str, Any] = {"binding": "D", "payload": n, "debounceKey": key, "debounceMs": DEBOUNCE_MS}
        if max_ms is not None:
            item["debounceMaxMs"] = max_ms
        [job_id] = await shard.enqueue_many([item])
        by_job.setdefault(job_id, (key, []))[1].append(n)
    clock.advance(10 * DEBOUNCE_MS)
    await shards.run_due_alarms()
    sent = shards.queue.take()
    for job_id, (_key, payloads) in by_job.items():
        # the job that ran carries the last payload given to it
        assert [m for m in sent if m["jobId"] == job_id], job_id
        row = shard.ctx.jobs.get(job_id)
        assert row is not None and row["payload"] == str(payloads[-1])
    return list(by_job.values())


@settings(max_examples=150, deadline=None)
@given(steps)
def test_debounce_matches_the_model(sequence: list[tuple[int, str, bool, int | None]]) -> None:
    assert sorted(asyncio.run(run(sequence))) == sorted(model(sequence))
