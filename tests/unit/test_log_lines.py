"""``tsumugi.logging``: key=value text, JSON lines, and ``configure_logging`` (ADR-0145)."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from tsumugi.logging import JOBS_LOGGER, JsonFormatter, configure_logging, log_event, log_handler


@pytest.fixture
def restore_tsumugi_logger() -> Iterator[None]:
    logger = logging.getLogger("tsumugi")
    saved = (list(logger.handlers), logger.level, logger.propagate)
    yield
    logger.handlers[:] = saved[0]
    logger.setLevel(saved[1])
    logger.propagate = saved[2]


def test_text_lines_are_key_value_and_quote_what_needs_it(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=JOBS_LOGGER)
    log = logging.getLogger(JOBS_LOGGER)
    log_event(
        log,
        logging.INFO,
        "job failed",
        binding="Mail",
        job="Mail#0:abc",
        attempt=3,
        run=None,
        error='a "b" c',
    )
    assert (
        caplog.records[0].getMessage()
        == 'job failed binding=Mail job=Mail#0:abc attempt=3 error="a \\"b\\" c"'
    )


def test_json_lines_carry_the_fields_as_keys() -> None:
    stream = io.StringIO()
    log = logging.getLogger("tsumugi.test_json_lines")
    handler = log_handler("json", stream)
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        log_event(log, logging.INFO, "job succeeded", binding="Mail", job="Mail#0:abc", duration_ms=12)
        log.warning("plain %s", "words")
    finally:
        log.removeHandler(handler)
    first, second = (json.loads(line) for line in stream.getvalue().splitlines())
    assert first["message"] == "job succeeded" and first["level"] == "INFO"
    assert (first["binding"], first["job"], first["duration_ms"]) == ("Mail", "Mail#0:abc", 12)
    assert first["logger"] == "tsumugi.test_json_lines" and first["time"].endswith("Z")
    assert second["message"] == "plain words" and second["level"] == "WARNING"
    assert isinstance(JsonFormatter().format(logging.makeLogRecord({"msg": "x"})), str)


def test_the_format_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TSUMUGI_LOG_FORMAT", "json")
    assert isinstance(log_handler().formatter, JsonFormatter)
    monkeypatch.setenv("TSUMUGI_LOG_FORMAT", "xml")
    with pytest.raises(ValueError, match="TSUMUGI_LOG_FORMAT must be text or json, not 'xml'"):
        log_handler()
    monkeypatch.delenv("TSUMUGI_LOG_FORMAT")
    assert not isinstance(log_handler().formatter, JsonFormatter)


@pytest.mark.usefixtures("restore_tsumugi_logger")
def test_configure_logging_replaces_its_handler_and_writes_each_line_once() -> None:
    first, second = io.StringIO(), io.StringIO()
    configure_logging("text", stream=first)
    configure_logging("text", "DEBUG", stream=second)
    logging.getLogger(JOBS_LOGGER).debug("tick")
    assert first.getvalue() == "" and second.getvalue().count("DEBUG tsumugi.jobs: tick") == 1
