"""Where the operator commands send requests, and how a failed request reads (exit codes 2, 3, 4, 5)."""

from __future__ import annotations

import argparse
from pathlib import Path

import httpx
import pytest

from tsumugi.cli.server_connection import DEFAULT_URL, ExitCode, OperatorError, Server, explain, server_of
from tsumugi.rest_client import RestApiError

SERVER = Server("http://127.0.0.1:9", "t", as_json=False)


def _args(url: str | None = None, token: str | None = None) -> argparse.Namespace:
    return argparse.Namespace(url=url, token=token, as_json=False)


def test_the_url_comes_from_the_option_the_environment_or_the_dev_default(tmp_path: Path) -> None:
    assert server_of(_args(), {}, tmp_path).url == DEFAULT_URL
    assert server_of(_args(), {"TSUMUGI_URL": "https://jobs.example.com/"}, tmp_path).url == (
        "https://jobs.example.com"
    )
    assert server_of(_args("http://h:1"), {"TSUMUGI_URL": "http://other"}, tmp_path).url == "http://h:1"
    with pytest.raises(OperatorError, match="must start with http:// or https://") as refused:
        server_of(_args("localhost:8787"), {}, tmp_path)
    assert refused.value.exit_code == ExitCode.USAGE


def test_the_token_comes_from_the_option_the_environment_or_dev_vars(tmp_path: Path) -> None:
    assert server_of(_args(), {}, tmp_path).token is None
    (tmp_path / ".dev.vars").write_text("TSUMUGI_TOKEN='from-file'\n", encoding="utf-8")
    assert server_of(_args(), {}, tmp_path).token == "from-file"
    assert server_of(_args(), {"TSUMUGI_TOKEN": "from-env"}, tmp_path).token == "from-env"
    assert server_of(_args(token="given"), {"TSUMUGI_TOKEN": "from-env"}, tmp_path).token == "given"


@pytest.mark.parametrize(
    ("error", "code", "message"),
    [
        (RestApiError(401, "unauthorized"), 3, "the token was refused by http://127.0.0.1:9 (401)"),
        (RestApiError(403, "forbidden"), 3, "the token was refused by http://127.0.0.1:9 (403)"),
        (RestApiError(400, "invalid job id"), 4, "the server refused the request (400): invalid job id"),
        (RestApiError(503, "missing"), 5, "the server failed (503): missing"),
        (
            RestApiError(501, "run control is not available"),
            5,
            "the server does not offer this (501): run control is not available",
        ),
        (httpx.ReadTimeout("slow"), 2, "http://127.0.0.1:9 did not answer in time"),
    ],
)
def test_failed_requests_in_words(error: RestApiError | httpx.HTTPError, code: int, message: str) -> None:
    assert explain(error, SERVER) == (code, message)


def test_a_404_everywhere_points_at_the_url_and_the_app_s_auth() -> None:
    # an app defined without auth= answers 404 on every route
    code, message = explain(RestApiError(404, "not found"), SERVER)
    assert code == ExitCode.REFUSED
    assert message.startswith("http://127.0.0.1:9 has no Tsumugi REST API here (404): check --url")


def test_a_missing_token_says_where_one_is_read_from() -> None:
    code, message = explain(RestApiError(401, "unauthorized"), Server("http://h", None, as_json=False))
    assert (code, message) == (
        ExitCode.TOKEN_REFUSED,
        "http://h asks for a token (401): pass --token, set TSUMUGI_TOKEN, or put it in .dev.vars",
    )
