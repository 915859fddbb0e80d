"""The shared configuration fragments (C-17, C-18) and the report built on them (J-206, A-75)."""

from __future__ import annotations

import tomllib
from typing import Any

import json5
import pytest

from tsumugi.application.environment_check import configuration_report
from tsumugi.core.wrangler_fragments import (
    MIGRATIONS_DIR,
    RUN,
    TSUMUGI_METRICS,
    FragmentValues,
    fragment_blocks,
    render_jsonc,
    render_toml,
    required_bindings,
)

EVERY_KIND: list[dict[str, Any]] = [
    {"kind": "service", "name": "Mail"},
    dict(TSUMUGI_METRICS),
    *required_bindings(flows=True, schedules=True),
]


def _jsonc_values(text: str) -> Any:
    return json5.loads("{" + text + "}")


def test_blocks_come_in_fixed_kind_order() -> None:
    # C-17: durable-object, d1, queue, analytics, service, whatever order the bindings come in
    keys = [block.key for block in fragment_blocks(EVERY_KIND)]
    assert keys == [
        "durable_objects",
        "migrations",
        "d1_databases",
        "queues",
        "analytics_engine_datasets",
        "services",
    ]


def test_placeholders_and_their_comments() -> None:
    # C-17: vN, <database>, <id>, <queue>, <dataset>, <worker>, <PerformerClass> with guidance comments
    text = render_jsonc(fragment_blocks(EVERY_KIND))
    values = _jsonc_values(text)
    assert values["durable_objects"]["bindings"][0] == {"name": "JOB_SHARD", "class_name": "TsumugiJobShard"}
    assert values["migrations"] == [
        {"tag": "vN", "new_sqlite_classes": ["TsumugiJobShard", "TsumugiRun", "TsumugiScheduler"]}
    ]
    assert values["d1_databases"] == [
        {
            "binding": "TSUMUGI_DB",
            "database_name": "<database>",
            "database_id": "<id>",
            "migrations_dir": MIGRATIONS_DIR,
        }
    ]
    assert values["queues"] == {
        "producers": [{"binding": "TSUMUGI_QUEUE", "queue": "<queue>"}],
        "consumers": [{"queue": "<queue>", "max_batch_size": 10, "max_retries": 5}],
    }
    assert values["analytics_engine_datasets"] == [{"binding": "TSUMUGI_METRICS", "dataset": "<dataset>"}]
    assert values["services"] == [
        {"binding": "Mail", "service": "<worker>", "entrypoint": "<PerformerClass>"}
    ]
    assert "// renumber tag so it does not collide with existing ones\n" in text
    assert "// paste database_id from the output of `wrangler d1 create <database>`\n" in text
    assert "// set service and entrypoint to the target Worker name and class name\n" in text


def test_supplied_values_drop_the_guidance_comments() -> None:
    # C-9 (4): name, queue, database_id and tag v1 filled in; C-16: a complete service block
    values = FragmentValues(database_name="w", database_id="1" * 8, queue="w", worker="w", migration_tag="v1")
    service = {"kind": "service", "name": "SendMail", "className": "SendMail"}
    text = render_jsonc(fragment_blocks([*required_bindings(flows=False, schedules=False), service], values))
    assert "//" not in text
    parsed = _jsonc_values(text)
    assert parsed["migrations"][0]["tag"] == "v1"
    assert parsed["services"] == [{"binding": "SendMail", "service": "w", "entrypoint": "SendMail"}]


@pytest.mark.parametrize("values", [FragmentValues(), FragmentValues(database_id="abc", worker="w")])
def test_jsonc_and_toml_carry_identical_values(values: FragmentValues) -> None:
    # C-18: the same values in both formats; TOML uses arrays of tables and # comments
    blocks = fragment_blocks(EVERY_KIND, values)
    toml_text = render_toml(blocks)
    assert tomllib.loads(toml_text) == _jsonc_values(render_jsonc(blocks))
    assert "[[durable_objects.bindings]]" in toml_text and "[[queues.producers]]" in toml_text
    assert "\n\n# renumber tag so it does not collide with existing ones\n[[migrations]]" in toml_text
    assert "//" not in toml_text


def test_jsonc_blocks_are_joined_by_a_comma_line() -> None:
    # C-18: blocks joined by ",\n", 2-space JSON
    text = render_jsonc(fragment_blocks([dict(RUN), {"kind": "queue", "name": "TSUMUGI_QUEUE"}]))
    assert '"durable_objects": {\n  "bindings": [\n    {\n      "name": "RUN"' in text
    assert "},\n// renumber tag" in text and '],\n"queues": {' in text


def test_report_renders_the_fragment_in_the_requested_format() -> None:
    # J-206 for JSONC; doctor passes toml for a wrangler.toml project
    missing = [{**binding, "reason": "absent"} for binding in required_bindings(flows=False, schedules=False)]
    jsonc = configuration_report(missing)
    toml = configuration_report(missing, "toml")
    assert "1. append the following fragment to wrangler.jsonc" in jsonc
    assert "1. append the following fragment to wrangler.toml" in toml
    assert jsonc.split("\n\n")[0] == toml.split("\n\n")[0]
    toml_fragment = toml.split("\n\n", 2)[2]
    assert tomllib.loads(toml_fragment)["d1_databases"][0]["binding"] == "TSUMUGI_DB"
