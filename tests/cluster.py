"""Several `candor serve` replicas on one standalone Postgres, with Slack, Teams and a model writer
faked on 127.0.0.1: the production shape, for the fault suite (tests/integration/faults/ and
benchmarks/faults.py).

- Postgres: a standalone server on a TCP port (tests/standalone_postgres.py), the sample handbook
  ingested into it by `candor ingest`, as a team with an existing Postgres would;
- the fakes run in this process, each on its own thread: the Slack Web API, the Bot Connector, and
  an OpenAI-compatible writer (`answer_from`: grounded drafts) answering `writer_delay` seconds late;
- each replica is `candor serve` in its own process with its own home (its spool), all on the same
  database, answering Slack over HTTP and Teams (anonymous: loopback only);
- faults: `restart_postgres()`, `Replica.kill()` then `Replica.start()` on the same port,
  `writer.down()` / `writer.up()`.

`Deliverer` plays the load balancer and the platforms' delivery: it posts a signed Slack event or
a Teams activity to a replica, moves on to the next replica when one refuses the connection, and
retries an event Slack would retry (a non-200 or no answer within 3 s) with `X-Slack-Retry-Num`.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
import zlib
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import aiohttp

from bot.slack.blocks import FEEDBACK_UP
from tests.fakes.bot_connector import Call as TeamsCall
from tests.fakes.bot_connector import ThreadedFakeConnector
from tests.fakes.openai_server import FakeOpenAI, ThreadedFakeOpenAI
from tests.fakes.slack_api import Call as SlackCall
from tests.fakes.slack_api import ThreadedFakeSlack
from tests.fakes.slack_events import app_mention, block_action, event_callback, form_body, json_body, signed_headers
from tests.fakes.teams_activities import feedback_invoke, personal_message
from tests.fakes.writers import Models, answer_from
from tests.standalone_postgres import Server, free_port, primary

REPO = Path(__file__).resolve().parents[1]
HANDBOOK = REPO / "sample" / "handbook"
KB = "handbook"
SECRET = "cluster-signing-secret"
WRITER_MODEL = "fake-writer"
SLACK_RETRY_DELAYS = (1.0, 5.0, 15.0)
"""Seconds before Slack's three retries of an event it could not deliver. Slack's own schedule is
about immediately, 1 minute and 5 minutes; shortened so that a run takes minutes."""
SLACK_ACK_TIMEOUT = 3.0

Platform = Literal["slack", "teams"]


def _clean_environment() -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("CANDOR_", "SLACK_", "MICROSOFT_", "OPENAI_"))}
    return {**keep, "HF_HUB_OFFLINE": "1"}


@dataclass
class Replica:
    """One `candor serve` process; started again on the same port after a kill."""

    name: str
    home: Path
    port: int
    env: dict[str, str]
    process: subprocess.Popen[bytes] | None = None
    starts: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log(self) -> Path:
        return self.home / f"serve-{self.starts}.log"

    def start(self, wait: bool = True) -> None:
        self.starts += 1
        self.home.mkdir(parents=True, exist_ok=True)
        with self.log.open("wb") as stderr:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "bot.cli", "serve", "--port", str(self.port)],
                env={**_clean_environment(), "CANDOR_HOME": str(self.home), **self.env},
                cwd=REPO,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
            )
        if wait:
            self.wait_healthy()

    def wait_healthy(self, within: float = 180.0) -> None:
        deadline = time.monotonic() + within
        while True:
            try:
                with urllib.request.urlopen(f"{self.url}/healthz", timeout=5):
                    return
            except OSError:
                assert self.process is not None
                if self.process.poll() is not None:
                    raise RuntimeError(f"{self.name} exited:\n{self.log.read_text(errors='replace')[-4000:]}") from None
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{self.name} did not come up; its log: {self.log}") from None
                time.sleep(0.2)

    def kill(self) -> None:
        """SIGKILL: no drain, no goodbye (the OOM killer, a lost node)."""
        assert self.process is not None
        self.process.kill()
        self.process.wait(timeout=30)

    def stop(self) -> int:
        """SIGTERM (the answers in flight drain); the exit code."""
        if self.process is None or self.process.poll() is not None:
            return self.process.returncode if self.process else 0
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()

    def errors(self) -> list[str]:
        """The ERROR and CRITICAL lines of every start's log."""
        lines: list[str] = []
        for log in sorted(self.home.glob("serve-*.log")):
            lines += [
                line for line in log.read_text(errors="replace").splitlines() if "ERROR" in line or "CRITICAL" in line
            ]
        return lines


