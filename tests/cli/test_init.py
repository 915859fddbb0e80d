"""``tsumugi init`` (C-4, C-7..C-12; ADR-0086): the generated Python Worker project."""

from __future__ import annotations

import ast
import json
import tomllib
from pathlib import Path

import json5
import pytest
from tests.cli.conftest import FakeWrangler, Tsumugi

from tsumugi.cli.wrangler_calls import extract_database_id

UUID = "0123abcd-4567-89ab-cdef-0123456789ab"
SCAFFOLD = [
    "pyproject.toml",
    "src/app.py",
    "src/entry.py",
    "src/performers/__init__.py",
    "src/performers/hello.py",
    ".dev.vars.example",
    ".dev.vars",
    ".gitignore",
]


def test_init_creates_a_python_worker_project(tsumugi: Tsumugi, tmp_path: Path) -> None:
    outcome = tsumugi("init", "my-worker")
    assert outcome.code == 0, outcome.err
    project = tmp_path / "my-worker"
    for relative in ["wrangler.jsonc", *SCAFFOLD]:
        assert (project / relative).is_file(), relative
        assert f"created my-worker/{relative}" in outcome.out
    config = json5.loads((project / "wrangler.jsonc").read_text())
    # C-9 (4), mapped to Python: entry module, python_workers flag, the date that selects Python 3.13
    assert config["name"] == "my-worker"
    assert config["main"] == "src/entry.py"
    assert config["compatibility_flags"] == ["python_workers"]
    assert config["compatibility_date"] == "2026-04-01"
    assert config["durable_objects"]["bindings"] == [{"name": "JOB_SHARD", "class_name": "TsumugiJobShard"}]
    assert config["migrations"] == [{"tag": "v1", "new_sqlite_classes": ["TsumugiJobShard"]}]
    assert config["queues"]["producers"] == [{"binding": "TSUMUGI_QUEUE", "queue": "my-worker"}]
    assert config["queues"]["consumers"][0]["queue"] == "my-worker"
    database = config["d1_databases"][0]
    assert (database["binding"], database["database_name"], database["database_id"]) == (
        "TSUMUGI_DB",
        "my-worker",
        "<id>",
    )
    # C-19: the migrations come with the tsumugi package, vendored next to the wrangler file
    assert database["migrations_dir"] == "./python_modules/tsumugi/migrations"
    text = (project / "wrangler.jsonc").read_text()
    assert "TSUMUGI_METRICS" in text and "RUN" in text and "triggers.crons" in text  # optional additions
    # PLATFORM.md §1: nothing vendored inside the module root
    assert not (project / "src" / "python_modules").exists()
    # C-9 (7): nothing ran wrangler; its calls are printed as next steps
    assert "wrangler queues create my-worker" in outcome.out
    assert "wrangler d1 create my-worker" in outcome.out
    assert "wrangler secret put TSUMUGI_TOKEN" in outcome.out
    assert "http://localhost:8787/" in outcome.out


def test_generated_python_files_compile_and_export_the_durable_objects(
    tsumugi: Tsumugi, tmp_path: Path
) -> None:
    assert tsumugi("init").code == 0
    entry = ast.parse((tmp_path / "src/entry.py").read_text())
    classes = {node.name for node in entry.body if isinstance(node, ast.ClassDef)}
    imported = {alias.name for node in entry.body if isinstance(node, ast.ImportFrom) for alias in node.names}
    # C-11 (Python): the DO classes and the default handler are module-level names of the entry
    assert {"TsumugiRun", "TsumugiScheduler", "Default"} <= classes
    assert "TsumugiJobShard" in imported
    source = (tmp_path / "src/app.py").read_text()
    assert 'bearer_auth(lambda env: getattr(env, "TSUMUGI_TOKEN", None), cookie="tsumugi_token")' in source
    for relative in ("src/performers/__init__.py", "src/performers/hello.py"):
        compile((tmp_path / relative).read_text(), relative, "exec")
    assert "from .hello import Hello" in (tmp_path / "src/performers/__init__.py").read_text()
    assert (tmp_path / ".dev.vars").read_text().endswith('TSUMUGI_TOKEN="dev-token"\n')  # C-9 (5)
    project = tomllib.loads((tmp_path / "pyproject.toml").read_text())["project"]
    assert project["dependencies"][0].startswith("tsumugi")
    assert project["name"] == tmp_path.name.lower().replace("_", "-")


