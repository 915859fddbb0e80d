"""The dashboard: one self-contained HTML document built from ``dashboard/`` (ADR-0091).

The REST app serves ``dashboard_html()`` for unmatched GETs; nothing else is needed,
because every script, style and image is inlined into that one document.
"""
# U-1, A-17, U-3

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources

__all__ = ["DEFAULT_TOKEN_COOKIE", "dashboard_html", "dashboard_source_html"]

# ADR-0092: the cookie the token prompt writes and bearer auth reads (A-79, U-7).
DEFAULT_TOKEN_COOKIE = "tsumugi_token"
_HEAD = "<head>"


@lru_cache(maxsize=1)
def dashboard_source_html() -> str:
    """The built document exactly as shipped, before the per-deployment injection."""
    return resources.files(__package__).joinpath("static", "index.html").read_text(encoding="utf-8")


@lru_cache(maxsize=8)
def dashboard_html(token_cookie: str | None = DEFAULT_TOKEN_COOKIE) -> str:
    """The document with ``window.__TSUMUGI__`` injected right after the first ``<head>``.

    ``token_cookie=None`` turns the token prompt into the identity-provider message.
    Computed once per distinct cookie name.
    """
    # U-2, U-6
    # "<" never appears raw inside the script, so no value can close the tag early.
    config = json.dumps({"tokenCookie": token_cookie}, separators=(",", ":")).replace("<", "\\u003c")
    script = f"<script>window.__TSUMUGI__={config}</script>"
    return dashboard_source_html().replace(_HEAD, _HEAD + script, 1)
