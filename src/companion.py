"""The companion Worker (``wrangler.companion.jsonc``): a second Python Worker beside the example.

It shows the two ways another Worker works with Tsumugi:

- it **enqueues** into the example's shards from outside, with ``create_client`` over a ``JOB_SHARD``
  binding to the example Worker's Durable Objects: ``POST /enqueue`` with
  ``{"binding", "payload",...options}`` answers 201 ``{"id"}``; ``POST /enqueue-many`` takes
  ``{"jobs": [...]}`` and answers 201 ``{"ids"}``. Both need the bearer token ``TSUMUGI_TOKEN``.
- it **serves a performer** to the example: ``Shout`` is a remote performer there, reached
  through the example's ``Shout`` service binding to this Worker's ``Shout`` entrypoint.
- it **reads a shard's meter** for benches and tests: ``GET /meter?shard=<binding>%23<n>`` answers the
  shard Durable Object's ``meter()`` (cursor rows read/written, ``setAlarm`` calls since the instance
  started; COST.md), behind the same token.
"""
# J-200, J-62

from __future__ import annotations

import hmac
import json
from typing import Any
from urllib.parse import parse_qs, urlsplit

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


def _metered_shard(query: str) -> str | None:
    """The ``shard`` of a meter query if it names a shard of the example (``<binding>#<n>``), else None.

    Only real shards: a Durable Object is created by being addressed, so an arbitrary name would make one.
    """
    given = parse_qs(query).get("shard", [""])[0]
    binding, _, index = given.partition("#")
    if binding not in example.PERFORMERS or not (index.isascii() and index.isdigit()):
        return None
    return given if int(index) < client.binding_config(binding).shards else None


class Default(WorkerEntrypoint):
    """``POST /enqueue``, ``POST /enqueue-many`` and ``GET /meter`` (see the module notes)."""

    async def fetch(self, request: Any) -> Any:
        if not _authorized(request, self.env):
            return json_answer({"error": "unauthorized"}, 401)
        url = urlsplit(str(request.url))
        path = url.path or "/"
        if request.method == "GET" and path == "/meter":
            return await self._meter(url.query)
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

    async def _meter(self, query: str) -> Any:
        name = _metered_shard(query)
        if name is None:
            return json_answer({"error": "shard must name a shard of the example, as <binding>#<n>"}, 400)
        # The stub retries after ``identify`` when the proxy between dev processes drops the name.
        return json_answer(await WorkerEnv(self.env).JOB_SHARD.get(name).meter())
