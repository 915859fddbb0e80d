"""Bulk retry and cancel in pages (A-49..A-53) against scripted answers: paging, lag, the progress bar."""

from __future__ import annotations

import io
from collections.abc import Sequence

from tsumugi.api import models
from tsumugi.cli import bulk_pages


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class _Server:
    """Answers each bulk request with the next scripted page and records the bodies sent."""

    def __init__(self, pages: Sequence[tuple[list[str], int]]) -> None:
        self.pages = list(pages)
        self.bodies: list[dict[str, object]] = []

    def send(self, body: dict[str, object]) -> models.BulkResult:
        self.bodies.append(body)
        ok, remaining = self.pages.pop(0)
        return models.BulkResult(ok=ok, failed=[], remaining=remaining)


def test_a_filter_is_sent_again_until_nothing_remains() -> None:
    # clients loop until remaining is 0
    server = _Server([([f"A#0:{n}" for n in range(200)], 250), ([f"A#0:{n}" for n in range(200, 450)], 0)])
    outcome = bulk_pages.by_filter(server.send, {"binding": "A"}, bulk_pages.Progress(io.StringIO(), "x"))
    assert len(outcome.ok) == 450 and outcome.left == 0
    assert server.bodies == [{"binding": "A"}, {"binding": "A"}]


def test_jobs_listed_again_are_counted_once_and_the_loop_waits_for_the_read_model() -> None:
    # the read model lags; a page of already handled jobs is not progress
    naps: list[float] = []
    server = _Server([(["A#0:1", "A#0:2"], 1), (["A#0:1"], 1), (["A#0:3"], 0)])
    outcome = bulk_pages.by_filter(server.send, {}, bulk_pages.Progress(io.StringIO(), "x"), naps.append)
    assert outcome.ok == ["A#0:1", "A#0:2", "A#0:3"]
    assert naps == [bulk_pages.LAG_WAIT_S]


def test_a_read_model_that_does_not_move_ends_the_loop_with_what_is_left() -> None:
    stale = [(["A#0:1"], 7)] * (bulk_pages.STALE_PAGES_LIMIT + 2)
    naps: list[float] = []
    outcome = bulk_pages.by_filter(
        _Server(stale).send, {}, bulk_pages.Progress(io.StringIO(), "x"), naps.append
    )
    assert (outcome.ok, outcome.left) == (["A#0:1"], 7)
    assert len(naps) == bulk_pages.STALE_PAGES_LIMIT


def test_ids_go_two_hundred_to_a_request_each_once() -> None:
    # more than 200 ids is refused, so they are split
    ids = [f"A#0:{n}" for n in range(450)]
    server = _Server([(ids[:200], 0), (ids[200:400], 0), (ids[400:], 0)])
    outcome = bulk_pages.by_ids(server.send, [*ids, ids[0]], bulk_pages.Progress(io.StringIO(), "x"))
    assert [len(body["ids"]) for body in server.bodies] == [200, 200, 50]  # type: ignore[arg-type]
    assert outcome.ok == ids


def test_the_bar_is_drawn_in_place_on_a_terminal_only() -> None:
    terminal = _Terminal()
    progress = bulk_pages.Progress(terminal, "retrying")
    progress.update(100, 400)
    progress.update(400, 400)
    progress.finish()
    bar = "#" * 7 + "." * 23
    assert terminal.getvalue() == f"\rretrying [{bar}] 100/400\rretrying [{'#' * 30}] 400/400\n"
    pipe = io.StringIO()
    quiet = bulk_pages.Progress(pipe, "retrying")
    quiet.update(1, 2)
    quiet.finish()
    assert pipe.getvalue() == ""
