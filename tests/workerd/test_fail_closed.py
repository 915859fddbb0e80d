"""A Worker deployed without its token never opens up (J-9, A-76, A-78).

This module starts its own pair of Workers with ``TSUMUGI_TOKEN`` set to nothing: the example's
``bearer_auth`` resolver then yields no token, so every ``/api`` request is refused, whatever it presents.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.workerd.harness import Workers, request, skip_unless_workerd

pytestmark = pytest.mark.workerd
UNAUTHORIZED = {"error": "unauthorized"}


@pytest.fixture(scope="module")
def tokenless(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workers]:
    skip_unless_workerd()
    state = tmp_path_factory.mktemp("workerd-tokenless")
    started = Workers(state, state / "workerd-dev.log", token="")
    try:
        yield started
    finally:
        started.close()


@pytest.mark.parametrize("token", [None, "", "undefined", "null", "workerd-suite-token"])
def test_every_api_request_is_refused_whatever_it_presents(tokenless: Workers, token: str | None) -> None:
    for method, path in (("GET", "/api/jobs"), ("POST", "/api/jobs"), ("GET", "/api/openapi.json")):
        answer = request(tokenless.url + path, method, {} if method == "POST" else None, token=token)
        assert (answer.status, answer.body) == (401, UNAUTHORIZED), (method, path, token)


def test_the_cookie_opens_nothing_either(tokenless: Workers) -> None:
    answer = request(tokenless.url + "/api/jobs", token=None, headers={"cookie": "tsumugi_token="})
    assert (answer.status, answer.body) == (401, UNAUTHORIZED)


def test_the_dashboard_page_is_still_served_and_the_example_routes_hide(tokenless: Workers) -> None:
    page = request(tokenless.url + "/", token=None)
    assert page.status == 200 and "window.__TSUMUGI__" in page.text  # the page holds no data
    hello = request(tokenless.url + "/hello/x", "POST", token="")
    assert (hello.status, hello.body) == (404, {"error": "not found"})  # the example's routes fail closed
    companion = request(tokenless.companion_url + "/enqueue", "POST", {"binding": "Hello"}, token="")
    assert (companion.status, companion.body) == (401, UNAUTHORIZED)
