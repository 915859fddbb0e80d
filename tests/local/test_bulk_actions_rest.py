"""A bulk action over a filter on a real `tsumugi dev`, and its progress after a restart (ADR-0151)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
from tests.local.conftest import DevProcess, wait_for
from tests.local.flow_support import HEADERS, TOKEN

DEADLINE_S = 30.0
AN_HOUR_MS = 3_600_000


def _client(dev: DevProcess) -> httpx.Client:
    return httpx.Client(base_url=dev.url, headers=HEADERS, timeout=10)


def test_cancel_every_match_and_read_the_progress_after_a_restart(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    dev = DevProcess(None, state_dir, {"TSUMUGI_TOKEN": TOKEN})
    try:
        with _client(dev) as client:
            for n in range(12):
                body = {
                    "binding": "Hello",
                    "payload": {"n": n},
                    "delayMs": AN_HOUR_MS,
                    "concurrencyKey": "sweep",
                }
                assert client.post("/api/jobs", json=body).status_code == 201
            flt = {"concurrency_key": "sweep"}

            def counted() -> int | None:
                answer = client.post("/api/bulk", json={"action": "cancel", "filter": flt, "dryRun": True})
                matched: int = answer.json()["matched"]
                return matched if matched == 12 else None

            wait_for(counted, DEADLINE_S, "12 jobs in the read model")
            started = client.post("/api/bulk", json={"action": "cancel", "filter": flt})
            assert started.status_code == 202
            bulk_id = started.json()["id"]

            def finished() -> dict[str, Any] | None:
                body: dict[str, Any] = client.get(f"/api/bulk/{bulk_id}").json()
                return body if body["state"] == "done" else None

            done = wait_for(finished, DEADLINE_S, "the bulk action done")
            assert (done["matched"], done["done"], done["failed"]) == (12, 12, 0)
    finally:
        dev.terminate()
    again = DevProcess(None, state_dir, {"TSUMUGI_TOKEN": TOKEN})
    try:
        with _client(again) as client:
            after = client.get(f"/api/bulk/{bulk_id}").json()
            assert (after["state"], after["done"], after["filter"]) == ("done", 12, flt)
            jobs = client.get("/api/jobs", params={"concurrency_key": "sweep", "limit": 100}).json()["jobs"]
            assert {job["state"] for job in jobs} == {"CANCELLED"}
    finally:
        again.terminate()
