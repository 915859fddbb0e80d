"""Plain ``{binding, payload}`` inputs take the client's short path (ADR-0120) and keep every check.

Each case sends the same input once plain and once with an explicit ``None`` option, which J-28 reads as
the default and which sends it down the full path: both must answer alike.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import pytest

from tsumugi.application import define_tsumugi
from tsumugi.errors import EnqueueError, InvalidJobIdError, RequiredKeyError
from tsumugi.performer import JobContext, Performer
from tsumugi.testing.fakes import InProcessShards


class Mail(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> None:
        return None


class Charge(Performer):
    requires: ClassVar[frozenset[str]] = frozenset({"concurrency_key"})

    async def perform(self, payload: Any, ctx: JobContext) -> None:
        return None


PERFORMERS = {"MAIL": Mail, "CHARGE": Charge}


def both_paths(item: dict[str, Any]) -> list[dict[str, Any]]:
    return [item, {**item, "priority": None}]


@pytest.mark.parametrize("path", ["plain", "full"])
async def test_plain_and_full_paths_send_the_same_wire(env: Any, namespace: Any, path: str) -> None:
    # J-22, J-28: an explicit None is the default, so the full path sends what the plain one does
    tsumugi = define_tsumugi(performers=PERFORMERS)
    item = both_paths({"binding": "MAIL", "payload": {"to": "a", "n": 1.0}})[path == "full"]
    await tsumugi.enqueue_many(env, [item])
    assert namespace.calls == [("MAIL#0", [{"binding": "MAIL", "payload": {"to": "a", "n": 1.0}}], None)]


@pytest.mark.parametrize("item", both_paths({"binding": "CHARGE", "payload": 1}))
async def test_required_keys_still_raise(env: Any, namespace: Any, item: dict[str, Any]) -> None:
    # J-70
    tsumugi = define_tsumugi(performers=PERFORMERS)
    with pytest.raises(RequiredKeyError, match="CHARGE requires concurrency_key"):
        await tsumugi.enqueue_many(env, [item])
    assert namespace.calls == []


@pytest.mark.parametrize("item", both_paths({"binding": "OTHER", "payload": 1}))
async def test_unknown_binding_still_raises(env: Any, namespace: Any, item: dict[str, Any]) -> None:
    # ADR-0058: the typed paths know their bindings
    tsumugi = define_tsumugi(performers=PERFORMERS)
    with pytest.raises(EnqueueError, match="unknown binding: OTHER"):
        await tsumugi.enqueue_many(env, [item])
    assert namespace.calls == []


@pytest.mark.parametrize("item", both_paths({"binding": "bad-name", "payload": 1}))
async def test_invalid_binding_name_still_raises(env: Any, namespace: Any, item: dict[str, Any]) -> None:
    # J-13, J-25: before any RPC
    tsumugi = define_tsumugi(performers=PERFORMERS)
    with pytest.raises(InvalidJobIdError, match="invalid binding name"):
        await tsumugi.enqueue_many(env, [item])
    assert namespace.calls == []


@pytest.mark.parametrize("item", both_paths({"binding": "MAIL", "payload": 1}))
async def test_a_split_binding_still_needs_a_partition_key(
    env: Any, namespace: Any, item: dict[str, Any]
) -> None:
    # J-19
    tsumugi = define_tsumugi(performers=PERFORMERS, bindings={"MAIL": {"shards": 2}})
    with pytest.raises(InvalidJobIdError, match="requires partitionKey"):
        await tsumugi.enqueue_many(env, [item])
    assert namespace.calls == []


@pytest.mark.parametrize("payload", [object(), {"x": {1, 2}}, [math.nan, object()]])
async def test_a_bad_payload_fails_before_any_rpc(env: Any, namespace: Any, payload: Any) -> None:
    # J-27, J-39: the good first item of another group is not sent either
    tsumugi = define_tsumugi(performers=PERFORMERS)
    inputs = [
        {"binding": "CHARGE", "payload": 1, "concurrency_key": "k"},
        {"binding": "MAIL", "payload": payload},
    ]
    with pytest.raises(EnqueueError, match="payload must be JSON-serializable"):
        await tsumugi.enqueue_many(env, inputs)
    assert namespace.calls == []


async def test_on_enqueue_sees_plain_inputs(env: Any, namespace: Any) -> None:
    # J-42: the hook's defaults apply to a plain input too
    tsumugi = define_tsumugi(performers=PERFORMERS, on_enqueue=lambda item: {"priority": 4})
    await tsumugi.enqueue_many(env, [{"binding": "MAIL", "payload": 1}])
    assert namespace.calls == [("MAIL#0", [{"binding": "MAIL", "payload": 1, "priority": 4}], None)]


@pytest.mark.parametrize("other_group", [False, True])
async def test_in_process_shards_refuse_a_bad_payload_with_the_same_words(other_group: bool) -> None:
    # J-27, J-39 (ADR-0120): in process a single group's payloads are checked by the shard alone, in its
    # one synchronous pass; with a second group the client checks first. Either way nothing is stored.
    shards = InProcessShards()
    tsumugi = define_tsumugi(performers=PERFORMERS)
    inputs: list[dict[str, Any]] = [
        {"binding": "MAIL", "payload": 1},
        {"binding": "MAIL", "payload": object()},
    ]
    if other_group:
        inputs.insert(0, {"binding": "CHARGE", "payload": 1, "concurrency_key": "k"})
    with pytest.raises(EnqueueError, match="payload must be JSON-serializable"):
        await tsumugi.enqueue_many(
            {"JOB_SHARD": shards, "TSUMUGI_DB": object(), "TSUMUGI_QUEUE": object()}, inputs
        )
    active = [(await shard.diagnostics())["active"] for shard in shards.shards.values()]
    # the shard alone refused a single group; with two groups no shard was even reached
    assert active == ([] if other_group else [0])
