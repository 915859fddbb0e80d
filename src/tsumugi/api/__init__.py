"""REST API and dashboard delivery as one runtime-agnostic ASGI app (api.md Part A)."""

from __future__ import annotations

from tsumugi.api.app import create_rest_app
from tsumugi.api.auth_access import AccessAuth, access_auth, clear_jwks_cache
from tsumugi.api.auth_bearer import BearerAuth, bearer_auth
from tsumugi.api.openapi import openapi_document
from tsumugi.api.options import (
    AuthMiddleware,
    BindingOptions,
    MetricsReader,
    MissingBindingsReport,
    RestOptions,
)

__all__ = [
    "AccessAuth",
    "AuthMiddleware",
    "BearerAuth",
    "BindingOptions",
    "MetricsReader",
    "MissingBindingsReport",
    "RestOptions",
    "access_auth",
    "bearer_auth",
    "clear_jwks_cache",
    "create_rest_app",
    "openapi_document",
]
