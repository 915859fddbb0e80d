"""The app the run crash test serves under `tsumugi dev` (not a test module; loaded by file path).

``Sleepy`` appends ``start <node id>`` to the file named by CRASH_LOG at each attempt; while CRASH_HANG=1
a fan-out child never finishes, so the test can SIGKILL the process with every child mid-attempt.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from tsumugi.api import bearer_auth
from tsumugi.application import define_tsumugi
from tsumugi.flows import FlowBuilder, create_flow
from tsumugi.performer import JobContext, Performer

TIMEOUT_MS = 3_000  # the reaper re-dispatches a silent attempt TIMEOUT_MS + GRACE_MS after dispatch
GRACE_MS = 1_000
CHILDREN = 3


class Sleepy(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> dict[str, Any]:
        with open(os.environ["CRASH_LOG"], "a", encoding="utf-8") as log:
            log.write(f"start {payload['node']}\n")
        while os.environ.get("CRASH_HANG") == "1" and payload["node"].startswith("each-"):
            await asyncio.sleep(0.05)  # the performer hangs until the process is killed (noqa: sleep-ok)
        return {"node": payload["node"]}


PERFORMERS = {"Sleepy": Sleepy}
flow = create_flow(PERFORMERS)


@flow
def CRASHY(f: FlowBuilder) -> None:
    first = f.node("first", "Sleepy", input=lambda i, d: {"node": "first"}, timeout_ms=TIMEOUT_MS)
    each = f.fan_out(
        "each",
        "Sleepy",
        after={"first": first},
        over=lambda i, d: range(CHILDREN),
        input=lambda item, i, index: {"node": f"each-{item}"},
        timeout_ms=TIMEOUT_MS,
    )
    f.node("tally", "Sleepy", after={"each": each}, input=lambda i, d: {"node": "tally"})


tsumugi = define_tsumugi(
    performers=PERFORMERS,
    flows={"CRASHY": CRASHY},
    bindings={"Sleepy": {"policy": {"reaper_grace_ms": GRACE_MS}}},
    auth=bearer_auth(lambda env: env.get("TSUMUGI_TOKEN")),
)
