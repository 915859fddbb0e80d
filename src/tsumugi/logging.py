"""Tsumugi's log lines: a job's lifecycle as ``key=value`` text or JSON, and ``configure_logging``.

Every logger is under ``tsumugi``. A job's lifecycle goes to ``tsumugi.jobs``: ``job enqueued``,
``job dispatched``, ``job started``, ``job succeeded`` (with ``duration_ms``), ``job retrying`` (``in_ms``,
``attempt`` of ``max_attempts``), ``job failed``, ``job cancelled`` and ``job stalled`` at INFO, and each
shard tick at DEBUG. A line reads ``job enqueued binding=SendMail job=SendMail#0:01J... attempt=1``.

``configure_logging()`` sends the ``tsumugi`` loggers to stderr as text, or as one JSON object a line with
``format="json"`` (or ``TSUMUGI_LOG_FORMAT=json``); ``tsumugi dev --log-format json`` writes its lines so too.
Without it, the lines go wherever the application's own logging configuration sends them.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Final, Literal, TextIO

__all__ = [
    "JOBS_LOGGER",
    "LOG_FORMAT_ENV",
    "JsonFormatter",
    "LogFormat",
    "configure_logging",
    "jobs_log",
    "log_event",
    "log_handler",
]

JOBS_LOGGER: Final = "tsumugi.jobs"
LOG_FORMAT_ENV: Final = "TSUMUGI_LOG_FORMAT"
TEXT_FORMAT: Final = "%(asctime)s %(levelname)s %(name)s: %(message)s"
LogFormat = Literal["text", "json"]
jobs_log: Final = logging.getLogger(JOBS_LOGGER)
_EVENT: Final = "tsumugi_event"
_FIELDS: Final = "tsumugi_fields"
_HANDLER_NAME: Final = "tsumugi.configure_logging"
_BARE: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789#:._-/+@")


def _text_value(value: object) -> str:
    """A value as logfmt writes it: bare when it is plain, else quoted as a JSON string."""
    text = value if isinstance(value, str) else json.dumps(value) if value is None else str(value)
    if text and all(char in _BARE for char in text):
        return text
    return json.dumps(text, ensure_ascii=False)


class _Line:
    """The message of an event, built only if a handler formats it (a disabled level costs nothing)."""

    __slots__ = ("event", "fields")

    def __init__(self, event: str, fields: Mapping[str, object]) -> None:
        self.event = event
        self.fields = fields

    def __str__(self) -> str:
        pairs = " ".join(f"{key}={_text_value(value)}" for key, value in self.fields.items())
        return f"{self.event} {pairs}" if pairs else self.event


def log_event(logger: logging.Logger, level: int, event: str, **fields: object) -> None:
    """Log ``event`` with ``fields``: ``key=value`` in the text, separate keys in JSON.

    Fields that are None are left out. Callers that log many events check ``logger.isEnabledFor`` once.
    """
    present = {key: value for key, value in fields.items() if value is not None}
    logger.log(level, _Line(event, present), extra={_EVENT: event, _FIELDS: present})


class JsonFormatter(logging.Formatter):
    """One JSON object a line: ``time``, ``level``, ``logger``, ``message``, and an event's fields."""

    def format(self, record: logging.LogRecord) -> str:
        at = datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")
        entry: dict[str, object] = {
            "time": at.replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
        }
        event = getattr(record, _EVENT, None)
        fields = getattr(record, _FIELDS, None)
        if isinstance(event, str) and isinstance(fields, Mapping):
            entry["message"] = event
            entry.update({key: value for key, value in fields.items() if key not in entry})
        else:
            entry["message"] = record.getMessage()
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


def log_handler(format: LogFormat | None = None, stream: TextIO | None = None) -> logging.Handler:
    """A stream handler (stderr) writing text or JSON lines; ``format`` None reads ``TSUMUGI_LOG_FORMAT``."""
    chosen = format or os.environ.get(LOG_FORMAT_ENV, "").strip().lower() or "text"
    if chosen not in ("text", "json"):
        raise ValueError(f"{LOG_FORMAT_ENV} must be text or json, not {chosen!r}")
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if chosen == "json" else logging.Formatter(TEXT_FORMAT))
    return handler


def configure_logging(
    format: LogFormat | None = None,
    level: int | str = logging.INFO,
    *,
    stream: TextIO | None = None,
) -> logging.Handler:
    """Send the ``tsumugi`` loggers to ``stream`` (stderr) at ``level``, as text or JSON; returns the handler.

    ``format`` None reads ``TSUMUGI_LOG_FORMAT`` (``text`` or ``json``; default ``text``). The lines then go
    to this handler only, not on to the root logger's; calling it again replaces the handler it added.
    """
    handler = log_handler(format, stream)
    handler.set_name(_HANDLER_NAME)
    logger = logging.getLogger("tsumugi")
    for old in [h for h in logger.handlers if h.get_name() == _HANDLER_NAME]:
        logger.removeHandler(old)
    logger.addHandler(handler)
    logger.setLevel(level.upper() if isinstance(level, str) else level)
    logger.propagate = False
    return handler
