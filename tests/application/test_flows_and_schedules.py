"""Flows and schedules in define_tsumugi: validation, start, run_for, priming (J-204, F-19, S-14)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from tsumugi.application import define_tsumugi
from tsumugi.core.schedules import ScheduleDef
from tsumugi.errors import (
    ConfigurationError,
    InvalidFlowError,
    InvalidRunIdError,
    InvalidScheduleError,
    MissingBindingsError,
)
from tsumugi.flows import FlowBuilder, create_flow
from tsumugi.performer import JobContext, Performer


class Step(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> None:
        return None


PERFORMERS = {"Step": Step}
flow = create_flow(PERFORMERS)


@flow
def ONE(f: FlowBuilder) -> None:
    f.node("a", "Step", input=lambda i, d: i)


@flow
def PARENT(f: FlowBuilder) -> None:
    f.subflow("child", ONE, input=lambda i, d: i)


class FakeRun:
    """One recorded Run DO: ``start`` creates once, like F-20."""

    def __init__(self, run_id: str, log: list[tuple[str, Any]]) -> None:
        self.run_id = run_id
        self.log = log
        self.created = False

    async def start(self, flow: str, input: Any, deadline_ms: int | None = None) -> dict[str, Any]:
        self.log.append(("start", (self.run_id, flow, input, deadline_ms)))
        created, self.created = not self.created, True
        return {"id": self.run_id, "created": created}

    async def cancel(self) -> dict[str, Any]:
        return {"ok": False, "reason": "gone"}

    async def retry(self) -> dict[str, Any]:
        return {"ok": True}


class FakeRuns:
    def __init__(self) -> None:
        self.log: list[tuple[str, Any]] = []
        self.runs: dict[str, FakeRun] = {}

    def get(self, run_id: str) -> FakeRun:
        return self.runs.setdefault(run_id, FakeRun(run_id, self.log))


class FakeScheduler:
    def __init__(self, fail: int = 0) -> None:
        self.syncs = 0
        self.fail = fail

    def get(self, name: str) -> FakeScheduler:
        assert name == "scheduler"  # S-12
        return self

    async def sync(self) -> None:
        self.syncs += 1
        if self.fail:
            self.fail -= 1
            raise RuntimeError("sync failed on purpose")

    async def list(self) -> Sequence[Mapping[str, Any]]:
        return [{"name": "b"}, {"name": "a"}]


def _env(**extra: Any) -> dict[str, Any]:
    return {"JOB_SHARD": object(), "TSUMUGI_QUEUE": object(), "TSUMUGI_DB": object(), **extra}


# --------------------------------------------------------------------------- J-204: eager validation
def test_flows_are_kept_by_name_and_schedules_normalized_sorted() -> None:
    tsumugi = define_tsumugi(
        performers=PERFORMERS,
        flows={"ONE": ONE, "PARENT": PARENT},
        schedules={
            "zeta": {"binding": "Step", "every_ms": 1000, "payload": {}},
            "alpha": {"flow": "ONE", "cron": "0 3 * * *", "input": None},
        },
    )
    assert dict(tsumugi.flows) == {"ONE": ONE, "PARENT": PARENT}
    assert [s.name for s in tsumugi.schedules] == ["alpha", "zeta"]  # S-5
    assert all(isinstance(s, ScheduleDef) for s in tsumugi.schedules)
    assert (tsumugi.schedules[0].kind, tsumugi.schedules[0].overlap) == ("flow", "skip")  # S-2 default


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"flows": {"PARENT": PARENT}}, InvalidFlowError, "subflow target is not registered: PARENT.child"),
        ({"flows": {"bad name": ONE}}, InvalidRunIdError, "invalid flow name"),  # F-6
        ({"flows": ["ONE"]}, ConfigurationError, "flows must be a mapping"),
        (
            {"schedules": {"s": {"binding": "Nope", "every_ms": 1000, "payload": {}}}},
            InvalidScheduleError,
            "binding is not registered: s -> Nope",
        ),
        (
            {"schedules": {"s": {"flow": "ONE", "every_ms": 1000, "input": {}}}},
            InvalidScheduleError,
            "flow is not registered: s -> ONE",
        ),
        (
            {"schedules": {"s": {"binding": "Step", "every_ms": 10, "payload": {}}}},
            InvalidScheduleError,
            "every_ms must be an integer of at least 1000",
        ),
        ({"schedules": {"s": "every minute"}}, InvalidScheduleError, "schedule must be a mapping: s"),
    ],
)
def test_invalid_flows_and_schedules_raise_at_definition(
    options: dict[str, Any], error: type[Exception], message: str
) -> None:
    # J-204, F-17, S-2
    with pytest.raises(error, match=message):
        define_tsumugi(performers=PERFORMERS, **options)


def test_a_sharded_binding_needs_a_partition_key_in_its_schedule() -> None:
    # S-2 step 8: the shard count comes from the binding config
    with pytest.raises(InvalidScheduleError, match="partition_key is required"):
        define_tsumugi(
            performers=PERFORMERS,
            bindings={"Step": {"shards": 2}},
            schedules={"s": {"binding": "Step", "every_ms": 1000, "payload": {}}},
        )


# --------------------------------------------------------------------------- F-19..F-21: start, run_for
async def test_start_returns_the_run_id_and_an_explicit_id_starts_once() -> None:
    tsumugi = define_tsumugi(performers=PERFORMERS, flows={"ONE": ONE})
    runs = FakeRuns()
    env = _env(RUN=runs)
    first = await tsumugi.start(env, "ONE", {"x": 1}, id="abc", deadline_ms=5000)
    again = await tsumugi.start(env, "ONE", {"x": 2}, id="abc")
    assert first == again == "ONE:abc"  # F-7, F-21
    assert [entry[1] for entry in runs.log] == [
        ("ONE:abc", "ONE", {"x": 1}, 5000),
        ("ONE:abc", "ONE", {"x": 2}, None),
    ]
    assert runs.runs["ONE:abc"].created
    fresh = await tsumugi.start(env, "ONE", None)
    assert fresh.startswith("ONE:") and len(fresh) == len("ONE:") + 24  # F-7: a cuid2-shaped local id


async def test_start_checks_the_environment_then_the_flow_then_the_id() -> None:
    tsumugi = define_tsumugi(performers=PERFORMERS, flows={"ONE": ONE})
    with pytest.raises(MissingBindingsError, match="RUN"):  # F-19 (1), J-205
        await tsumugi.start(_env(), "ONE", {})
    env = _env(RUN=FakeRuns())
    with pytest.raises(InvalidFlowError, match=r"^flow is not registered: NOPE$"):  # F-19 (2)
        await tsumugi.start(env, "NOPE", {})
    with pytest.raises(InvalidRunIdError, match='invalid localId: "a:b"'):  # F-7
        await tsumugi.start(env, "ONE", {}, id="a:b")


def test_run_for_needs_the_run_binding_even_without_flows() -> None:
    tsumugi = define_tsumugi(performers=PERFORMERS)
    runs = FakeRuns()
    assert tsumugi.run_for({"RUN": runs}, "ONE:x") is runs.get("ONE:x")
    with pytest.raises(ConfigurationError, match=r"^RUN binding is not configured, add the Run DO binding"):
        tsumugi.run_for({}, "ONE:x")  # F-19


async def test_run_control_forwards_cancel_and_retry() -> None:
    tsumugi = define_tsumugi(performers=PERFORMERS, flows={"ONE": ONE})
    env = {"RUN": FakeRuns()}
    assert await tsumugi.run_control(env, "ONE:x", "cancel") == {"ok": False, "reason": "gone"}  # F-28
    assert await tsumugi.run_control(env, "ONE:x", "retry") == {"ok": True}
    with pytest.raises(ValueError, match="unknown run action"):
        await tsumugi.run_control(env, "ONE:x", "pause")


# --------------------------------------------------------------------------- S-14: priming, S-21: listing
async def test_the_first_event_primes_one_sync_and_a_failure_is_forgotten() -> None:
    tsumugi = define_tsumugi(
        performers=PERFORMERS, schedules={"s": {"binding": "Step", "every_ms": 1000, "payload": {}}}
    )
    scheduler = FakeScheduler(fail=1)
    env = _env(SCHEDULER=scheduler)
    tsumugi.prime_schedules(env)
    tsumugi.prime_schedules(env)  # shared: still the first sync
    await asyncio.sleep(0)  # one loop turn lets the background sync run
    assert scheduler.syncs == 1
    tsumugi.prime_schedules(env)  # the failed sync was forgotten: this event retries
    await asyncio.sleep(0)  # one loop turn
    tsumugi.prime_schedules(env)
    await asyncio.sleep(0)  # one loop turn
    assert scheduler.syncs == 2
    assert await tsumugi.list_schedules(env) == [{"name": "b"}, {"name": "a"}]  # S-21: as stored


async def test_no_schedules_or_no_scheduler_binding_never_syncs() -> None:
    scheduler = FakeScheduler()
    define_tsumugi(performers=PERFORMERS).prime_schedules(_env(SCHEDULER=scheduler))
    with_schedules = define_tsumugi(
        performers=PERFORMERS, schedules={"s": {"binding": "Step", "every_ms": 1000, "payload": {}}}
    )
    with_schedules.prime_schedules(_env())
    await asyncio.sleep(0)  # one loop turn
    assert scheduler.syncs == 0
    with pytest.raises(ConfigurationError, match="SCHEDULER binding is not configured"):
        await with_schedules.list_schedules(_env())


async def test_priming_is_kept_alive_by_a_workers_ctx() -> None:
    # S-14: on Workers the sync must outlive the event, so it goes to ctx.waitUntil (JS spelling)
    tsumugi = define_tsumugi(
        performers=PERFORMERS, schedules={"s": {"binding": "Step", "every_ms": 1000, "payload": {}}}
    )
    kept: list[Any] = []

    class WorkersCtx:
        def waitUntil(self, work: Any) -> None:  # the JS spelling
            kept.append(work)

    scheduler = FakeScheduler()
    tsumugi.prime_schedules(_env(SCHEDULER=scheduler), WorkersCtx())
    assert len(kept) == 1
    await kept[0]
    assert scheduler.syncs == 1
