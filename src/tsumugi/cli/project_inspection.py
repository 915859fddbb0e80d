"""The checks of ``tsumugi doctor`` on a project directory (ADR-0088).

Bindings go through the very check behind the REST 503 (``missing_bindings``), fed with the
bindings the wrangler file declares; migrations through the read model's migration check on the local D1 file.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tsumugi.application.environment_check import missing_bindings
from tsumugi.cli.project_config import ProjectConfig, load_config
from tsumugi.cli.project_entry import EntryFacts, read_entry
from tsumugi.core.json_types import JsonObject
from tsumugi.core.wrangler_fragments import ConfigFormat
from tsumugi.errors import CommandLineError
from tsumugi.ports import SqlValue
from tsumugi.storage.read_model_migrations import MigrationStatus, read_migration_status
from tsumugi.storage.read_model_schema import EXPECTED_MIGRATIONS

Config = Mapping[str, object]  # a parsed wrangler file, or one table of it

LOCAL_D1_STATE = ".wrangler/state/v3/d1"  # where wrangler and Miniflare keep local D1 files (PLATFORM.md §2)


@dataclass(frozen=True)
class Check:
    ok: bool
    text: str


@dataclass
class Inspection:
    """Missing bindings in the REST report's shape, then the other checks in the order they ran."""

    config_format: ConfigFormat
    missing: list[JsonObject] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)

    @property
    def problems(self) -> int:
        return len(self.missing) + sum(1 for check in self.checks if not check.ok)


class _DeclaredBinding:
    """Stands in for a binding the wrangler file declares; a declared service counts as valid."""

    async def perform(self, *_args: object) -> None:
        return None


def inspect_project(root: Path, config: ProjectConfig, environ: Mapping[str, str]) -> Inspection:
    declared = load_config(config)
    result = Inspection(config.config_format)
    main = declared.get("main")
    entry_path = root / str(main)
    entry = EntryFacts(frozenset())
    if not isinstance(main, str) or not main:
        result.checks.append(Check(False, f"{config.path.name} has no main (the entry module)"))
    else:
        try:
            entry = read_entry(entry_path)
        except CommandLineError as exc:
            result.checks.append(Check(False, str(exc)))
    result.missing = missing_bindings(
        {name: _DeclaredBinding() for name in declared_binding_names(declared)},
        flows=entry.flows,
        schedules=entry.schedules,
        remote_bindings=entry.remote_bindings,
    )
    if isinstance(main, str) and main:
        result.checks.extend(syntax_checks(root, entry_path.parent))
    result.checks.extend(durable_object_checks(declared, entry.exports, str(main)))
    result.checks.extend(queue_checks(declared))
    result.checks.extend(database_checks(root, declared))
    result.checks.append(token_check(root, environ))
    return result


def _entries(declared: Config, *path: str) -> list[Config]:
    """The tables of the array at ``path`` (``durable_objects.bindings``); anything else is no entry."""
    value: object = declared
    for key in path:
        value = value.get(key, {}) if isinstance(value, Mapping) else {}
    return [entry for entry in value if isinstance(entry, dict)] if isinstance(value, list) else []


def declared_binding_names(declared: Config) -> list[str]:
    """Every binding name the configuration gives the Worker's ``env``."""
    names = [str(e.get("name")) for e in _entries(declared, "durable_objects", "bindings")]
    for path in (("d1_databases",), ("queues", "producers"), ("analytics_engine_datasets",), ("services",)):
        names.extend(str(e.get("binding")) for e in _entries(declared, *path))
    return names


def syntax_checks(root: Path, module_root: Path) -> list[Check]:
    """Every module under the entry's folder compiles: wrangler uploads Python unchecked."""
    if not module_root.is_dir():
        return []
    checks = []
    for path in sorted(module_root.rglob("*.py")):
        if any(
            part == "python_modules" or part.startswith(".") for part in path.relative_to(module_root).parts
        ):
            continue  # vendored or hidden: not this project's code
        try:
            compile(path.read_text(encoding="utf-8"), str(path), "exec", dont_inherit=True)
        except (SyntaxError, ValueError) as exc:
            where = path.relative_to(root).as_posix()
            line = getattr(exc, "lineno", None)
            checks.append(Check(False, f"{where}{f':{line}' if line else ''} does not compile: {exc}"))
    return checks


def durable_object_checks(declared: Config, exports: frozenset[str], main: str) -> list[Check]:
    """Each local Durable Object class is exported by the entry and created as SQLite-backed."""
    sqlite_classes = {
        str(name)
        for m in _entries(declared, "migrations")
        if isinstance(names := m.get("new_sqlite_classes", []), Iterable)
        for name in names
    }
    checks = []
    for binding in _entries(declared, "durable_objects", "bindings"):
        if binding.get("script_name"):  # lives in another Worker: not this entry's business
            continue
        name, class_name = binding.get("name"), str(binding.get("class_name"))
        if class_name in exports:
            checks.append(Check(True, f"{class_name} (class of {name}) is exported by {main}"))
        else:
            checks.append(Check(False, f"{class_name} (class of {name}) is not exported by {main}"))
        if class_name not in sqlite_classes:
            checks.append(Check(False, f"{class_name} is not in the new_sqlite_classes of any migration"))
    return checks


