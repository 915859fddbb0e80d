"""An app whose performer types are plain never imports pydantic (ADR-0140, ADR-0128).

The Python Worker cannot load pydantic-core, so typed payloads must work without it unless a type needs
it. A fresh interpreter defines dataclass, TypedDict and JSON-typed performers, enqueues through the
typed path, runs an attempt through the consumer, and must not have loaded pydantic.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

PROBE = textwrap.dedent(
    """
    import asyncio, dataclasses, sys
    from typing import Any, TypedDict

    from tsumugi import JobContext, Performer, define_tsumugi
    from tsumugi.execution import PerformersResolver, handle_batch


    @dataclasses.dataclass
    class MailIn:
        to: str
        tags: list[str] = dataclasses.field(default_factory=list)


    class Ping(TypedDict):
        host: str


    class SendMail(Performer[MailIn, dict[str, bool]]):
        max_attempts = 4
        cancel_on_timeout = True

        async def perform(self, payload: MailIn, ctx: JobContext) -> dict[str, bool]:
            assert isinstance(payload, MailIn)
            return {"sent": True}


    class Pinger(Performer):
        async def perform(self, payload: Ping, ctx: JobContext) -> MailIn:
            return MailIn(payload["host"])


    class Shard:
        def __init__(self) -> None:
            self.reports: list[Any] = []

        async def enqueue_many(self, inputs: Any, settings: Any = None) -> list[str]:
            return [f"{i['binding']}#0:j{n}" for n, i in enumerate(inputs)]

        async def report(self, job_id: str, outcome: Any) -> None:
            self.reports.append(outcome)


    class Namespace:
        def __init__(self) -> None:
            self.shard = Shard()

        def get(self, name: str) -> Shard:
            return self.shard


    class Message:
        def __init__(self, body: Any) -> None:
            self.body = body

        def ack(self) -> None:
            pass


    async def main() -> None:
        namespace = Namespace()
        env = {"JOB_SHARD": namespace, "TSUMUGI_DB": object(), "TSUMUGI_QUEUE": object()}
        app = define_tsumugi(performers={"SendMail": SendMail, "Pinger": Pinger})
        await app.enqueue(env, SendMail, MailIn("a"))
        await app.enqueue_many(env, [{"binding": Pinger, "payload": {"host": "h"}}])
        try:
            await app.enqueue(env, SendMail, {"to": 1})
        except ValueError:
            pass
        messages = [
            Message({"jobId": "SendMail#0:a", "binding": "SendMail", "attempt": 1, "payload": {"to": "a"}}),
            Message({"jobId": "Pinger#0:b", "binding": "Pinger", "attempt": 1, "payload": {"host": "h"}}),
            Message({"jobId": "SendMail#0:c", "binding": "SendMail", "attempt": 1, "payload": {}}),
        ]
        resolver = PerformersResolver(app.performers)
        await handle_batch(messages, env, resolver=resolver)
        reports = namespace.shard.reports
        assert sorted(report["ok"] for report in reports) == [False, True, True], reports


    asyncio.run(main())
    print(sorted(name for name in sys.modules if name.partition(".")[0] in ("pydantic", "pydantic_core")))
    """
)


def test_plain_typed_performers_never_import_pydantic() -> None:
    loaded = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=False)
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.strip() == "[]"
