"""End to end on the local runtime: shards and partition keys, unique keys, traceparent (J-12, J-19..J-21,
J-27, J-33..J-35, J-40, J-166)."""

from __future__ import annotations

import pytest

from tsumugi.errors import InvalidJobIdError

from .conftest import TRACEPARENT, MakeLocal


async def test_split_binding_routes_by_partition_key_and_runs_every_shard(local: MakeLocal) -> None:
    # J-12, J-18, J-19: ids carry the shard; each shard is its own coordinator file and runs its jobs
    app = await local(bindings={"MAIL": {"shards": 4}})
    routed = {
        key: await app.enqueue(payload={"k": key}, partition_key=key)
        for key in ("cust-1", "order:9", "customer:c1")
    }
    assert {key: job_id[:7] for key, job_id in routed.items()} == {
        "cust-1": "MAIL#0:",
        "order:9": "MAIL#2:",
        "customer:c1": "MAIL#1:",
    }
    for job_id in routed.values():
        await app.settled(job_id, "COMPLETED")
    shard_files = sorted(p.name for p in (app.runtime.state_dir / "shards").iterdir())
    assert [f for f in shard_files if f.startswith("MAIL") and f.endswith(".sqlite3")] == [
        "MAIL%230.sqlite3",
        "MAIL%231.sqlite3",
        "MAIL%232.sqlite3",
    ]
    # J-21, J-27: the performer got the JSON payload and the job id as idempotency key
    seen = {s.job_id: s for s in app.record.of("MAIL")}
    for key, job_id in routed.items():
        assert seen[job_id].payload == {"k": key}
        assert seen[job_id].idempotency_key == job_id


async def test_a_missing_partition_key_raises_and_creates_nothing(local: MakeLocal) -> None:
    # J-19, J-166
    app = await local(bindings={"MAIL": {"shards": 2}})
    with pytest.raises(InvalidJobIdError, match="MAIL is split into shards=2 and requires partitionKey"):
        await app.enqueue()
    assert not (app.runtime.state_dir / "shards").exists() or not any(
        (app.runtime.state_dir / "shards").iterdir()
    )


async def test_a_unique_key_returns_the_holder_even_after_it_completed(local: MakeLocal) -> None:
    # J-33, J-34: a normal return of the existing id; the reservation outlives completion
    app = await local()
    first = await app.enqueue(payload={"n": 1}, unique_key="order-7")
    await app.settled(first, "COMPLETED")
    assert await app.enqueue(payload={"n": 2}, unique_key="order-7") == first
    await app.advance(86_400_000)  # the default window (24 h) has passed
    second = await app.enqueue(payload={"n": 3}, unique_key="order-7")
    assert second != first
    await app.settled(second, "COMPLETED")
    assert [s.payload["n"] for s in app.record.of("MAIL")] == [1, 3]


async def test_unique_keys_are_per_shard_of_a_split_binding(local: MakeLocal) -> None:
    # J-35: the same unique key in two shards does not collide
    app = await local(bindings={"MAIL": {"shards": 4}})
    on_0 = await app.enqueue(unique_key="u", partition_key="cust-1")
    on_2 = await app.enqueue(unique_key="u", partition_key="order:9")
    assert on_0 != on_2
    assert await app.enqueue(unique_key="u", partition_key="cust-1") == on_0


async def test_traceparent_reaches_the_attempt_and_every_retry(local: MakeLocal) -> None:
    # J-40: stored with the job, carried by each dispatch, exposed as ctx.traceparent
    app = await local()
    job_id = await app.enqueue(
        payload={"fail": "again"},
        traceparent=TRACEPARENT,
        max_attempts=2,
        backoff={"kind": "fixed", "delay_ms": 1_000},
    )
    untraced = await app.enqueue(payload={})
    await app.settled(untraced, "COMPLETED")
    await app.until(lambda: len(app.record.of("MAIL")) == 2, "the first attempt")
    await app.advance(1_000)
    await app.settled(job_id, "FAILED")
    attempts = [s for s in app.record.of("MAIL") if s.job_id == job_id]
    assert [(s.attempt, s.traceparent) for s in attempts] == [(1, TRACEPARENT), (2, TRACEPARENT)]
    assert [s.traceparent for s in app.record.of("MAIL") if s.job_id == untraced] == [None]


async def test_a_concurrency_key_is_serialized_per_shard_only(local: MakeLocal) -> None:
    # J-150, J-166: the same key on two shards runs twice at once; on one shard, once at a time
    app = await local(bindings={"MAIL": {"shards": 4}})
    held = {"key": "k", "gate": "g"}
    for partition_key in ("cust-1", "order:9", "cust-1"):
        await app.enqueue(payload=held, concurrency_key="k", partition_key=partition_key)
    await app.until(lambda: len(app.record.of("MAIL")) == 2, "one attempt per shard")
    assert app.record.peak["MAIL/k"] == 2
    assert sorted(s.job_id[:7] for s in app.record.of("MAIL")) == ["MAIL#0:", "MAIL#2:"]
    app.open("g")
    await app.until(lambda: len(app.record.of("MAIL")) == 3, "the second job of shard 0")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"binding": "NOWHERE"}, "unknown binding: NOWHERE"),
        ({"backoff": {"kind": "linear"}}, "backoff.kind must be 'fixed' or 'exponential'"),
        ({"max_attempts": 0}, "max_attempts must be an integer >= 1"),
        ({"run_at": 1, "delay_ms": 1}, "run_at and delay_ms are mutually exclusive"),
    ],
)
async def test_bad_input_is_refused_before_any_shard_exists(
    local: MakeLocal, options: dict[str, object], message: str
) -> None:
    # J-25, J-26, J-29, ADR-0058: a clear ValueError; no shard file, nothing dispatched
    app = await local()
    with pytest.raises(ValueError, match=message):
        await app.enqueue(**options)
    shards = app.runtime.state_dir / "shards"
    assert not shards.exists() or not any(shards.iterdir())
