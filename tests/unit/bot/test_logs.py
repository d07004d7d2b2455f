"""`bot.cli.logs.configure_logging`: text for people, one JSON object per line for log pipelines."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from bot.cli.logs import configure_logging


@pytest.fixture
def root_restored() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def test_json_lines_carry_the_fields_the_code_attaches(root_restored: None) -> None:
    stream = io.StringIO()
    configure_logging("INFO", "json", stream=stream)
    log = logging.getLogger("candor.slack")
    log.info("answered %s", "a question", extra={"trace_id": "7f3c", "platform": "slack", "route": "answered"})
    log.debug("not at INFO")
    try:
        raise RuntimeError("a defect ünïcode")
    except RuntimeError:
        log.exception("answering failed", extra={"key": "T1/C1/1.2"})

    first, second = (json.loads(line) for line in stream.getvalue().splitlines())
    assert first["message"] == "answered a question" and first["level"] == "INFO" and first["logger"] == "candor.slack"
    assert (first["trace_id"], first["platform"], first["route"]) == ("7f3c", "slack", "answered")
    moment = datetime.strptime(first["time"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    assert abs((datetime.now(UTC) - moment).total_seconds()) < 60  # UTC, whatever the machine's zone
    assert second["level"] == "ERROR" and second["key"] == "T1/C1/1.2"
    assert "RuntimeError: a defect ünïcode" in second["exc_info"]


def test_text_lines_are_for_people(root_restored: None) -> None:
    stream = io.StringIO()
    configure_logging("WARNING", "text", stream=stream)
    logging.getLogger("candor.web").warning("refused", extra={"remote": "10.0.0.9"})
    logging.getLogger("candor.web").info("quiet")
    assert stream.getvalue() == "WARNING candor.web: refused\n"