@dataclass
class Cluster:
    """Postgres, the three fakes and the replicas; a context manager (`cluster(...)`)."""

    folder: Path
    postgres: Server
    slack: ThreadedFakeSlack
    teams: ThreadedFakeConnector
    writer: ThreadedFakeOpenAI
    replicas: list[Replica] = field(default_factory=list)

    @property
    def database_url(self) -> str:
        return self.postgres.url

    def restart_postgres(self) -> float:
        """Stop the server (fast: sessions are cut) and start it again; the seconds it was away."""
        started = time.monotonic()
        self.postgres.stop()
        self.postgres.start()
        return time.monotonic() - started

    def sql(self, statement: str) -> list[list[str]]:
        out = self.postgres.sql(statement)
        return [row.split("|") for row in out.splitlines() if row]

    def count(self, statement: str) -> int:
        return int(self.postgres.sql(statement) or 0)


def replica_env(cluster: Cluster, folder: Path, lease_seconds: float) -> dict[str, str]:
    policy = folder / "access.yaml"
    policy.write_text(
        f"- platform: slack\n  knowledge_bases: [{KB}]\n- platform: teams\n  knowledge_bases: [{KB}]\n",
        encoding="utf-8",
    )
    return {
        "CANDOR_DATABASE_URL": cluster.database_url,
        "CANDOR_ACCESS_POLICY": str(policy),
        "SLACK_BOT_TOKEN": "xoxb-cluster",
        "SLACK_SIGNING_SECRET": SECRET,
        "SLACK_API_URL": cluster.slack.api_url,
        "CANDOR_TEAMS": "true",
        "CANDOR_WRITER": f"openai:{WRITER_MODEL}",
        # the model writes every answer: the faults to survive are a slow, dead or killed writer's
        "CANDOR_MODEL_ROLE": "write",
        "CANDOR_EXTRACTIVE_FIRST": "false",
        "OPENAI_BASE_URL": cluster.writer.fake.base_url,
        "OPENAI_API_KEY": "sk-cluster",
        "CANDOR_EVENT_LEASE_SECONDS": f"{lease_seconds:g}",
        "CANDOR_SPOOL_REPLAY_SECONDS": "2",
        "CANDOR_RATE_LIMIT_USER": "0",
        "CANDOR_RATE_LIMIT_CONVERSATION": "0",
    }


