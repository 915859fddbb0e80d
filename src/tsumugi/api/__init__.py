"""REST API and dashboard delivery as one runtime-agnostic ASGI app.

Names load on first use, so ``from tsumugi.api import bearer_auth`` in an app definition does not pull
in the REST routes, and Access verification loads only where it is configured.
"""
# api.md Part A

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
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

_ORIGINS: dict[str, str] = {
    "AccessAuth": "tsumugi.api.auth_access",
    "AuthMiddleware": "tsumugi.api.options",
    "BearerAuth": "tsumugi.api.auth_bearer",
    "BindingOptions": "tsumugi.api.options",
    "MetricsReader": "tsumugi.api.options",
    "MissingBindingsReport": "tsumugi.api.options",
    "RestOptions": "tsumugi.api.options",
    "access_auth": "tsumugi.api.auth_access",
    "bearer_auth": "tsumugi.api.auth_bearer",
    "clear_jwks_cache": "tsumugi.api.auth_access",
    "create_rest_app": "tsumugi.api.app",
    "openapi_document": "tsumugi.api.openapi",
}

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


def __getattr__(name: str) -> object:
    origin = _ORIGINS.get(name)
    if origin is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(origin), name)
