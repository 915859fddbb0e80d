"""Proof 1: the root project deploys (wrangler dry-run) and its Python side matches its config.

Wrangler cannot inspect Python exports or compile Python (PLATFORM.md §1), so the export and compile
checks are ours. Rules: J-5, J-6, J-172 (cron), A-72 (class names), C-17 (SQLite classes), D-1..D-8.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.platform.node_tooling import REPO_ROOT, run_wrangler
from tests.platform.wrangler_config import (
    durable_object_classes,
    exported_names,
    load_config,
    main_module,
    sqlite_classes,
)

CRON_FIELD = re.compile(r"^(\*|\d+(-\d+)?)(/\d+)?(,(\*|\d+(-\d+)?)(/\d+)?)*$")


def test_every_durable_object_class_is_exported_by_main() -> None:
    # JOB_SHARD -> TsumugiJobShard, RUN -> TsumugiRun, SCHEDULER -> TsumugiScheduler
    config = load_config()
    exported = exported_names(main_module(config))
    classes = durable_object_classes(config)
    assert {"TsumugiJobShard", "TsumugiRun", "TsumugiScheduler"} <= set(classes)
    assert [name for name in classes if name not in exported] == []
    assert "Default" in exported  # the WorkerEntrypoint holding fetch/queue/scheduled (J-7)


def test_every_durable_object_is_sqlite_backed() -> None:
    # C-17: DO SQL needs new_sqlite_classes; a class missing there would get the KV backend.
    config = load_config()
    assert sorted(sqlite_classes(config)) == sorted(durable_object_classes(config))


def test_every_python_module_compiles() -> None:
    modules = sorted((REPO_ROOT / "src").rglob("*.py"))
    assert main_module(load_config()) in modules
    for module in modules:
        compile(module.read_text(encoding="utf-8"), str(module), "exec", dont_inherit=True)


def test_bindings_queue_d1_cron_and_secret() -> None:
    # J-5, J-6, J-172, D-1..D-8
    config = load_config()
    assert "python_workers" in config["compatibility_flags"]
    assert config["compatibility_date"] >= "2025-11-17"
    producers = {p["binding"]: p["queue"] for p in config["queues"]["producers"]}
    consumers = {c["queue"]: c for c in config["queues"]["consumers"]}
    assert producers["TSUMUGI_QUEUE"] in consumers
    assert consumers[producers["TSUMUGI_QUEUE"]]["max_batch_size"] == 10
    (database,) = [d for d in config["d1_databases"] if d["binding"] == "TSUMUGI_DB"]
    migrations_dir = REPO_ROOT / database["migrations_dir"]
    assert database["migrations_dir"] == "migrations" and sorted(migrations_dir.glob("*.sql"))
    crons = config["triggers"]["crons"]
    assert crons and all(
        len(cron.split()) == 5 and all(CRON_FIELD.match(field) for field in cron.split()) for cron in crons
    )
    assert "TSUMUGI_TOKEN" in config["secrets"]["required"]
    assert "TSUMUGI_TOKEN" not in config.get("vars", {})  # a secret, never a plain var


@pytest.mark.platform
def test_wrangler_deploy_dry_run_passes(tmp_path: Path) -> None:
    result = run_wrangler(["deploy", "--dry-run", "--outdir", str(tmp_path / "dist")])
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "--dry-run: exiting now." in output
    for binding in (
        "env.JOB_SHARD (TsumugiJobShard)",
        "env.RUN (TsumugiRun)",
        "env.SCHEDULER (TsumugiScheduler)",
        "env.TSUMUGI_QUEUE (tsumugi-queue)",
        "env.TSUMUGI_DB (tsumugi-db)",
    ):
        assert binding in output
    bundled = {path.relative_to(tmp_path / "dist").as_posix() for path in (tmp_path / "dist").rglob("*.py")}
    assert {"entry.py", "app.py", "tsumugi/runtimes/cloudflare/durable_objects.py"} <= bundled