def ingest_handbook(database_url: str, home: Path) -> None:
    env = {**_clean_environment(), "CANDOR_HOME": str(home), "CANDOR_DATABASE_URL": database_url}
    done = subprocess.run(
        [sys.executable, "-m", "bot.cli", "ingest", str(HANDBOOK), "--kb", KB],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise RuntimeError(f"candor ingest failed:\n{done.stdout}\n{done.stderr}")


@contextmanager
def cluster(
    folder: Path, *, replicas: int = 3, writer_delay: float = 0.5, lease_seconds: float = 10.0, **extra: str
) -> Iterator[Cluster]:
    """The whole set-up, torn down on the way out (replicas with SIGTERM, then the fakes and Postgres)."""
    folder.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        postgres = primary(folder / "postgres")
        stack.callback(postgres.stop)
        slack = stack.enter_context(ThreadedFakeSlack())
        teams = stack.enter_context(ThreadedFakeConnector())
        fake = FakeOpenAI()
        fake.delay = writer_delay
        fake.responder = Models(writer=answer_from)
        writer = ThreadedFakeOpenAI(fake)
        stack.enter_context(writer)
        made = Cluster(folder, postgres, slack, teams, writer)
        ingest_handbook(postgres.url, folder / "ingest-home")
        env = {**replica_env(made, folder, lease_seconds), **extra}
        for i in range(replicas):
            made.replicas.append(Replica(f"replica-{i + 1}", folder / f"replica-{i + 1}", free_port(), env))
        for replica in made.replicas:
            replica.start(wait=False)
        for replica in made.replicas:
            replica.wait_healthy()
        try:
            yield made
        finally:
            for replica in made.replicas:
                replica.stop()


# --- delivery: the load balancer and the platforms ----------------------------------------------------

_clock = itertools.count()


def fresh_ts() -> str:
    micros = time.time_ns() // 1000 + next(_clock)
    return f"{micros // 1_000_000}.{micros % 1_000_000:06d}"


@dataclass
class Asked:
    """One question as a user asked it, and what happened to it."""

    n: int
    platform: Platform
    key: str
    """Slack: the message ts (the answer's thread_ts); Teams: the conversation id."""
    text: str
    user: str
    channel: str
    sent: float = 0.0
    acked: float | None = None
    statuses: list[int | str] = field(default_factory=list)
    """Each delivery attempt's HTTP status, or "refused" (no replica took it), "timeout" or "cut"."""
    redelivered: bool = False


@dataclass
class Voted:
    key: str
    platform: Platform
    status: int | str
    sent: float


class Deliverer:
    """Posts to the replicas as a load balancer would (the next replica when one refuses the
    connection) and as the platforms would (Slack retries what it could not deliver)."""

    def __init__(self, replicas: Sequence[Replica], service_url: str) -> None:
        self.urls = [r.url for r in replicas]
        self.service_url = service_url
        self._next = itertools.count()
        self.session: aiohttp.ClientSession | None = None
        self.durations_ms: list[float] = []
        """Each delivery of a question that got an HTTP answer: from sending to the answer (the ack)."""

    async def __aenter__(self) -> Deliverer:
        self.session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30))
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.session is not None
        await self.session.close()

    async def _post(
        self, path: str, data: bytes, headers: dict[str, str], within: float, *, timed: bool = True
    ) -> int | str:
        """One delivery through the load balancer: the first replica that takes the connection."""
        assert self.session is not None
        start = next(self._next)
        for i in range(len(self.urls)):
            url = self.urls[(start + i) % len(self.urls)] + path
            sent = time.monotonic()
            try:
                async with self.session.post(
                    url, data=data, headers=headers, timeout=aiohttp.ClientTimeout(total=within)
                ) as response:
                    await response.read()
                    if timed:
                        self.durations_ms.append(1000 * (time.monotonic() - sent))
                    return response.status
            except aiohttp.ClientConnectorError:
                continue  # refused: that replica is down, the balancer tries the next
            except TimeoutError:
                return "timeout"
            except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError):
                return "cut"  # the replica died with the request in hand
        return "refused"

    async def ask(self, asked: Asked) -> None:
        if asked.platform == "slack":
            await self._ask_slack(asked)
        else:
            await self._ask_teams(asked)

    async def _ask_slack(self, asked: Asked) -> None:
        event = app_mention(asked.text, user=asked.user, channel=asked.channel, ts=asked.key)
        body = json_body(event_callback(event, event_id=f"Ev{asked.key}"))
        asked.sent = time.monotonic()
        for attempt in range(len(SLACK_RETRY_DELAYS) + 1):
            headers = {**signed_headers(SECRET, body), "Content-Type": "application/json"}
            if attempt:
                headers["X-Slack-Retry-Num"] = str(attempt)
                headers["X-Slack-Retry-Reason"] = "http_error"
            status = await self._post("/slack/events", body, headers, SLACK_ACK_TIMEOUT)
            asked.statuses.append(status)
            if status == 200:
                asked.acked = asked.acked or time.monotonic()
                return
            if attempt < len(SLACK_RETRY_DELAYS):
                await asyncio.sleep(SLACK_RETRY_DELAYS[attempt])

    async def redeliver(self, asked: Asked) -> None:
        """The platform delivers the same question again (Slack: a retry after a slow ack; Teams: a
        duplicate activity)."""
        asked.redelivered = True
        if asked.platform == "slack":
            event = app_mention(asked.text, user=asked.user, channel=asked.channel, ts=asked.key)
            body = json_body(event_callback(event, event_id=f"Ev{asked.key}"))
            headers = {**signed_headers(SECRET, body), "Content-Type": "application/json"}
            headers.update({"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"})
            asked.statuses.append(await self._post("/slack/events", body, headers, SLACK_ACK_TIMEOUT))
        else:
            asked.statuses.append(await self._post_teams(self._activity(asked)))

    def _activity(self, asked: Asked) -> dict[str, Any]:
        return personal_message(
            asked.text,
            conversation_id=asked.key,
            user_id=asked.user,
            activity_id=str(10**12 + zlib.crc32(asked.key.encode())),
            service_url=self.service_url,
        )

    async def _post_teams(self, activity: dict[str, Any], *, timed: bool = True) -> int | str:
        body = json.dumps(activity).encode()
        return await self._post("/api/messages", body, {"Content-Type": "application/json"}, 15.0, timed=timed)

    async def _ask_teams(self, asked: Asked) -> None:
        """The Bot Connector delivers an activity once; a failure is the user's "couldn't send"."""
        asked.sent = time.monotonic()
        status = await self._post_teams(self._activity(asked))
        asked.statuses.append(status)
        if isinstance(status, int) and 200 <= status < 300:
            asked.acked = time.monotonic()

    async def vote(self, asked: Asked, answer: SlackCall | TeamsCall) -> Voted:
        sent = time.monotonic()
        if asked.platform == "slack":
            assert isinstance(answer, SlackCall)
            trace_id = feedback_value(answer)
            payload = block_action(FEEDBACK_UP, trace_id, user=asked.user, channel=asked.channel)
            body = form_body(payload)
            headers = {**signed_headers(SECRET, body), "Content-Type": "application/x-www-form-urlencoded"}
            status = await self._post("/slack/events", body, headers, SLACK_ACK_TIMEOUT, timed=False)
        else:
            assert isinstance(answer, TeamsCall)
            invoke = feedback_invoke(
                str(answer.new_id), "like", conversation_id=asked.key, user_id=asked.user, service_url=self.service_url
            )
            status = await self._post_teams(invoke, timed=False)
        return Voted(asked.key, asked.platform, status, sent)


