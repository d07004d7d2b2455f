"""`candor serve` with Teams as real processes: a replica killed mid-answer is replaced by another that
answers the question once; SIGTERM drains an answer in flight. The servers run anonymous (local
development: `CANDOR_TEAMS=true`, no `MICROSOFT_APP_ID`) and send to a fake Bot Connector in this
process (`ThreadedFakeConnector`), named in each activity's `serviceUrl`.

The turn only claims the question; the answer is made afterwards, with a typing indicator that runs
beside it (a held typing indicator does not hold the answer up). So to catch a replica mid-answer,
the test holds the answer itself: it locks the `chunks` table, and the replica's retrieval waits on
that lock (a slow database, as far as the replica can tell) until the test lets go.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.bot_connector import Call, ThreadedFakeConnector
from tests.fakes.teams_activities import TENANT_ID, personal_message
from tests.integration.cli.test_cli_answers import free_port
from tests.integration.cli.test_processes import (
    QUESTION,
    fresh_home,
    home_with_docs,
    open_db,
    served_port,
    stop,
    wait_until,
)
from tests.integration.cli.test_processes import serve as serve_candor

pytestmark = pytest.mark.slow

__all__ = ["fresh_home", "home_with_docs"]

LEASE_SECONDS = 2


@pytest.fixture
def fake() -> Iterator[ThreadedFakeConnector]:
    with ThreadedFakeConnector() as connector:
        yield connector


def serve(home: Path) -> subprocess.Popen[str]:
    return serve_candor(home, free_port(), {"CANDOR_TEAMS": "true", "CANDOR_EVENT_LEASE_SECONDS": str(LEASE_SECONDS)})


def post_activity(port: int, activity: dict[str, Any]) -> int:
    """POST an activity to /api/messages, as the Bot Connector does; the status, which must come at once."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/messages",
        data=json.dumps(activity).encode(),
        headers={"Content-Type": "application/json"},
    )
    started = time.monotonic()
    with urllib.request.urlopen(request, timeout=10) as response:
        status = int(response.status)
    assert time.monotonic() - started < 5, "the turn should only claim the question, not answer it"
    return status


@contextmanager
def answers_held(home: Path) -> Iterator[Callable[[], bool]]:
    """Lock `chunks` until the block ends: retrieval, so every answer, waits. Yields a check that
    some other session (a replica's answer) is waiting on the lock."""
    with open_db(home) as conn, conn.transaction():
        conn.execute("LOCK TABLE chunks IN ACCESS EXCLUSIVE MODE")

        def waiting() -> bool:
            row = conn.execute("SELECT count(*) FROM pg_locks WHERE relation = 'chunks'::regclass AND NOT granted")
            found = row.fetchone()
            return found is not None and found[0] > 0

        yield waiting


def messages(fake: ThreadedFakeConnector) -> list[Call]:
    """The message activities delivered to the fake (not the typing indicators)."""
    return [call for call in fake.calls if call.delivered and call.body.get("type") == "message"]


def ledger_row(home: Path, activity: dict[str, Any]) -> dict[str, Any]:
    key = f"{TENANT_ID}/{activity['conversation']['id']}/{activity['id']}"
    with open_db(home) as conn:
        cursor = conn.execute(
            "SELECT status, attempt, reply FROM platform_events WHERE platform = 'teams' AND key = %s", (key,)
        )
        row = cursor.fetchone()
    assert row is not None, f"no ledger row for {key}"
    return {"status": row[0], "attempt": row[1], "reply": row[2]}


def listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def test_a_question_whose_replica_is_killed_mid_answer_is_answered_by_the_next(
    home_with_docs: Path, fake: ThreadedFakeConnector
) -> None:
    question = personal_message(QUESTION, conversation_id="a:killed-replica", service_url=fake.service_url)
    first = serve(home_with_docs)
    try:
        with answers_held(home_with_docs) as waiting:
            assert 200 <= post_activity(served_port(first), question) < 300  # claimed in Postgres, turn over
            fake.wait_for_sync(kind="typing", timeout=30)  # the answer is under way ...
            wait_until(waiting, "the first replica's answer waits on the database")
            first.kill()  # ... when the replica dies (a deploy, a scale-down, the OOM killer)
            first.wait(timeout=30)
    finally:
        first.kill()
        first.wait(timeout=30)
    assert messages(fake) == []

    second = serve(home_with_docs)  # the first one's lease runs out while this one starts
    try:
        (answer,) = fake.wait_for_sync(timeout=60)
        assert answer.conversation_id == "a:killed-replica"
        assert "25 days" in json.dumps(answer.body)
        time.sleep(LEASE_SECONDS + 1)  # past another lease: nobody answers it a second time
        assert messages(fake) == [answer]
    finally:
        code, stderr = stop(second)
    assert code == 0, stderr
    row = ledger_row(home_with_docs, question)
    assert (row["status"], row["attempt"]) == ("answered", 2), row
    assert row["reply"]["activity_ids"] == [answer.new_id], row


def test_sigterm_lets_the_answer_in_flight_finish(home_with_docs: Path, fake: ThreadedFakeConnector) -> None:
    question = personal_message(QUESTION, conversation_id="a:drained-replica", service_url=fake.service_url)
    server = serve(home_with_docs)
    port = served_port(server)
    try:
        with answers_held(home_with_docs) as waiting:
            assert 200 <= post_activity(port, question) < 300
            fake.wait_for_sync(kind="typing", timeout=30)
            wait_until(waiting, "the answer waits on the database")
            server.send_signal(signal.SIGTERM)
            wait_until(lambda: not listening(port), "the server stopped listening")  # shutting down, answer unmade
        server.wait(timeout=90)  # the answer is made and sent while the server drains
    finally:
        code, stderr = stop(server)
    assert code == 0, stderr
    (answer,) = messages(fake)
    assert answer.conversation_id == "a:drained-replica" and "25 days" in json.dumps(answer.body)
    row = ledger_row(home_with_docs, question)
    assert (row["status"], row["attempt"]) == ("answered", 1), row
    assert row["reply"]["activity_ids"] == [answer.new_id], row
