"""Browser tests of the jobs screens against the example app on ``tsumugi dev`` (U-6..U-32)."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("playwright.sync_api", reason="pip install playwright")
from playwright.sync_api import expect

pytestmark = pytest.mark.browser
SLOW_STEPS = 120  # one second each: far longer than the test waits


def rows(page: Any) -> Any:
    return page.locator("table.jobs-table tbody tr[data-job-id]")


def row(page: Any, job_id: str) -> Any:
    return page.locator(f'table.jobs-table tbody tr[data-job-id="{job_id}"]')


def test_token_prompt_signs_in_and_stores_the_cookie(chromium: Any, dev_server: Any, shot: Any) -> None:
    # U-6/U-7: a 401 shows the prompt; the token goes into the tsumugi_token session cookie.
    context = chromium.new_context(viewport={"width": 1366, "height": 860})
    page = context.new_page()
    page.goto(dev_server.base_url + "/")
    expect(page.get_by_text("Enter your access token to continue.")).to_be_visible()
    expect(page.get_by_role("heading", name="Tsumugi")).to_be_visible()
    field = page.get_by_placeholder("Access token")
    expect(field).to_have_attribute("type", "password")
    expect(field).to_have_attribute("autocomplete", "off")
    shot(page, "prompt")
    field.fill(dev_server.token)
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("table.jobs-table")).to_be_visible()
    cookies = {c["name"]: c for c in context.cookies()}
    assert cookies["tsumugi_token"]["value"] == dev_server.token
    assert cookies["tsumugi_token"]["sameSite"] == "Strict"
    shot(page, "signed-in")
    context.close()


def test_lists_filters_and_sorts_jobs(dash: Any, api: Any, shot: Any) -> None:
    hello = [api.enqueue("Hello", {"name": n}) for n in ("ann", "bob")]
    boom = api.enqueue("Boom", {}, maxAttempts=1)
    for job_id in [*hello, boom]:
        expect(row(dash, job_id)).to_be_visible(timeout=45_000)
    shot(dash, "listed")

    # U-19: the Binding filter sends binding=Boom and only Boom rows remain.
    with dash.expect_request(lambda r: "/api/jobs?" in r.url and "binding=Boom" in r.url):
        dash.get_by_role("button", name="Filter by binding").click()
        dash.get_by_role("menuitemradio", name="Boom").click()
    expect(row(dash, boom)).to_be_visible()
    expect(row(dash, hello[0])).to_have_count(0)
    assert all(t.startswith("Boom") for t in rows(dash).locator("td.col-binding").all_inner_texts())
    shot(dash, "filtered-boom")

    # U-19: Reset clears the filters; U-18: a header sorts descending, a second click ascending.
    dash.get_by_role("button", name="Reset").click()
    expect(row(dash, hello[0])).to_be_visible()
    with dash.expect_request(lambda r: "sort=binding" in r.url and "order=desc" in r.url):
        dash.locator("th.col-binding button.sort").click()
    with dash.expect_request(lambda r: "sort=binding" in r.url and "order=asc" in r.url):
        dash.locator("th.col-binding button.sort").click()
    expect(dash.locator("th.col-binding")).to_have_attribute("aria-sort", "ascending")
    # The header turns before the sorted page renders: wait (retrying) for Boom to lead the list.
    expect(rows(dash).first.locator("td.col-binding")).to_contain_text("Boom")
    bindings = [t.split("\n")[0].strip() for t in rows(dash).locator("td.col-binding").all_inner_texts()]
    assert bindings == sorted(bindings)
    shot(dash, "sorted-binding-asc")

    # U-20: an exact job id in the ID search opens the detail at once.
    search = dash.get_by_placeholder("Search by id")
    search.fill(boom)
    search.press("Enter")
    expect(dash.get_by_role("dialog", name="Job detail")).to_be_visible()
    shot(dash, "searched-id")


def test_opens_a_job_with_payload_result_and_attempts(dash: Any, api: Any, shot: Any) -> None:
    # U-24/U-28/U-29: a row opens the detail with the decoded payload and the attempt log.
    job_id = api.enqueue("Hello", {"name": "carol"})
    api.wait_job_state(job_id, {"COMPLETED"})
    row(dash, job_id).locator("td.col-state").click()
    dialog = dash.get_by_role("dialog", name="Job detail")
    expect(dialog).to_be_visible()
    expect(dialog.get_by_text(job_id)).to_be_visible()
    expect(dialog.get_by_test_id("payload")).to_contain_text('"name": "carol"')
    expect(dialog.locator(".attempt").first).to_be_visible()
    expect(dialog.locator('dd [data-state="COMPLETED"]')).to_be_visible()
    shot(dash, "job-detail")
    dash.keyboard.press("Escape")
    expect(dialog).to_be_hidden()


def test_retries_a_failed_boom_job(dash: Any, api: Any, shot: Any) -> None:
    # U-25: the row menu retries a FAILED job; the detail lists the newest attempt first (ADR-0094).
    job_id = api.enqueue("Boom", {}, maxAttempts=1)
    api.wait_job_state(job_id, {"FAILED"})
    target = row(dash, job_id)
    expect(target.locator('[data-state="FAILED"]')).to_be_visible(timeout=45_000)
    shot(dash, "failed")
    target.get_by_role("button", name=f"Actions for {job_id}").click()
    dash.get_by_role("menuitem", name="Retry").click()
    expect(dash.get_by_test_id("message")).to_have_text("Accepted")
    # back to SCHEDULED, dispatched again; Boom fails again, so a second attempt is logged.
    api.wait_job_state(job_id, {"SCHEDULED", "QUEUED", "RUNNING", "FAILED"})
    target.locator("td.col-state").click()
    dialog = dash.get_by_role("dialog", name="Job detail")
    expect(dialog.locator(".attempt").first).to_have_attribute("data-attempt", "2", timeout=45_000)
    shot(dash, "retried-newest-attempt-first")


def test_cancels_a_slow_job_while_it_runs(dash: Any, api: Any, shot: Any) -> None:
    # U-32: create through the New job form; J-135: cancel while RUNNING is a request.
    dash.get_by_role("button", name="+ Job").click()
    form = dash.get_by_role("dialog", name="New job")
    form.locator("select[name=binding]").select_option("Slow")
    form.locator("textarea[name=payload]").fill(json.dumps({"steps": SLOW_STEPS}))
    form.get_by_role("button", name="Create").click()
    expect(dash.get_by_test_id("message")).to_have_text("Job created")
    slow = dash.locator('table.jobs-table tr[data-job-id^="Slow#"]')
    expect(slow).to_have_count(1, timeout=45_000)
    job_id = slow.get_attribute("data-job-id")
    slow.locator("td.col-state").click()
    dialog = dash.get_by_role("dialog", name="Job detail")
    # The performer heartbeats progress once a second; the open detail shows it live (ADR-0094).
    expect(dialog.get_by_label("Progress")).to_be_visible(timeout=45_000)
    assert api.job_state(job_id) in {"QUEUED", "RUNNING"}
    shot(dash, "running-with-progress")
    dialog.get_by_role("button", name="Cancel").click()
    expect(dialog.get_by_role("status")).to_have_text("Cancellation requested")
    # The example's Slow raises at its next heartbeat once cancellation is requested, so the job
    # ends CANCELLED long before its SLOW_STEPS steps (J-135, seed page).
    expect(dialog.locator('dd [data-state="CANCELLED"]')).to_be_visible(timeout=45_000)
    job = api.client.get(f"/api/jobs/{job_id.replace('#', '%23')}").json()["job"]
    assert job["state"] == "CANCELLED"
    shot(dash, "cancelled")


def test_pages_and_toggles_columns(dash: Any, api: Any, shot: Any) -> None:
    ids = [api.enqueue("Hello", {"name": f"p{n}"}) for n in range(12)]
    for job_id in ids:
        api.wait_job_state(job_id, {"COMPLETED"})
    # U-22: rows per page, "Page X of Y", Next; U-21: a new page size goes back to page 1.
    dash.get_by_label("Rows per page").select_option("10")
    expect(rows(dash)).to_have_count(10)
    total = int(dash.locator(".pager-total").inner_text().split()[0])
    pages = -(-total // 10)
    expect(dash.get_by_text(f"Page 1 of {pages}")).to_be_visible()
    with dash.expect_request(lambda r: "/api/jobs?" in r.url and "offset=10" in r.url):
        dash.get_by_role("button", name="Next page").click()
    expect(dash.get_by_text(f"Page 2 of {pages}")).to_be_visible()
    shot(dash, "page-2")
    # U-23: View > Toggle columns hides a column and the choice survives a reload.
    dash.get_by_role("button", name="View").click()
    dash.get_by_label("Processing time").uncheck()  # every column starts visible
    expect(dash.locator("th.col-processingTime")).to_have_count(0)
    dash.reload()
    expect(dash.locator("table.jobs-table")).to_be_visible()
    expect(dash.locator("th.col-processingTime")).to_have_count(0)
    expect(dash.locator("th.col-binding")).to_have_count(1)
    shot(dash, "processing-time-hidden")