def feedback_value(call: SlackCall) -> str:
    """The trace id on the answer's 👍 button."""
    for block in call.params.get("blocks") or []:
        for element in block.get("elements") or []:
            if element.get("action_id") == FEEDBACK_UP:
                return str(element["value"])
    raise AssertionError(f"no feedback button on {call.params}")


def slack_answers(fake: ThreadedFakeSlack) -> dict[str, list[SlackCall]]:
    """Messages the bot posted in a thread, by the thread's ts."""
    found: dict[str, list[SlackCall]] = {}
    for call in fake.calls_to("chat.postMessage"):
        if call.status == 200 and call.params.get("thread_ts"):
            found.setdefault(str(call.params["thread_ts"]), []).append(call)
    return found


def teams_answers(fake: ThreadedFakeConnector) -> dict[str, list[TeamsCall]]:
    """Message activities delivered to a conversation (typing left out), by conversation id."""
    found: dict[str, list[TeamsCall]] = {}
    for call in sorted(fake.calls, key=lambda c: c.at):
        if call.delivered and call.body.get("type") == "message" and call.conversation_id:
            found.setdefault(call.conversation_id, []).append(call)
    return found


def new_question(n: int, platform: Platform, text: str) -> Asked:
    who = uuid.uuid4().hex[:10]
    if platform == "slack":
        return Asked(n, "slack", fresh_ts(), text, user=f"U{who.upper()}", channel=f"C{n % 40:04d}")
    return Asked(n, "teams", f"a:fault-{who}", text, user=f"29:fault-{who}", channel="")
