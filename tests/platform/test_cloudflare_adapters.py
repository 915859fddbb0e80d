"""The Cloudflare adapters on CPython with fake bindings: DO SQL, alarm, Queue producer and consumer
messages, D1, the env wrapper, Durable Object stubs and remote performers (ADR-0082, ADR-0084)."""

from __future__ import annotations

import types
from typing import Any

import pytest
from tests.platform.fake_workers import (
    FakeD1,
    FakeDurableObjectStorage,
    FakeMessage,
    FakeNamespace,
    FakeQueue,
)

from tsumugi.errors import QueueMessageTooLargeError, UnsafeIntegerError
from tsumugi.performer import JobContext, Performer
from tsumugi.ports import ShardRpc
from tsumugi.runtimes.cloudflare.alarm import DurableObjectAlarm
from tsumugi.runtimes.cloudflare.d1_database import D1Database
from tsumugi.runtimes.cloudflare.do_sql import DurableObjectSqlExecutor
from tsumugi.runtimes.cloudflare.js_conversion import IN_PYODIDE, MAX_SAFE_INTEGER, sql_param, sql_params
from tsumugi.runtimes.cloudflare.queue_producer import (
    MAX_BATCH_BYTES,
    QueueProducer,
    batch_chunks,
    delivered_messages,
    message_size_bytes,
)
from tsumugi.runtimes.cloudflare.rpc_stubs import DurableObjectNamespaceClient
from tsumugi.runtimes.cloudflare.service_binding import RemotePerformer, serve_perform
from tsumugi.runtimes.cloudflare.worker_env import WorkerEnv, worker_env_for


def test_cpython_is_not_pyodide() -> None:
    assert not IN_PYODIDE  # the CPython side passes plain values to the fakes


# --------------------------------------------------------------------------- parameters (PLATFORM.md §3.7)
def test_booleans_bind_as_integers_and_large_ints_are_refused() -> None:
    assert sql_params([True, False, 3, 2.5, "x", None, b"\x01"]) == [1, 0, 3, 2.5, "x", None, b"\x01"]
    assert sql_param(-MAX_SAFE_INTEGER) == -MAX_SAFE_INTEGER
    with pytest.raises(UnsafeIntegerError, match="2\\^53"):
        sql_param(2**53)
    with pytest.raises(TypeError):
        sql_param(object())


# --------------------------------------------------------------------------- DO SQL (J-4)
def test_do_sql_executor_returns_rows_and_releases_every_cursor() -> None:
    storage = FakeDurableObjectStorage()
    sql = DurableObjectSqlExecutor(storage)
    assert sql.execute("CREATE TABLE t (k TEXT PRIMARY KEY, n INTEGER, flag INTEGER)") == []
    sql.execute_many("INSERT INTO t VALUES (?, ?, ?)", [("a", 1, True), ("b", 2, False)])
    assert sql.execute("SELECT k, n, flag FROM t ORDER BY k") == [("a", 1, 1), ("b", 2, 0)]
    assert storage.sql.open_cursors == 0
    assert sql.rows_written == 2 and sql.rows_read == 2


def test_do_sql_executes_many_inserts_as_few_statements_within_the_parameter_limit() -> None:
    storage = FakeDurableObjectStorage()
    sql = DurableObjectSqlExecutor(storage)
    sql.execute("CREATE TABLE t (k TEXT PRIMARY KEY, n INTEGER, s TEXT)")
    storage.sql.statements.clear()
    sql.execute_many("INSERT INTO t (k, n, s) VALUES (?, ?, 'x')", [(f"k{i:03}", i) for i in range(120)])
    assert [len(args) for _, args in storage.sql.statements] == [100, 100, 40]  # 50 rows of 2 a statement
    assert sql.execute("SELECT COUNT(*), SUM(n), MIN(s) FROM t") == [(120, sum(range(120)), "x")]
    assert sql.rows_written == 120
    storage.sql.statements.clear()
    sql.execute_many("UPDATE t SET n = ? WHERE k = ?", [(0, "k000"), (0, "k001")])  # one per row
    sql.execute_many("INSERT OR IGNORE INTO t (k, n) VALUES (?, abs(?))", [("k000", 1), ("new", -2)])
    assert len(storage.sql.statements) == 4
    assert sql.execute("SELECT n FROM t WHERE k IN ('k000', 'new') ORDER BY k") == [(0,), (2,)]


def test_do_sql_transaction_uses_transaction_sync_and_rolls_back_on_error() -> None:
    storage = FakeDurableObjectStorage()
    sql = DurableObjectSqlExecutor(storage)
    sql.execute("CREATE TABLE t (k TEXT PRIMARY KEY)")
    assert sql.transaction(lambda: sql.execute("INSERT INTO t VALUES ('a') RETURNING k")) == [("a",)]

    def fails() -> None:
        sql.execute("INSERT INTO t VALUES ('b')")
        sql.transaction(lambda: sql.execute("INSERT INTO t VALUES ('c')"))  # nested: joins the outer one
        raise KeyError("boom")

    with pytest.raises(KeyError, match="boom"):  # the performer's own error, not the rollback marker
        sql.transaction(fails)
    assert sql.execute("SELECT k FROM t") == [("a",)]
    assert storage.transactions == 2  # no BEGIN ever reached DO SQL (it refuses them)


