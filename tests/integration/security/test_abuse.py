"""Abuse over real HTTP: floods, oversized bodies and histories, forged identities. Each gets a clear
refusal, nothing is lost, and everyone else is still served.

The floods run on the real pipeline with the real `QuestionLimits` in Postgres, its limit lowered to
2 questions per person so that a test need not ask 11; the window is an hour so that a test cannot
straddle two windows (tests/integration/tracking/test_limits.py covers the minute).
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp.test_utils import TestServer

from bot.server import build_app
from bot.slack.app import SlackAdapter
from bot.slack.config import SlackConfig
from bot.teams.app import TeamsAdapter, TeamsConfig
from bot.web.identity import AnonymousVisitors
from rag.runtime import Candor, build_answerer
from rag.store.postgres import KnowledgeBase
from rag.tracking.events import EventLedger
from rag.tracking.limits import QuestionLimits
from tests.fakes.bot_connector import FakeConnector
from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_events import event_callback, json_body, message, signed_headers
from tests.fakes.teams_activities import personal_message
from tests.fakes.teams_server import ingest_handbook
from tests.integration.tracking.test_limits import away_from_a_window_edge
from tests.serving import serve_adapter

QUESTION = "How much is the home office stipend?"
SECRET = "abuse-test-signing-secret"
HOUR = 3600


@pytest.fixture(scope="module")
async def handbook(candor: Candor) -> KnowledgeBase:
    return await ingest_handbook(candor, "abuse")


@pytest.fixture
async def core(candor: Candor, handbook: KnowledgeBase, tmp_path_factory: pytest.TempPathFactory) -> Candor:
    await away_from_a_window_edge(HOUR)
    policy = tmp_path_factory.mktemp("abuse") / "access.yaml"
    policy.write_text(
        "".join(f'- platform: {p}\n  knowledge_bases: ["{handbook.name}"]\n' for p in ("slack", "teams", "web")),
        encoding="utf-8",
    )
    settings = candor.settings.model_copy(update={"access_policy": policy})
    answerer = build_answerer(settings, candor.store, candor.embedder, candor.retriever, tracker=candor.tracker)
    limits = QuestionLimits(candor.store.engine, per_user=2, per_conversation=50, window_seconds=HOUR)
    return dataclasses.replace(candor, settings=settings, answerer=answerer, limits=limits)


# --- the chat page -------------------------------------------------------------------------------------


def visitor() -> aiohttp.ClientSession:
    """A browser on an address of its own (anywhere in 127.0.0.0/8: every one of them is this machine)."""
    octets = uuid.uuid4().bytes[:3]
    address = f"127.{octets[0]}.{octets[1]}.{max(octets[2], 1)}"
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(local_addr=(address, 0)))


@pytest.fixture
async def page(core: Candor) -> AsyncIterator[TestServer]:
    server = TestServer(build_app(core, chat=AnonymousVisitors()), host="127.0.0.1")
    await server.start_server()
    yield server
    await server.close()


async def test_a_flooding_browser_is_told_to_wait_and_shedding_its_cookie_does_not_help(
    core: Candor, page: TestServer
) -> None:
    """Anonymous visitors are counted by address too: a new cookie per request is still one visitor."""
    octets = uuid.uuid4().bytes[:3]
    flooder = f"127.{octets[0]}.{octets[1]}.{max(octets[2], 1)}"
    statuses = []
    for _ in range(4):
        connector = aiohttp.TCPConnector(local_addr=(flooder, 0))
        async with aiohttp.ClientSession(connector=connector) as fresh:  # a new cookie each time
            response = await fresh.post(page.make_url("/api/ask"), json={"question": QUESTION})
            statuses.append((response.status, await response.json(), response.headers.get("Retry-After")))
    assert [s for s, _, _ in statuses] == [200, 200, 429, 429]
    _, refused, retry_after = statuses[2]
    assert "you have asked more than 2 questions" in refused["error"] and "try again in" in refused["error"]
    assert retry_after is not None and 1 <= int(retry_after) <= HOUR
    assert "$500" in statuses[0][1]["answer"]["text"]
    async with visitor() as someone_else:  # another visitor is served meanwhile
        response = await someone_else.post(page.make_url("/api/ask"), json={"question": QUESTION})
        assert response.status == 200 and "$500" in (await response.json())["answer"]["text"]


async def test_oversized_bodies_histories_and_questions_get_clear_refusals_and_the_page_keeps_serving(
    page: TestServer,
) -> None:
    async with visitor() as session:
        url = page.make_url("/api/ask")
        huge = json.dumps({"question": QUESTION, "history": [{"text": "x" * 3000}] * 40}).encode()
        oversized = await session.post(url, data=huge, headers={"Content-Type": "application/json"})
        assert oversized.status == 413 and "too large" in (await oversized.json())["error"]
        long_history = await session.post(url, json={"question": QUESTION, "history": [{"text": "hi"}] * 500})
        assert long_history.status == 400 and "at most the latest 20" in (await long_history.json())["error"]
        long_question = await session.post(url, json={"question": "why? " * 2000})
        assert long_question.status == 400 and "too long" in (await long_question.json())["error"]
        many = " ".join(f"What is the price of plan {n}?" for n in range(12))
        parts = await session.post(url, json={"question": many})
        assert parts.status == 400 and "ask at most 8 at a time" in (await parts.json())["error"]
        forged = await session.post(url, json={"question": QUESTION, "user": "U0ADMIN"})
        assert forged.status == 400 and '"user" is not accepted' in (await forged.json())["error"]
        served = await session.post(url, json={"question": QUESTION})  # the second question counted (the 8 parts)
        assert served.status == 200 and "$500" in (await served.json())["answer"]["text"]


# --- Slack ---------------------------------------------------------------------------------------------


async def test_a_flooding_slack_user_is_told_to_wait_while_a_colleague_is_answered(core: Candor) -> None:
    flooder, colleague = f"U{uuid.uuid4().hex[:8].upper()}", f"U{uuid.uuid4().hex[:8].upper()}"
    async with FakeSlack() as fake:
        config = SlackConfig(bot_token="xoxb-abuse", signing_secret=SECRET, api_url=fake.api_url)
        ledger = EventLedger(core.store.engine, lease_seconds=2.0)
        adapter = SlackAdapter(config, core, ledger, drain_seconds=5)
        async with serve_adapter(core, adapter) as url, aiohttp.ClientSession() as session:
            for event in [message(QUESTION, user=flooder, channel="D0FLOOD") for _ in range(4)] + [
                message(QUESTION, user=colleague, channel="D0CALM")
            ]:
                body = json_body(event_callback(event))
                response = await session.post(f"{url}/slack/events", data=body, headers=signed_headers(SECRET, body))
                assert response.status == 200
            flood = await fake.wait_for("chat.postMessage", count=4, where=lambda c: c.params["channel"] == "D0FLOOD")
            (calm,) = await fake.wait_for("chat.postMessage", where=lambda c: c.params["channel"] == "D0CALM")
    texts = [call.params["text"] for call in flood]
    assert sum("$500" in t for t in texts) == 2
    refusals = [t for t in texts if "you have asked more than 2 questions" in t]
    assert len(refusals) == 2 and all("try again in" in t for t in refusals)
    assert "$500" in calm.params["text"]


async def test_a_forged_slack_request_is_refused_and_nothing_is_answered(core: Candor) -> None:
    async with FakeSlack() as fake:
        config = SlackConfig(bot_token="xoxb-abuse", signing_secret=SECRET, api_url=fake.api_url)
        adapter = SlackAdapter(config, core, EventLedger(core.store.engine, lease_seconds=2.0), drain_seconds=5)
        async with serve_adapter(core, adapter) as url, aiohttp.ClientSession() as session:
            body = json_body(event_callback(message(QUESTION, user="U0FORGER", channel="D0FORGE")))
            for headers in (signed_headers("a-guessed-secret-of-sorts", body), signed_headers("", body), {}):
                response = await session.post(f"{url}/slack/events", data=body, headers=headers)
                assert response.status == 401
            genuine = await session.post(f"{url}/slack/events", data=body, headers=signed_headers(SECRET, body))
            assert genuine.status == 200
            (answer,) = await fake.wait_for("chat.postMessage", timeout=60)
    assert answer.params["channel"] == "D0FORGE" and len(fake.calls_to("chat.postMessage")) == 1


# --- Teams ---------------------------------------------------------------------------------------------


async def test_a_flooding_teams_user_is_told_to_wait(core: Candor) -> None:
    flooder = f"29:{uuid.uuid4().hex[:8]}"
    async with FakeConnector() as fake:
        adapter = TeamsAdapter(
            TeamsConfig(), core, EventLedger(core.store.engine, lease_seconds=2.0), drain_seconds=5, backoff_seconds=0.2
        )
        async with serve_adapter(core, adapter) as url, aiohttp.ClientSession() as session:
            for _ in range(3):
                activity = personal_message(
                    QUESTION, service_url=fake.service_url, user_id=flooder, conversation_id=f"a:{flooder}"
                )
                assert (await session.post(f"{url}/api/messages", json=activity)).status in (200, 201, 202)
            replies = await fake.wait_for(lambda c: c.body.get("type") == "message", count=3, timeout=60)
    texts = [call.body.get("text", "") for call in replies]
    assert sum("$500" in t for t in texts) == 2
    assert sum("you have asked more than 2 questions" in t for t in texts) == 1
