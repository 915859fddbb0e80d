"""The project ``tsumugi init`` writes is a working Python Worker (C-9, C-11; PLATFORM.md §1, §4).

The entry is imported on CPython with the real ``workers`` SDK (runtime-only modules stubbed), and the
pinned wrangler checks the configuration with a dry-run deploy (offline; skipped without Node).
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.cli.conftest import Tsumugi
from tests.platform.fake_workers import workers_sdk_stubs
from tests.platform.node_tooling import run_wrangler

_PROJECT_MODULES = ("app", "entry", "performers")


def _forget_project_modules() -> None:
    for name in list(sys.modules):
        if name.split(".")[0] in _PROJECT_MODULES:
            del sys.modules[name]


@pytest.fixture
def generated(tsumugi: Tsumugi, tmp_path: Path) -> Iterator[types.ModuleType]:
    """``init`` plus ``add-performer send-mail``, then the entry imported as the Workers runtime would."""
    assert tsumugi("init", "--name", "gen").code == 0
    assert tsumugi("add-performer", "send-mail").code == 0
    with workers_sdk_stubs():
        _forget_project_modules()
        sys.path.insert(0, str(tmp_path / "src"))
        try:
            yield importlib.import_module("entry")
        finally:
            sys.path.remove(str(tmp_path / "src"))
            _forget_project_modules()


def test_entry_exports_the_classes_the_runtime_hosts(generated: types.ModuleType) -> None:
    workers = importlib.import_module("workers")
    # C-11 (Python): the job-shard DO and the other Tsumugi DO classes, plus the default handler
    for name in ("TsumugiJobShard", "TsumugiRun", "TsumugiScheduler"):
        assert issubclass(getattr(generated, name), workers.DurableObject)
    assert issubclass(generated.Default, workers.WorkerEntrypoint)
    assert generated.Default.app is generated.tsumugi is generated.TsumugiRun.app


def test_entry_registers_every_exported_performer(generated: types.ModuleType) -> None:
    # J-60: each performer's binding is its class name; add-performer's line is picked up
    assert set(generated.tsumugi.definition.performers) == {"Hello", "SendMail"}
    # C-11: performers re-exported at top level
    assert generated.SendMail is generated.tsumugi.definition.performers["SendMail"]


async def test_entry_guards_the_api_with_the_token_and_cookie(generated: types.ModuleType) -> None:
    # C-11: bearer auth on env.TSUMUGI_TOKEN, dashboard cookie tsumugi_token
    from starlette.requests import Request

    auth = generated.tsumugi.auth
    env = types.SimpleNamespace(TSUMUGI_TOKEN="secret")

    def request(headers: list[tuple[bytes, bytes]]) -> Request:
        return Request({"type": "http", "method": "GET", "path": "/api/jobs", "headers": headers})

    assert await auth(request([(b"authorization", b"Bearer secret")]), env) is None
    assert await auth(request([(b"cookie", b"tsumugi_token=secret")]), env) is None
    refused = await auth(request([(b"authorization", b"Bearer wrong")]), env)
    assert refused is not None and refused.status_code == 401
    no_token = await auth(request([(b"authorization", b"Bearer secret")]), types.SimpleNamespace())
    assert no_token is not None


@pytest.mark.platform
def test_wrangler_accepts_the_generated_project(tsumugi: Tsumugi, tmp_path: Path) -> None:
    # PLATFORM.md §1: a valid Python Worker: the bindings are listed, performers attached as modules
    assert tsumugi("init", "--name", "gen").code == 0
    done = run_wrangler(["deploy", "--dry-run", "--outdir", str(tmp_path / "dist")], cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "env.JOB_SHARD (TsumugiJobShard)" in done.stdout
    assert "env.TSUMUGI_QUEUE (gen)" in done.stdout and "env.TSUMUGI_DB (gen)" in done.stdout
    assert "performers/hello.py" in done.stdout


def test_tsumugi_dev_loads_the_generated_app(tsumugi: Tsumugi, tmp_path: Path) -> None:
    # ADR-0086: the app module runs on CPython too (`tsumugi dev src/app.py`), performers as exports (J-61)
    from tsumugi.runtimes.local.app_loader import load_app

    assert tsumugi("init", "--name", "gen").code == 0
    _forget_project_modules()
    try:
        loaded = load_app(str(tmp_path / "src/app.py"))
        assert set(loaded.tsumugi.definition.performers) == {"Hello"}
        assert "Hello" in loaded.exports
    finally:
        sys.path.remove(str((tmp_path / "src").resolve()))
        _forget_project_modules()
