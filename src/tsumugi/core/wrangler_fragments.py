"""Wrangler configuration fragments for the bindings Tsumugi needs, in JSONC and TOML.

The one place that renders them: the configuration report of the REST 503 and the typed paths,
``tsumugi init``, ``tsumugi add-performer`` and ``tsumugi doctor`` all print what this returns.
A binding is given in the shape of a missing binding in that report: ``{"kind", "name", "className"?}``.
"""

# C-17, C-18: the fragments; A-72..A-75, J-206: the report that prints them.

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tsumugi.core.json_types import JsonMapping, JsonObject, JsonValue
from tsumugi.core.required_bindings import (
    JOB_SHARD,
    KIND_ORDER,
    LABELS,
    MIGRATIONS_DIR,
    QUEUE_MAX_BATCH_SIZE,
    QUEUE_MAX_RETRIES,
    RUN,
    SCHEDULER,
    TSUMUGI_DB,
    TSUMUGI_METRICS,
    TSUMUGI_QUEUE,
    ConfigFormat,
    required_bindings,
)
from tsumugi.errors import ConfigurationError

__all__ = [
    "JOB_SHARD",
    "KIND_ORDER",
    "LABELS",
    "MIGRATIONS_DIR",
    "QUEUE_MAX_BATCH_SIZE",
    "QUEUE_MAX_RETRIES",
    "RUN",
    "SCHEDULER",
    "TSUMUGI_DB",
    "TSUMUGI_METRICS",
    "TSUMUGI_QUEUE",
    "ConfigFormat",
    "FragmentBlock",
    "FragmentValues",
    "fragment_blocks",
    "render_fragment",
    "render_jsonc",
    "render_toml",
    "required_bindings",
    "toml_value",
]


@dataclass(frozen=True)
class FragmentValues:
    """What fills the blocks; each ``None`` renders a placeholder and a comment saying what to put there."""

    # C-17: the placeholders
    database_name: str = "<database>"
    database_id: str | None = None
    queue: str = "<queue>"
    dataset: str = "<dataset>"
    worker: str | None = None
    migration_tag: str | None = None
    migrations_dir: str = MIGRATIONS_DIR


@dataclass(frozen=True)
class FragmentBlock:
    """One top-level key of the configuration, its JSON value and an optional comment above it."""

    key: str
    value: JsonValue
    comment: str | None = None


def fragment_blocks(
    bindings: Sequence[Mapping[str, object]], values: FragmentValues | None = None
) -> list[FragmentBlock]:
    """The blocks for ``bindings`` in a fixed order of kinds (durable-object, d1, queue, ...)."""
    # C-17
    values = values or FragmentValues()
    by_kind: dict[str, list[Mapping[str, object]]] = {kind: [] for kind in KIND_ORDER}
    for entry in bindings:
        by_kind[str(entry["kind"])].append(entry)
    blocks: list[FragmentBlock] = []
    objects = by_kind["durable-object"]
    if objects:
        classes: list[JsonValue] = [str(e["className"]) for e in objects]
        bindings_value: list[JsonValue] = [
            {"name": _name(e), "class_name": str(e["className"])} for e in objects
        ]
        blocks.append(FragmentBlock("durable_objects", {"bindings": bindings_value}))
        tag_comment = (
            None if values.migration_tag else "renumber tag so it does not collide with existing ones"
        )
        migration: JsonObject = {"tag": values.migration_tag or "vN", "new_sqlite_classes": classes}
        blocks.append(FragmentBlock("migrations", [migration], tag_comment))
    for entry in by_kind["d1"]:
        database: JsonObject = {
            "binding": _name(entry),
            "database_name": values.database_name,
            "database_id": values.database_id or "<id>",
            "migrations_dir": values.migrations_dir,
        }
        id_comment = (
            None
            if values.database_id
            else f"paste database_id from the output of `wrangler d1 create {values.database_name}`"
        )
        blocks.append(FragmentBlock("d1_databases", [database], id_comment))
    queues = by_kind["queue"]
    if queues:
        producers: list[JsonValue] = [{"binding": _name(e), "queue": values.queue} for e in queues]
        consumers: list[JsonValue] = [
            {"queue": values.queue, "max_batch_size": QUEUE_MAX_BATCH_SIZE, "max_retries": QUEUE_MAX_RETRIES}
        ]
        blocks.append(FragmentBlock("queues", {"producers": producers, "consumers": consumers}))
    datasets = by_kind["analytics"]
    if datasets:
        entries: list[JsonValue] = [{"binding": _name(e), "dataset": values.dataset} for e in datasets]
        blocks.append(FragmentBlock("analytics_engine_datasets", entries))
    services = by_kind["service"]
    if services:
        blocks.append(_services_block(services, values.worker))
    return blocks


def _name(entry: Mapping[str, object]) -> str:
    return str(entry["name"])  # binding names are text; str() keeps one as it is


def _services_block(services: Sequence[Mapping[str, object]], worker: str | None) -> FragmentBlock:
    entries: list[JsonValue] = [
        {
            "binding": _name(e),
            "service": worker or "<worker>",
            "entrypoint": str(e.get("className") or "<PerformerClass>"),
        }
        for e in services
    ]
    complete = worker is not None and all(e.get("className") for e in services)
    comment = None if complete else "set service and entrypoint to the target Worker name and class name"
    return FragmentBlock("services", entries, comment)


def render_jsonc(blocks: Sequence[FragmentBlock]) -> str:
    """``"key": <2-space JSON>`` blocks joined by ``,\\n``, comments as ``//`` lines."""
    # C-18
    rendered = []
    for block in blocks:
        text = f"{json.dumps(block.key)}: {json.dumps(block.value, indent=2, ensure_ascii=False)}"
        rendered.append(f"// {block.comment}\n{text}" if block.comment else text)
    return ",\n".join(rendered)


def render_toml(blocks: Sequence[FragmentBlock]) -> str:
    """arrays of tables (``[[d1_databases]]``, ``[[queues.producers]]``), ``#`` comments."""
    # C-18
    rendered = []
    for block in blocks:
        tables: list[str] = []
        if isinstance(block.value, Mapping):
            for sub_key, rows in block.value.items():
                tables.extend(_toml_table(f"{block.key}.{sub_key}", row) for row in _rows(rows))
        else:
            tables.extend(_toml_table(block.key, row) for row in _rows(block.value))
        text = "\n".join(tables)
        rendered.append(f"# {block.comment}\n{text}" if block.comment else text)
    return "\n\n".join(rendered)


def render_fragment(blocks: Sequence[FragmentBlock], config_format: ConfigFormat) -> str:
    """The blocks in the given configuration format."""
    return render_toml(blocks) if config_format == "toml" else render_jsonc(blocks)


def _rows(value: JsonValue) -> list[JsonMapping]:
    """A block's value as TOML arrays of tables: a list of objects."""
    if not isinstance(value, list) or not all(isinstance(row, Mapping) for row in value):
        raise ConfigurationError(f"no TOML form for {value!r}: a list of tables is needed")
    return [row for row in value if isinstance(row, Mapping)]


def _toml_table(header: str, row: JsonMapping) -> str:
    lines = [f"[[{header}]]"]
    lines.extend(f"{key} = {toml_value(value)}" for key, value in row.items())
    return "\n".join(lines)


def toml_value(value: object) -> str:
    """A TOML inline value for a string, integer, boolean or list of them."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        # A JSON string is a valid TOML basic string: the same quote and escape rules.
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    raise ConfigurationError(f"no TOML form for {type(value).__name__}")
