"""Bulk retry and cancel in pages, with a progress bar on a terminal.

Given ids go 200 to a request (the API's cap). A filter is sent again until the server says nothing more
matches (``remaining`` 0). The read model lags the shards, so a page may list jobs this
command already handled; then the loop waits briefly and asks again, and gives up after a bounded number
of such pages, saying how many jobs were still listed.
"""
# A-49..A-53, A-51, A-41

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TextIO

from tsumugi.api import models
from tsumugi.rest_requests import BulkSelection

IDS_PER_REQUEST = 200  # an ids list longer than 200 is refused
LAG_WAIT_S = 0.5  # a job's change reaches the read model about a second after it happens (ADR-0135)
STALE_PAGES_LIMIT = 20  # ten seconds of pages that list only handled jobs: the read model is not moving
BAR_WIDTH = 30  # characters of the progress bar

Send = Callable[[BulkSelection], models.BulkResult]


@dataclass
class BulkOutcome:
    """What a bulk command did: accepted ids, refused ones with their reason, and what it left."""

    ok: list[str] = field(default_factory=list)
    failed: list[models.BulkFailure] = field(default_factory=list)
    left: int = 0  # still listed when the loop gave up on a lagging read model

    def as_wire(self) -> dict[str, object]:
        """The shape of a BulkResult, ``remaining`` being what was left."""
        #
        refused = [failure.model_dump(mode="json") for failure in self.failed]
        return {"ok": self.ok, "failed": refused, "remaining": self.left}


class Progress:
    """``retrying [#####.....] 200/512`` redrawn in place on a terminal; silent anywhere else."""

    def __init__(self, stream: TextIO, verb: str) -> None:
        self.stream = stream
        self.verb = verb
        self.drawn = False
        self.live = stream.isatty()

    def update(self, done: int, total: int) -> None:
        if not self.live:
            return
        total = max(total, done, 1)
        filled = BAR_WIDTH * done // total
        bar = "#" * filled + "." * (BAR_WIDTH - filled)
        self.stream.write(f"\r{self.verb} [{bar}] {done}/{total}")
        self.stream.flush()
        self.drawn = True

    def finish(self) -> None:
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()


def by_ids(send: Send, ids: Sequence[str], progress: Progress) -> BulkOutcome:
    """Every id once, in requests of at most 200."""
    outcome = BulkOutcome()
    unique = list(dict.fromkeys(ids))
    for start in range(0, len(unique), IDS_PER_REQUEST):
        page = send({"ids": unique[start : start + IDS_PER_REQUEST]})
        outcome.ok += page.ok
        outcome.failed += page.failed
        progress.update(len(outcome.ok) + len(outcome.failed), len(unique))
    progress.finish()
    return outcome


def by_filter(
    send: Send, body: BulkSelection, progress: Progress, sleep: Callable[[float], None] = time.sleep
) -> BulkOutcome:
    """The filter's pages until ``remaining`` is 0; each job is counted once however often it is listed."""
    outcome = BulkOutcome()
    seen: set[str] = set()
    stale_pages = 0
    while True:
        page = send(body)
        fresh = 0
        for job_id in page.ok:
            if job_id not in seen:
                seen.add(job_id)
                outcome.ok.append(job_id)
                fresh += 1
        for failure in page.failed:
            if failure.id not in seen:
                seen.add(failure.id)
                outcome.failed.append(failure)
                fresh += 1
        progress.update(len(seen), len(seen) + page.remaining)
        if page.remaining == 0:
            break
        stale_pages = 0 if fresh else stale_pages + 1
        if stale_pages > STALE_PAGES_LIMIT:
            outcome.left = page.remaining
            break
        if not fresh:
            sleep(LAG_WAIT_S)  # the read model still lists what was handled; let it catch up
    progress.finish()
    return outcome
