"""A shard's ``mutate_many`` answer read back: the ids it changed and those it refused, with why.

The shard answers ``{ok: [id, ...], failed: [{id, reason}, ...]}`` as JSON (across a Durable Object RPC
on Cloudflare). It is read the way the REST app reads every shard answer: what is missing or malformed
counts as nothing, so a bulk request reports what the shards did rather than failing on their reply.
"""
# J-134, A-52

from __future__ import annotations

from typing import Final, Literal

from tsumugi.api.shapes import BulkFailure
from tsumugi.core.json_types import JsonMapping

ShardRefusal = Literal["invalid-state", "gone"]

# A shard refuses a retry or cancel of one job for one of these reasons (a mutation's refusal).
_REFUSALS: Final[dict[str, ShardRefusal]] = {"invalid-state": "invalid-state", "gone": "gone"}


def changed_ids(answer: JsonMapping) -> list[str]:
    """The ids the shard retried or cancelled, in its order."""
    ok = answer.get("ok")
    return [job_id for job_id in ok if isinstance(job_id, str)] if isinstance(ok, list) else []


def refusals(answer: JsonMapping) -> list[BulkFailure]:
    """The jobs the shard left as they were, each with its reason, in its order."""
    failed = answer.get("failed")
    found: list[BulkFailure] = []
    for entry in failed if isinstance(failed, list) else ():
        if not isinstance(entry, dict):
            continue
        job_id, reason = entry.get("id"), entry.get("reason")
        refusal = _REFUSALS.get(reason) if isinstance(reason, str) else None
        if isinstance(job_id, str) and refusal is not None:
            found.append({"id": job_id, "reason": refusal})
    return found


def counted(answer: JsonMapping) -> tuple[int, int]:
    """How many jobs the shard changed and how many it refused."""
    ok, failed = answer.get("ok"), answer.get("failed")
    return (len(ok) if isinstance(ok, list) else 0), (len(failed) if isinstance(failed, list) else 0)
