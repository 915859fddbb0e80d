"""The local shard writes each dispatch message as JSON text around the stored payload (ADR-0167)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.polling import until

from tsumugi.application import define_tsumugi
from tsumugi.client import shard_for
from tsumugi.performer import JobContext, Performer
from tsumugi.runtimes.local.runtime import LocalRuntime

SEEN: list[Any] = []


class Keep(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> None:
        SEEN.append((payload, ctx.attempt))


async def test_payloads_reach_the_performer_as_they_were_enqueued(tmp_path: Path) -> None:
    # J-116: the message the consumer decodes carries the payload as enqueued, whatever its text holds;
    # a lone surrogate included, which a message encoded from the decoded payload could not store.
    payloads: list[Any] = [
        {"to": "a@example.com", "n": [1, 2.5, None, True]},
        'quote " backslash \\ é 😀 \u2028',
        "\ud800 lone",
        None,
        12345678901234567890,
    ]
    app = define_tsumugi(performers={"Keep": Keep})
    SEEN.clear()
    async with LocalRuntime(app, tmp_path / "state", exports={"Keep": Keep}, cron=False) as runtime:
        shard = shard_for(runtime.env, "Keep")
        ids = [await app.enqueue(runtime.env, binding="Keep", payload=payload) for payload in payloads]

        async def all_completed() -> bool:
            return all([await shard.state_of(job_id) == "COMPLETED" for job_id in ids])

        await until(all_completed, "every job COMPLETED", deadline_s=20)
    assert sorted(SEEN, key=repr) == sorted(((p, 1) for p in payloads), key=repr)
