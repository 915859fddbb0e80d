"""The companion Worker (``wrangler.companion.jsonc``): a second Python Worker beside the example.

It shows the two ways another Worker works with Tsumugi:

- it **enqueues** into the example's shards from outside, with ``create_client`` over a ``JOB_SHARD``
  binding to the example Worker's Durable Objects (J-200): ``POST /enqueue`` with
  ``{"binding", "payload", ...options}`` answers 201 ``{"id"}``; ``POST /enqueue-many`` takes
  ``{"jobs": [...]}`` and answers 201 ``{"ids"}``. Both need the bearer token ``TSUMUGI_TOKEN``.
- it **serves a performer** to the example: ``Shout`` is a remote performer there (J-62), reached
  through the example's ``Shout`` service binding to this Worker's ``Shout`` entrypoint.
"""

from __future__ import annotations

import hmac
import json
from typing import Any

import app as example
from tsumugi import EnqueueError, InvalidJobIdError, create_client
from tsumugi.runtimes.cloudflare import PerformerEntrypoint, WorkerEntrypoint, WorkerEnv
from tsumugi.runtimes.cloudflare.worker_entry import json_answer

__all__ = ["Default", "Shout"]

# J-201: the client routes and configures exactly as the example does, so it takes the same settings.
client = create_client(bindings=example.BINDINGS)


class Shout(PerformerEntrypoint):
    """The example's remote ``Shout`` performer, served over RPC."""

    performer = example.Shout


def _authorized(request: Any, env: Any) -> bool:
    token = getattr(env, "TSUMUGI_TOKEN", None)
    given = request.headers.get("authorization") or ""
    return bool(token) and hmac.compare_digest(given.encode(), f"Bearer {token}".encode())


class Default(WorkerEntrypoint):
    """``POST /enqueue`` and ``POST /enqueue-many``: jobs for the example's performers."""

    async def fetch(self, request: Any) -> Any:
        if not _authorized(request, self.env):
            return json_answer({"error": "unauthorized"}, 401)
        path = "/" + request.url.split("://", 1)[-1].split("/", 1)[-1].split("?", 1)[0]
        if request.method != "POST" or path not in ("/enqueue", "/enqueue-many"):
            return json_answer({"error": "not found"}, 404)
        try:
            body = json.loads(await request.text())
        except ValueError:
            return json_answer({"error": "body must be valid JSON"}, 400)
        env = WorkerEnv(self.env)
        try:
            if path == "/enqueue":
                return json_answer({"id": await client.enqueue(env, body)}, 201)
            return json_answer({"ids": await client.enqueue_many(env, body.get("jobs", []))}, 201)
        except (EnqueueError, InvalidJobIdError) as error:
            return json_answer({"error": str(error)}, 400)
