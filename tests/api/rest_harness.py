"""Test harness for the REST API: a migrated in-memory read model, recording shards, the app."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from types import SimpleNamespace
from typing import Any

import httpx

from tsumugi.api import RestOptions, bearer_auth, create_rest_app
from tsumugi.clock import FixedClock
from tsumugi.runtimes.local.sql_database import SqliteDatabase
from tsumugi.storage.read_model_writer import D1ReadModelWriter

TOKEN = "s3cret-token"
NOW = 1_700_000_000_000
AUTH = {"authorization": f"Bearer {TOKEN}"}


@dataclass
class RecordingShard:
    """A fake ``ports.ShardRpc`` that records every call and answers from ``outcomes``."""

    name: str
    calls: list[tuple[str, tuple[Any, ...]]]
    outcomes: dict[str, dict[str, Any]]

    def _outcome(self, job_id: str) -> dict[str, Any]:
        return self.outcomes.get(job_id, {"ok": False, "reason": "gone"})

    async def retry(self, job_id: str) -> dict[str, Any]:
        self.calls.append(("retry", (self.name, job_id)))
        return self._outcome(job_id)

    async def cancel(self, job_id: str) -> dict[str, Any]:
        self.calls.append(("cancel", (self.name, job_id)))
        return self._outcome(job_id)

    async def reschedule(
        self, job_id: str, run_at: int | None = None, delay_ms: int | None = None, priority: Any = None
    ) -> dict[str, Any]:
        self.calls.append(("reschedule", (self.name, job_id, run_at, priority)))
        return self._outcome(job_id)

    async def mutate_many(self, action: str, job_ids: list[str]) -> dict[str, Any]:
        self.calls.append(("mutate_many", (self.name, action, tuple(job_ids))))
        ok: list[str] = []
        failed: list[dict[str, str]] = []
        for job_id in job_ids:
            outcome = self._outcome(job_id)
            if outcome.get("ok"):
                ok.append(job_id)
            else:
                failed.append({"id": job_id, "reason": str(outcome.get("reason"))})
        return {"ok": ok, "failed": failed}

    async def diagnostics(self) -> dict[str, Any]:
        self.calls.append(("diagnostics", (self.name,)))
        return {"active": 2, "outbox": 1, "blocked": {"capacity": False, "tokens": True, "perKey": False}}

    async def update_policy(
        self, patch: dict[str, Any], settings: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        self.calls.append(("update_policy", (self.name, patch, settings)))
        return {"policy": {"concurrency": 100, **patch}}

    async def reset_policy(self, settings: dict[str, Any] | None = None) -> dict[str, Any]:
        self.calls.append(("reset_policy", (self.name, settings)))
        return {"policy": {"concurrency": 100}}


@dataclass
class RecordingShards:
    """``env.JOB_SHARD``: every shard shares one call log and one outcome table."""

    calls: list[tuple[str, tuple[Any, ...]]] = field(default_factory=list)
    outcomes: dict[str, dict[str, Any]] = field(default_factory=dict)

    def get(self, name: str) -> RecordingShard:
        return RecordingShard(name, self.calls, self.outcomes)


APP_HEADER = "x-test-app"


class RecordingFlows:
    """The REST app's ``start_run``/``run_control`` hooks: records calls, answers from ``outcomes``."""

    def __init__(self, generated_id: str) -> None:
        self.generated_id = generated_id  # the local id a start without one gets
        self.started: list[tuple[Any, ...]] = []
        self.controlled: list[tuple[str, str]] = []
        self.outcomes: dict[str, dict[str, Any]] = {}

    async def start(
        self, env: Any, flow: str, input: Any, local_id: str | None, deadline_ms: int | None
    ) -> str:
        self.started.append((flow, input, local_id, deadline_ms))
        return f"{flow}:{local_id or self.generated_id}"

    async def control(self, env: Any, run_id: str, action: str) -> dict[str, Any]:
        self.controlled.append((run_id, action))
        return self.outcomes.get(run_id, {"ok": False, "reason": "gone"})


@dataclass
class Switchboard:
    """One uvicorn server for a whole session; each client's requests reach the app it was made for."""

    base_url: str
    apps: dict[str, Any] = field(default_factory=dict)

    def register(self, app: Any) -> str:
        key = str(len(self.apps))
        self.apps[key] = app
        return key

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        headers = dict(scope.get("headers") or [])
        await self.apps[headers[APP_HEADER.encode()].decode()](scope, receive, send)


@dataclass
class Harness:
    db: SqliteDatabase
    shards: RecordingShards
    clock: FixedClock
    env: SimpleNamespace
    options: RestOptions
    enqueued: list[dict[str, Any]]
    switchboard: Switchboard | None = None

    def app(self, **changes: Any) -> Any:
        return create_rest_app(replace(self.options, **changes))

    def client(self, app: Any = None, headers: dict[str, str] | None = None) -> httpx.AsyncClient:
        """A client for ``app``: in-process over ASGI, or through the shared uvicorn server."""
        target = app if app is not None else self.app()
        sent = AUTH if headers is None else headers
        if self.switchboard is not None:
            routed = {**sent, APP_HEADER: self.switchboard.register(target)}
            return httpx.AsyncClient(base_url=self.switchboard.base_url, headers=routed)
        transport = httpx.ASGITransport(app=target)
        return httpx.AsyncClient(transport=transport, base_url="http://tsumugi.test", headers=sent)

    async def add_jobs(self, *snapshots: dict[str, Any]) -> None:
        await D1ReadModelWriter(self.db).upsert_jobs(list(snapshots))


def job(job_id: str = "MAIL#0:a1", **fields: Any) -> dict[str, Any]:
    """A full job snapshot as a shard's outbox carries it (J-190)."""
    binding = job_id.split("#", 1)[0]
    base: dict[str, Any] = {
        "id": job_id,
        "seq": 1,
        "binding": binding,
        "state": "SCHEDULED",
        "priority": 0,
        "attempts": 0,
        "max_attempts": 3,
        "concurrency_key": None,
        "unique_key": None,
        "guarantee": "at-least-once",
        "created_at": NOW - 10_000,
        "updated_at": NOW - 5_000,
        "dispatched_at": None,
        "run_after": NOW,
        "payload": '{"to":"a@example.com"}',
        "run_id": None,
        "node_id": None,
        "attempts_log": [],
    }
    base.update(fields)
    return base


def make_harness(db: SqliteDatabase) -> Harness:
    shards = RecordingShards()
    clock = FixedClock(NOW)
    env = SimpleNamespace(TSUMUGI_DB=db, JOB_SHARD=shards, TSUMUGI_TOKEN=TOKEN)
    enqueued: list[dict[str, Any]] = []

    async def enqueue(env: Any, wire: dict[str, Any]) -> str:
        enqueued.append(wire)
        return f"{wire['binding']}#0:new{len(enqueued)}"

    options = RestOptions(
        auth=bearer_auth(lambda e: e.TSUMUGI_TOKEN, cookie="tsumugi_token"),
        performers=("MAIL", "SMS"),
        enqueue=enqueue,
        env=env,
        clock=clock,
        version="0.6.0",
    )
    return Harness(db, shards, clock, env, options, enqueued)
