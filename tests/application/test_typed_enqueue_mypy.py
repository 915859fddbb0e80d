"""``mypy --strict`` catches a misspelt option and a wrong payload type (issue 14 item 3, ADR-0140).

Runs the real type checker on a small app; each line marked ``# BAD: <what>`` must be reported, and
nothing else may be.
"""

from __future__ import annotations

from pathlib import Path

from tests.mypy_marked import errors_by_mark

APP = """
from __future__ import annotations

import dataclasses
from typing import Any, TypedDict

from tsumugi import JobContext, Performer, define_tsumugi


@dataclasses.dataclass
class MailIn:
    to: str


class Ping(TypedDict):
    host: str


class SendMail(Performer[MailIn, None]):
    max_attempts = 5

    async def perform(self, payload: MailIn, ctx: JobContext) -> None:
        return None


class Pinger(Performer[Ping, None]):
    async def perform(self, payload: Ping, ctx: JobContext) -> None:
        return None


class Plain(Performer):
    async def perform(self, payload: Any, ctx: JobContext) -> None:
        return None


tsumugi = define_tsumugi(performers={"SendMail": SendMail, "Pinger": Pinger, "Plain": Plain})


async def fine(env: Any) -> None:
    await tsumugi.enqueue(env, SendMail, MailIn("a"), max_attempts=3, delay_ms=10, guarantee="at-most-once")
    await tsumugi.enqueue(env, Pinger, {"host": "h"})
    await tsumugi.enqueue(env, Pinger, Ping(host="h"))
    await tsumugi.enqueue(env, Plain, [1, 2, 3])
    await tsumugi.enqueue(env, binding="SendMail", payload={"to": "a"}, max_attempts=3, delay_ms=None)
    await tsumugi.enqueue(env, {"binding": "SendMail", "payload": {"to": "a"}}, priority=2)
    await tsumugi.jobs(env).enqueue(SendMail, MailIn("a"), timeout_ms=1_000)
    await tsumugi.jobs(env).enqueue("Plain", 1, unique_key="k")
    await tsumugi.enqueue_many(env, [{"binding": "Plain", "payload": 1}])


async def wrong(env: Any) -> None:
    await tsumugi.enqueue(env, SendMail, MailIn("a"), max_attemps=3)  # BAD: misspelt option
    await tsumugi.enqueue(env, binding="SendMail", payload={}, delay_ms="10")  # BAD: option type
    await tsumugi.enqueue(env, SendMail, "a@example.com")  # BAD: payload type
    await tsumugi.enqueue(env, SendMail, Ping(host="h"))  # BAD: another type's payload
    await tsumugi.enqueue(env, SendMail, MailIn("a"), guarantee="at-least-one")  # BAD: unknown guarantee
    await tsumugi.jobs(env).enqueue(SendMail, 42)  # BAD: payload type, positional form
"""


def test_mypy_strict_reports_exactly_the_bad_calls(tmp_path: Path) -> None:
    by_line = errors_by_mark(tmp_path, "typed_app.py", APP)
    assert 'Unexpected keyword argument "max_attemps"' in by_line["misspelt option"]
    assert 'did you mean "max_attempts"' in by_line["misspelt option"]
    assert 'matches argument types "Any", "str", "dict[Never, Never]", "str"' in by_line["option type"]
    assert 'matches argument types "Any", "type[SendMail]", "MailIn", "str"' in by_line["unknown guarantee"]
    for payload in ("payload type", "another type's payload", "payload type, positional form"):
        # mypy's words for a payload that is not the performer's PayloadT
        assert 'Cannot infer value of type parameter "PayloadT"' in by_line[payload], by_line[payload]