def test_the_generated_performer_runs(
    tsumugi: Tsumugi, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import asyncio
    import runpy

    assert tsumugi("init").code == 0
    namespace = runpy.run_path(str(tmp_path / "src/performers/hello.py"))
    ctx = type("Ctx", (), {"job_id": "j1", "attempt": 1})()
    asyncio.run(namespace["Hello"]().perform({"name": "x"}, ctx))
    assert "Hello: job j1 attempt 1" in capsys.readouterr().out


def test_toml_format(tsumugi: Tsumugi, tmp_path: Path) -> None:
    # C-1, C-9 (4): --format toml writes wrangler.toml with the same values
    assert tsumugi("init", "--format", "toml", "--name", "w").code == 0
    config = tomllib.loads((tmp_path / "wrangler.toml").read_text())
    assert config["main"] == "src/entry.py" and config["name"] == "w"
    assert config["d1_databases"][0]["database_name"] == "w"
    assert not (tmp_path / "wrangler.jsonc").exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["init", "a", "b"], "tsumugi: init accepts at most one directory, e.g. `tsumugi init my-worker`\n"),
        (["init", "--format", "yaml"], 'tsumugi: unknown format "yaml", use jsonc or toml\n'),
        (["init", "--name", "Bad Name"], 'tsumugi: invalid worker name "Bad Name"'),
    ],
)
def test_bad_arguments_write_nothing(tsumugi: Tsumugi, tmp_path: Path, argv: list[str], message: str) -> None:
    # C-4: a clear error, exit 1, nothing executed
    outcome = tsumugi(*argv)
    assert outcome.code == 1
    assert outcome.err.startswith(message)
    assert list(tmp_path.iterdir()) == []


def test_unknown_option_is_a_parser_error(tsumugi: Tsumugi) -> None:
    # C-3: `tsumugi: <parser message>` + usage on stderr
    outcome = tsumugi("init", "--bogus")
    assert outcome.code == 1
    assert outcome.err.startswith("tsumugi: unrecognized arguments: --bogus\nusage: tsumugi")


def test_worker_name_sources_in_order(tsumugi: Tsumugi, tmp_path: Path) -> None:
    # C-7: --name, then the wrangler file's name, pyproject, package.json without @scope, the folder
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg/package.json").write_text(json.dumps({"name": "@acme/mail-worker"}))
    assert tsumugi("init", "pkg").code == 0
    assert json5.loads((tmp_path / "pkg/wrangler.jsonc").read_text())["name"] == "mail-worker"

    (tmp_path / "py").mkdir()
    (tmp_path / "py/pyproject.toml").write_text('[project]\nname = "py_worker"\n')
    assert tsumugi("init", "py").code == 0
    assert json5.loads((tmp_path / "py/wrangler.jsonc").read_text())["name"] == "py-worker"

    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg/wrangler.toml").write_text('# x\nname = "from-config"\n[vars]\nname = "no"\n')
    outcome = tsumugi("init", "cfg")
    assert "wrangler d1 create from-config" in outcome.out

    outcome = tsumugi("init", "cfg", "--name", "given")
    assert "wrangler d1 create given" in outcome.out


def test_existing_config_is_left_untouched_and_its_fragment_printed(tsumugi: Tsumugi, tmp_path: Path) -> None:
    # C-9 (4), C-12: the existing wrangler file is not modified; the fragment comes in its format
    original = '# mine\nname = "mine"\nmain = "src/entry.py"\n'
    (tmp_path / "wrangler.toml").write_text(original)
    outcome = tsumugi("init", "--format", "jsonc")
    assert outcome.code == 0
    assert (tmp_path / "wrangler.toml").read_text() == original
    assert not (tmp_path / "wrangler.jsonc").exists()
    fragment = outcome.out.split("append this fragment to it:\n\n", 1)[1].split("\n\ncreated", 1)[0]
    parsed = tomllib.loads(fragment)
    assert parsed["migrations"] == [{"tag": "v1", "new_sqlite_classes": ["TsumugiJobShard"]}]
    assert parsed["queues"]["producers"] == [{"binding": "TSUMUGI_QUEUE", "queue": "mine"}]
    assert "append the fragment above to wrangler.toml" in outcome.out


def test_existing_files_are_skipped_unless_forced(tsumugi: Tsumugi, tmp_path: Path) -> None:
    # C-9 (5), C-12, ADR-0036: skipped <path> (already exists); --force overwrites
    (tmp_path / "src").mkdir()
    (tmp_path / "src/entry.py").write_text("# my entry\n")
    (tmp_path / "wrangler.jsonc").write_text('{"name": "kept"}')
    outcome = tsumugi("init")
    assert "skipped src/entry.py (already exists)" in outcome.out
    assert (tmp_path / "src/entry.py").read_text() == "# my entry\n"
    assert "created src/performers/hello.py" in outcome.out
    assert (tmp_path / "wrangler.jsonc").read_text() == '{"name": "kept"}'

    forced = tsumugi("init", "--force")
    assert forced.code == 0
    assert "overwrote src/entry.py" in forced.out and "overwrote wrangler.jsonc" in forced.out
    assert "TsumugiScheduler(tsumugi.scheduler_class)" in (tmp_path / "src/entry.py").read_text()
    assert json5.loads((tmp_path / "wrangler.jsonc").read_text())["name"] == "kept"


