"""Finding the app `tsumugi dev` runs: file, module, module:attr, and clear errors (ADR-0054)."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from tsumugi.errors import AppLoadError
from tsumugi.runtimes.local.app_loader import default_app_path, load_app

FAKE_APP = """
from tsumugi.performer import Performer

class FakeTsumugi:
    async def queue(self, batch, env, ctx=None): ...
    async def enqueue(self, env, **kwargs): return "X#0:x"

class Mail(Performer):
    async def perform(self, payload, ctx): return None

{assignments}
"""


def _write(directory: Path, name: str, assignments: str = "tsumugi = FakeTsumugi()") -> Path:
    path = directory / f"{name}.py"
    path.write_text(FAKE_APP.format(assignments=textwrap.dedent(assignments)), encoding="utf-8")
    return path


def test_a_file_path_is_imported_and_its_tsumugi_object_found(tmp_path: Path) -> None:
    loaded = load_app(str(_write(tmp_path, "app_by_path")))
    assert type(loaded.tsumugi).__name__ == "FakeTsumugi"
    assert loaded.exports == {"Mail": loaded.module.Mail}  # J-60: the binding is the export name


def test_a_module_and_a_module_attr_are_imported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(tmp_path, "app_by_module", "tsumugi = FakeTsumugi()\nother = FakeTsumugi()")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert load_app("app_by_module").tsumugi is load_app("app_by_module:tsumugi").tsumugi
        assert load_app("app_by_module:other").tsumugi is not load_app("app_by_module").tsumugi
    finally:
        sys.modules.pop("app_by_module", None)


def test_a_single_unnamed_tsumugi_object_is_found(tmp_path: Path) -> None:
    loaded = load_app(str(_write(tmp_path, "app_unnamed", "jobs = FakeTsumugi()")))
    assert loaded.tsumugi is loaded.module.jobs


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("missing_app_module_xyz", "cannot find the app module 'missing_app_module_xyz'"),
        ("does/not/exist.py", "the app file does/not/exist.py does not exist"),
    ],
)
def test_an_app_that_cannot_be_found_is_a_clear_error(spec: str, message: str) -> None:
    with pytest.raises(AppLoadError, match=message):
        load_app(spec)


def test_an_app_that_raises_on_import_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "broken_app.py"
    path.write_text("raise RuntimeError('boom at import')\n", encoding="utf-8")
    with pytest.raises(AppLoadError, match=r"cannot import .*RuntimeError: boom at import"):
        load_app(str(path))


def test_an_app_without_a_tsumugi_object_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(AppLoadError, match="defines no Tsumugi object"):
        load_app(str(_write(tmp_path, "app_empty", "value = 1")))
    with pytest.raises(AppLoadError, match="several Tsumugi objects"):
        load_app(str(_write(tmp_path, "app_two", "a = FakeTsumugi()\nb = FakeTsumugi()")))
    with pytest.raises(AppLoadError, match="is not a Tsumugi object"):
        load_app(f"{_write(tmp_path, 'app_attr', 'value = 1')}:value")


def test_the_default_app_is_the_repository_example() -> None:
    assert default_app_path().as_posix().endswith("src/app.py")
    assert default_app_path().is_file()
