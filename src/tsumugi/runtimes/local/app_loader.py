"""Finding the app ``tsumugi dev`` runs: a file, a module, or ``module:attr`` (ADR-0054)."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, TypeGuard

from tsumugi.errors import AppLoadError
from tsumugi.performer import Performer

if TYPE_CHECKING:  # the runtime (and starlette) load when the app is run, not to find it
    from starlette.routing import BaseRoute

    from tsumugi.runtimes.local.runtime import QueueHandlerApp

PREFERRED_NAMES = ("tsumugi", "app")  # looked up first when APP names only a module
ROUTES_ATTRIBUTE = "http_routes"  # ``http_routes(env) -> list of Starlette routes``: the app's own paths


@dataclass
class LoadedApp:
    """The Tsumugi object of an app module, plus what a Worker would see of that module."""

    spec: str
    module: ModuleType
    tsumugi: QueueHandlerApp
    exports: dict[str, type] = field(default_factory=dict)  # a Worker's ``ctx.exports`` (J-61)

    def http_routes(self, env: object) -> list[BaseRoute]:
        """The app's own HTTP routes (empty when the module defines none)."""
        factory = getattr(self.module, ROUTES_ATTRIBUTE, None)
        return list(factory(env)) if callable(factory) else []


def default_app_path() -> Path:
    """This repository's example app, ``src/app.py`` next to the ``tsumugi`` package."""
    import tsumugi

    return Path(tsumugi.__file__).resolve().parent.parent / "app.py"


def load_app(spec: str | None = None) -> LoadedApp:
    """Import ``spec`` (``path/to/file.py`` or ``module``, either with ``:attr``); find its Tsumugi object."""
    spec = spec or str(default_app_path())
    target, attr = _split(spec)
    module = _import(target)
    if attr:
        if not hasattr(module, attr):
            raise AppLoadError(f"{target} has no attribute {attr!r}")
        named = getattr(module, attr)
        if not _is_tsumugi(named):
            raise AppLoadError(f"{spec} is not a Tsumugi object (the result of define_tsumugi(...))")
        tsumugi = named
    else:
        tsumugi = _find_tsumugi(module, spec)
    return LoadedApp(spec, module, tsumugi, _exports(module))


def _split(spec: str) -> tuple[str, str]:
    """``module:attr`` or ``path/file.py:attr`` -> (target, attr); a bare target has attr ``""``."""
    head, separator, attr = spec.rpartition(":")
    if separator and attr.isidentifier() and (head.endswith(".py") or not _looks_like_path(head)):
        return head, attr
    return spec, ""


def _looks_like_path(spec: str) -> bool:
    return spec.endswith(".py") or "/" in spec or "\\" in spec


def _import(target: str) -> ModuleType:
    if _looks_like_path(target):
        return _import_file(Path(target))
    try:
        return importlib.import_module(target)
    except ModuleNotFoundError as error:
        if error.name and target.startswith(error.name):
            raise AppLoadError(f"cannot find the app module {target!r}") from error
        raise AppLoadError(f"cannot import {target}: {type(error).__name__}: {error}") from error
    except Exception as error:
        raise AppLoadError(f"cannot import {target}: {type(error).__name__}: {error}") from error


def _import_file(path: Path) -> ModuleType:
    if not path.is_file():
        raise AppLoadError(f"the app file {path} does not exist")
    path = path.resolve()
    name = path.stem
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise AppLoadError(f"cannot import {path}: not a Python module")
    module = importlib.util.module_from_spec(spec)
    # Its siblings import by plain name, as they would as a Worker's top-level modules.
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as error:
        sys.modules.pop(name, None)
        raise AppLoadError(f"cannot import {path}: {type(error).__name__}: {error}") from error
    return module


def _is_tsumugi(value: object) -> TypeGuard[QueueHandlerApp]:
    """Duck-typed: anything with ``queue`` and ``enqueue`` methods that is not a class or module."""
    if isinstance(value, type | ModuleType):
        return False
    return callable(getattr(value, "queue", None)) and callable(getattr(value, "enqueue", None))


def _find_tsumugi(module: ModuleType, spec: str) -> QueueHandlerApp:
    for name in PREFERRED_NAMES:
        value = getattr(module, name, None)
        if _is_tsumugi(value):
            return value
    found: dict[str, QueueHandlerApp] = {
        name: value for name, value in vars(module).items() if _is_tsumugi(value)
    }
    unique = {id(value): value for value in found.values()}
    if len(unique) == 1:
        return next(iter(unique.values()))
    if not unique:
        raise AppLoadError(f"{spec} defines no Tsumugi object (assign define_tsumugi(...) at module level)")
    names = ", ".join(sorted(found))
    raise AppLoadError(f"{spec} defines several Tsumugi objects ({names}); name one as MODULE:ATTR")


def _exports(module: ModuleType) -> dict[str, type]:
    """Performer classes exported at the module's top level, by export name."""
    # J-60
    return {
        name: value
        for name, value in vars(module).items()
        if inspect.isclass(value) and issubclass(value, Performer) and value is not Performer
    }