def test_do_sql_errors_surface_with_the_engines_message() -> None:
    sql = DurableObjectSqlExecutor(FakeDurableObjectStorage())
    sql.execute("CREATE TABLE t (k TEXT PRIMARY KEY)")
    sql.execute("INSERT INTO t VALUES ('a')")
    with pytest.raises(Exception, match=r"UNIQUE constraint failed: t\.k"):
        sql.execute("INSERT INTO t VALUES ('a')")
    with pytest.raises(UnsafeIntegerError):
        sql.execute("SELECT ?", [2**60])


# --------------------------------------------------------------------------- alarm (J-160)
async def test_alarm_round_trips_as_integer_epoch_ms_and_counts_set_calls() -> None:
    storage = FakeDurableObjectStorage()
    alarm = DurableObjectAlarm(storage)
    assert await alarm.get_alarm() is None
    await alarm.set_alarm(1_764_460_800_123)
    at = await alarm.get_alarm()
    assert at == 1_764_460_800_123 and isinstance(at, int)
    await alarm.delete_alarm()
    assert await alarm.get_alarm() is None
    assert alarm.set_calls == 1  # COST.md: each setAlarm is billed as one row written


# --------------------------------------------------------------------------- Queue (J-161, J-117)
async def test_queue_producer_sends_at_most_100_messages_per_call() -> None:
    queue = FakeQueue()
    producer = QueueProducer(queue)
    messages = [{"jobId": f"Hello#0:m{n}", "attempt": 1} for n in range(250)]
    await producer.send_batch(messages)
    assert [len(call) for call in queue.calls] == [100, 100, 50]
    assert queue.bodies == messages
    assert {entry["contentType"] for call in queue.calls for entry in call} == {"json"}
    assert (producer.send_batch_calls, producer.messages_sent) == (3, 250)
    await producer.send_batch([])
    assert len(queue.calls) == 3


def test_queue_batches_respect_the_256_kb_limit_and_refuse_oversized_messages() -> None:
    big = [{"jobId": f"Hello#0:b{n}", "payload": "x" * 60_000} for n in range(10)]
    chunks = list(batch_chunks(big))
    assert [len(c) for c in chunks] == [4, 4, 2]
    assert all(sum(message_size_bytes(m) for m in c) <= MAX_BATCH_BYTES for c in chunks)
    with pytest.raises(QueueMessageTooLargeError):
        list(batch_chunks([{"payload": "x" * 140_000}]))


def test_delivered_messages_expose_body_attempts_ack_and_retry() -> None:
    raw = FakeMessage({"jobId": "Hello#0:a", "attempt": 2}, attempts=3)
    (message,) = delivered_messages(types.SimpleNamespace(messages=[raw]))
    assert message.body == {"jobId": "Hello#0:a", "attempt": 2} and message.attempts == 3
    message.ack()
    message.retry()
    assert (raw.acked, raw.retried) == (1, 1)


# --------------------------------------------------------------------------- D1 (J-192)
async def test_d1_database_all_run_and_atomic_batch() -> None:
    d1 = FakeD1()
    db = D1Database(d1)
    await db.run("CREATE TABLE job (id TEXT PRIMARY KEY, seq INTEGER, ok INTEGER)")
    await db.batch(
        [
            ("INSERT INTO job VALUES (?, ?, ?)", ["a", 1, True]),
            ("INSERT INTO job VALUES (?, ?, ?)", ["b", 2, False]),
        ]
    )
    assert await db.all("SELECT id, seq, ok FROM job ORDER BY id") == [
        {"id": "a", "seq": 1, "ok": 1},
        {"id": "b", "seq": 2, "ok": 0},
    ]
    assert await db.run("UPDATE job SET seq = seq + 1") == 2
    with pytest.raises(Exception, match="UNIQUE"):
        await db.batch(
            [("INSERT INTO job VALUES ('c', 3, 0)", []), ("INSERT INTO job VALUES ('a', 9, 0)", [])]
        )
    assert [r["id"] for r in await db.all("SELECT id FROM job ORDER BY id")] == [
        "a",
        "b",
    ]  # batch rolled back
    assert db.rows_written >= 4 and db.rows_read >= 4
    await db.batch([])
    assert d1.batches == 2


