"""Browser tests of the runs, schedules, metrics and bindings screens, keyboard use and a phone-sized
viewport, against the example app on ``tsumugi dev`` (U-9, U-33..U-41, F-90, S-22)."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("playwright.sync_api", reason="pip install playwright")
from playwright.sync_api import expect

pytestmark = pytest.mark.browser
RUN_TIMEOUT_MS = 90_000


def test_starts_greetings_and_watches_its_graph_complete(dash: Any, api: Any, shot: Any) -> None:
    flows = api.client.get("/api/flows").json()["flows"]
    if "GREETINGS" not in flows:
        pytest.skip(f"the GREETINGS flow is not registered in the example app (GET /api/flows: {flows})")
    dash.get_by_role("tab", name="Runs").click()
    dash.get_by_role("button", name="+ Run").click()
    form = dash.get_by_role("dialog", name="New run")
    form.locator("select[name=flow]").select_option("GREETINGS")
    form.locator("textarea[name=input]").fill('{"prefix": "hi"}')
    form.get_by_role("button", name="Start").click()
    detail = dash.get_by_role("dialog", name="Run detail")
    expect(detail).to_be_visible()
    graph = detail.locator(".graph")
    # F-90 / U-36: the static nodes are cards; the fan-out children are chips inside "greet".
    for node_id in ("list", "greet", "report"):
        expect(graph.locator(f'.graph-card[data-node-id="{node_id}"]')).to_be_visible(timeout=RUN_TIMEOUT_MS)
    shot(dash, "graph-started")
    # Live updates (ADR-0094): the open detail reaches COMPLETED without a reload.
    expect(detail.locator('dd [data-state="COMPLETED"]').first).to_be_visible(timeout=RUN_TIMEOUT_MS)
    for node_id in ("list", "greet", "report"):
        card = graph.locator(f'.graph-card[data-node-id="{node_id}"]')
        expect(card).to_have_attribute("data-state", "COMPLETED")
    chips = graph.locator('.graph-card[data-node-id="greet"] .chip')
    expect(chips).to_have_count(3)
    assert graph.locator(".vue-flow__edge").count() == 2  # list -> greet -> report
    shot(dash, "graph-completed")


def test_schedules_screen(dash: Any, api: Any, shot: Any) -> None:
    # U-40 / S-22: one row per schedule, read live from the scheduler.
    answer = api.client.get("/api/schedules")
    if answer.status_code == 501:
        # U-9: without schedules the tab is not offered at all.
        expect(dash.get_by_role("tab", name="Jobs")).to_be_visible()
        expect(dash.get_by_role("tab", name="Schedules")).to_have_count(0)
        shot(dash, "no-schedules-tab")
        return
    schedules = answer.json()["schedules"]
    dash.get_by_role("tab", name="Schedules").click()
    table = dash.locator("table.schedules-table")
    if schedules:
        for schedule in schedules:
            expect(table.locator(f'tr[data-schedule="{schedule["name"]}"]')).to_be_visible()
    else:
        expect(table.get_by_text("No schedules.")).to_be_visible()
    shot(dash, "schedules")


def test_metrics_screen(dash: Any, api: Any, shot: Any) -> None:
    answer = api.client.get("/api/metrics", params={"hours": 24})
    if answer.status_code == 501:
        expect(dash.get_by_role("tab", name="Jobs")).to_be_visible()
        expect(dash.get_by_role("tab", name="Metrics")).to_have_count(0)  # U-9
        shot(dash, "no-metrics-tab")
        return
    dash.get_by_role("tab", name="Metrics").click()
    expect(dash.get_by_role("heading", name="Terminal jobs per hour")).to_be_visible()
    if answer.json()["series"]:
        expect(dash.locator(".chart .bar").first).to_be_visible()
    else:
        expect(dash.get_by_text("No data.")).to_be_visible()
    # U-41: the window buttons reload with the chosen hours.
    with dash.expect_request(lambda r: "/api/metrics?" in r.url and "hours=168" in r.url):
        dash.get_by_role("button", name="7d").click()
    expect(dash.get_by_role("button", name="7d")).to_have_attribute("aria-pressed", "true")
    shot(dash, "metrics")


def test_bindings_screen_pauses_and_resumes(dash: Any, api: Any, shot: Any) -> None:
    # J-176 / seed "Changing Settings at Runtime": pause and resume a binding from the bindings tab.
    dash.get_by_role("tab", name="Bindings").click()
    hello = dash.locator('table.bindings-table tr[data-binding="Hello"]')
    expect(hello).to_be_visible()
    shot(dash, "bindings")
    probe = api.client.post("/api/bindings/Hello/policy", json={})
    if probe.status_code in (404, 405):
        pytest.skip(f"POST /api/bindings/:binding/policy (J-176) answered {probe.status_code}")
    hello.get_by_role("button", name="Pause").click()
    expect(dash.get_by_test_id("message")).to_have_text("Accepted")
    expect(hello.get_by_role("button", name="Resume")).to_be_visible()
    shot(dash, "paused")
    hello.get_by_role("button", name="Resume").click()
    expect(hello.get_by_role("button", name="Pause")).to_be_visible()


def test_tabs_and_menus_work_from_the_keyboard(dash: Any, shot: Any) -> None:
    # ADR-0094: arrow keys move across tabs; Enter opens a menu and Escape closes it.
    jobs_tab = dash.get_by_role("tab", name="Jobs")
    jobs_tab.focus()
    dash.keyboard.press("ArrowRight")
    selected = dash.locator('[role="tab"][aria-selected="true"]')
    expect(selected).not_to_have_text("Jobs")
    dash.keyboard.press("ArrowLeft")
    expect(selected).to_have_text("Jobs")
    view = dash.get_by_role("button", name="View")
    view.focus()
    dash.keyboard.press("Enter")
    expect(dash.get_by_text("Toggle columns")).to_be_visible()
    dash.keyboard.press("Escape")
    expect(dash.get_by_text("Toggle columns")).to_be_hidden()
    shot(dash, "keyboard")


def test_phone_sized_viewport_has_no_horizontal_scroll(chromium: Any, dev_server: Any, shot: Any) -> None:
    # U-17: columns fold away below the breakpoints; the page itself never scrolls sideways.
    context = chromium.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    context.add_cookies([{"name": "tsumugi_token", "value": dev_server.token, "url": dev_server.base_url}])
    page = context.new_page()
    page.goto(dev_server.base_url + "/")
    expect(page.locator("table.jobs-table")).to_be_visible()
    expect(page.locator("th.col-processingTime")).to_be_hidden()
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    shot(page, "phone-jobs")
    context.close()
