"""The Python API with hostile numbers, strings and sizes (issue 13 items 3 and 6, ADR-0133).

Every enqueue path clamps numbers beyond what the stores hold, stores lone surrogates as the Workers runtime
does, and refuses a payload over the dispatch message limit with ``PayloadTooLargeError`` (an
``EnqueueError``, so a ``ValueError``) before anything is sent. Never ``OverflowError`` from sqlite3.
"""

from __future__ import annotations

from typing import Any

import pytest

from tsumugi import client, create_client, define_tsumugi
from tsumugi.clock import FixedClock
from tsumugi.core.input_bounds import MAX_DURATION_MS, MAX_INSTANT_MS, MAX_SAFE_INTEGER
from tsumugi.core.wire_format import MAX_PAYLOAD_BYTES
from tsumugi.errors import EnqueueError, PayloadTooLargeError
from tsumugi.performer import JobContext, Performer
from tsumugi.testing.fakes import InProcessShards

START = 1_700_000_000_000
TOO_BIG = "x" * MAX_PAYLOAD_BYTES  # with its quotes, two bytes over


class Mail(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> None:
        return None


# option, value given, value on the wire
CLAMPED: list[tuple[str, float, float]] = [
    ("delay_ms", 2**63, MAX_DURATION_MS),
    ("delay_ms", 1e308, MAX_DURATION_MS),
    ("timeout_ms", 2**64, MAX_DURATION_MS),
    ("max_attempts", 1e19, MAX_SAFE_INTEGER),
    ("max_attempts", 2**70, MAX_SAFE_INTEGER),
    ("priority", 2**64, MAX_SAFE_INTEGER),
    ("priority", -1e308, -MAX_SAFE_INTEGER),
    ("run_at", 2**63, MAX_INSTANT_MS),
    ("run_at", -1e300, -MAX_INSTANT_MS),
    ("expires_at", 1e300, MAX_INSTANT_MS),
    ("expires_in_ms", 1e300, MAX_DURATION_MS),
    ("unique_for_ms", -(2**70), -MAX_DURATION_MS),
]
UNCHANGED: list[tuple[str, float, float]] = [
    ("delay_ms", 5, 5),
    ("max_attempts", 3.0, 3),
    ("priority", 2.5, 2.5),
    ("run_at", START, START),
    ("expires_in_ms", MAX_DURATION_MS, MAX_DURATION_MS),
]


@pytest.mark.parametrize(("option", "given", "wire"), CLAMPED + UNCHANGED)
async def test_numbers_are_clamped_to_what_the_stores_hold(
    namespace: Any, option: str, given: float, wire: float
) -> None:
    env = {"JOB_SHARD": namespace}
    await client.enqueue(env, {"binding": "MAIL", "payload": 1, option: given})
    await create_client().enqueue(env, {"binding": "MAIL", "payload": 1, option: given})
    camel = "".join(part.capitalize() if n else part for n, part in enumerate(option.split("_")))
    sent = [call[1][0][camel] for call in namespace.calls]
    assert sent == [wire, wire]
    assert all(type(value) is type(wire) for value in sent)  # an int stays an int


async def test_huge_backoff_durations_are_clamped(namespace: Any) -> None:
    env = {"JOB_SHARD": namespace}
    await client.enqueue(
        env, {"binding": "MAIL", "payload": 1, "backoff": {"kind": "fixed", "delay_ms": 1e300}}
    )
    exponential = {"kind": "exponential", "base_ms": 2**64, "factor": 1e300, "max_ms": 1e300}
    await client.enqueue(env, {"binding": "MAIL", "payload": 1, "backoff": exponential})
    fixed, grown = (call[1][0]["backoff"] for call in namespace.calls)
    assert fixed["delayMs"] == MAX_DURATION_MS
    assert (grown["baseMs"], grown["factor"], grown["maxMs"]) == (MAX_DURATION_MS, 1e300, MAX_DURATION_MS)


@pytest.mark.parametrize(
    ("option", "value", "words"),
    [
        ("delay_ms", float("inf"), "delay_ms must be a number >= 0, got inf"),
        ("priority", float("nan"), "priority must be a finite number, got nan"),
        ("max_attempts", 1.5, "max_attempts must be an integer >= 1, got 1.5"),
        ("run_at", "soon", "run_at must be a finite number, got 'soon'"),
    ],
)
async def test_values_that_are_no_numbers_still_raise_enqueue_error(
    namespace: Any, option: str, value: Any, words: str
) -> None:
    with pytest.raises(EnqueueError) as raised:
        await client.enqueue({"JOB_SHARD": namespace}, {"binding": "MAIL", "payload": 1, option: value})
    assert str(raised.value) == words and isinstance(raised.value, ValueError)
    assert namespace.calls == []


async def test_lone_surrogates_in_keys_are_stored_as_the_workers_runtime_stores_them(namespace: Any) -> None:
    env = {"JOB_SHARD": namespace}
    await client.enqueue(
        env, {"binding": "MAIL", "payload": "\ud800", "unique_key": "u\ud800", "concurrency_key": "\udfffc"}
    )
    sent = namespace.calls[0][1][0]
    assert (sent["uniqueKey"], sent["concurrencyKey"]) == ("u\ufffd", "\ufffdc")
    assert sent["payload"] == "\ud800"  # JSON text escapes it, losslessly (wire_format, as JSON.stringify)


@pytest.mark.parametrize(
    "inputs",
    [
        [{"binding": "MAIL", "payload": TOO_BIG}],  # plain, to a namespace across a process boundary
        [{"binding": "MAIL", "payload": TOO_BIG, "priority": 1}],  # the full path
        [{"binding": "MAIL", "payload": 1}, {"binding": "SMS", "payload": [TOO_BIG]}],  # two groups
    ],
)
async def test_a_payload_over_the_limit_raises_before_anything_is_sent(
    namespace: Any, inputs: list[dict[str, Any]]
) -> None:
    with pytest.raises(PayloadTooLargeError, match=f"must not exceed {MAX_PAYLOAD_BYTES} bytes"):
        await client.enqueue_many({"JOB_SHARD": namespace}, inputs)
    assert namespace.calls == []


async def test_a_payload_at_the_limit_is_accepted(namespace: Any) -> None:
    await client.enqueue({"JOB_SHARD": namespace}, {"binding": "MAIL", "payload": TOO_BIG[2:]})
    assert len(namespace.calls) == 1


async def test_the_typed_enqueue_refuses_a_payload_over_the_limit(env: dict[str, Any]) -> None:
    tsumugi = define_tsumugi(performers={"MAIL": Mail})
    with pytest.raises(PayloadTooLargeError):
        await tsumugi.enqueue(env, binding="MAIL", payload={"body": TOO_BIG}, priority=1)


async def test_in_process_plain_payloads_over_the_limit_are_refused_too() -> None:
    shards = InProcessShards(FixedClock(START))
    with pytest.raises(PayloadTooLargeError):
        await client.enqueue({"JOB_SHARD": shards}, {"binding": "MAIL", "payload": TOO_BIG})


class ReschedulingShard:
    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    async def reschedule(self, job_id: str, run_at: Any, delay_ms: Any, priority: Any) -> dict[str, Any]:
        self.calls.append((run_at, delay_ms, priority))
        return {"ok": True}


class ReschedulingNamespace:
    def __init__(self) -> None:
        self.shard = ReschedulingShard()

    def get(self, name: str) -> ReschedulingShard:
        return self.shard


async def test_reschedule_through_shard_for_clamps_its_numbers() -> None:
    namespace = ReschedulingNamespace()
    shard = client.shard_for({"JOB_SHARD": namespace}, "MAIL")
    await shard.reschedule("MAIL#0:a", run_at=2**64, priority=-(2**64))
    await shard.reschedule("MAIL#0:a", delay_ms=10**300, priority=1.5)
    await shard.reschedule("MAIL#0:a", run_at=START)
    assert namespace.shard.calls == [
        (MAX_INSTANT_MS, None, -MAX_SAFE_INTEGER),
        (None, MAX_DURATION_MS, 1.5),  # an int beyond int64 too
        (START, None, None),
    ]
