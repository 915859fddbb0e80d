"""The adapter's D1 read-model path and Queue producer path on Miniflare's real bindings, inside Pyodide.

The runner hands the bindings in as ``tsumugi_test_bindings`` (harness/pyodide_pytest.mjs). Rules: J-192,
J-193, D-1..D-9 (the read model), J-161 (sendBatch of at most 100 messages).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import tsumugi_test_bindings as bindings

from tsumugi.runtimes.cloudflare.d1_database import D1Database
from tsumugi.runtimes.cloudflare.queue_producer import QueueProducer
from tsumugi.storage.read_model_writer import D1ReadModelWriter

MIGRATIONS = Path("/repo/migrations")
DELIVERY_WAIT_S = 20.0  # Miniflare delivers a batch 50 ms after the last send (maxBatchTimeout 0.05 s)


async def apply_migrations(db: D1Database) -> None:
    for path in sorted(MIGRATIONS.glob("*.sql")):
        # Plain DDL without BEGIN/COMMIT (D1 refuses SQL transactions): drop `--` comments, split on ';'.
        text = "\n".join(line.split("--", 1)[0] for line in path.read_text(encoding="utf-8").splitlines())
        for statement in text.split(";"):
            if statement.strip():
                await db.run(statement)


def snapshot(seq: int, state: str, attempts: int) -> dict[str, object]:
    return {
        "id": "Hello#0:pyodide0000000000000001",
        "seq": seq,
        "binding": "Hello",
        "state": state,
        "priority": 0,
        "attempts": attempts,
        "max_attempts": 3,
        "concurrency_key": None,
        "unique_key": None,
        "guarantee": "at-least-once",
        "created_at": 1_700_000_000_000,
        "updated_at": 1_700_000_000_000 + seq,
        "dispatched_at": None,
        "run_after": 1_700_000_000_000,
        "progress": None,
        "payload": {"name": "pyodide", "flag": True},
        "result": None,
        "run_id": None,
        "node_id": None,
        "attempts_log": [],
    }


async def test_read_model_upserts_on_real_d1() -> None:
    db = D1Database(bindings.TSUMUGI_DB)
    await apply_migrations(db)
    writer = D1ReadModelWriter(db)
    await writer.upsert_jobs([snapshot(2, "COMPLETED", 1)])
    await writer.upsert_jobs([snapshot(1, "QUEUED", 0)])  # J-192: an older seq never regresses the row
    rows = await db.all(
        "SELECT id, seq, state, attempts, payload, attempts_log, typeof(attempts) AS t FROM job"
    )
    assert rows == [
        {
            "id": "Hello#0:pyodide0000000000000001",
            "seq": 2,
            "state": "COMPLETED",
            "attempts": 1,
            "payload": '{"name":"pyodide","flag":true}',
            "attempts_log": None,  # J-192: an empty attempts_log is NULL
            "t": "integer",  # typed columns turn JS doubles back into integers
        }
    ]
    assert db.rows_written > 0 and db.rows_read > 0


async def test_queue_producer_sends_in_batches_of_at_most_100() -> None:
    producer = QueueProducer(bindings.TSUMUGI_QUEUE)
    messages = [{"jobId": f"Hello#0:m{n:04d}", "attempt": 1, "n": n} for n in range(150)]
    await producer.send_batch(messages)
    assert (producer.send_batch_calls, producer.messages_sent) == (2, 150)  # J-161
    db = D1Database(bindings.TSUMUGI_DB)
    delivered: list[dict[str, object]] = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DELIVERY_WAIT_S
    while loop.time() < deadline:
        try:
            delivered = await db.all("SELECT body, attempts FROM queue_log ORDER BY seq")
        except Exception as error:  # the consumer creates queue_log with its first message
            assert "no such table" in str(error)
        if len(delivered) >= len(messages):
            break
        await asyncio.sleep(0.05)  # polling a real Queue delivery, bounded by a deadline (noqa: sleep-ok)
    bodies = sorted(str(row["body"]) for row in delivered)
    assert len(bodies) == 150
    assert '{"jobId":"Hello#0:m0000","attempt":1,"n":0}' in bodies
    assert {row["attempts"] for row in delivered} == {1}
