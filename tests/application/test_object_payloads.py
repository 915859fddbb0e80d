"""A payload typed ``object`` on every single-job enqueue path: made JSON, refused with its path when it is
not JSON, and shaped by ``Tsumugi`` itself, without the typed checks (ADR-0140)."""

from __future__ import annotations

import dataclasses
import enum
from typing import Any

import pytest

from tsumugi import JobContext, Performer, define_tsumugi
from tsumugi.errors import InvalidPayloadError


class Tone(enum.Enum):
    COOL = "cool"


@dataclasses.dataclass
class Point:
    x: int


class Loose(Performer):
    async def perform(self, payload: object, ctx: JobContext) -> None:
        return None


class Plain(Performer):
    async def perform(self, payload, ctx):  # type: ignore[no-untyped-def]  # unannotated
        return None


class Defaulted(Performer):
    max_attempts = 4

    async def perform(self, payload: object, ctx: JobContext) -> None:
        return None


PERFORMERS = {"Loose": Loose, "Plain": Plain, "Defaulted": Defaulted}


def sent(namespace: Any) -> list[dict[str, Any]]:
    return [item for _, inputs, _ in namespace.calls for item in inputs]


async def test_an_object_payload_is_made_json_on_each_single_enqueue_form(env: Any, namespace: Any) -> None:
    tsumugi = define_tsumugi(performers=PERFORMERS)
    await tsumugi.enqueue(env, binding="Loose", payload=(1, Tone.COOL), priority=2)
    await tsumugi.enqueue(env, {"binding": "Loose", "payload": {"p": Point(3)}})
    await tsumugi.enqueue(env, Loose, [Tone.COOL])
    await tsumugi.enqueue(env, binding="Defaulted", payload=(5,))  # class defaults: the typed path
    await tsumugi.rest_enqueue(env, {"binding": "Loose", "payload": {"a": 1}})
    assert sent(namespace) == [
        {"binding": "Loose", "payload": [1, "cool"], "priority": 2},
        {"binding": "Loose", "payload": {"p": {"x": 3}}},
        {"binding": "Loose", "payload": ["cool"]},
        {"binding": "Defaulted", "payload": [5], "maxAttempts": 4},
        {"binding": "Loose", "payload": {"a": 1}},
    ]


async def test_an_object_payload_that_is_not_json_is_refused_with_its_path(env: Any, namespace: Any) -> None:
    tsumugi = define_tsumugi(performers=PERFORMERS)
    said = "Loose: the payload does not match object: at[1]: set is not JSON"
    with pytest.raises(InvalidPayloadError) as caught:
        await tsumugi.enqueue(env, binding="Loose", payload={"at": [1, {2}]})
    assert str(caught.value) == said
    assert caught.value.issues == (("at[1]", "set is not JSON"),)
    with pytest.raises(InvalidPayloadError, match=r"^Loose: .*: payload: object is not JSON$"):
        await tsumugi.enqueue(env, Loose, object())
    with pytest.raises(InvalidPayloadError) as again:
        await tsumugi.enqueue_many(env, [{"binding": "Loose", "payload": {"at": [1, {2}]}}])
    assert str(again.value) == said  # the many path says the same
    assert namespace.calls == []  # checked before any RPC


async def test_an_unannotated_payload_passes_as_given(env: Any, namespace: Any) -> None:
    tsumugi = define_tsumugi(performers=PERFORMERS)
    item = {"binding": "Plain", "payload": {"any": ["thing"]}}
    await tsumugi.enqueue(env, item)
    await tsumugi.enqueue(env, Plain, 3)
    assert sent(namespace) == [item, {"binding": "Plain", "payload": 3}]
