"""Reports that arrive together reach a local shard as one ``report_many`` (ADR-0106)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from tsumugi.clock import FixedClock
from tsumugi.ports import AlarmPort, SqlExecutor
from tsumugi.runtimes.local.durable_alarms import DurableAlarms
from tsumugi.runtimes.local.serial_coordinators import SerialCoordinators
from tsumugi.runtimes.local.shard_namespace import LocalShardNamespace
from tsumugi.runtimes.local.sqlite_executor import SqliteExecutor


class ReportingShard:
    """Records ``report`` and ``report_many`` calls; a report of ``"bad"`` raises."""

    def __init__(self, name: str, sql: SqlExecutor, alarm: AlarmPort) -> None:
        self.calls: list[tuple[str, list[str]]] = []
        self.fail_many = False

    async def report(self, job_id: str, outcome: Mapping[str, Any]) -> None:
        if job_id == "bad":
            raise RuntimeError("bad report")
        self.calls.append(("report", [job_id]))

    async def report_many(self, reports: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
        if self.fail_many or any(job_id == "bad" for job_id, _ in reports):
            raise RuntimeError("batch failed")
        self.calls.append(("report_many", [job_id for job_id, _ in reports]))

    async def alarm(self) -> None:
        return None


@pytest.fixture
def namespace(tmp_path: Path, clock: FixedClock, closing: Any) -> LocalShardNamespace:
    alarms = closing(DurableAlarms(tmp_path / "alarms.sqlite3", clock))
    coordinators = closing(
        SerialCoordinators("shards", tmp_path / "shards", alarms, clock, ReportingShard, SqliteExecutor)
    )
    return LocalShardNamespace(coordinators)


async def test_reports_made_together_are_applied_as_one_group(namespace: LocalShardNamespace) -> None:
    # ADR-0106: one report_many per group; every caller returns after its report was applied
    stub = namespace.get("MAIL#0")
    await asyncio.gather(*(stub.report(f"j{n}", {"ok": True}) for n in range(5)))
    shard: ReportingShard = namespace.coordinators.coordinator("MAIL#0")
    assert shard.calls == [("report_many", ["j0", "j1", "j2", "j3", "j4"])]


async def test_reports_made_while_the_shard_is_busy_form_the_next_group(
    namespace: LocalShardNamespace,
) -> None:
    # ADR-0106: the shard's turn is taken by the first group; later reports wait and go together
    stub = namespace.get("MAIL#0")
    first = asyncio.ensure_future(stub.report("a", {"ok": True}))
    await asyncio.sleep(0)  # the first group is being applied
    await asyncio.gather(first, stub.report("b", {"ok": True}), stub.report("c", {"ok": True}))
    shard: ReportingShard = namespace.coordinators.coordinator("MAIL#0")
    assert shard.calls == [("report", ["a"]), ("report_many", ["b", "c"])]


async def test_a_failing_report_fails_only_its_own_caller(namespace: LocalShardNamespace) -> None:
    # ADR-0106: a failed group is applied one report at a time, each caller sees its own outcome
    stub = namespace.get("MAIL#0")
    results = await asyncio.gather(
        stub.report("a", {}), stub.report("bad", {}), stub.report("c", {}), return_exceptions=True
    )
    assert results[0] is None and results[2] is None
    assert isinstance(results[1], RuntimeError)
    shard: ReportingShard = namespace.coordinators.coordinator("MAIL#0")
    assert shard.calls == [("report", ["a"]), ("report", ["c"])]


class Answers:
    """What ``report_later`` callers were told, in order."""

    def __init__(self) -> None:
        self.told: list[tuple[str, BaseException | None]] = []

    def to(self, job_id: str) -> Any:
        return lambda error: self.told.append((job_id, error))


async def _turns(n: int = 10) -> None:
    for _ in range(n):  # loop turns, not time: the group's task takes a few to apply
        await asyncio.sleep(0)


async def test_reports_handed_over_join_the_group_and_each_caller_is_told_once(
    namespace: LocalShardNamespace,
) -> None:
    # ADR-0167: report_later gathers like report; its callers are answered instead of awaited
    stub = namespace.get("MAIL#0")
    answers = Answers()
    assert stub.report_later("a", {"ok": True}, answers.to("a"))
    assert stub.report_later("b", {"ok": True}, answers.to("b"))
    await stub.report("c", {"ok": True})
    await _turns()
    shard: ReportingShard = namespace.coordinators.coordinator("MAIL#0")
    assert shard.calls == [("report_many", ["a", "b", "c"])]
    assert answers.told == [("a", None), ("b", None)]


async def test_a_failed_report_handed_over_is_told_its_own_error(namespace: LocalShardNamespace) -> None:
    stub = namespace.get("MAIL#0")
    answers = Answers()
    for job_id in ("a", "bad", "c"):
        assert stub.report_later(job_id, {}, answers.to(job_id))
    await _turns()
    assert [job_id for job_id, _ in answers.told] == ["a", "bad", "c"]
    assert answers.told[0][1] is None and answers.told[2][1] is None
    assert isinstance(answers.told[1][1], RuntimeError)


async def test_inside_the_shards_own_turn_a_report_is_not_taken_for_later(
    namespace: LocalShardNamespace,
) -> None:
    # a gathered report would wait for the very turn its caller holds
    stub = namespace.get("MAIL#0")
    answers = Answers()

    async def in_turn(shard: Any) -> bool:
        return stub.report_later("a", {}, answers.to("a"))

    assert await namespace.coordinators.call_with("MAIL#0", in_turn) is False
    await _turns()
    assert answers.told == []
