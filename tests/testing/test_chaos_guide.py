"""The worked example of docs/guide/testing-with-chaos.md, run from the page's own files.

The page's titled ``python`` blocks are written to a directory as the reader would save them, imported,
and their tests called with a ``Chaos``. A performer that charges on every attempt is caught from seed 7
and shrunk to one fault. The fixed one, which passes ``ctx.idempotency_key`` to the gateway, passes
that seed and nineteen more. The page's printed failure is what the simulator prints. J-21 (the key
is the job id, stable across attempts), J-106 (at-least-once re-runs an attempt whose outcome was
lost), J-118 (a lost report waits for the reaper).
"""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from tsumugi.testing.chaos import Chaos
from tsumugi.testing.chaos import pytest_plugin as chaos_plugin

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guide" / "testing-with-chaos.md"
FILE_BLOCK = re.compile(r'^```python title="(?P<name>[^"]+)"\n(?P<body>.*?)^```$', re.M | re.S)
TEXT_BLOCK = re.compile(r"^```text\n(?P<body>.*?)^```$", re.M | re.S)
MODULES = ("shop", "shop_fixed", "test_shop", "test_shop_fixed", "conftest")


def guide_files() -> dict[str, str]:
    return {m["name"]: m["body"] for m in FILE_BLOCK.finditer(GUIDE.read_text(encoding="utf-8"))}


@pytest.fixture
def saved_as_the_reader_would(tmp_path: Path) -> Iterator[Path]:
    """The page's files in ``tmp_path``, importable; the modules are forgotten afterwards."""
    for name, body in guide_files().items():
        (tmp_path / name).write_text(body, encoding="utf-8")
    sys.path.insert(0, str(tmp_path))
    try:
        yield tmp_path
    finally:
        sys.path.remove(str(tmp_path))
        for name in MODULES:
            sys.modules.pop(name, None)


def load(name: str) -> ModuleType:
    return importlib.import_module(name)


def test_the_page_saves_the_files_the_example_needs() -> None:
    assert sorted(guide_files()) == sorted(f"{name}.py" for name in MODULES)


@pytest.mark.usefixtures("saved_as_the_reader_would")
def test_the_conftest_loads_the_plugin_that_defines_the_fixture() -> None:
    assert load("conftest").pytest_plugins == [chaos_plugin.__name__]
    assert callable(chaos_plugin.chaos)


@pytest.mark.usefixtures("saved_as_the_reader_would")
async def test_the_simulator_catches_the_double_charge_from_the_fixed_seed() -> None:
    await load("test_shop").test_the_simulator_catches_the_double_charge(Chaos())


@pytest.mark.usefixtures("saved_as_the_reader_would")
async def test_the_idempotent_performer_passes_from_the_same_seed_on() -> None:
    await load("test_shop_fixed").test_the_idempotent_performer_passes(Chaos())


@pytest.mark.usefixtures("saved_as_the_reader_would")
async def test_the_page_prints_what_the_simulator_prints() -> None:
    shop, example = load("shop"), load("test_shop")
    failure = await Chaos().find_failure(
        shop.app,
        example.place_orders,
        seeds=[example.SEED],
        invariants=[example.no_order_charged_twice],
        bindings=example.world,
    )
    assert failure is not None
    printed = TEXT_BLOCK.search(GUIDE.read_text(encoding="utf-8"))
    assert printed is not None
    assert printed["body"] == f"{failure}\n"
    assert [str(fault) for fault in failure.schedule.faults] == ["lose_report@2"]
