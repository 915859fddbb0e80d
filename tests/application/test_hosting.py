"""``run_class`` and ``scheduler_class``: their bases come from the runtime that registered them."""
# J-203, F-93, ADR-0161

from __future__ import annotations

import sys
from typing import Any

import pytest

from tsumugi import JobContext, Performer, define_tsumugi
from tsumugi.application import hosting
from tsumugi.errors import ConfigurationError


class Mail(Performer):
    async def perform(self, payload: object, ctx: JobContext) -> None:
        return None


class RunBase:
    pass


def test_the_bases_come_from_the_loader_the_runtime_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hosting, "_base_loader", None)
    hosting.install_base_loader(lambda name: {"RunObject": RunBase}[name])
    app = define_tsumugi(performers={"MAIL": Mail})
    run_class: Any = app.run_class
    assert issubclass(run_class, RunBase) and run_class.app is app and app.run_class is run_class


def test_a_loader_that_cannot_import_the_sdk_gives_the_stand_in(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_sdk(name: str) -> type:
        raise ImportError("No module named 'workers'")

    monkeypatch.setattr(hosting, "_base_loader", no_sdk)
    app = define_tsumugi(performers={"MAIL": Mail})
    assert issubclass(app.scheduler_class, hosting.OutsideWorkers)


def test_without_the_runtime_cpython_gets_the_stand_in(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hosting, "_base_loader", None)
    app = define_tsumugi(performers={"MAIL": Mail})
    with pytest.raises(ConfigurationError, match="runs only inside workerd"):
        app.run_class()


def test_inside_pyodide_without_the_runtime_the_entry_is_told_what_to_import(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(hosting, "_base_loader", None)
    monkeypatch.setattr(sys, "platform", "emscripten")
    app = define_tsumugi(performers={"MAIL": Mail})
    with pytest.raises(ConfigurationError, match=r"import tsumugi.runtimes.cloudflare .* run_class"):
        app.run_class  # noqa: B018


def test_importing_the_cloudflare_runtime_installs_its_loader() -> None:
    import tsumugi.runtimes.cloudflare as cloudflare

    assert hosting._base_loader is cloudflare._hosted_base
