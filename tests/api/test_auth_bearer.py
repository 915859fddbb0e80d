"""Bearer-token auth (A-78..A-82)."""

from __future__ import annotations

import pytest
from tests.api.rest_harness import TOKEN, Harness

from tsumugi.api import bearer_auth
from tsumugi.api.auth_bearer import tokens_equal
from tsumugi.errors import ConfigurationError


def test_a_fixed_empty_token_is_refused_at_construction() -> None:
    #
    with pytest.raises(ConfigurationError):
        bearer_auth("")


async def _status(harness: Harness, headers: dict[str, str], **changes: object) -> int:
    async with harness.client(harness.app(**changes), headers=headers) as client:
        return (await client.get("/api/stats")).status_code


async def test_header_token_is_accepted_case_insensitively(harness: Harness) -> None:
    # the scheme matches case-insensitively; extra parts are ignored.
    for header in (f"Bearer {TOKEN}", f"bearer {TOKEN}", f"BEARER {TOKEN} extra"):
        assert await _status(harness, {"authorization": header}) == 200


async def test_two_spaces_present_an_empty_token(harness: Harness) -> None:
    # "Bearer  x" splits into ["Bearer", "", "x"], presenting "".
    assert await _status(harness, {"authorization": f"Bearer  {TOKEN}"}) == 401


async def test_header_wins_over_cookie(harness: Harness) -> None:
    # with a bearer header the cookie is not consulted.
    headers = {"authorization": "Bearer wrong", "cookie": f"tsumugi_token={TOKEN}"}
    assert await _status(harness, headers) == 401
    headers = {"authorization": f"Bearer {TOKEN}", "cookie": "tsumugi_token=wrong"}
    assert await _status(harness, headers) == 200


async def test_cookie_is_used_raw_when_no_bearer_header(harness: Harness) -> None:
    # first cookie with the name, trimmed, value after the first "=", not percent-decoded.
    assert await _status(harness, {"cookie": f"other=1; tsumugi_token={TOKEN}; tsumugi_token=x"}) == 200
    assert await _status(harness, {"authorization": "Basic abc", "cookie": f"tsumugi_token={TOKEN}"}) == 200
    app_token = "a=b%2F"
    auth = bearer_auth(app_token, cookie="tsumugi_token")
    assert await _status(harness, {"cookie": "tsumugi_token=a=b%2F"}, auth=auth) == 200
    assert await _status(harness, {"cookie": "tsumugi_token=a=b/"}, auth=auth) == 401  # A-82 [Q]


async def test_cookie_is_ignored_without_a_cookie_name(harness: Harness) -> None:
    assert await _status(harness, {"cookie": f"tsumugi_token={TOKEN}"}, auth=bearer_auth(TOKEN)) == 401


async def test_a_resolver_without_value_rejects_everything(harness: Harness) -> None:
    # never opens up, even for an empty presented token (A-79: two spaces present "").
    for value in (None, ""):
        auth = bearer_auth(lambda env, v=value: v)
        assert await _status(harness, {"authorization": "Bearer  x"}, auth=auth) == 401
        assert await _status(harness, {"authorization": f"Bearer {TOKEN}"}, auth=auth) == 401


async def test_resolver_is_evaluated_per_request(harness: Harness) -> None:
    # rotating the secret in the env takes effect on the next request.
    assert await _status(harness, {"authorization": f"Bearer {TOKEN}"}) == 200
    harness.env.TSUMUGI_TOKEN = "rotated"
    assert await _status(harness, {"authorization": f"Bearer {TOKEN}"}) == 401
    assert await _status(harness, {"authorization": "Bearer rotated"}) == 200


def test_comparison_handles_every_length() -> None:
    # equal only for identical tokens, whatever the lengths (digests hide the length).
    assert tokens_equal("abc", "abc")
    assert not tokens_equal("abc", "abcd")
    assert not tokens_equal("", "abc")
    assert not tokens_equal("ab\u00e9", "abe")
