"""Black-box audit of the Python-facing API named by jobs.md §2, §6 and §10, and api.md Appendix 3."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest

import tsumugi
from tsumugi import (
    BindingConfig,
    ExponentialBackoff,
    FixedBackoff,
    HeartbeatResult,
    InvalidConfigError,
    InvalidJobIdError,
    InvalidTransitionError,
    JobContext,
    OnSettled,
    Performer,
    PermanentFailure,
    Policy,
    Rate,
    RetryAfter,
    SweepOptions,
    TsumugiTimeoutError,
    bearer_auth,
    define_tsumugi,
    remote,
)
from tsumugi.clock import FixedClock
from tsumugi.runtimes.local.sql_database import SqliteDatabase, apply_migrations
from tsumugi.testing.fakes import InProcessShards, current_snapshot

TOKEN = "audit-token"
AUTH = {"authorization": f"Bearer {TOKEN}"}


class Mail(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> Any:
        return payload


class Charge(Performer):
    requires: ClassVar[frozenset[str]] = frozenset({"concurrency_key"})

    async def perform(self, payload: Any, ctx: JobContext) -> None:
        return None


@pytest.fixture
def database(tmp_path: Path) -> Iterator[SqliteDatabase]:
    db = SqliteDatabase(tmp_path / "read_model.sqlite3")
    apply_migrations(db)
    yield db
    db.close()


@pytest.fixture
def shards() -> InProcessShards:
    return InProcessShards(FixedClock(NOW_MS))


@pytest.fixture
def full_env(shards: InProcessShards, database: SqliteDatabase) -> dict[str, Any]:
    return {"JOB_SHARD": shards, "TSUMUGI_DB": database, "TSUMUGI_QUEUE": shards.queue}


# ---------------------------------------------------------------------------------------------- §2 names
def test_every_mapped_name_is_a_top_level_export() -> None:
    # §2 name mapping: the Python names a user imports from the package
    names = (
        "define_tsumugi enqueue enqueue_many shard_for create_client format_job_id parse_job_id shard_name "
        "shard_name_of hash_to_shard resolve_shard remote Performer JobContext HeartbeatResult "
        "TsumugiTimeoutError InvalidJobIdError InvalidTransitionError PermanentFailure RetryAfter "
        "FixedBackoff ExponentialBackoff Policy Rate BindingConfig SweepOptions OnSettled EnqueueInput"
    ).split()
    for name in names:
        assert name in tsumugi.__all__, name
        assert getattr(tsumugi, name) is not None
    from tsumugi.client import create_client

    assert tsumugi.create_client is create_client  # §2: `create_client` lives in tsumugi.client


def test_error_classes_subclass_exception_with_identical_messages() -> None:
    # §2, §11: same class names, subclass Exception, messages identical to the original
    timeout = TsumugiTimeoutError("MAIL#0:abc", 60000)
    assert isinstance(timeout, Exception)
    assert str(timeout) == "job timed out (MAIL#0:abc, 60000ms)"  # J-74
    assert (timeout.job_id, timeout.timeout_ms) == ("MAIL#0:abc", 60000)
    assert (
        str(InvalidTransitionError("COMPLETED", "RUNNING"))
        == "invalid state transition: COMPLETED -> RUNNING"
    )
    assert issubclass(InvalidJobIdError, Exception)


def test_define_tsumugi_takes_keywords_or_one_dict() -> None:
    # §2: define_tsumugi(**config) / define_tsumugi(config)
    by_keywords = define_tsumugi(performers={"MAIL": Mail}, bindings={"MAIL": BindingConfig(shards=2)})
    by_dict = define_tsumugi({"performers": {"MAIL": Mail}, "bindings": {"MAIL": {"shards": 2}}})
    for app in (by_keywords, by_dict):
        assert app.binding_config("MAIL").shards == 2
        # §10.1 return value: handlers, typed paths and the flow helpers are always present
        for member in (
            "fetch queue scheduled jobs enqueue enqueue_many shard_for "
            "start run_for run_class scheduler_class"
        ).split():
            assert hasattr(app, member), member


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({}, "performers is required"),
        (
            {"performers": {"MAIL": Mail}, "on_settled": {"binding": "MAIL", "states": []}},
            "must not be empty",
        ),
        ({"performers": {"MAIL": Mail}, "on_settled": {"binding": "MAIL", "states": ["RUNNING"]}}, "RUNNING"),
        (
            {"performers": {"MAIL": Mail}, "bindings": {"MAIL": {"shards": 0}}},
            "shards must be an integer >= 1",
        ),
    ],
)
def test_invalid_configuration_raises_at_definition_time(config: dict[str, Any], message: str) -> None:
    # J-204, J-180a: invalid config raises eagerly
    with pytest.raises(tsumugi.ConfigurationError, match=message):
        define_tsumugi(config)


async def test_jobs_positional_form_and_keyword_form(
    full_env: dict[str, Any], shards: InProcessShards
) -> None:
    app = define_tsumugi(performers={"MAIL": Mail})
    # §2: tsumugi.jobs(env).enqueue(b, p, **opts) positional form
    first = await app.jobs(full_env).enqueue("MAIL", {"to": "a"}, max_attempts=5, priority=2)
    # §2: tsumugi.enqueue(env, binding=..., payload=..., **options)
    second = await app.enqueue(full_env, binding="MAIL", payload={"to": "b"}, timeout_ms=1000)
    many = await app.enqueue_many(
        full_env, [{"binding": "MAIL", "payload": 1}, {"binding": "MAIL", "payload": 2}]
    )
    assert tsumugi.parse_job_id(first).binding == "MAIL"
    assert len({first, second, *many}) == 4  # J-22: one ID each, in input order
    shard = shards.get("MAIL#0")
    assert await shard.state_of(first) == "SCHEDULED"
    assert await shard.state_of(many[1]) == "SCHEDULED"


async def test_typed_paths_enforce_required_keys_with_type_error(full_env: dict[str, Any]) -> None:
    # J-70: TypeError("<binding> requires <key>") on every typed path
    app = define_tsumugi(performers={"CHARGE": Charge})
    with pytest.raises(TypeError, match=r"^CHARGE requires concurrency_key$"):
        await app.enqueue(full_env, binding="CHARGE", payload={})
    with pytest.raises(TypeError, match=r"^CHARGE requires concurrency_key$"):
        await app.jobs(full_env).enqueue("CHARGE", {})
    with pytest.raises(TypeError, match=r"^CHARGE requires concurrency_key$"):
        await app.enqueue_many(full_env, [{"binding": "CHARGE", "payload": {}}])
    assert await app.jobs(full_env).enqueue("CHARGE", {}, concurrency_key="c1")


@pytest.mark.parametrize(
    "options",
    [
        {"run_at": 1, "delay_ms": 1},  # J-26
        {"max_attempts": 0},
        {"max_attempts": 1.5},
        {"timeout_ms": -1},
        {"delay_ms": -1},
        {"priority": float("inf")},
        {"expires_at": 1, "expires_in_ms": 1},
        {"backoff": {"kind": "linear"}},
    ],
)
async def test_typed_paths_reject_invalid_options_with_value_error(
    full_env: dict[str, Any], options: dict[str, Any]
) -> None:
    # J-29: each invalid option raises ValueError before any RPC
    app = define_tsumugi(performers={"MAIL": Mail})
    with pytest.raises(ValueError):
        await app.enqueue(full_env, binding="MAIL", payload={}, **options)


async def test_shard_for_on_the_app_routes_by_partition_key(full_env: dict[str, Any]) -> None:
    # J-203a: app.shard_for(env, binding, partition_key=None) uses the configured shard count
    app = define_tsumugi(performers={"MAIL": Mail}, bindings={"MAIL": {"shards": 4}})
    job_id = await app.enqueue(full_env, binding="MAIL", payload={}, partition_key="order:9")
    index = tsumugi.hash_to_shard("order:9", 4)
    assert job_id.startswith(f"MAIL#{index}:")
    handle = app.shard_for(full_env, "MAIL", partition_key="order:9")
    assert await handle.state_of(job_id) == "SCHEDULED"
    # J-19: a split binding needs a partition key
    with pytest.raises(InvalidJobIdError):
        app.shard_for(full_env, "MAIL")


async def test_package_shard_for_takes_a_shard_index(full_env: dict[str, Any]) -> None:
    # J-203a: tsumugi.shard_for(env, binding, shard=0) takes an index, not a key
    app = define_tsumugi(performers={"MAIL": Mail}, bindings={"MAIL": {"shards": 4}})
    job_id = await app.enqueue(full_env, binding="MAIL", payload={}, partition_key="k")
    index = tsumugi.parse_job_id(job_id).shard
    assert await tsumugi.shard_for(full_env, "MAIL", index).state_of(job_id) == "SCHEDULED"
    assert await tsumugi.shard_for(full_env, "MAIL", shard=index).state_of(job_id) == "SCHEDULED"
    assert inspect.signature(tsumugi.shard_for).parameters["shard"].default == 0


async def test_backoff_objects_are_stored_in_camel_case(full_env: dict[str, Any]) -> None:
    # §2: FixedBackoff(delay_ms, jitter) -> stored JSON keeps camelCase
    app = define_tsumugi(performers={"MAIL": Mail})
    job_id = await app.enqueue(full_env, binding="MAIL", payload={}, backoff=FixedBackoff(5000))
    assert await app.shard_for(full_env, "MAIL").state_of(job_id) == "SCHEDULED"
    assert FixedBackoff(5000).to_wire() == {"kind": "fixed", "delayMs": 5000, "jitter": False}


# ----------------------------------------------------------------------------------- §10 config objects
def test_config_defaults() -> None:
    # J-100 backoff default; §10.2, §10.3, §10.4 defaults
    assert ExponentialBackoff() == ExponentialBackoff(base_ms=1000, factor=2, max_ms=3_600_000, jitter=True)
    assert FixedBackoff(delay_ms=10).jitter is False
    policy = Policy()
    assert (policy.concurrency, policy.per_key_concurrency, policy.rate, policy.per_key_rate) == (
        100,
        1,
        None,
        None,
    )
    assert (policy.aging_interval_ms, policy.reaper_grace_ms, policy.paused) == (60_000, 30_000, False)
    binding = BindingConfig()
    assert (binding.shards, binding.sweep_after_ms, binding.failed_retention_ms) == (1, 300_000, 604_800_000)
    assert SweepOptions() == SweepOptions(older_than_ms=604_800_000, limit=1_000)
    assert Rate(tokens=5, interval_ms=1000).to_wire() == {"tokens": 5, "intervalMs": 1000}
    assert OnSettled(binding="N", states=["FAILED"]).states == ("FAILED",)


def test_a_binding_config_with_only_shards_sends_no_settings() -> None:
    # J-50: only `shards` sends nothing, even now that the retention fields show their defaults
    assert BindingConfig(shards=3).settings_wire() == {}
    assert BindingConfig(sweep_after_ms=None).sweep_after_ms == 300_000  # J-28: None means default
    wire = BindingConfig(policy=Policy(concurrency=5), failed_retention_ms=10).settings_wire()
    assert wire["failedRetentionMs"] == 10 and wire["policy"]["concurrency"] == 5
    assert "sweepAfterMs" not in wire


@pytest.mark.parametrize(
    "build",
    [
        lambda: FixedBackoff(delay_ms=-1),
        lambda: ExponentialBackoff(factor=0),
        lambda: Policy(concurrency=-1),
        lambda: Policy(paused="yes"),
        lambda: Rate(tokens=-1, interval_ms=1000),
        lambda: Rate(tokens=1, interval_ms=0),
        lambda: BindingConfig(shards=0),
        lambda: SweepOptions(limit=-1),
        lambda: OnSettled(binding="N", states=[]),
        lambda: OnSettled(binding="N", states=["RUNNING"]),
        lambda: OnSettled(binding="", states=["FAILED"]),
    ],
)
def test_config_objects_validate_when_built(build: Any) -> None:
    # §10: configuration errors are InvalidConfigError, a ValueError
    with pytest.raises(InvalidConfigError):
        build()
    assert issubclass(InvalidConfigError, ValueError)


def test_policy_accepts_a_partial_mapping_in_either_spelling() -> None:
    # §10.2: "partial Policy, merged over defaults"
    config = BindingConfig(policy={"perKeyConcurrency": 2, "rate": {"tokens": 1, "interval_ms": 10}})  # type: ignore[arg-type]
    assert config.policy == Policy(per_key_concurrency=2, rate=Rate(1, 10))


# -------------------------------------------------------------------------------------- §6 performer API
def test_performer_is_built_with_ctx_and_env() -> None:
    # J-60: constructed by the runtime with (ctx, env), exposing .env
    performer = Mail("the-ctx", {"K": 1})
    assert performer.env == {"K": 1} and performer.ctx == "the-ctx"
    assert inspect.iscoroutinefunction(Performer.perform)
    assert list(inspect.signature(Performer.perform).parameters) == ["self", "payload", "ctx"]


def test_remote_is_a_marker_with_an_optional_class() -> None:
    # J-62, §2: remote(PerformerClass=None)
    app = define_tsumugi(performers={"MAIL": Mail, "FAR": remote(), "TYPED": remote(Charge)})
    assert set(app.binding_names) == {"FAR", "MAIL", "TYPED"}
    assert set(app.definition.remote_bindings) == {"FAR", "TYPED"}  # J-205: checked at startup


def test_job_context_fields() -> None:
    # §6.2: job_id, attempt, idempotency_key == job_id, deadline_at fixed, traceparent
    clock = FixedClock(1_000)
    ctx = JobContext(job_id="MAIL#0:abc", attempt=2, deadline_at=61_000, traceparent=None, clock=clock)
    assert (ctx.job_id, ctx.attempt, ctx.idempotency_key, ctx.deadline_at) == (
        "MAIL#0:abc",
        2,
        "MAIL#0:abc",
        61_000,
    )
    assert ctx.traceparent is None
    assert ctx.remaining_ms() == 60_000  # J-75
    clock.advance(70_000)
    assert ctx.remaining_ms() == -10_000  # J-75: <= 0 means abort now


async def test_heartbeat_returns_a_heartbeat_result() -> None:
    # J-69a: heartbeat() answers an object with cancel_requested; J-68: deadline_at stays fixed
    seen: list[Any] = []

    async def send(progress: Any) -> HeartbeatResult:
        seen.append(progress)
        return HeartbeatResult(cancel_requested=True)

    ctx = JobContext(job_id="MAIL#0:abc", attempt=1, deadline_at=5, heartbeat=send)
    result = await ctx.heartbeat(0.5)
    assert isinstance(result, HeartbeatResult) and result.cancel_requested is True
    assert (await ctx.heartbeat()).cancel_requested is True
    assert seen == [0.5, None] and ctx.deadline_at == 5
    assert HeartbeatResult().cancel_requested is False
    unbound = JobContext(job_id="MAIL#0:abc", attempt=1, deadline_at=5)
    assert (await unbound.heartbeat(0.1)).cancel_requested is False


def test_spawn_records_a_child_request() -> None:
    # §6.2: spawn(id, binding, payload, options=None) buffers a request
    ctx = JobContext(job_id="MAIL#0:abc", attempt=1, deadline_at=5)
    ctx.spawn("child-1", "MAIL", {"x": 1})
    ctx.spawn("child-2", "MAIL", None, {"priority": 3})
    assert [(s.id, s.binding, s.payload, s.options) for s in ctx.spawns] == [
        ("child-1", "MAIL", {"x": 1}, {}),
        ("child-2", "MAIL", None, {"priority": 3}),
    ]


def test_permanent_failure_and_retry_after() -> None:
    # J-76: raise PermanentFailure(msg) / RetryAfter(msg, delay_ms=...|at=...)
    assert str(PermanentFailure("card declined")) == "card declined"
    assert isinstance(PermanentFailure("x"), Exception)
    by_delay = RetryAfter("rate limited", delay_ms=30_000)
    assert (str(by_delay), by_delay.delay_ms, by_delay.at) == ("rate limited", 30_000, None)
    by_time = RetryAfter("later", at=1_700_000_000_000)
    assert (by_time.delay_ms, by_time.at) == (None, 1_700_000_000_000)
    with pytest.raises(ValueError):
        RetryAfter("neither")
    with pytest.raises(ValueError):
        RetryAfter("both", delay_ms=1, at=2)


# ------------------------------------------------------------------------- api.md Appendix 3 via fetch
def _request(method: str, path: str, **kwargs: Any) -> httpx.Request:
    return httpx.Request(method, f"http://worker.test{path}", **kwargs)


async def test_fetch_serves_the_rest_api(full_env: dict[str, Any]) -> None:
    # J-7: a custom fetch may delegate to tsumugi.fetch; A-12: no auth -> 404 "not found"
    closed = define_tsumugi(performers={"MAIL": Mail})
    response = await closed.fetch(_request("GET", "/api/jobs", headers=AUTH), full_env)
    assert (response.status_code, response.text) == (404, "not found")
    app = define_tsumugi(performers={"MAIL": Mail}, auth=bearer_auth(TOKEN))
    listed = await app.fetch(_request("GET", "/api/jobs", headers=AUTH), full_env)
    assert listed.status_code == 200


async def test_pipeline_order_bindings_before_auth_before_migrations(
    full_env: dict[str, Any], tmp_path: Path
) -> None:
    # Appendix 3, A-13..A-16: binding 503 -> auth 401 -> openapi -> migration 503
    app = define_tsumugi(performers={"MAIL": Mail}, auth=bearer_auth(TOKEN))
    missing = await app.fetch(_request("GET", "/api/jobs"), {"JOB_SHARD": full_env["JOB_SHARD"]})
    assert missing.status_code == 503 and {m["name"] for m in missing.json()["missing"]} >= {"TSUMUGI_DB"}
    unauthorized = await app.fetch(_request("GET", "/api/jobs"), full_env)
    assert (unauthorized.status_code, unauthorized.json()) == (401, {"error": "unauthorized"})
    bare = SqliteDatabase(tmp_path / "bare.sqlite3")  # no migrations applied
    try:
        env = {**full_env, "TSUMUGI_DB": bare}
        assert (await app.fetch(_request("GET", "/api/openapi.json", headers=AUTH), env)).status_code == 200
        stale = await app.fetch(_request("GET", "/api/jobs", headers=AUTH), env)
        assert stale.status_code == 503 and stale.json()["error"].startswith("database schema is out of date")
    finally:
        bare.close()


async def test_path_params_are_percent_decoded_and_bulk_routes_are_post_only(
    full_env: dict[str, Any],
) -> None:
    # Appendix 3, A-9: `%23` decodes to `#`; A-27: GET /api/jobs/bulk-retry is a job lookup -> 404
    app = define_tsumugi(performers={"MAIL": Mail}, auth=bearer_auth(TOKEN))
    unknown = await app.fetch(_request("GET", "/api/jobs/MAIL%230%3Aabc", headers=AUTH), full_env)
    assert (unknown.status_code, unknown.json()) == (404, {"error": "not found"})
    bulk = await app.fetch(_request("GET", "/api/jobs/bulk-retry", headers=AUTH), full_env)
    assert bulk.status_code == 404


async def test_validation_is_first_failure_wins_and_numbers_stay_integral(full_env: dict[str, Any]) -> None:
    # Appendix 3, Appendix 1: first failing check answers; A-10: integral numbers without ".0"
    app = define_tsumugi(performers={"MAIL": Mail}, auth=bearer_auth(TOKEN))
    both_bad = {"binding": "MAIL", "payload": {}, "maxAttempts": "x", "delayMs": "y"}
    rejected = await app.fetch(_request("POST", "/api/jobs", headers=AUTH, json=both_bad), full_env)
    assert (rejected.status_code, rejected.json()) == (400, {"error": "maxAttempts must be a number"})
    no_binding = await app.fetch(_request("POST", "/api/jobs", headers=AUTH, json={"payload": 1}), full_env)
    assert no_binding.json() == {"error": "binding is required"}
    created = await app.fetch(
        _request("POST", "/api/jobs", headers=AUTH, json={"binding": "MAIL", "payload": {"n": 1}}), full_env
    )
    assert created.status_code == 201
    assert b".0" not in (await app.fetch(_request("GET", "/api/stats", headers=AUTH), full_env)).content


# ----------------------------------------------------------------------- J-76 end to end, through queue
class Delivered:
    """A delivered queue message (QueueMessage protocol)."""

    def __init__(self, body: Any) -> None:
        self.body = body
        self.attempts = 1

    def ack(self) -> None:
        return None

    def retry(self) -> None:
        return None


class Declining(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> None:
        if payload == "never":
            raise PermanentFailure("card declined")
        raise RetryAfter("rate limited", at=NOW_MS + 90_000)


NOW_MS = 1_700_000_000_000


async def _deliver(app: Any, env: dict[str, Any], shards: InProcessShards) -> None:
    await shards.settle()
    await app.queue([Delivered(body) for body in shards.queue.take()], env)
    await shards.settle()


async def test_permanent_failure_fails_at_once_and_retry_after_sets_the_retry_time(
    full_env: dict[str, Any], shards: InProcessShards
) -> None:
    # J-76: PermanentFailure -> FAILED regardless of remaining attempts; RetryAfter(at=) -> run_after = at
    app = define_tsumugi(performers={"DECLINE": Declining})
    never = await app.enqueue(full_env, binding="DECLINE", payload="never", max_attempts=5)
    later = await app.enqueue(full_env, binding="DECLINE", payload="later", max_attempts=5)
    await _deliver(app, full_env, shards)
    shard = shards.get("DECLINE#0")
    assert await shard.state_of(never) == "FAILED"
    assert await shard.state_of(later) == "SCHEDULED"
    assert current_snapshot(shard, later)["run_after"] == NOW_MS + 90_000
    failed = current_snapshot(shard, never)
    assert failed["attempts"] == 1 and "card declined" in str(failed["attempts_log"])


# -------------------------------------------------------------------- untyped paths and the flow helpers
async def test_module_enqueue_is_untyped_and_always_shard_zero(
    full_env: dict[str, Any], shards: InProcessShards
) -> None:
    # §5.1, §2: `from tsumugi import enqueue, enqueue_many`; shard 0, partition_key ignored, no key checks
    job_id = await tsumugi.enqueue(full_env, {"binding": "CHARGE", "payload": 1, "partition_key": "k"})
    ids = await tsumugi.enqueue_many(full_env, [{"binding": "MAIL", "payload": 1}])
    assert job_id.startswith("CHARGE#0:") and ids[0].startswith("MAIL#0:")
    assert await shards.get("CHARGE#0").state_of(job_id) == "SCHEDULED"


async def test_create_client_uses_the_bindings_it_is_given(full_env: dict[str, Any]) -> None:
    # J-200, J-203a: create_client(bindings=None, on_enqueue=None) -> enqueue, enqueue_many, shard_for
    client = tsumugi.create_client({"MAIL": BindingConfig(shards=4)})
    job_id = await client.enqueue(full_env, {"binding": "MAIL", "payload": 1, "partition_key": "p"})
    assert tsumugi.parse_job_id(job_id).shard == tsumugi.hash_to_shard("p", 4)
    (other,) = await client.enqueue_many(full_env, [{"binding": "MAIL", "payload": 2, "partition_key": "p"}])
    assert await client.shard_for(full_env, "MAIL", "p").state_of(other) == "SCHEDULED"
    assert await tsumugi.create_client().enqueue(full_env, {"binding": "MAIL", "payload": 3})


async def test_start_and_run_for_raise_without_their_prerequisites(full_env: dict[str, Any]) -> None:
    # §10.1: start with an unregistered flow and run_for without RUN raise
    app = define_tsumugi(performers={"MAIL": Mail})
    with pytest.raises(tsumugi.InvalidFlowError):
        await app.start(full_env, "NOPE", {})
    with pytest.raises(tsumugi.ConfigurationError):
        app.run_for(full_env, "NOPE:abc")


async def test_ctx_timeout_aborts_cooperatively_at_the_deadline() -> None:
    # J-75 [PORT]: an asyncio.timeout-style helper derived from deadline_at; a past deadline aborts at once
    clock = FixedClock(NOW_MS)
    late = JobContext(job_id="MAIL#0:abc", attempt=1, deadline_at=NOW_MS - 1, clock=clock)
    with pytest.raises(TimeoutError):
        async with late.timeout():
            await asyncio.Event().wait()  # never set: only the timeout ends it
    roomy = JobContext(job_id="MAIL#0:abc", attempt=1, deadline_at=NOW_MS + 60_000, clock=clock)
    async with roomy.timeout() as scope:
        await asyncio.sleep(0)
    assert scope.expired() is False
