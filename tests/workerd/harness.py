"""The repository's Worker running in the real workerd, started by ``scripts/workerd-dev`` (ADR-0129).

Everything here goes through what a user reaches: the Workers' HTTP ports. Job states are read back from
the REST API, which answers from D1, so a job counts as done only once the whole path ran: shard Durable
Object, its alarm, the Queue, the Python ``queue`` handler, the performer, the report and the projection.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

REPO_ROOT: Final = Path(__file__).resolve().parents[2]
SCRIPT: Final = REPO_ROOT / "scripts" / "workerd-dev"
OFFLINE_TOOL: Final = REPO_ROOT.parent / "shared" / "tools" / "workerd-pyodide" / "build-bundle"
BUNDLE_HOST: Final = "pyodide-capnp-bin.edgeworker.net"
TOKEN: Final = "workerd-suite-token"
READY_TIMEOUT_S: Final = 240.0
D1_BUSY_TRIES: Final = 5  # runs of a setup statement that meets the Worker's lock on its D1 file
SETTLE_TIMEOUT_S: Final = 45.0  # a job: alarm, Queue batch (1 s), performer, report, first projection (1 s)
TERMINAL: Final = frozenset({"COMPLETED", "FAILED", "CANCELLED", "STALLED"})
RUN_TERMINAL: Final = frozenset({"COMPLETED", "FAILED", "CANCELLED"})


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def why_workerd_cannot_run() -> str | None:
    """None when Python Workers can run here; else the reason, true of this machine."""
    if shutil.which("node") is None:
        return "node is not on PATH"
    if not (REPO_ROOT / "node_modules" / "wrangler").is_dir():
        return "node_modules is missing (scripts/setup installs it)"
    if OFFLINE_TOOL.is_file():
        return None
    try:
        with socket.create_connection((BUNDLE_HOST, 443), timeout=3):
            return None
    except OSError:
        return f"no offline Pyodide bundle tool at {OFFLINE_TOOL} and {BUNDLE_HOST} is unreachable"


def skip_unless_workerd() -> None:
    """Skip, saying why, where Python Workers cannot run; fail instead under TSUMUGI_REQUIRE_WORKERD=1."""
    import pytest

    reason = why_workerd_cannot_run()
    if reason is None:
        return
    if os.environ.get("TSUMUGI_REQUIRE_WORKERD") == "1":
        pytest.fail(f"the workerd suite must run here (TSUMUGI_REQUIRE_WORKERD=1), but {reason}")
    pytest.skip(f"Python Workers cannot run in workerd here: {reason}")


@dataclass
class Answer:
    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return self.body if isinstance(self.body, str) else json.dumps(self.body)


def request(
    url: str,
    method: str = "GET",
    body: Any = None,
    *,
    token: str | None = TOKEN,
    headers: dict[str, str] | None = None,
    raw: bytes | None = None,
    timeout_s: float = 60.0,
) -> Answer:
    """One HTTP request; JSON bodies are decoded, anything else is returned as text."""
    sent = {"content-type": "application/json", **(headers or {})}
    if token is not None:
        sent["authorization"] = f"Bearer {token}"
    data = raw if raw is not None else None if body is None else json.dumps(body).encode("utf-8")
    call = urllib.request.Request(url, data=data, method=method, headers=sent)
    try:
        with urllib.request.urlopen(call, timeout=timeout_s) as response:
            return _answer(response.status, response.read(), dict(response.headers))
    except urllib.error.HTTPError as error:
        return _answer(error.code, error.read(), dict(error.headers))


def _answer(status: int, payload: bytes, headers: dict[str, str]) -> Answer:
    text = payload.decode("utf-8", errors="replace")
    try:
        return Answer(status, json.loads(text) if text else None, headers)
    except ValueError:
        return Answer(status, text, headers)


def quoted(identifier: str) -> str:
    return urllib.parse.quote(identifier, safe="")  # ids carry '#' and ':'


class Workers:
    """The example Worker and its companion, as ``scripts/workerd-dev`` serves them."""

    def __init__(self, state_dir: Path, log_path: Path, token: str = TOKEN) -> None:
        self.port = free_port()
        self.companion_port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.companion_url = f"http://127.0.0.1:{self.companion_port}"
        self.log_path = log_path
        self.state_dir = state_dir
        self.started_at = time.monotonic()
        env = {**os.environ, "TSUMUGI_TOKEN": token, "NO_COLOR": "1", "FORCE_COLOR": "0"}
        self._log = log_path.open("w")
        command = [
            str(SCRIPT),
            "--port",
            str(self.port),
            "--companion-port",
            str(self.companion_port),
            "--persist-to",
            str(state_dir),
        ]
        self.process = subprocess.Popen(
            command,
            cwd=REPO_ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.ready_after_s = self._wait_ready()

    def _wait_ready(self) -> float:
        deadline = time.monotonic() + READY_TIMEOUT_S
        pending = {self.url + "/api/flows", self.companion_url + "/"}
        while pending:
            for url in sorted(pending):
                try:
                    request(url, timeout_s=120)
                    pending.discard(url)
                except OSError:
                    pass
            if not pending:
                break
            if self.process.poll() is not None or time.monotonic() > deadline:
                tail = self.log()[-4000:]
                self.close()
                raise RuntimeError(f"scripts/workerd-dev did not serve both Workers:\n{tail}")
            time.sleep(0.5)  # real time: another process works; bounded by the deadline (noqa: sleep-ok)
        return time.monotonic() - self.started_at

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")

    def close(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        self._log.close()

    # ------------------------------------------------------------------ calls a test makes

    def d1(self, sql: str) -> list[dict[str, Any]]:
        """Run SQL on the Worker's local D1 with ``wrangler d1 execute`` (test setup only).

        The running Worker writes the same file (its read model), and ``wrangler d1 execute`` waits for
        no lock: a statement that meets one of the Worker's writes is run again, a few times.
        """
        for _ in range(D1_BUSY_TRIES - 1):
            done = self._d1_execute(sql)
            if done.returncode == 0 or "SQLITE_BUSY" not in done.stdout + done.stderr:
                break
            time.sleep(0.2)  # real time: another process holds the file's lock  (noqa: sleep-ok)
        else:
            done = self._d1_execute(sql)
        assert done.returncode == 0, done.stdout + done.stderr
        results: list[dict[str, Any]] = json.loads(done.stdout)[0]["results"]
        return results

    def _d1_execute(self, sql: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                "node",
                str(REPO_ROOT / "node_modules" / "wrangler" / "bin" / "wrangler.js"),
                "d1",
                "execute",
                "TSUMUGI_DB",
                "--local",
                "--persist-to",
                str(self.state_dir),
                "--json",
                "--command",
                sql,
            ],
            cwd=REPO_ROOT,
            env={**os.environ, "WRANGLER_SEND_METRICS": "false", "CLOUDFLARE_CF_FETCH_ENABLED": "false"},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    def api(self, method: str, path: str, body: Any = None, **options: Any) -> Answer:
        return request(self.url + path, method, body, **options)

    def enqueue(self, binding: str, payload: Any, **fields: Any) -> str:
        """``POST /api/jobs``; returns the id of the created job."""
        answer = self.api("POST", "/api/jobs", {"binding": binding, "payload": payload, **fields})
        assert answer.status == 201, answer
        return str(answer.body["id"])

    def companion_enqueue(self, input: dict[str, Any]) -> str:
        """Through the companion Worker: ``create_client(...).enqueue`` over its ``JOB_SHARD`` binding."""
        answer = request(self.companion_url + "/enqueue", "POST", input)
        assert answer.status == 201, answer
        return str(answer.body["id"])

    def job(self, job_id: str) -> dict[str, Any] | None:
        answer = self.api("GET", f"/api/jobs/{quoted(job_id)}")
        if answer.status == 404:
            return None  # not projected yet
        assert answer.status == 200, answer
        job: dict[str, Any] = answer.body["job"]
        return job

    def wait_job(
        self,
        job_id: str,
        states: frozenset[str] = TERMINAL,
        timeout_s: float = SETTLE_TIMEOUT_S,
        **where: Any,
    ) -> dict[str, Any]:
        """The job once the read model shows it in one of ``states`` (and matching ``where``)."""
        return self._wait(lambda: self.job(job_id), states, timeout_s, f"job {job_id}", where)

    def run(self, run_id: str) -> dict[str, Any] | None:
        answer = self.api("GET", f"/api/runs/{quoted(run_id)}")
        if answer.status == 404:
            return None
        assert answer.status == 200, answer
        found: dict[str, Any] = answer.body
        return found

    def wait_run(
        self, run_id: str, states: frozenset[str] = RUN_TERMINAL, timeout_s: float = 90.0
    ) -> dict[str, Any]:
        def current() -> dict[str, Any] | None:
            found = self.run(run_id)
            return None if found is None else {**found["run"], "nodes": found["nodes"]}

        return self._wait(current, states, timeout_s, f"run {run_id}", {})

    def _wait(self, read: Any, states: frozenset[str], timeout_s: float, what: str, where: Any) -> Any:
        deadline = time.monotonic() + timeout_s
        last: Any = None
        while time.monotonic() < deadline:
            last = read()
            if (
                last is not None
                and last["state"] in states
                and all(last.get(k) == v for k, v in where.items())
            ):
                return last
            time.sleep(0.25)  # real time: the Workers do the work; bounded by the deadline (noqa: sleep-ok)
        raise AssertionError(f"{what} did not reach {sorted(states)} {where or ''} in {timeout_s}s: {last}")
