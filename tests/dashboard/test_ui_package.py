"""The dashboard shipped inside the Python package (U-1, U-2; ADR-0091, ADR-0092)."""

from __future__ import annotations

import re

from tsumugi.ui import DEFAULT_TOKEN_COOKIE, dashboard_html, dashboard_source_html


def test_shipped_document_is_one_self_contained_page() -> None:
    # U-1: doctype, lang, title, mount point; every script and style inlined.
    html = dashboard_source_html()
    assert html.lower().startswith("<!doctype html>")
    assert '<html lang="en">' in html
    assert "<title>Tsumugi</title>" in html
    assert '<div id="app"></div>' in html
    assert re.search(r"<script[^>]*\bsrc=", html) is None
    assert re.search(r"<link[^>]*rel=\"?stylesheet", html) is None
    assert "<style" in html and "<script" in html


def test_injects_the_token_cookie_right_after_head() -> None:
    # U-2: the first <head> is followed immediately by the config script; compact JSON.
    html = dashboard_html()
    assert DEFAULT_TOKEN_COOKIE == "tsumugi_token"
    assert '<head><script>window.__TSUMUGI__={"tokenCookie":"tsumugi_token"}</script>' in html
    assert html.count("window.__TSUMUGI__={") == 1


def test_null_cookie_means_identity_provider_sign_in() -> None:
    # U-2 / U-6: {"tokenCookie":null} switches the prompt to the sign-in message.
    assert '<head><script>window.__TSUMUGI__={"tokenCookie":null}</script>' in dashboard_html(None)


def test_injection_cannot_close_the_script_tag() -> None:
    html = dashboard_html("a</script><b>")
    assert '{"tokenCookie":"a\\u003c/script>\\u003cb>"}</script>' in html


def test_computed_once_per_cookie_name() -> None:
    # U-2: the injected document is reused per distinct cookie name.
    assert dashboard_html("x") is dashboard_html("x")
    assert dashboard_html("x") != dashboard_html("y")


def test_only_the_head_tag_is_changed() -> None:
    html = dashboard_html()
    script = '<script>window.__TSUMUGI__={"tokenCookie":"tsumugi_token"}</script>'
    assert html.replace(script, "", 1) == dashboard_source_html()
