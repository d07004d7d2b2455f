"""How a `candor` process writes its log: one line per record on stderr, as text or as JSON.

`CANDOR_LOG_FORMAT=json` writes each record as one JSON object (python-json-logger) with `time`
(ISO 8601, UTC), `level`, `logger` and `message`, plus every field the code attaches with
``extra=`` (trace id, platform, route, key, remote, ...), so that a log pipeline can filter and
count without parsing sentences. Exceptions go in `exc_info` as text. `text` (the default) is the
line a person reads in a terminal. Secrets are never attached to records (rag/config/ keeps
them as `SecretStr`).
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Literal, TextIO

from pythonjsonlogger.json import JsonFormatter

LogFormat = Literal["text", "json"]
TEXT = "%(levelname)s %(name)s: %(message)s"


def configure_logging(level: str, log_format: LogFormat, *, stream: TextIO | None = None) -> None:
    """The root logger writes `level` and above to `stream` (stderr) in `log_format`; earlier
    handlers are replaced, so a process configures its log once, whoever called first."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(json_formatter() if log_format == "json" else logging.Formatter(TEXT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)


def json_formatter() -> logging.Formatter:
    formatter = JsonFormatter(
        "%(asctime)s %(levelname)s %(name)s %(message)s",
        rename_fields={"asctime": "time", "levelname": "level", "name": "logger"},
        datefmt="%Y-%m-%dT%H:%M:%SZ",
        json_ensure_ascii=False,
    )
    formatter.converter = time.gmtime
    return formatter
