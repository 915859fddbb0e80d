#!/usr/bin/env python3
"""The REST API under concurrent clients while the engine runs the jobs, in one ``tsumugi dev`` process.

Starts ``tsumugi dev`` on the example app and drives it with ``wrk`` (Debian's package, a C load generator
in its own process, so the load does not compete with the server for Python time):

- ``GET /api/jobs/{id}`` (a read-model lookup) with 1 and with 50 connections;
- ``POST /api/jobs`` with 50 connections: each request enqueues a Greet job that the same process then
  dispatches, performs, reports and projects, so the API, the engine and the performers share the loop.

Prints requests/s, p50 and p99 for each. With 50 connections the latency is mostly queueing: about
connections / throughput (Little's law), so it falls as the per-request cost does.

Usage: ``.venv/bin/python bench/api_concurrency.py [--seconds 10]`` (needs ``wrk`` on PATH).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "api-concurrency"
POST_SCRIPT = """wrk.method = "POST"
wrk.body = '{"binding":"Greet","payload":{"name":"w"}}'
wrk.headers["Content-Type"] = "application/json"
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _call(url: str, body: object | None = None) -> object:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read())


def _wrk(url: str, connections: int, seconds: int, script: Path | None = None) -> str:
    command = ["wrk", f"-t{min(2, connections)}", f"-c{connections}", f"-d{seconds}s", "--latency"]
    command += ["-H", f"authorization: Bearer {TOKEN}"]
    if script is not None:
        command += ["-s", str(script)]
    output = subprocess.run([*command, url], capture_output=True, text=True, check=True).stdout
    rate = re.search(r"Requests/sec:\s+([\d.]+)", output)
    p50 = re.search(r"50%\s+([\d.]+\w+)", output)
    p99 = re.search(r"99%\s+([\d.]+\w+)", output)
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    found = (rate, p50, p99)
    if not all(found):
        return output
    assert rate and p50 and p99
    tail = f", {errors.group(1)} non-2xx" if errors else ""
    return f"{float(rate.group(1)):>8,.0f} req/s   p50 {p50.group(1):>9}   p99 {p99.group(1):>9}{tail}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=10)
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        sys.exit("api_concurrency: wrk is not on PATH (apt-get install wrk)")
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory(prefix="api-concurrency-") as tmp:
        env = {**os.environ, "TSUMUGI_TOKEN": TOKEN}
        tsumugi = Path(sys.executable).with_name("tsumugi")
        server = subprocess.Popen(
            [str(tsumugi), "dev", str(ROOT / "src" / "app.py"), "--port", str(port)],
            cwd=tmp,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    _call(base + "/api/flows")
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        sys.exit("api_concurrency: tsumugi dev did not answer")
                    time.sleep(0.1)  # real time: another process starts; bounded by the deadline
            created = _call(base + "/api/jobs", {"binding": "Greet", "payload": {"name": "x"}})
            job_id = str(created["id"]) if isinstance(created, dict) else ""
            time.sleep(2)  # real time: the first projection of a new job waits a second
            job_url = f"{base}/api/jobs/{urllib.parse.quote(job_id, safe='')}"
            script = Path(tmp) / "post.lua"
            script.write_text(POST_SCRIPT)
            print(f"GET  /api/jobs/:id,  1 connection : {_wrk(job_url, 1, args.seconds)}")
            print(f"GET  /api/jobs/:id, 50 connections: {_wrk(job_url, 50, args.seconds)}")
            print(f"POST /api/jobs,     50 connections: {_wrk(base + '/api/jobs', 50, args.seconds, script)}")
            stats = _call(base + "/api/stats")
            print(f"jobs by state after the run: {stats['byState'] if isinstance(stats, dict) else stats}")
        finally:
            server.terminate()
            server.wait(timeout=30)


if __name__ == "__main__":
    main()
