"""The dashboard as the real Worker serves it: the document over HTTP, then one sign-in in Chromium.

Rules: U-1..U-4 (one document, the injected config, served for unmatched GETs without auth, no
Authorization header from the app), U-6/U-7 (the token prompt writes the cookie), A-17, A-76, A-79.
The browser test drives Debian's Chromium with Playwright as tests/dashboard/ does, and skips where either
is missing.
"""

from __future__ import annotations

import http.client
import shutil
import uuid
from html.parser import HTMLParser
from typing import Any, Final

import pytest
from tests.workerd.harness import TOKEN, Workers

from tsumugi.ui import dashboard_source_html

pytestmark = pytest.mark.workerd

HTML_TYPE: Final = "text/html; charset=UTF-8"
# U-2: the first <head> is followed at once by the config; the example reads the token from this cookie.
INJECTED: Final = '<head><script>window.__TSUMUGI__={"tokenCookie":"tsumugi_token"}</script>'
# PLATFORM.md §6 (as tests/dashboard/conftest.py): the flags Debian's Chromium needs here.
CHROMIUM_ARGS: Final = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ACTION_TIMEOUT_MS: Final = 30_000  # the machine is shared with other workerd instances
LISTED_TIMEOUT_MS: Final = 45_000  # the page refreshes every 3 s; the read model lags the shard


def fetch(workers: Workers, method: str, path: str) -> tuple[int, str, str]:
    """(status, content type, body) of a request without any credentials."""
    connection = http.client.HTTPConnection("127.0.0.1", workers.port, timeout=60)
    try:
        connection.request(method, path)
        response = connection.getresponse()
        body = response.read().decode("utf-8")
        return response.status, response.getheader("content-type") or "", body
    finally:
        connection.close()


class ExternalResources(HTMLParser):
    """Collects ``<script src>`` and stylesheet ``<link>`` tags; script bodies are not parsed as markup."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = dict(attrs)
        if (tag == "script" and "src" in named) or (tag == "link" and named.get("rel") == "stylesheet"):
            self.found.append((tag, named))


def test_the_document_is_served_without_credentials(workers: Workers) -> None:
    # U-1, U-2, U-3, A-76: the packaged document with the config injected, for any unmatched GET.
    status, content_type, html = fetch(workers, "GET", "/")
    assert (status, content_type) == (200, HTML_TYPE)
    assert html.startswith("<!doctype html>") and '<html lang="en">' in html
    assert "<title>Tsumugi</title>" in html and '<div id="app">' in html
    resources = ExternalResources()
    resources.feed(html)
    assert resources.found == []  # everything is inlined
    head = html.index("<head>")
    assert html[head:].startswith(INJECTED) and html.count("window.__TSUMUGI__=") == 1
    assert html == dashboard_source_html().replace("<head>", INJECTED, 1)
    for path in ("/jobs", "/some/client/route?tab=runs"):  # routing is client-side only (U-3)
        assert fetch(workers, "GET", path) == (200, HTML_TYPE, html), path


def _chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.skip("chromium not found on PATH (apt-get install -y chromium)")
    return path


@pytest.mark.browser
def test_signing_in_with_the_token_lists_an_enqueued_job(workers: Workers) -> None:
    # U-6/U-7: a 401 shows the prompt, the token goes into the tsumugi_token cookie, which bearer auth
    # reads; U-4: the app itself never sends an Authorization header.
    executable = _chromium()
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright")
    job_id = workers.enqueue("Greet", {"name": f"dashboard-{uuid.uuid4().hex[:8]}"})
    workers.wait_job(job_id, frozenset({"COMPLETED"}))
    api_headers: list[dict[str, str]] = []

    def record(request: Any) -> None:
        if "/api/" in request.url:
            api_headers.append(request.headers)

    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1366, "height": 860}, locale="en-US")
            page = context.new_page()
            page.set_default_timeout(ACTION_TIMEOUT_MS)
            page.on("request", record)
            page.goto(workers.url + "/")
            expect = sync_api.expect
            expect(page.get_by_text("Enter your access token to continue.")).to_be_visible(
                timeout=ACTION_TIMEOUT_MS
            )
            page.get_by_placeholder("Access token").fill(TOKEN)
            page.get_by_role("button", name="Sign in").click()
            row = page.locator(f'table.jobs-table tbody tr[data-job-id="{job_id}"]')
            expect(row).to_be_visible(timeout=LISTED_TIMEOUT_MS)
            expect(row.locator('[data-state="COMPLETED"]')).to_be_visible(timeout=ACTION_TIMEOUT_MS)
            cookies = {cookie["name"]: cookie for cookie in context.cookies()}
            assert cookies["tsumugi_token"]["value"] == TOKEN
            assert cookies["tsumugi_token"]["sameSite"] == "Strict"
        finally:
            browser.close()
    assert api_headers and not [h for h in api_headers if "authorization" in {k.lower() for k in h}]
