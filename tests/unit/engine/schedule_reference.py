"""An independent reference model of the dispatch decision, written from jobs.md J-140..J-150a.

Deliberately naive: no window, no incremental state, a full re-scan per step.
"""

from __future__ import annotations

import math
from typing import Any


def ref_deadline(job: dict[str, Any], grace: int) -> int:
    origin = job["dispatched_at"]
    if job.get("heartbeat_at") is not None and job["heartbeat_at"] > origin:
        origin = job["heartbeat_at"]
    return origin + job["timeout_ms"] + grace


def ref_priority(job: dict[str, Any], now: int, aging: int | None) -> float:
    if not aging or aging <= 0:
        return job["priority"]
    return job["priority"] + (max(0, now - job["created_at"]) // aging)


def ref_dispatch(jobs: list[dict[str, Any]], now: int, p: dict[str, Any]) -> list[str]:
    """Ids dispatched, in order, by the rules of J-143 (no expiry, no cancel requests)."""
    grace = p["grace"]
    live = [j for j in jobs if j["state"] in ("QUEUED", "RUNNING") and ref_deadline(j, grace) > now]
    per_key: dict[str, int] = {}
    for j in live:
        if j["key"] is not None:
            per_key[j["key"]] = per_key.get(j["key"], 0) + 1
    ready = [j for j in jobs if j["state"] == "SCHEDULED" and j["run_after"] <= now]
    ready.sort(key=lambda j: (-ref_priority(j, now, p["aging"]), j["created_at"], j["id"]))
    slots = max(0, p["concurrency"] - len(live))
    tokens = math.inf if p["rate"] is None else p["rate"][0]
    key_tokens: dict[str, float] = {}
    out: list[str] = []
    if p["paused"]:
        return out
    for j in ready:
        if slots <= 0 or tokens < 1:
            break
        key = j["key"]
        if key is not None:
            limit = p["overrides"].get(key, p["per_key"])
            if per_key.get(key, 0) >= limit:
                continue
            if p["key_rate"] is not None:
                key_tokens.setdefault(key, p["key_rate"][0])
                if key_tokens[key] < 1:
                    continue
                key_tokens[key] -= 1
            per_key[key] = per_key.get(key, 0) + 1
        slots -= 1
        tokens -= 1
        out.append(j["id"])
    return out
