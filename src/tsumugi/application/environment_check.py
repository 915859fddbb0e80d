"""Startup validation of the platform bindings and the configuration report."""
# J-205, J-206, A-72..A-75

from __future__ import annotations

from collections.abc import Iterable, Sequence

from tsumugi.client import env_binding
from tsumugi.core.json_types import JsonMapping, JsonObject
from tsumugi.core.required_bindings import LABELS, MIGRATIONS_DIR, ConfigFormat, required_bindings
from tsumugi.execution import has_perform

__all__ = ["MIGRATIONS_DIR", "configuration_report", "missing_bindings"]


def missing_bindings(
    env: object, *, flows: bool, schedules: bool, remote_bindings: Iterable[str]
) -> list[JsonObject]:
    """The missing bindings as ``{kind, name, className?, reason}``, in report order; empty when complete."""
    required = required_bindings(flows=flows, schedules=schedules)
    missing: list[JsonObject] = [
        {**entry, "reason": "absent"} for entry in required if env_binding(env, entry["name"]) is None
    ]
    for name in remote_bindings:
        service = env_binding(env, name)
        if service is None:
            missing.append({"kind": "service", "name": name, "reason": "absent"})
        elif not has_perform(service):
            missing.append({"kind": "service", "name": name, "reason": "invalid"})
    return missing


def configuration_report(missing: Sequence[JsonMapping], config_format: ConfigFormat = "jsonc") -> str:
    """The multi-line configuration report: problems, numbered steps, then a pasteable fragment.

    The REST 503 and the typed paths use JSONC; ``tsumugi doctor`` passes the project's format.
    """
    lines = ["tsumugi: the wrangler configuration is incomplete"]
    for entry in missing:
        what = "has no performer" if entry.get("reason") == "invalid" else "is not configured"
        lines.append(f"✗ {entry['name']} ({LABELS[str(entry['kind'])]}) {what}")
    steps = [f"append the following fragment to wrangler.{config_format}"]
    kinds = {entry["kind"] for entry in missing}
    if "d1" in kinds:
        steps.append("run wrangler d1 create <database> to create the database")
        steps.append("run wrangler d1 migrations apply <database> --remote to set up the read model")
    if "queue" in kinds:
        steps.append("run wrangler queues create <queue> to create the queue")
    lines.append("")
    lines.extend(f"{number}. {step}" for number, step in enumerate(steps, start=1))
    lines.append("")
    from tsumugi.core.wrangler_fragments import fragment_blocks, render_fragment  # only for a report

    lines.append(render_fragment(fragment_blocks(missing), config_format))
    return "\n".join(lines)
