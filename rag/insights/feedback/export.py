"""`candor feedback export --csv`: votes with their answers as CSV, user ids pseudonymised.

A plain hash of a user id is no protection: anyone holding the workspace's user list hashes every
id and matches. So by default (`CANDOR_EXPORT_USERS=keyed`) the user column is an HMAC-SHA256 of the
id under a secret key (hex, first 16 characters): stable across exports, so one person's votes can
be grouped, but not reversible without the key. The key is `CANDOR_EXPORT_KEY`, or one made once at
random in `<CANDOR_HOME>/export.key` (mode 0600) and reused. `plain` exports the ids as given;
`omit` drops the column.

The CSV is written with the `csv` module (RFC 4180 quoting: commas, quotes and line breaks in a
question, an answer or a comment survive the round trip). Text anyone can write (question, answer,
reason) is defused for spreadsheets (`rag.insights.spreadsheet`): a cell a spreadsheet would run as a formula
starts with a `'`.
"""

from __future__ import annotations

import asyncio
import csv
import hashlib
import hmac
import io
import logging
import os
import secrets
import stat
import tempfile
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from sqlalchemy.ext.asyncio import AsyncEngine

from rag.config import Settings
from rag.errors import ConfigError
from rag.insights.feedback.rows import VoteRow, votes
from rag.insights.spreadsheet import defuse

log = logging.getLogger("candor.export")

UserMode = Literal["keyed", "plain", "omit"]

COLUMNS = (
    "trace_id",
    "created_at",
    "platform",
    "question",
    "answer",
    "route",
    "rating",
    "reason",
    "user",
    "voted_at",
)
KEY_FILE = "export.key"
KEY_BYTES = 32
PSEUDONYM_LENGTH = 16


async def export_csv(engine: AsyncEngine, settings: Settings, since: datetime, until: datetime) -> tuple[str, int]:
    """The votes of `[since, until)` as CSV, users as `settings.export_users` says; and how many."""
    rows = await votes(engine, since, until)
    key = await asyncio.to_thread(export_key, settings) if settings.export_users == "keyed" else None
    return render_csv(rows, settings.export_users, key), len(rows)


def pseudonym(key: bytes, user: str) -> str:
    """HMAC-SHA256 of the user id under `key`, hex, first 16 characters (64 bits: no collisions in
    any realistic user list)."""
    return hmac.new(key, user.encode("utf-8"), hashlib.sha256).hexdigest()[:PSEUDONYM_LENGTH]


def columns(mode: UserMode) -> tuple[str, ...]:
    return tuple(c for c in COLUMNS if mode != "omit" or c != "user")


def render_csv(rows: Sequence[VoteRow], mode: UserMode, key: bytes | None = None) -> str:
    """The export as CSV text, a header row first. `key` is needed, and only used, in `keyed` mode."""
    if mode == "keyed" and key is None:
        raise ValueError("the keyed user column needs a key")
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer)
    writer.writerow(columns(mode))
    for row in rows:
        cells: list[str] = [
            row.trace_id,
            _utc(row.created_at),
            row.platform or "",
            defuse(row.question),
            defuse(row.answer_text),
            row.route,
            row.rating,
            defuse(row.reason or ""),
        ]
        if mode != "omit":
            cells.append(_user(row.user, mode, key))
        cells.append(_utc(row.voted_at))
        writer.writerow(cells)
    return buffer.getvalue()


def _utc(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat()


def _user(user: str | None, mode: UserMode, key: bytes | None) -> str:
    if user is None:
        return ""  # an anonymous vote stays anonymous
    if mode == "plain":
        return user
    assert key is not None
    return pseudonym(key, user)


def export_key(settings: Settings) -> bytes:
    """The key of the keyed user column: CANDOR_EXPORT_KEY, else the key file (made on first use)."""
    if settings.export_key is not None:
        return settings.export_key.get_secret_value().encode("utf-8")
    return key_file(settings.home / KEY_FILE)


def key_file(path: Path) -> bytes:
    """The key stored at `path`, created at random first if there is none.

    Created atomically: the key is written to a private temporary file, then hard-linked into place,
    which fails if another process got there first; then that process's key is used. A reader never
    sees a half-written key, and two first exports never end up with two keys.
    """
    if not path.exists():
        _create_key(path)
    try:
        content = path.read_text(encoding="ascii").strip()
        key = bytes.fromhex(content)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path} does not hold an export key ({exc}); remove it to make a new one") from exc
    if len(key) < 16:
        raise ConfigError(f"{path} holds a key of {len(key)} bytes, fewer than 16; remove it to make a new one")
    if stat.S_IMODE(path.stat().st_mode) & 0o077:
        log.warning("the export key %s is readable by others; it should be mode 0600", path, extra={"path": str(path)})
    return key


def _create_key(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)  # mode 0600
    try:
        with os.fdopen(descriptor, "w", encoding="ascii") as handle:
            handle.write(secrets.token_hex(KEY_BYTES) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(temporary, path)
        except FileExistsError:
            pass  # another export made the key first: use that one
        else:
            log.info("made a new export key in %s", path, extra={"path": str(path)})
    finally:
        Path(temporary).unlink(missing_ok=True)
