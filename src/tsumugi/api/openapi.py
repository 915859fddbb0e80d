"""The OpenAPI 3.1 document the server answers ``/api/openapi.json`` with.

It is generated from the pydantic models at build time (``openapi_build.py``) and shipped as
``openapi.json``, so serving it reads one file and needs no pydantic (ADR-0128).
"""
# A-69..A-71

from __future__ import annotations

import copy
import json
from functools import cache
from importlib import metadata, resources

from tsumugi._version import __version__
from tsumugi.core.json_types import JsonObject

__all__ = ["openapi_document", "package_version"]


@cache
def _static_document() -> JsonObject:
    text = resources.files(__package__).joinpath("openapi.json").read_text(encoding="utf-8")
    document: JsonObject = json.loads(text)  # the shipped file: an object with an ``info`` object
    return document


def package_version() -> str:
    """The installed distribution's version; a Worker ships the package without metadata, so then the
    version the package itself carries."""
    try:
        return metadata.version("tsumugi")
    except metadata.PackageNotFoundError:
        return __version__


def openapi_document(version: str | None = None) -> JsonObject:
    """The document with ``info.version`` injected at serve time."""
    #
    document = copy.deepcopy(_static_document())
    info = document["info"]
    if isinstance(info, dict):
        info["version"] = version or package_version()
    return document
