"""``tsumugi doctor [DIR]``: bindings (J-205/J-206), exports, migrations (D-11..D-13), token (ADR-0088)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from tests.cli.conftest import Tsumugi

from tsumugi.storage.read_model_schema import EXPECTED_MIGRATIONS

UUID = "0123abcd-4567-89ab-cdef-0123456789ab"
STATE = ".wrangler/state/v3/d1/miniflare-D1DatabaseObject"


def _ledger(root: Path, applied: tuple[str, ...]) -> None:
    """A local D1 file as wrangler leaves it: the d1_migrations ledger (PLATFORM.md §2)."""
    (root / STATE).mkdir(parents=True, exist_ok=True)
    sqlite3.connect(root / STATE / "metadata.sqlite").close()
    connection = sqlite3.connect(root / STATE / "5f3a.sqlite")
    connection.execute(
        "CREATE TABLE d1_migrations (id INTEGER PRIMARY KEY, name TEXT UNIQUE, applied_at TEXT)"
    )
    connection.executemany("INSERT INTO d1_migrations (name) VALUES (?)", [(name,) for name in applied])
    connection.commit()
    connection.close()


@pytest.fixture
def ready(tsumugi: Tsumugi, tmp_path: Path) -> Path:
    """An initialised project with its database created, synced and migrated locally."""
    assert tsumugi("init", "--name", "w").code == 0
    config = tmp_path / "wrangler.jsonc"
    config.write_text(config.read_text().replace('"<id>"', f'"{UUID}"'))
    shipped = tmp_path / "python_modules/tsumugi/migrations"
    shipped.mkdir(parents=True)
    for name in EXPECTED_MIGRATIONS:
        (shipped / name).write_text("SELECT 1;\n")
    _ledger(tmp_path, EXPECTED_MIGRATIONS)
    return tmp_path


def test_a_ready_project_passes(tsumugi: Tsumugi, ready: Path) -> None:
    outcome = tsumugi("doctor")
    assert outcome.code == 0, outcome.out
    assert "✗" not in outcome.out
    assert "✓ TsumugiJobShard (class of JOB_SHARD) is exported by src/entry.py" in outcome.out
    assert "✓ TSUMUGI_TOKEN is set in .dev.vars" in outcome.out
    assert outcome.out.endswith("tsumugi: the project is ready\n")


def test_a_fresh_project_lists_what_is_left(tsumugi: Tsumugi, tmp_path: Path) -> None:
    assert tsumugi("init", "--name", "w").code == 0
    outcome = tsumugi("doctor", ".")
    assert outcome.code == 1
    assert "✗ TSUMUGI_DB has no database_id: run wrangler d1 create w" in outcome.out
    assert "✗ migrations_dir ./python_modules/tsumugi/migrations holds no tsumugi migrations" in outcome.out
    assert (
        '✗ no local D1 database under .wrangler/state/v3/d1: run "wrangler d1 migrations apply w --local"'
        in (outcome.out)
    )
    assert outcome.out.endswith("tsumugi: 3 problems found\n")


def test_missing_bindings_use_the_503_report(tsumugi: Tsumugi, ready: Path) -> None:
    # J-206 / A-75: the same report as the API's 503, fragment in the project's format
    config = ready / "wrangler.jsonc"
    config.write_text(config.read_text().replace('"binding": "TSUMUGI_QUEUE"', '"binding": "OTHER_QUEUE"'))
    outcome = tsumugi("doctor")
    assert outcome.code == 1
    assert outcome.out.startswith(
        "tsumugi: the wrangler configuration is incomplete\n"
        "✗ TSUMUGI_QUEUE (Queues) is not configured\n\n"
        "1. append the following fragment to wrangler.jsonc\n"
        "2. run wrangler queues create <queue> to create the queue\n\n"
        '"queues": {'
    )


def test_flows_and_schedules_require_run_and_scheduler(tsumugi: Tsumugi, ready: Path) -> None:
    # RUN with a flow, SCHEDULER with a schedule, read from define_tsumugi(...) in src/app.py,
    # the module the entry imports it from
    app = ready / "src/app.py"
    app.write_text(
        app.read_text().replace("    performers={", "    flows=[flow], schedules={'a': s},\n    performers={")
    )
    outcome = tsumugi("doctor")
    assert outcome.code == 1
    assert (
        "✗ RUN (Durable Object) is not configured\n✗ SCHEDULER (Durable Object) is not configured\n"
        in outcome.out
    )


def test_remote_performers_need_a_service_binding(tsumugi: Tsumugi, ready: Path) -> None:
    # a remote() performer's binding must be declared
    entry = ready / "src/entry.py"
    entry.write_text(
        'from tsumugi.application import define_tsumugi\nt = define_tsumugi(performers={"Mail": remote()})\n'
    )
    outcome = tsumugi("doctor")
    assert "✗ Mail (service binding) is not configured" in outcome.out
    assert "✗ TsumugiJobShard (class of JOB_SHARD) is not exported by src/entry.py" in outcome.out


def test_unexported_and_non_sqlite_durable_objects(tsumugi: Tsumugi, ready: Path) -> None:
    config = ready / "wrangler.jsonc"
    text = config.read_text().replace(
        '"class_name": "TsumugiJobShard"\n      }',
        '"class_name": "TsumugiJobShard"\n      },\n      {"name": "X", "class_name": "Missing"},\n'
        '      {"name": "Y", "class_name": "Elsewhere", "script_name": "other"}',
    )
    config.write_text(text)
    outcome = tsumugi("doctor")
    assert outcome.code == 1
    assert "✗ Missing (class of X) is not exported by src/entry.py" in outcome.out
    assert "✗ Missing is not in the new_sqlite_classes of any migration" in outcome.out
    assert "Elsewhere" not in outcome.out  # another Worker's class


def test_unapplied_migrations_are_named(tsumugi: Tsumugi, ready: Path) -> None:
    # D-11, D-13: the ledger lacks the last two files
    for path in (ready / STATE).glob("*.sqlite"):
        path.unlink()
    _ledger(ready, EXPECTED_MIGRATIONS[:-2])
    outcome = tsumugi("doctor")
    assert outcome.code == 1
    missing = ", ".join(EXPECTED_MIGRATIONS[-2:])
    assert (
        f'✗ local D1 lacks migrations {missing}: run "wrangler d1 migrations apply w --local"' in outcome.out
    )


def test_token_from_the_environment_or_missing(
    tsumugi: Tsumugi, ready: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (ready / ".dev.vars").write_text("# no token\nOTHER=1\n")
    outcome = tsumugi("doctor")
    assert outcome.code == 1
    assert "✗ TSUMUGI_TOKEN is not set: add it to .dev.vars" in outcome.out
    assert outcome.out.endswith("tsumugi: 1 problem found\n")
    monkeypatch.setenv("TSUMUGI_TOKEN", "t")
    assert "✓ TSUMUGI_TOKEN is set in the environment" in tsumugi("doctor").out


def test_toml_project_gets_a_toml_fragment(tsumugi: Tsumugi, tmp_path: Path) -> None:
    (tmp_path / "wrangler.toml").write_text('name = "t"\nmain = "src/entry.py"\n')
    outcome = tsumugi("doctor")
    assert outcome.code == 1
    assert "1. append the following fragment to wrangler.toml" in outcome.out
    assert "[[durable_objects.bindings]]" in outcome.out
    assert "✗ cannot read the entry module src/entry.py" in outcome.out


@pytest.mark.parametrize(
    ("files", "argv", "message"),
    [
        ({}, ["doctor"], "tsumugi: no wrangler.json, wrangler.jsonc or wrangler.toml in ."),
        ({"wrangler.jsonc": "{ /* open"}, ["doctor"], "tsumugi: cannot parse wrangler.jsonc"),
        ({"wrangler.toml": "name = "}, ["doctor"], "tsumugi: cannot parse wrangler.toml"),
        ({}, ["doctor", "a", "b"], "tsumugi: doctor accepts at most one directory"),
        ({}, ["doctor", "--name", "x"], "tsumugi: --name and --format are only valid with init"),
    ],
)
def test_doctor_errors(
    tsumugi: Tsumugi, tmp_path: Path, files: dict[str, str], argv: list[str], message: str
) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    outcome = tsumugi(*argv)
    assert outcome.code == 1
    assert outcome.err.startswith(message)


def test_a_module_that_does_not_compile(tsumugi: Tsumugi, ready: Path) -> None:
    # PLATFORM.md §1: wrangler uploads Python with syntax errors; doctor does not
    (ready / "src/performers/broken.py").write_text("def oops(:\n")
    outcome = tsumugi("doctor")
    assert outcome.code == 1
    assert "✗ src/performers/broken.py:1 does not compile: " in outcome.out


def test_a_config_without_main(tsumugi: Tsumugi, tmp_path: Path) -> None:
    (tmp_path / "wrangler.jsonc").write_text('{"name": "x"}')
    outcome = tsumugi("doctor")
    assert outcome.code == 1
    assert "✗ wrangler.jsonc has no main (the entry module)" in outcome.out
