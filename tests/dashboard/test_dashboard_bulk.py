"""The jobs tab's "all matching" actions in Chromium: count, confirm, progress (ADR-0151)."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("playwright.sync_api", reason="pip install playwright")
from playwright.sync_api import expect

pytestmark = pytest.mark.browser
JOBS = 230  # more than one batch of 200
AN_HOUR_MS = 3_600_000


def test_cancel_all_matching_confirms_the_count_then_shows_progress(dash: Any, api: Any, shot: Any) -> None:
    ids = [
        api.enqueue("Hello", {"n": n}, delayMs=AN_HOUR_MS, concurrencyKey="dash-bulk") for n in range(JOBS)
    ]
    api.wait_job_state(ids[-1], {"SCHEDULED"})
    search = dash.get_by_placeholder("Search by id")
    search.fill("ck=dash-bulk")
    search.press("Enter")
    expect(dash.locator(".pager-total")).to_have_text(f"{JOBS} jobs", timeout=30_000)

    dash.get_by_role("button", name="All matching").click()
    dash.get_by_role("menu").get_by_role("button", name="Cancel all matching").click()
    dialog = dash.get_by_role("dialog", name="Cancel all matching jobs")
    expect(dialog.locator(".bulk-count")).to_have_text(f"{JOBS} jobs match the current filters.")
    shot(dash, "bulk-confirm")
    dialog.get_by_role("button", name=f"Cancel {JOBS} jobs").click()
    expect(dialog.locator("progress.bulk-progress")).to_be_visible()
    expect(dialog.get_by_role("status")).to_have_text(f"{JOBS} of {JOBS} done (finished)", timeout=30_000)
    expect(dialog.locator("progress.bulk-progress")).to_have_attribute("value", "100")
    shot(dash, "bulk-done")
    dialog.get_by_role("button", name="Close", exact=True).last.click()
    for job_id in (ids[0], ids[-1]):
        api.wait_job_state(job_id, {"CANCELLED"})


def test_reschedule_all_matching_takes_a_time_then_moves_every_job(dash: Any, api: Any) -> None:
    # issue 16: reschedule over the whole filter, from the dashboard
    ids = [api.enqueue("Hello", {"n": n}, delayMs=AN_HOUR_MS, concurrencyKey="dash-move") for n in range(3)]
    api.wait_job_state(ids[-1], {"SCHEDULED"})
    search = dash.get_by_placeholder("Search by id")
    search.fill("ck=dash-move")
    search.press("Enter")
    expect(dash.locator(".pager-total")).to_have_text("3 jobs", timeout=30_000)

    dash.get_by_role("button", name="All matching").click()
    dash.get_by_role("menu").get_by_role("button", name="Reschedule all matching").click()
    dialog = dash.get_by_role("dialog", name="Reschedule all matching jobs")
    expect(dialog.locator(".bulk-count")).to_have_text("3 jobs match the current filters.")
    dialog.get_by_label("Delay (ms)").fill("-5")
    dialog.get_by_role("button", name="Reschedule 3 jobs").click()
    expect(dialog.get_by_role("alert")).to_have_text("Delay must be a number of milliseconds, 0 or more")
    dialog.get_by_label("Delay (ms)").fill("0")
    dialog.get_by_label("Priority").fill("9")
    dialog.get_by_role("button", name="Reschedule 3 jobs").click()
    expect(dialog.get_by_role("status")).to_have_text("3 of 3 done (finished)", timeout=30_000)
    for job_id in ids:  # due now rather than in an hour, so they run
        api.wait_job_state(job_id, {"COMPLETED"})