def queue_checks(declared: Config) -> list[Check]:
    """The Tsumugi queue must also be consumed by this Worker, or no job ever runs."""
    # J-6
    consumed = {str(c.get("queue")) for c in _entries(declared, "queues", "consumers")}
    checks = []
    for producer in _entries(declared, "queues", "producers"):
        if producer.get("binding") == "TSUMUGI_QUEUE":
            queue = str(producer.get("queue"))
            ok = queue in consumed
            checks.append(Check(ok, f"queue {queue} is {'' if ok else 'not '}consumed by this Worker"))
    return checks


def database_checks(root: Path, declared: Config) -> list[Check]:
    """TSUMUGI_DB has an id, its migrations directory holds every migration, the local D1 applied them."""
    for database in _entries(declared, "d1_databases"):
        if database.get("binding") == "TSUMUGI_DB":
            return _database_checks(root, database)
    return []


def _database_checks(root: Path, database: Config) -> list[Check]:
    name = str(database.get("database_name", "<database>"))
    checks = []
    database_id = str(database.get("database_id", ""))
    if not database_id or database_id.startswith("<"):
        checks.append(Check(False, f"TSUMUGI_DB has no database_id: run wrangler d1 create {name}"))
    folder = root / str(database.get("migrations_dir", "migrations"))
    shipped = {path.name for path in folder.glob("*.sql")}
    lacking = [file_name for file_name in EXPECTED_MIGRATIONS if file_name not in shipped]
    if lacking:
        what = "holds no tsumugi migrations" if len(lacking) == len(EXPECTED_MIGRATIONS) else "lacks"
        listed = "" if not shipped else " " + ", ".join(lacking)
        checks.append(
            Check(
                False, f"migrations_dir {database.get('migrations_dir')} {what}{listed}: run pywrangler sync"
            )
        )
    status = local_migration_status(root)
    apply = f'run "wrangler d1 migrations apply {name} --local"'
    if status is None:
        checks.append(Check(False, f"no local D1 database under {LOCAL_D1_STATE}: {apply}"))
    elif status.kind == "missing":
        checks.append(Check(False, f"local D1 lacks migrations {', '.join(status.missing)}: {apply}"))
    elif status.kind == "unavailable":
        checks.append(Check(False, f"the local D1 database under {LOCAL_D1_STATE} cannot be read"))
    else:
        checks.append(Check(True, "the local D1 database has every migration applied"))
    return checks


class _ReadOnlyDatabase:
    """``ports.SqlDatabase`` over a local D1 file opened read-only, for the migration ledger query."""

    def __init__(self, path: Path) -> None:
        self._path = path

    async def all(self, sql: str, params: Sequence[SqlValue] = ()) -> list[dict[str, SqlValue]]:
        connection = sqlite3.connect(f"{self._path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            connection.row_factory = sqlite3.Row
            return [dict(row) for row in connection.execute(sql, tuple(params)).fetchall()]
        finally:
            connection.close()

    async def run(self, sql: str, params: Sequence[SqlValue] = ()) -> int:
        raise CommandLineError("the local D1 database is opened read-only")

    async def batch(self, statements: Sequence[tuple[str, Sequence[SqlValue]]]) -> None:
        raise CommandLineError("the local D1 database is opened read-only")


def local_migration_status(root: Path) -> MigrationStatus | None:
    """The best status among the local D1 files (one per database; their names are hashes), or None."""
    files = sorted(p for p in (root / LOCAL_D1_STATE).rglob("*.sqlite") if p.name != "metadata.sqlite")
    statuses = [asyncio.run(read_migration_status(_ReadOnlyDatabase(path))) for path in files]
    if not statuses:
        return None
    rank = {"ok": 0, "missing": 1, "unavailable": 2}
    return min(statuses, key=lambda status: (rank[status.kind], len(status.missing)))


def token_check(root: Path, environ: Mapping[str, str]) -> Check:
    """TSUMUGI_TOKEN in the environment or.dev.vars: without it the API answers 404."""
    #
    if environ.get("TSUMUGI_TOKEN"):
        return Check(True, "TSUMUGI_TOKEN is set in the environment")
    if read_dev_vars(root / ".dev.vars").get("TSUMUGI_TOKEN"):
        return Check(True, "TSUMUGI_TOKEN is set in .dev.vars")
    return Check(
        False,
        "TSUMUGI_TOKEN is not set: add it to .dev.vars (see .dev.vars.example) and, for the deployed "
        "Worker, run wrangler secret put TSUMUGI_TOKEN",
    )


def read_dev_vars(path: Path) -> dict[str, str]:
    """``KEY=value`` lines of a dotenv file; quotes around values removed, comments skipped."""
    if not path.is_file():
        return {}
    values = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        key, sep, value = line.strip().partition("=")
        if sep and key and not key.startswith("#"):
            value = value.strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
                value = value[1:-1]
            values[key.strip()] = value
    return values
