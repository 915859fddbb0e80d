"""define_tsumugi validation, startup validation and the configuration report (J-204..J-206, J-180a)."""

from __future__ import annotations

from typing import Any

import pytest

from tsumugi.application import define_tsumugi
from tsumugi.core.config import BindingConfig, OnSettled, RunSettings, SweepOptions
from tsumugi.errors import ConfigurationError
from tsumugi.flows import create_flow
from tsumugi.performer import JobContext, Performer, remote


class Mail(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> None:
        return None


class Service:
    async def perform(self, payload: Any, ctx: Any) -> None:
        return None


def test_exposes_what_the_rest_layer_needs() -> None:
    def metrics(env: Any) -> None:
        return None

    tsumugi = define_tsumugi(
        performers={"MAIL": Mail, "Notify": Mail},
        bindings={"MAIL": {"shards": 2, "failed_retention_ms": 5}},
        retention={"older_than_ms": 1},
        runs=RunSettings(max_nodes=5),
        metrics=metrics,
        auth="auth",
        on_failure="Notify",
        on_settled={"binding": "Notify", "states": ["FAILED"]},
    )
    assert tsumugi.binding_names == ("MAIL", "Notify")
    assert tsumugi.binding_configs["MAIL"] == BindingConfig(shards=2, failed_retention_ms=5)
    assert tsumugi.binding_config("Notify") == BindingConfig()
    assert tsumugi.binding_config("MAIL").failed_retention_ms == 5
    assert tsumugi.retention == SweepOptions(older_than_ms=1)
    assert tsumugi.runs.max_nodes == 5
    assert tsumugi.metrics is metrics and tsumugi.auth == "auth" and tsumugi.ui is True
    assert tsumugi.on_settled == OnSettled("Notify", ["FAILED"])
    assert tsumugi.static_settings("MAIL") == {
        "failedRetentionMs": 5,
        "onFailure": "Notify",
        "onSettled": {"binding": "Notify", "states": ["FAILED"]},
    }


@pytest.mark.parametrize(
    "config,message",
    [
        ({}, "performers is required"),
        ({"performers": {"bad-name": Mail}}, "invalid binding name"),
        ({"performers": {"MAIL": object}}, "MAIL has no perform method"),
        ({"performers": {"MAIL": Mail}, "on_failure": "Nope"}, "on_failure: unknown binding: Nope"),
        (
            {"performers": {"MAIL": Mail}, "on_settled": {"binding": "MAIL", "states": []}},
            "must not be empty",
        ),
        ({"performers": {"MAIL": Mail}, "on_settled": {"binding": "MAIL", "states": ["DONE"]}}, "'DONE'"),
        (
            {"performers": {"MAIL": Mail}, "on_settled": {"binding": "X", "states": ["FAILED"]}},
            "unknown binding",
        ),
        ({"performers": {"MAIL": Mail}, "bindings": {"OTHER": {}}}, "bindings: unknown binding: OTHER"),
        ({"performers": {"MAIL": Mail}, "bindings": {"MAIL": {"shards": 0}}}, "shards must be"),
        ({"performers": {"MAIL": Mail}, "on_enqueue": 5}, "on_enqueue must be a function"),
        ({"performers": {"MAIL": Mail}, "retries": 5}, "unknown option 'retries'"),
    ],
)
def test_invalid_configuration_raises_at_definition_time(config: dict[str, Any], message: str) -> None:
    # J-204, J-180a: eager validation
    with pytest.raises(ConfigurationError, match=message):
        define_tsumugi(config)


def test_missing_bindings_in_the_documented_order() -> None:
    tsumugi = define_tsumugi(
        performers={"MAIL": Mail, "Remote": remote(), "Broken": remote()},
        flows={
            "onboarding": create_flow({"MAIL": Mail})(lambda f: f.node("a", "MAIL", input=lambda i, d: i))
        },
        schedules={"daily": {"binding": "MAIL", "cron": "0 3 * * *", "payload": {}}},
    )
    env = {"TSUMUGI_QUEUE": object(), "TSUMUGI_DB": None, "Broken": object()}
    # J-205 / A-72..A-74: required bindings first (None counts as absent), then services
    assert tsumugi.missing_bindings(env) == [
        {"kind": "durable-object", "name": "JOB_SHARD", "className": "TsumugiJobShard", "reason": "absent"},
        {"kind": "d1", "name": "TSUMUGI_DB", "reason": "absent"},
        {"kind": "durable-object", "name": "RUN", "className": "TsumugiRun", "reason": "absent"},
        {"kind": "durable-object", "name": "SCHEDULER", "className": "TsumugiScheduler", "reason": "absent"},
        {"kind": "service", "name": "Remote", "reason": "absent"},
        {"kind": "service", "name": "Broken", "reason": "invalid"},
    ]
    complete = {
        "JOB_SHARD": object(),
        "TSUMUGI_DB": object(),
        "TSUMUGI_QUEUE": object(),
        "RUN": object(),
        "SCHEDULER": object(),
        "Remote": Service(),
        "Broken": Service(),
        "TSUMUGI_METRICS": None,
    }
    assert tsumugi.missing_bindings(complete) == []  # TSUMUGI_METRICS is never required


def test_configuration_report_text() -> None:
    tsumugi = define_tsumugi(performers={"MAIL": Mail, "Remote": remote()})
    missing = tsumugi.missing_bindings({"JOB_SHARD": object(), "Remote": object()})
    report = tsumugi.configuration_report(missing)
    head, steps, fragment = report.split("\n\n", 2)
    # J-206: header, one line per problem, numbered steps, a blank line, the JSONC fragment
    assert head == (
        "tsumugi: the wrangler configuration is incomplete\n"
        "✗ TSUMUGI_DB (D1) is not configured\n"
        "✗ TSUMUGI_QUEUE (Queues) is not configured\n"
        "✗ Remote (service binding) has no performer"
    )
    assert steps == (
        "1. append the following fragment to wrangler.jsonc\n"
        "2. run wrangler d1 create <database> to create the database\n"
        "3. run wrangler d1 migrations apply <database> --remote to set up the read model\n"
        "4. run wrangler queues create <queue> to create the queue"
    )
    assert '"d1_databases": [' in fragment and '"binding": "TSUMUGI_DB"' in fragment
    assert '"queues": {' in fragment and '"max_batch_size": 10' in fragment
    assert '"services": [' in fragment and '"binding": "Remote"' in fragment
    assert "durable_objects" not in fragment


def test_report_for_a_missing_durable_object_only() -> None:
    tsumugi = define_tsumugi(performers={"MAIL": Mail})
    report = tsumugi.configuration_report(tsumugi.missing_bindings({"TSUMUGI_DB": 1, "TSUMUGI_QUEUE": 1}))
    lines = report.split("\n")
    assert lines[1] == "✗ JOB_SHARD (Durable Object) is not configured"
    assert lines[3:5] == ["1. append the following fragment to wrangler.jsonc", ""]  # no D1/queue steps
    assert '"class_name": "TsumugiJobShard"' in report
    assert '"new_sqlite_classes": [\n      "TsumugiJobShard"' in report


def test_environment_report_caches_success_only() -> None:
    tsumugi = define_tsumugi(performers={"MAIL": Mail})
    broken: dict[str, Any] = {"JOB_SHARD": object(), "TSUMUGI_DB": object()}
    report = tsumugi.environment_report(broken)
    # the 503 body's error text and missing entries; failure is re-evaluated every time
    assert report is not None
    assert report[1] == [{"kind": "queue", "name": "TSUMUGI_QUEUE", "reason": "absent"}]
    assert report[0] == tsumugi.configuration_report(report[1])
    broken["TSUMUGI_QUEUE"] = object()
    assert tsumugi.environment_report(broken) is None
    assert tsumugi.environment_report({}) is None  # success is cached for the instance's lifetime
