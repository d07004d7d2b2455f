"""`candor serve` with Slack as real processes: a replica killed mid-answer is replaced by another that
answers the question; SIGTERM drains an answer in flight; Socket Mode connects to a local WebSocket
fake of Slack; the answering child process is restarted when it dies. The fake Web API runs in this
process (`ThreadedFakeSlack`), the servers (and their answering children) in others.
"""

from __future__ import annotations

import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.fakes.slack_api import ThreadedFakeSlack
from tests.fakes.slack_events import app_mention, event_callback, json_body, signed_headers
from tests.integration.cli.test_cli_answers import free_port
from tests.integration.cli.test_processes import QUESTION, fresh_home, home_with_docs, served_port, stop
from tests.integration.cli.test_processes import serve as serve_candor

pytestmark = pytest.mark.slow

__all__ = ["fresh_home", "home_with_docs"]

SECRET = "process-test-secret"


@pytest.fixture
def fake() -> Iterator[ThreadedFakeSlack]:
    with ThreadedFakeSlack() as slack:
        yield slack


def serve(home: Path, port: int, fake: ThreadedFakeSlack, **extra: str) -> subprocess.Popen[str]:
    env = {"SLACK_BOT_TOKEN": "xoxb-process-test", "SLACK_API_URL": fake.api_url, "CANDOR_EVENT_LEASE_SECONDS": "2"}
    return serve_candor(home, port, {**env, **extra})


def post_mention(port: int, mention: dict[str, object]) -> int:
    body = json_body(event_callback(mention))
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/slack/events", data=body, headers=signed_headers(SECRET, body)
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return int(response.status)


@pytest.mark.parametrize("answer_process", ["false", "true"])
def test_a_question_whose_replica_is_killed_mid_answer_is_answered_by_the_next(
    home_with_docs: Path, fake: ThreadedFakeSlack, answer_process: str
) -> None:
    # With an answering child the server is killed and the orphaned child gives the question up.
    fake.delay("reactions.add", 30, times=1)  # the first replica hangs on its first Slack call
    mode = {"CANDOR_SLACK_ANSWER_PROCESS": answer_process}
    first = serve(home_with_docs, free_port(), fake, SLACK_SIGNING_SECRET=SECRET, **mode)
    port = served_port(first)
    mention = app_mention(QUESTION, channel="C1")
    try:
        assert post_mention(port, mention) == 200  # claimed in Postgres, acknowledged
        fake.wait_for_sync("reactions.add", timeout=30)  # the answer is under way ...
    finally:
        first.kill()  # ... when the replica dies (a deploy, a scale-down, the OOM killer)
        first.wait(timeout=30)
    assert fake.calls_to("chat.postMessage") == []

    second = serve(home_with_docs, free_port(), fake, SLACK_SIGNING_SECRET=SECRET, **mode)
    try:
        (answer,) = fake.wait_for_sync("chat.postMessage", timeout=60)
        assert answer.params["channel"] == "C1" and answer.params["thread_ts"] == mention["ts"]
        assert "25 days" in str(answer.params["blocks"])
        time.sleep(3)  # past another lease: nobody answers it a second time
        assert len(fake.calls_to("chat.postMessage")) == 1
    finally:
        code, stderr = stop(second)
    assert code == 0, stderr


def test_sigterm_lets_the_answer_in_flight_finish(home_with_docs: Path, fake: ThreadedFakeSlack) -> None:
    fake.delay("reactions.add", 3, times=1)
    server = serve(home_with_docs, free_port(), fake, SLACK_SIGNING_SECRET=SECRET)
    port = served_port(server)
    mention = app_mention(QUESTION, channel="C2")
    assert post_mention(port, mention) == 200
    fake.wait_for_sync("reactions.add", timeout=30)
    code, stderr = stop(server)  # SIGTERM while the answer waits on Slack
    assert code == 0, stderr
    (answer,) = fake.calls_to("chat.postMessage")
    assert answer.params["thread_ts"] == mention["ts"] and "25 days" in str(answer.params["blocks"])


def test_socket_mode_receives_events_over_a_websocket_and_answers(
    home_with_docs: Path, fake: ThreadedFakeSlack
) -> None:
    server = serve(home_with_docs, free_port(), fake, SLACK_APP_TOKEN="xapp-process-test")
    try:
        fake.wait_for_socket_sync(timeout=30)
        mention = app_mention(QUESTION, channel="C3")
        envelope = fake.send_envelope_sync("events_api", event_callback(mention))
        fake.wait_for_ack_sync(envelope, timeout=30)
        (answer,) = fake.wait_for_sync("chat.postMessage", timeout=60)
        assert answer.params["thread_ts"] == mention["ts"] and "25 days" in str(answer.params["blocks"])
    finally:
        code, stderr = stop(server)
    assert code == 0, stderr


def test_the_answer_process_is_a_child_and_is_restarted_when_it_dies(
    home_with_docs: Path, fake: ThreadedFakeSlack
) -> None:
    server = serve(home_with_docs, free_port(), fake, SLACK_SIGNING_SECRET=SECRET, CANDOR_SLACK_ANSWER_PROCESS="true")
    port = served_port(server)
    try:
        (child,) = [p for p in psutil.Process(server.pid).children() if "slack-worker" in " ".join(p.cmdline())]
        child.kill()
        child.wait(timeout=30)
        deadline = time.monotonic() + 60
        while not [p for p in psutil.Process(server.pid).children() if "slack-worker" in " ".join(p.cmdline())]:
            assert time.monotonic() < deadline, "the answer process was not restarted"
            time.sleep(0.2)
        mention = app_mention(QUESTION, channel="C4")
        assert post_mention(port, mention) == 200
        (answer,) = fake.wait_for_sync("chat.postMessage", timeout=60)
        assert answer.params["thread_ts"] == mention["ts"] and "25 days" in str(answer.params["blocks"])
    finally:
        code, stderr = stop(server)
    assert code == 0, stderr
    assert "exited" in stderr and "starting another" in stderr
