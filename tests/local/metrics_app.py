"""The app the ``GET /metrics`` scrape test runs under `tsumugi dev` (not a test module).

``Flaky`` fails its first attempt, ``Broken`` every one; ``Hold`` keeps its attempt (and so its queue
message) until the file named by its payload exists; ``STEPS`` is a two-node flow of ``Step`` jobs.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tsumugi.api import bearer_auth
from tsumugi.application import define_tsumugi
from tsumugi.flows import FlowBuilder, create_flow
from tsumugi.performer import JobContext, Performer

RELEASE_POLL_S = 0.02  # how often Hold looks for its release file


class Ok(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> None:
        return None


class Flaky(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> None:
        if ctx.attempt == 1:
            raise RuntimeError("first attempt fails")


class Broken(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> None:
        raise RuntimeError("always fails")


class Hold(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> None:
        release = Path(payload["release"])
        while not release.exists():
            await asyncio.sleep(RELEASE_POLL_S)


PERFORMERS = {
    "Ok": Ok,
    "Flaky": Flaky,
    "Broken": Broken,
    "Hold": Hold,
    "Held": Ok,
    "Limited": Ok,
    "Step": Ok,
}
flow = create_flow(PERFORMERS)


@flow
def STEPS(f: FlowBuilder) -> None:
    first = f.node("first", "Step", input=lambda i, d: {})
    f.node("second", "Step", after={"first": first}, input=lambda i, d: {})


tsumugi = define_tsumugi(
    performers=PERFORMERS,
    flows={"STEPS": STEPS},
    auth=bearer_auth(lambda env: env.get("TSUMUGI_TOKEN")),
)
