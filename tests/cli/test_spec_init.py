"""``tsumugi init`` against C-4, C-7..C-10 and C-12, rule by rule (Python mapping: ADR-0086)."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import json5
import pytest
from tests.cli.conftest import FakeWrangler, Tsumugi

UUID = "4c1f7d0e-2b3a-4e5f-8a9b-0c1d2e3f4a5b"


def _files(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


def _printed_fragment(out: str) -> str:
    after = out.split("append this fragment to it:\n\n", 1)[1]
    return re.split(r"\n\n(?=created |skipped )", after, maxsplit=1)[0]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["init", "--provision", "--format", "yaml"], 'tsumugi: unknown format "yaml", use jsonc or toml\n'),
        (
            ["init", "--provision", "--format", "JSONC"],
            'tsumugi: unknown format "JSONC", use jsonc or toml\n',
        ),
        (["init", "--provision", "a", "b"], "tsumugi: init accepts at most one directory"),
    ],
)
def test_argument_errors_come_before_wrangler(
    tsumugi: Tsumugi, tmp_path: Path, fake_wrangler: FakeWrangler, argv: list[str], message: str
) -> None:
    # C-4: exit 1, nothing executed (not even `wrangler --version`) and nothing written
    outcome = tsumugi(*argv)
    assert outcome.code == 1 and outcome.err.startswith(message)
    assert fake_wrangler.calls == []
    assert list(tmp_path.iterdir()) == []


def test_name_from_wrangler_json_first(tsumugi: Tsumugi, tmp_path: Path) -> None:
    # C-7, C-8: wrangler.json wins over wrangler.jsonc and wrangler.toml; its format is jsonc
    (tmp_path / "wrangler.json").write_text('{/* c */ "name" /* c */ : /* c */ "from-json"}')
    (tmp_path / "wrangler.jsonc").write_text('{"name": "from-jsonc"}')
    (tmp_path / "wrangler.toml").write_text('name = "from-toml"\n')
    outcome = tsumugi("init")
    assert outcome.code == 0
    assert "found wrangler.json: left unchanged" in outcome.out
    fragment = _printed_fragment(outcome.out)
    values = json5.loads("{" + fragment + "}")
    assert values["d1_databases"][0]["database_name"] == "from-json"
    assert values["queues"]["consumers"][0]["queue"] == "from-json"


def test_name_from_the_folder(tsumugi: Tsumugi, tmp_path: Path) -> None:
    # C-7: with nothing else, the directory's base name
    assert tsumugi("init", "mail-worker").code == 0
    assert json5.loads((tmp_path / "mail-worker/wrangler.jsonc").read_text())["name"] == "mail-worker"


def test_package_json_without_a_scope(tsumugi: Tsumugi, tmp_path: Path) -> None:
    # C-7: package.json's name as is when it has no @scope/
    (tmp_path / "package.json").write_text(json.dumps({"name": "plain-worker"}))
    assert tsumugi("init", "--format", "toml").code == 0
    assert tomllib.loads((tmp_path / "wrangler.toml").read_text())["name"] == "plain-worker"


def test_generated_config_holds_the_three_bindings(tsumugi: Tsumugi, tmp_path: Path) -> None:
    # C-9 (4): JOB_SHARD / TSUMUGI_DB / TSUMUGI_QUEUE filled with name and queue, DO migration tag v1,
    # plus a comment listing the optional additions
    assert tsumugi("init", "--name", "w").code == 0
    text = (tmp_path / "wrangler.jsonc").read_text()
    config = json5.loads(text)
    assert config["durable_objects"]["bindings"] == [{"name": "JOB_SHARD", "class_name": "TsumugiJobShard"}]
    assert config["migrations"] == [{"tag": "v1", "new_sqlite_classes": ["TsumugiJobShard"]}]
    d1 = config["d1_databases"]
    assert [(db["binding"], db["database_name"], db["database_id"]) for db in d1] == [
        ("TSUMUGI_DB", "w", "<id>")
    ]
    assert config["queues"]["producers"] == [{"binding": "TSUMUGI_QUEUE", "queue": "w"}]
    assert config["queues"]["consumers"] == [{"queue": "w", "max_batch_size": 10, "max_retries": 5}]
    for addition in ("TSUMUGI_METRICS", "RUN", "crons"):
        assert any(addition in line for line in text.splitlines() if line.lstrip().startswith("//"))


def test_next_steps(tsumugi: Tsumugi) -> None:
    # C-9 (7): secret put TSUMUGI_TOKEN, a local dev server, the dashboard at http://localhost:8787/
    out = tsumugi("init", "--name", "w").out
    steps = out.split("next steps:\n", 1)[1]
    assert "wrangler secret put TSUMUGI_TOKEN" in steps
    assert "dev" in steps and "http://localhost:8787/" in steps
    assert "append the fragment" not in steps


def test_provision_with_an_existing_config(
    tsumugi: Tsumugi, tmp_path: Path, fake_wrangler: FakeWrangler
) -> None:
    # C-9 (4): the printed fragment carries the new database_id; (6): no migrations, the config was not
    # generated; (7): append, then apply the migrations; C-10: exit 0 since the id was read
    original = 'name = "mine"\n'
    (tmp_path / "wrangler.toml").write_text(original)
    fake_wrangler.answer("d1 create", f'[[d1_databases]]\ndatabase_id = "{UUID}"\n')
    outcome = tsumugi("init", "--provision")
    assert outcome.code == 0, outcome.err
    assert fake_wrangler.calls == [["--version"], ["queues", "create", "mine"], ["d1", "create", "mine"]]
    assert (tmp_path / "wrangler.toml").read_text() == original
    fragment = _printed_fragment(outcome.out)
    assert tomllib.loads(fragment)["d1_databases"][0]["database_id"] == UUID
    steps = outcome.out.split("next steps:\n", 1)[1]
    assert "append the fragment above to wrangler.toml" in steps
    assert "wrangler d1 migrations apply mine --local" in steps


def test_provision_failure_exit_code_with_an_existing_config(
    tsumugi: Tsumugi, tmp_path: Path, fake_wrangler: FakeWrangler
) -> None:
    # C-10: no database_id -> exit 1 even when the config was left alone; the fragment keeps <id>
    (tmp_path / "wrangler.jsonc").write_text('{"name": "mine"}')
    fake_wrangler.answer("d1 create", "", code=1)
    outcome = tsumugi("init", "--provision")
    assert outcome.code == 1
    assert '"database_id": "<id>"' in outcome.out
    assert "fill in <id> yourself" in outcome.err


def test_a_second_init_changes_nothing(tsumugi: Tsumugi, tmp_path: Path) -> None:
    # C-12, ADR-0036: running init again over its own output rewrites no file and says so for each
    assert tsumugi("init", "--name", "w").code == 0
    before = _files(tmp_path)
    again = tsumugi("init", "--name", "other", "--format", "toml")
    assert again.code == 0
    assert _files(tmp_path) == before
    skipped = [line for line in again.out.splitlines() if line.startswith("skipped ")]
    assert len(skipped) == len(before) - 1  # every file but the wrangler file, which is reported apart
    assert all(line.endswith(" (already exists)") for line in skipped)
    assert "created " not in again.out and "overwrote " not in again.out


def test_force_overwrites_only_what_init_writes(tsumugi: Tsumugi, tmp_path: Path) -> None:
    # C-12: overwriting needs --force (ADR-0036); files init does not write are never touched
    assert tsumugi("init", "--name", "w").code == 0
    (tmp_path / "src/performers/hello.py").write_text("# changed\n")
    (tmp_path / "src/performers/mine.py").write_text("# mine\n")
    assert tsumugi("init").code == 0
    assert (tmp_path / "src/performers/hello.py").read_text() == "# changed\n"
    forced = tsumugi("init", "--force")
    assert forced.code == 0 and "overwrote src/performers/hello.py" in forced.out
    assert "class Hello(Performer)" in (tmp_path / "src/performers/hello.py").read_text()
    assert (tmp_path / "src/performers/mine.py").read_text() == "# mine\n"


def test_dir_that_is_a_file(tsumugi: Tsumugi, tmp_path: Path) -> None:
    # C-4 (port, ADR-0086): a clear error before anything is written
    (tmp_path / "taken").write_text("x")
    outcome = tsumugi("init", "taken")
    assert (outcome.code, outcome.err) == (1, "tsumugi: taken exists and is not a directory\n")
    assert _files(tmp_path) == {"taken": "x"}