def test_provision_runs_wrangler_in_order(
    tsumugi: Tsumugi, tmp_path: Path, fake_wrangler: FakeWrangler
) -> None:
    # C-9 (1)-(3), (6): version, queue, database (its id lands in the config), then migrations
    fake_wrangler.answer("d1 create", f'{{\n  "d1_databases": [{{"database_id": "{UUID}"}}]\n}}\n')
    outcome = tsumugi("init", "--provision", "--name", "w")
    assert outcome.code == 0, outcome.err
    assert fake_wrangler.calls == [
        ["--version"],
        ["queues", "create", "w"],
        ["d1", "create", "w"],
        ["d1", "migrations", "apply", "w", "--local"],
        ["d1", "migrations", "apply", "w", "--remote"],
    ]
    config = json5.loads((tmp_path / "wrangler.jsonc").read_text())
    assert config["d1_databases"][0]["database_id"] == UUID
    assert "paste database_id" not in (tmp_path / "wrangler.jsonc").read_text()


def test_provision_without_wrangler_writes_nothing(
    tsumugi: Tsumugi, tmp_path: Path, fake_wrangler: FakeWrangler
) -> None:
    # C-9 (1): wrangler is not available -> install hint, exit 1, nothing written
    fake_wrangler.answer("--version", "", code=127)
    outcome = tsumugi("init", "--provision", "fresh")
    assert outcome.code == 1
    assert outcome.err.startswith("tsumugi: wrangler is not available\ninstall it")
    assert not (tmp_path / "fresh").exists()
    assert fake_wrangler.calls == [["--version"]]


def test_provision_without_a_database_id_exits_1(
    tsumugi: Tsumugi, tmp_path: Path, fake_wrangler: FakeWrangler
) -> None:
    # C-9 (2), (3), C-10: queue failure is a warning; no id -> warning, <id> placeholder, exit 1
    fake_wrangler.answer("queues create", "", code=1)
    fake_wrangler.answer("d1 create", "no id here\n")
    fake_wrangler.answer("d1 migrations", "", code=1)
    outcome = tsumugi("init", "--provision", "--name", "w")
    assert outcome.code == 1
    assert "tsumugi: warning: could not create the queue w" in outcome.err
    assert "could not read database_id" in outcome.err and "fill in <id> yourself" in outcome.err
    assert "migrations apply w --local` failed" in outcome.err
    assert json5.loads((tmp_path / "wrangler.jsonc").read_text())["d1_databases"][0]["database_id"] == "<id>"


@pytest.mark.parametrize(
    ("stdout", "expected"),
    [
        (f'"database_id": "{UUID}"\ndatabase_id = "11111111-1111-1111-1111-111111111111"', UUID),
        (f'[[d1_databases]]\ndatabase_id = "{UUID}"', UUID),
        (f"created {UUID} ok", UUID),
        ("created 0123ABCD-4567-89AB-CDEF-0123456789AB", None),  # lowercase hex only
        ("nothing", None),
    ],
)
def test_database_id_extraction(stdout: str, expected: str | None) -> None:
    # C-9 (3): JSON style, then TOML style, then the first bare UUID
    assert extract_database_id(stdout) == expected


def test_unexpected_failures_are_one_line(tsumugi: Tsumugi, tmp_path: Path) -> None:
    # C-6: an unexpected exception prints `tsumugi: <message>`, exit 1, no traceback
    (tmp_path / "src").write_text("a file where a folder must go")
    outcome = tsumugi("init")
    assert outcome.code == 1
    assert outcome.err.startswith("tsumugi: ") and "Traceback" not in outcome.err
    assert outcome.err.count("\n") == 1


def test_which_wrangler_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # ADR-0086: $TSUMUGI_WRANGLER, else the project's node_modules, else PATH, else npx
    from tsumugi.cli.wrangler_calls import wrangler_command

    monkeypatch.setenv("TSUMUGI_WRANGLER", "npx 'my wrangler'")
    assert wrangler_command(tmp_path) == ["npx", "my wrangler"]
    monkeypatch.delenv("TSUMUGI_WRANGLER")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert wrangler_command(tmp_path) == ["npx", "--yes", "wrangler"]
    local = tmp_path / "node_modules/.bin/wrangler"
    local.parent.mkdir(parents=True)
    local.write_text("")
    assert wrangler_command(tmp_path) == [str(local)]