# --------------------------------------------------------------------------- env (J-205, 10.7)
def test_worker_env_wraps_tsumugi_bindings_and_reads_missing_ones_as_absent() -> None:
    raw = types.SimpleNamespace(
        TSUMUGI_DB=FakeD1(),
        TSUMUGI_QUEUE=FakeQueue(),
        JOB_SHARD=FakeNamespace({}),
        TSUMUGI_TOKEN="secret",
        Mailer=types.SimpleNamespace(constructor=types.SimpleNamespace(name="Fetcher")),
    )
    env = WorkerEnv(raw)
    assert isinstance(env.TSUMUGI_DB, D1Database) and isinstance(env.TSUMUGI_QUEUE, QueueProducer)
    assert isinstance(env.JOB_SHARD, DurableObjectNamespaceClient)
    assert env.TSUMUGI_TOKEN == "secret" and env["TSUMUGI_TOKEN"] == "secret"
    assert isinstance(env.Mailer, RemotePerformer) and callable(env.Mailer.perform)
    assert getattr(env, "RUN", None) is None and env.get("RUN") is None and "RUN" not in env
    with pytest.raises(KeyError):
        env["SCHEDULER"]
    assert env.TSUMUGI_DB is env.TSUMUGI_DB  # one adapter per isolate
    assert env.raw is raw


# --------------------------------------------------------------------------- DO RPC stubs (J-17, J-22)
async def test_namespace_client_addresses_by_name_and_places_keyword_arguments() -> None:
    calls: list[tuple[str, tuple[Any, ...]]] = []

    class ShardStub:
        async def reschedule(self, *args: Any) -> dict[str, Any]:
            calls.append(("reschedule", args))
            return {"ok": True}

        async def enqueue_many(self, *args: Any) -> list[str]:
            calls.append(("enqueue_many", args))
            return ["Hello#0:a"]

    shards = DurableObjectNamespaceClient(FakeNamespace({"Hello#0": ShardStub()}), ShardRpc)
    stub = shards.get("Hello#0")
    assert stub.name == "Hello#0"
    assert await stub.enqueue_many([{"binding": "Hello"}]) == ["Hello#0:a"]
    assert await stub.reschedule("Hello#0:a", delay_ms=500) == {"ok": True}
    # RPC is positional: run_at and priority keep their places as None.
    assert calls == [
        ("enqueue_many", ([{"binding": "Hello"}],)),
        ("reschedule", ("Hello#0:a", None, 500, None)),
    ]
    untyped = DurableObjectNamespaceClient(FakeNamespace({"x": ShardStub()})).get("x")
    with pytest.raises(TypeError, match="positional"):
        await untyped.reschedule("Hello#0:a", delay_ms=1)


# --------------------------------------------------------------------------- remote performers (J-62, J-63)
async def test_remote_performer_round_trip_with_heartbeat_and_spawn() -> None:
    class Mailer(Performer):
        async def perform(self, payload: Any, ctx: JobContext) -> Any:
            beat = await ctx.heartbeat(0.5)
            ctx.spawn("child", "Hello", {"to": payload["to"]})
            return {"sent": payload["to"], "cancel": beat.cancel_requested, "deadline": ctx.deadline_at}

    class ServiceBinding:
        """What crosses RPC: the ctx object's callbacks become awaitable remote calls."""

        async def perform(self, payload: Any, js_ctx: dict[str, Any]) -> Any:
            async def remote(fn: Any, *args: Any) -> Any:
                result = fn(*args)
                return await result if hasattr(result, "__await__") else result

            ctx = types.SimpleNamespace(
                **{k: v for k, v in js_ctx.items() if not callable(v)},
                heartbeat=lambda progress: remote(js_ctx["heartbeat"], progress),
                spawn=lambda *args: remote(js_ctx["spawn"], *args),
            )
            return await serve_perform(Mailer(), payload, ctx)

    beats: list[Any] = []

    async def heartbeat(progress: Any) -> Any:
        beats.append(progress)
        from tsumugi.performer import HeartbeatResult

        return HeartbeatResult(cancel_requested=True)

    ctx = JobContext(job_id="Mailer#0:abc", attempt=2, deadline_at=1_764_460_860_000, heartbeat=heartbeat)
    result = await RemotePerformer(ServiceBinding()).perform({"to": "a@b"}, ctx)
    assert result == {"sent": "a@b", "cancel": True, "deadline": 1_764_460_860_000}
    assert beats == [0.5]
    assert [(s.id, s.binding, s.payload) for s in ctx.spawns] == [("child", "Hello", {"to": "a@b"})]


def test_one_worker_env_per_isolate_env() -> None:
    # Adapters (and their meters) are built once per isolate, not per request.
    raw = types.SimpleNamespace(TSUMUGI_QUEUE=FakeQueue())
    sdk_wrapper = types.SimpleNamespace(_env=raw)  # the shape of the SDK's _EnvWrapper
    assert worker_env_for(raw) is worker_env_for(sdk_wrapper)
    assert worker_env_for(raw).TSUMUGI_QUEUE is worker_env_for(raw).TSUMUGI_QUEUE
    assert worker_env_for(types.SimpleNamespace()) is not worker_env_for(raw)
