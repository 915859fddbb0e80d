"""Spec audit of raised error texts and classes (jobs.md §4, §5, §11; flows.md §22): exact, not prefixes."""

from __future__ import annotations

from typing import Any

import pytest
from tests.api.rest_harness import make_harness

from tsumugi import client
from tsumugi.application import define_tsumugi
from tsumugi.core.states import assert_transition
from tsumugi.core.wire_format import format_job_id, parse_job_id, shard_name
from tsumugi.errors import (
    ConfigurationError,
    EnqueueError,
    InvalidJobIdError,
    InvalidTransitionError,
    MissingBindingsError,
    TsumugiError,
    TsumugiTimeoutError,
)
from tsumugi.flows import create_flow
from tsumugi.performer import JobContext, Performer
from tsumugi.runtimes.local.sql_database import SqliteDatabase, apply_migrations


class Mail(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> None:
        return None


ENV = {"JOB_SHARD": object(), "TSUMUGI_DB": object(), "TSUMUGI_QUEUE": object()}


def message_of(call: Any, error: type[BaseException]) -> str:
    with pytest.raises(error) as raised:
        call()
    return str(raised.value)


# --------------------------------------------------------------------------- classes (§2, §11)
def test_error_classes_keep_the_original_names_and_subclass_exception() -> None:
    # §2 name mapping: same class names, subclasses of Exception, messages identical
    for error in (InvalidJobIdError, InvalidTransitionError, TsumugiTimeoutError):
        assert issubclass(error, TsumugiError) and issubclass(error, Exception)
    assert [e.__name__ for e in (InvalidJobIdError, InvalidTransitionError, TsumugiTimeoutError)] == [
        "InvalidJobIdError",
        "InvalidTransitionError",
        "TsumugiTimeoutError",
    ]


def test_timeout_error_text_and_attributes() -> None:
    # J-74, §11: "job timed out (<jobId>, <timeoutMs>ms)" with job_id and timeout_ms
    error = TsumugiTimeoutError("MAIL#0:abc", 60_000)
    assert str(error) == "job timed out (MAIL#0:abc, 60000ms)"
    assert (error.job_id, error.timeout_ms) == ("MAIL#0:abc", 60_000)


def test_transition_error_text() -> None:
    # J-92, §11: "invalid state transition: <FROM> -> <TO>"
    text = message_of(lambda: assert_transition("COMPLETED", "QUEUED"), InvalidTransitionError)
    assert text == "invalid state transition: COMPLETED -> QUEUED"


# --------------------------------------------------------------------------- identifiers (J-13..J-19)
def test_binding_name_text() -> None:
    # J-13: <q> is the JSON-quoted value
    text = message_of(lambda: shard_name("MA-IL", 0), InvalidJobIdError)
    assert text == 'invalid binding name: "MA-IL" (alphanumeric, must start with a letter or underscore)'


async def test_binding_name_is_checked_before_any_rpc() -> None:
    # J-25: validated client-side while computing the shard name (J-13 text); ENV's JOB_SHARD has no get()
    with pytest.raises(InvalidJobIdError) as raised:
        await client.enqueue(ENV, {"binding": "MA-IL", "payload": 1})
    assert str(raised.value) == (
        'invalid binding name: "MA-IL" (alphanumeric, must start with a letter or underscore)'
    )


def test_define_tsumugi_names_the_bad_performer_binding() -> None:
    # J-13, J-204: definition time keeps the J-13 text after the option name
    text = message_of(lambda: define_tsumugi(performers={"MA-IL": Mail}), ConfigurationError)
    assert text == (
        'performers: invalid binding name: "MA-IL" (alphanumeric, must start with a letter or underscore)'
    )


def test_shard_index_text() -> None:
    # J-14
    text = message_of(lambda: format_job_id("MAIL", -1, "abc"), InvalidJobIdError)
    assert text == "invalid shard: -1 (non-negative integer)"


def test_local_id_text() -> None:
    # J-15
    assert message_of(lambda: format_job_id("MAIL", 0, "a b"), InvalidJobIdError) == 'invalid localId: "a b"'


@pytest.mark.parametrize(
    ("job_id", "text"),
    [
        ("MAIL0:abc", 'missing "#": "MAIL0:abc"'),
        ("MAIL#0abc", 'missing ":": "MAIL#0abc"'),
        ("MA#IL#0:x", 'shard is not a number: "IL#0"'),  # J-16: binding MA, shard text IL#0
        ("MAIL#0:a:b", 'invalid localId: "a:b"'),  # J-16: ":" in the local part
        ("MA-IL#0:x", 'invalid binding name: "MA-IL" (alphanumeric, must start with a letter or underscore)'),
    ],
)
def test_job_id_parse_texts(job_id: str, text: str) -> None:
    # J-16
    assert message_of(lambda: parse_job_id(job_id), InvalidJobIdError) == text


async def test_split_binding_without_partition_key_text() -> None:
    # J-19: never a silent fallback to shard 0
    app = define_tsumugi(performers={"MAIL": Mail}, bindings={"MAIL": {"shards": 2}})
    with pytest.raises(InvalidJobIdError) as raised:
        await app.enqueue(ENV, binding="MAIL", payload=1)
    assert str(raised.value) == (
        "MAIL is split into shards=2 and requires partitionKey, omitting it drops the per-key guarantees"
    )


# --------------------------------------------------------------------------- enqueue (J-40, J-41, J-206)
async def test_traceparent_text_on_the_typed_path() -> None:
    # J-40, §11 [NEW]: exact text, a ValueError on the library path (J-29)
    app = define_tsumugi(performers={"MAIL": Mail})
    with pytest.raises(EnqueueError) as raised:
        await app.enqueue(
            ENV, binding="MAIL", payload=1, traceparent="00-" + "0" * 32 + "-" + "1" * 16 + "-01"
        )
    assert isinstance(raised.value, ValueError)
    assert str(raised.value) == "traceparent must be a valid W3C Trace Context version 00 value"


async def test_incomplete_configuration_report_lines() -> None:
    # J-206: header, one line per problem, blank line, numbered steps, blank line, then the fragment
    app = define_tsumugi(performers={"MAIL": Mail})
    with pytest.raises(MissingBindingsError) as raised:
        await app.enqueue({}, binding="MAIL", payload=1)
    lines = str(raised.value).split("\n")
    assert lines[:10] == [
        "tsumugi: the wrangler configuration is incomplete",
        "✗ JOB_SHARD (Durable Object) is not configured",
        "✗ TSUMUGI_DB (D1) is not configured",
        "✗ TSUMUGI_QUEUE (Queues) is not configured",
        "",
        "1. append the following fragment to wrangler.jsonc",
        "2. run wrangler d1 create <database> to create the database",
        "3. run wrangler d1 migrations apply <database> --remote to set up the read model",
        "4. run wrangler queues create <queue> to create the queue",
        "",
    ]


async def test_rest_rejects_a_non_positive_expires_in_ms() -> None:
    # J-41: REST accepts expiresInMs, integer >= 1, error "expiresInMs must be positive"
    db = SqliteDatabase(":memory:")
    apply_migrations(db)
    harness = make_harness(db)
    async with harness.client() as api:
        response = await api.post("/api/jobs", content=b'{"binding":"MAIL","payload":1,"expiresInMs":0}')
    assert (response.status_code, response.json()) == (400, {"error": "expiresInMs must be positive"})


# --------------------------------------------------------------------------- flows (§22) and schedules
async def test_scheduler_binding_text() -> None:
    # flows.md §22: raised when schedules are listed without the SCHEDULER binding
    app = define_tsumugi(
        performers={"MAIL": Mail}, schedules={"s": {"binding": "MAIL", "every_ms": 1000, "payload": {}}}
    )
    with pytest.raises(TsumugiError) as raised:
        await app.list_schedules({})
    assert (
        str(raised.value) == "SCHEDULER binding is not configured, add the Scheduler DO binding to wrangler"
    )


def test_run_binding_text() -> None:
    # F-19, §22: run_for without RUN
    app = define_tsumugi(performers={"MAIL": Mail})
    text = message_of(lambda: app.run_for({}, "ONE:x"), TsumugiError)
    assert text == "RUN binding is not configured, add the Run DO binding to wrangler"


def test_flow_deadline_text_uses_the_python_spelling() -> None:
    # F-11, §1/§22: definition-time text with the option in its Python spelling
    flow = create_flow({"MAIL": Mail})
    text = message_of(lambda: flow(lambda f: None, deadline_ms=0), ValueError)
    assert text == "deadline_ms must be a positive integer: 0"
