"""The run graph shows a waiting node with its deadline and sends its event (ADR-0147, ADR-0148)."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("playwright.sync_api", reason="pip install playwright")
from playwright.sync_api import expect

pytestmark = pytest.mark.browser
RUN_TIMEOUT_MS = 90_000


def test_a_waiting_node_is_shown_its_event_is_sent_and_the_run_completes(dash: Any, shot: Any) -> None:
    dash.get_by_role("tab", name="Runs").click()
    dash.get_by_role("button", name="+ Run").click()
    form = dash.get_by_role("dialog", name="New run")
    form.locator("select[name=flow]").select_option("APPROVAL")
    form.locator("textarea[name=input]").fill("{}")
    form.get_by_role("button", name="Start").click()
    detail = dash.get_by_role("dialog", name="Run detail")
    card = detail.locator('.graph-card[data-node-id="approval"]')
    expect(card).to_have_attribute("data-state", "RUNNING", timeout=RUN_TIMEOUT_MS)
    wait = card.locator('.graph-card-wait[data-wait="event"]')
    expect(wait).to_contain_text("Waiting for approved until")  # the deadline is its timeout
    row = detail.locator('.wait-row[data-node-id="approval"]')
    expect(row).to_contain_text("gives up at")
    shot(dash, "waiting-node")
    row.get_by_label("Event payload (JSON)").fill('{"prefix": "approved-in-browser"}')
    row.get_by_role("button", name="Send event").click()
    expect(detail.get_by_role("status")).to_have_text("Event sent: approval completed")
    expect(card).to_have_attribute("data-state", "COMPLETED", timeout=RUN_TIMEOUT_MS)
    expect(detail.locator('dd [data-state="COMPLETED"]').first).to_be_visible(timeout=RUN_TIMEOUT_MS)
    expect(detail.locator('.graph-card[data-node-id="list"]')).to_have_attribute("data-state", "COMPLETED")
    expect(detail.locator(".wait-row")).to_have_count(0)  # nothing waits any more
    shot(dash, "event-sent")
