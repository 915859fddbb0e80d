"""The app the operator-command tests serve with a real ``tsumugi dev`` (copied next to it as ``myapp.py``).

``Ok`` succeeds (and logs at DEBUG), ``Fails`` always fails, ``Sleeps`` runs until asked to stop.
``FAILING`` is one failing node; ``WAITING`` is one node an hour away, so the run stays RUNNING;
``APPROVAL`` waits for the event ``order.approved``, then echoes its payload.
"""

import asyncio
import logging

from tsumugi import Performer, bearer_auth, create_flow, define_tsumugi

log = logging.getLogger("operator_app")
SLEEP_STEP_S = 0.2  # Sleeps heartbeats this often, so a cancel request is seen within a fifth of a second
SLEEP_STEPS = 600  # two minutes at most: longer than any test waits
HOUR_MS = 3_600_000


class Ok(Performer):
    async def perform(self, payload, ctx):
        log.debug("Ok performed %s", ctx.job_id)
        return {"echo": payload}


class Fails(Performer):
    async def perform(self, payload, ctx):
        raise Exception("fails on purpose")


class Sleeps(Performer):
    async def perform(self, payload, ctx):
        for _ in range(SLEEP_STEPS):
            await asyncio.sleep(SLEEP_STEP_S)
            beat = await ctx.heartbeat(0.5)
            if beat.cancel_requested:
                raise Exception("stopped on request")
        return None


PERFORMERS = {"Ok": Ok, "Fails": Fails, "Sleeps": Sleeps}
flow = create_flow(PERFORMERS)


@flow
def FAILING(f):
    f.node("only", "Fails", input=lambda i, d: {}, max_attempts=1)


@flow
def WAITING(f):
    f.node("later", "Ok", input=lambda i, d: {}, delay_ms=HOUR_MS)


@flow
def APPROVAL(f):
    approval = f.wait_for_event("approval", event="order.approved")
    f.node("ship", "Ok", after={"approval": approval}, input=lambda i, d: d["approval"])


tsumugi = define_tsumugi(
    performers=PERFORMERS,
    flows={"APPROVAL": APPROVAL, "FAILING": FAILING, "WAITING": WAITING},
    auth=bearer_auth(lambda env: getattr(env, "TSUMUGI_TOKEN", None)),
)
