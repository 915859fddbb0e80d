"""Typed performers on the enqueue paths of define_tsumugi (issue 14 items 1-4; ADR-0140, ADR-0141).

A payload is checked against its performer's payload type before any RPC and stored as JSON; class
attributes default the job options; define_tsumugi refuses what is not a Performer subclass.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, TypedDict

import pydantic
import pytest

from tsumugi import (
    ConfigurationError,
    EnqueueError,
    ExponentialBackoff,
    FixedBackoff,
    InvalidConfigError,
    JobContext,
    Performer,
    create_flow,
    define_tsumugi,
    remote,
)
from tsumugi.errors import InvalidPayloadError, InvalidPerformerError


@dataclasses.dataclass
class MailIn:
    to: str
    subject: str = "hello"


class MailOut(pydantic.BaseModel):
    sent: bool


class SendMail(Performer[MailIn, MailOut]):
    max_attempts = 5
    timeout_ms = 120_000
    backoff = FixedBackoff(delay_ms=30_000, jitter=False)
    guarantee = "at-most-once"
    priority = 3

    async def perform(self, payload: MailIn, ctx: JobContext) -> MailOut:
        return MailOut(sent=True)


class Charge(pydantic.BaseModel):
    customer: str
    cents: pydantic.PositiveInt


class ChargeCard(Performer[Charge, None]):
    async def perform(self, payload: Charge, ctx: JobContext) -> None:
        return None


class Ping(TypedDict):
    host: str


class Pinger(Performer):
    async def perform(self, payload: Ping, ctx: JobContext) -> None:  # typed by its annotation
        return None


class Plain(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> None:
        return None


PERFORMERS = {"SendMail": SendMail, "ChargeCard": ChargeCard, "Pinger": Pinger, "Plain": Plain}


def sent(namespace: Any) -> list[dict[str, Any]]:
    return [item for _, inputs, _ in namespace.calls for item in inputs]


async def test_a_performer_class_and_a_typed_payload_enqueue_its_json(env: Any, namespace: Any) -> None:
    tsumugi = define_tsumugi(performers=PERFORMERS)
    job_id = await tsumugi.enqueue(env, SendMail, MailIn("a@example.com"), max_attempts=2)
    assert job_id.startswith("SendMail#0:")
    # The wire is the one a string binding sends: the dataclass is stored as its JSON (J-1, J-27).
    assert sent(namespace) == [
        {
            "binding": "SendMail",
            "payload": {"to": "a@example.com", "subject": "hello"},
            "maxAttempts": 2,  # the call's value wins over the class attribute
            "timeoutMs": 120_000,
            "backoff": {"kind": "fixed", "delayMs": 30_000, "jitter": False},
            "guarantee": "at-most-once",
            "priority": 3,
        }
    ]


async def test_a_bad_payload_names_its_fields_and_nothing_is_enqueued(env: Any, namespace: Any) -> None:
    tsumugi = define_tsumugi(performers=PERFORMERS)
    with pytest.raises(InvalidPayloadError) as caught:
        await tsumugi.enqueue(env, ChargeCard, {"cents": -1})
    assert str(caught.value) == (
        "ChargeCard: the payload does not match Charge: customer: Field required; "
        "cents: Input should be greater than 0"
    )
    assert isinstance(caught.value, EnqueueError)  # a ValueError like every refused input (J-29)
    with pytest.raises(InvalidPayloadError, match="to: field required"):
        await tsumugi.enqueue(env, binding="SendMail", payload={"subject": "x"})  # the string form too
    with pytest.raises(InvalidPayloadError, match=r"Pinger: .* host: expected str, got int"):
        await tsumugi.enqueue_many(
            env, [{"binding": "Plain", "payload": 1}, {"binding": Pinger, "payload": {"host": 1}}]
        )
    assert namespace.calls == []  # J-39: checked before any RPC


async def test_pydantic_models_and_typed_dicts_are_stored_as_json(env: Any, namespace: Any) -> None:
    tsumugi = define_tsumugi(performers=PERFORMERS)
    await tsumugi.enqueue(env, ChargeCard, Charge(customer="c1", cents=250))
    await tsumugi.enqueue(env, ChargeCard, {"customer": "c2", "cents": "300"})  # pydantic's own rules
    await tsumugi.jobs(env).enqueue(Pinger, {"host": "h"}, delay_ms=5)
    assert [item["payload"] for item in sent(namespace)] == [
        {"customer": "c1", "cents": 250},
        {"customer": "c2", "cents": 300},
        {"host": "h"},
    ]


async def test_untyped_performers_keep_their_inputs_exactly(env: Any, namespace: Any) -> None:
    tsumugi = define_tsumugi(performers=PERFORMERS)
    inputs = [{"binding": "Plain", "payload": {"any": ["thing"]}}]
    await tsumugi.enqueue_many(env, inputs)
    await tsumugi.enqueue(env, Plain, [1, 2])
    await tsumugi.enqueue(env, {"binding": "Plain", "payload": 3, "maxAttempts": 2})
    assert sent(namespace) == [
        {"binding": "Plain", "payload": {"any": ["thing"]}},
        {"binding": "Plain", "payload": [1, 2]},
        {"binding": "Plain", "payload": 3, "maxAttempts": 2},
    ]


async def test_the_class_form_refuses_what_it_cannot_route(env: Any) -> None:
    tsumugi = define_tsumugi(performers={"A": Plain, "B": Plain, "SendMail": SendMail})
    with pytest.raises(EnqueueError, match="Plain is registered as A, B: enqueue with binding="):
        await tsumugi.enqueue(env, Plain, 1)
    with pytest.raises(EnqueueError, match="Pinger is not in performers"):
        await tsumugi.enqueue(env, Pinger, {"host": "h"})
    with pytest.raises(TypeError, match="takes no binding= keyword"):
        await tsumugi.enqueue(env, SendMail, MailIn("a"), binding="SendMail")  # type: ignore[call-overload]


async def test_class_defaults_sit_between_the_caller_and_on_enqueue(env: Any, namespace: Any) -> None:
    # ADR-0141: caller > class attribute > on_enqueue > the engine's defaults
    def on_enqueue(input: dict[str, Any]) -> dict[str, Any]:
        return {"max_attempts": 9, "priority": 9, "delay_ms": 7}

    tsumugi = define_tsumugi(performers=PERFORMERS, on_enqueue=on_enqueue)
    await tsumugi.enqueue(env, binding="SendMail", payload={"to": "a"}, priority=1, timeoutMs=None)
    (item,) = sent(namespace)
    assert item["priority"] == 1 and item["maxAttempts"] == 5 and item["delayMs"] == 7
    assert item["timeoutMs"] == 120_000  # an explicit None is "not given" (J-28)


async def test_rest_enqueue_checks_typed_payloads_and_applies_class_defaults(
    env: Any, namespace: Any
) -> None:
    tsumugi = define_tsumugi(performers=PERFORMERS)
    await tsumugi.rest_enqueue(env, {"binding": "SendMail", "payload": {"to": "a"}, "maxAttempts": 1})
    assert sent(namespace)[0]["maxAttempts"] == 1 and sent(namespace)[0]["priority"] == 3
    with pytest.raises(InvalidPayloadError):  # POST /api/jobs answers it as a 400 (ADR-0066)
        await tsumugi.rest_enqueue(env, {"binding": "SendMail", "payload": {"to": 1}})


def test_class_defaults_reach_flow_nodes_and_job_schedules() -> None:
    flow = create_flow(PERFORMERS)
    built = flow(lambda f: f.node("mail", "SendMail", input=lambda: {"to": "a"}, priority=8))
    assert dict(built.nodes[0].options) == {
        "maxAttempts": 5,
        "timeoutMs": 120_000,
        "backoff": {"kind": "fixed", "delayMs": 30_000, "jitter": False},
        "guarantee": "at-most-once",
        "priority": 8,  # the node's own option wins
    }
    tsumugi = define_tsumugi(
        performers=PERFORMERS,
        schedules={
            "s": {"binding": "SendMail", "every_ms": 60_000, "payload": {"to": "a"}, "max_attempts": 1}
        },
    )
    (schedule,) = tsumugi.schedules
    assert schedule.definition["max_attempts"] == 1 and schedule.definition["timeout_ms"] == 120_000


def test_bad_class_defaults_fail_at_definition() -> None:
    class Zero(Performer):
        max_attempts = 0

        async def perform(self, payload: Any, ctx: JobContext) -> None:
            return None

    with pytest.raises(InvalidConfigError) as caught:
        define_tsumugi(performers={"Zero": Zero})
    assert "performers: Zero" in str(caught.value)
    assert "max_attempts must be an integer >= 1, got 0" in str(caught.value)


def test_backoff_class_default_may_be_a_mapping() -> None:
    class Slow(Performer):
        backoff: ClassVar[Any] = {"kind": "exponential", "base_ms": 10}

        async def perform(self, payload: Any, ctx: JobContext) -> None:
            return None

    tsumugi = define_tsumugi(performers={"Slow": Slow})
    # the form the shard stores, as a mapping given to enqueue would become (J-101)
    expected = {"kind": "exponential", "baseMs": 10, "factor": 2, "maxMs": 3_600_000, "jitter": False}
    assert tsumugi.definition.wire_defaults == {"Slow": {"backoff": expected}}
    assert ExponentialBackoff(base_ms=10).to_wire()["baseMs"] == 10


async def _function(payload: Any, ctx: Any) -> None:
    return None


class Duck:
    async def perform(self, payload: Any, ctx: Any) -> None:
        return None


@pytest.mark.parametrize(
    ("entry", "said"),
    [
        (_function, "performers: F is the function _function;"),
        (Plain(), "performers: F is an instance of Plain;"),
        (Duck, "performers: F is the class Duck;"),
        (dict, "performers: F has no perform method;"),
    ],
)
def test_define_tsumugi_refuses_what_is_not_a_performer_subclass(entry: Any, said: str) -> None:
    with pytest.raises(InvalidPerformerError) as caught:
        define_tsumugi(performers={"Ok": Plain, "F": entry})
    assert str(caught.value).startswith(said)
    assert "remote(...)" in str(caught.value)
    assert isinstance(caught.value, TypeError) and isinstance(caught.value, ConfigurationError)


def test_remote_takes_only_a_performer_class() -> None:
    assert define_tsumugi(performers={"R": remote(), "T": remote(SendMail)}).definition.remote_bindings == (
        "R",
        "T",
    )
    with pytest.raises(InvalidPerformerError, match="remote\\(\\) takes a Performer subclass"):
        remote(_function)  # type: ignore[arg-type]


def test_a_plain_def_perform_is_warned_about() -> None:
    class Blocking(Performer):
        def perform(self, payload: Any, ctx: JobContext) -> None:  # type: ignore[override]
            return None

    with pytest.warns(
        RuntimeWarning, match=r"Blocking\.perform is not an async def: it blocks the event loop"
    ):
        define_tsumugi(performers={"Blocking": Blocking})


def test_an_unsupported_payload_type_fails_at_definition() -> None:
    class Odd:
        pass

    class Weird(Performer[Odd, None]):
        async def perform(self, payload: Odd, ctx: JobContext) -> None:
            return None

    with pytest.raises(ConfigurationError, match=r"performers: Weird: .*pydantic cannot check the type"):
        define_tsumugi(performers={"Weird": Weird})
