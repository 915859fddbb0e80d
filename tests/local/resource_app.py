"""The app the run resource tests settle runs with, in process and under `tsumugi dev` (not a test module).

``STEPS`` is a two-node flow of no-op jobs: every run opens its coordinator, enqueues twice, is notified
twice and settles COMPLETED (F-35, F-45).
"""

from __future__ import annotations

from typing import Any

from tsumugi.api import bearer_auth
from tsumugi.application import define_tsumugi
from tsumugi.flows import FlowBuilder, create_flow
from tsumugi.performer import JobContext, Performer


class Noop(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> None:
        return None


PERFORMERS = {"Noop": Noop}
flow = create_flow(PERFORMERS)


@flow
def STEPS(f: FlowBuilder) -> None:
    first = f.node("first", "Noop", input=lambda i, d: {})
    f.node("second", "Noop", after={"first": first}, input=lambda i, d: {})


tsumugi = define_tsumugi(
    performers=PERFORMERS,
    flows={"STEPS": STEPS},
    auth=bearer_auth(lambda env: env.get("TSUMUGI_TOKEN")),
)
