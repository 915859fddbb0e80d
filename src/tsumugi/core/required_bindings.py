"""The bindings an app needs and how the configuration report names them; ``wrangler_fragments`` renders
them. Kept apart so that checking an environment at start loads no renderer."""

# C-17, C-19, A-72

from __future__ import annotations

from typing import Final, Literal

ConfigFormat = Literal["jsonc", "toml"]

# C-19: the port ships the D-1..D-8 SQL files inside the ``tsumugi`` package, which ``pywrangler sync``
# vendors into the project's ``python_modules/`` (ADR-0086).
MIGRATIONS_DIR: Final = "./python_modules/tsumugi/migrations"
KIND_ORDER: Final = ("durable-object", "d1", "queue", "analytics", "service")
LABELS: Final = {
    "durable-object": "Durable Object",
    "d1": "D1",
    "queue": "Queues",
    "analytics": "Analytics Engine",
    "service": "service binding",
}
JOB_SHARD: Final = {"kind": "durable-object", "name": "JOB_SHARD", "className": "TsumugiJobShard"}
TSUMUGI_DB: Final = {"kind": "d1", "name": "TSUMUGI_DB"}
TSUMUGI_QUEUE: Final = {"kind": "queue", "name": "TSUMUGI_QUEUE"}
RUN: Final = {"kind": "durable-object", "name": "RUN", "className": "TsumugiRun"}
SCHEDULER: Final = {"kind": "durable-object", "name": "SCHEDULER", "className": "TsumugiScheduler"}
TSUMUGI_METRICS: Final = {"kind": "analytics", "name": "TSUMUGI_METRICS"}
QUEUE_MAX_BATCH_SIZE: Final = 10  # C-17: the consumer settings of the original's fragment
QUEUE_MAX_RETRIES: Final = 5  # Queues' own redelivery only; Tsumugi retries live in the shard (J-118)


def required_bindings(*, flows: bool, schedules: bool) -> list[dict[str, str]]:
    """The bindings an app needs, in their report order: RUN with flows, SCHEDULER with schedules."""
    #
    required = [dict(JOB_SHARD), dict(TSUMUGI_DB), dict(TSUMUGI_QUEUE)]
    if flows:
        required.append(dict(RUN))
    if schedules:
        required.append(dict(SCHEDULER))
    return required
