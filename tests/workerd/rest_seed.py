"""The data the ``test_rest_*`` modules share, enqueued once a session so the Workers settle it early.

Other modules share these Workers: every assertion filters by ids, unique keys or concurrency keys made
up here, and the job list is never assumed empty. tests/workerd/conftest.py serves it as the
session-scoped ``seeded`` and ``list_group`` fixtures.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from tests.workerd.harness import Workers, quoted
from tests.workerd.rest_wire import start_run

TAG: Final = uuid.uuid4().hex[:8]  # the REST modules' keys and run ids, unique per session
HOUR_MS: Final = 3_600_000  # delayed jobs stay SCHEDULED for the whole session

# (binding, priority) of the jobs the list tests sort and filter; all delayed, so none of them changes.
LIST_JOBS: Final = (("Hello", 3), ("Greet", 1), ("Hello", 1), ("Boom", 5), ("Greet", 1), ("Slow", 2))
LIST_UNIQUE_AT: Final = 2  # the one job of the list group that also has a unique key


@dataclass
class Seeded:
    """Everything the REST modules enqueue up front, so the Workers settle it while the tables run."""

    list_key: str
    list_unique: str
    list_ids: list[str]
    singles: dict[str, str]  # purpose -> a delayed Hello job
    bulk_cancel_key: str
    bulk_cancel_unique: str
    bulk_cancel_ids: list[str]
    tally: dict[str, list[str]]  # shard name -> delayed Tally jobs
    done: str  # a Greet job that completes
    failed: list[str]  # Boom jobs with one attempt
    bulk_retry_key: str
    bulk_retry_ids: list[str]
    greetings: str  # a GREETINGS run started with an explicit id
    greetings_first_input: dict[str, str]
    pipeline: str
    timed: str  # a TIMED run whose 1 ms deadline fails it at once
    delayed: list[str] = field(default_factory=list)  # cancelled again at the end of the session

    def later(self, workers: Workers, binding: str = "Hello", **fields: Any) -> str:
        job_id = workers.enqueue(binding, {"tag": TAG}, delayMs=HOUR_MS, **fields)
        self.delayed.append(job_id)
        return job_id


def seed(workers: Workers) -> Seeded:
    """Enqueue everything up front; the ``seeded`` fixture cancels ``delayed`` again at the end."""
    greetings_input = {"prefix": f"rest-{TAG}"}
    data = Seeded(
        list_key=f"rest-{TAG}-list",
        list_unique=f"rest-{TAG}-unique",
        list_ids=[],
        singles={},
        bulk_cancel_key=f"rest-{TAG}-bc",
        bulk_cancel_unique=f"rest-{TAG}-bc-unique",
        bulk_cancel_ids=[],
        tally={},
        done=workers.enqueue("Greet", {"name": TAG}, uniqueKey=f"rest-{TAG}-done"),
        failed=[workers.enqueue("Boom", {"n": n}, maxAttempts=1) for n in range(3)],
        bulk_retry_key=f"rest-{TAG}-br",
        bulk_retry_ids=[],
        greetings=start_run(workers, {"flow": "GREETINGS", "input": greetings_input, "id": f"rest-{TAG}"}),
        greetings_first_input=greetings_input,
        pipeline=start_run(workers, {"flow": "PIPELINE", "input": {"prefix": TAG}, "id": f"rest-{TAG}"}),
        timed=start_run(workers, {"flow": "TIMED", "input": {}, "deadlineMs": 1}),
    )
    # Per-key concurrency defaults to 1 (J-147): these three Boom jobs run one after the other.
    data.bulk_retry_ids = [
        workers.enqueue("Boom", {"n": n}, maxAttempts=1, concurrencyKey=data.bulk_retry_key) for n in range(3)
    ]
    for index, (binding, priority) in enumerate(LIST_JOBS):
        unique = {"uniqueKey": data.list_unique} if index == LIST_UNIQUE_AT else {}
        data.list_ids.append(
            data.later(workers, binding, priority=priority, concurrencyKey=data.list_key, **unique)
        )
    for purpose in ("cancel", "later", "past", "epoch", "guarded", "bulk"):
        unique = {"uniqueKey": f"rest-{TAG}-{purpose}"} if purpose == "later" else {}
        data.singles[purpose] = data.later(workers, **unique)
    for index in range(3):
        unique = {"uniqueKey": data.bulk_cancel_unique} if index == 2 else {}
        data.bulk_cancel_ids.append(data.later(workers, concurrencyKey=data.bulk_cancel_key, **unique))
    for key in ("a", "b", "c"):  # J-18: FNV-1a sends "a" and "c" to Tally#0, "b" to Tally#1
        job_id = workers.companion_enqueue(
            {"binding": "Tally", "payload": {"values": [1]}, "partition_key": key, "delay_ms": HOUR_MS}
        )
        data.tally.setdefault(job_id.split(":", 1)[0], []).append(job_id)
        data.delayed.append(job_id)
    return data


@dataclass(frozen=True)
class ListGroup:
    """The list group's JobSummary rows, in enqueue order, and the bounds the queries use."""

    rows: list[dict[str, Any]]

    @property
    def low(self) -> int:
        return min(r["created_at"] for r in self.rows)

    @property
    def second(self) -> int:
        return sorted(r["created_at"] for r in self.rows)[1]

    def values(self, key: str, unique: str) -> dict[str, Any]:
        high = str(max(r["created_at"] for r in self.rows))
        return {
            "key": key, "unique": unique, "first": quoted(self.rows[0]["id"]),
            "prefix": quoted(self.rows[0]["id"][:-1]),
            "low": self.low, "low_hex": hex(self.low), "second": self.second,
            "high_exp": f"{high[0]}.{high[1:]}e{len(high) - 1}",  # JS Number() reads exponents
        }  # fmt: skip

    def expect(
        self,
        column: str = "updated_at",
        ascending: bool = False,
        where: Callable[[int, dict[str, Any]], bool] = lambda index, row: True,
        page: slice = slice(None),
    ) -> tuple[list[str], int]:
        """A-30: ORDER BY column, then id DESC whatever the direction; A-31: total ignores paging."""
        chosen = [row for index, row in enumerate(self.rows) if where(index, row)]
        by_id = sorted(chosen, key=lambda row: str(row["id"]), reverse=True)
        ordered = sorted(by_id, key=lambda row: row[column], reverse=not ascending)  # stable
        return [row["id"] for row in ordered][page], len(chosen)
