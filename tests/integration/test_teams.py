"""The Teams adapter end to end: Bot Framework activities posted over real HTTP to `candor serve`'s app,
the real botbuilder `CloudAdapter` (anonymous local-development mode) sending to a fake Bot
Connector on 127.0.0.1, the real pipeline over the sample handbook, the event ledger in Postgres.
"""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from bot.server import PLATFORM_BODY_BYTES, build_app
from bot.teams.app import TeamsAdapter, TeamsConfig
from rag.runtime import Candor, build_answerer
from rag.store.postgres import KnowledgeBase
from rag.tracking.events import EventLedger
from tests.conftest import SAMPLE
from tests.fakes.bot_connector import FakeConnector
from tests.fakes.teams_activities import (
    TENANT_ID,
    channel_mention,
    feedback_invoke,
    members_added,
    personal_message,
)


@pytest.fixture(scope="module")
async def handbook(candor: Candor) -> KnowledgeBase:
    kb = await candor.knowledge_base(f"teams-{uuid.uuid4().hex[:8]}", create=True)
    assert kb is not None
    assert (await candor.ingestor().ingest([SAMPLE], kb=kb)).ok
    await candor.store.analyze()
    return kb


@dataclass
class Served:
    url: str
    fake: FakeConnector
    ledger: EventLedger
    core: Candor

    async def post(self, activity: dict[str, Any]) -> int:
        async with aiohttp.ClientSession() as session, session.post(f"{self.url}/api/messages", json=activity) as r:
            await r.read()
            return r.status

    async def row(self, activity: dict[str, Any]) -> dict[str, Any] | None:
        conversation = activity["conversation"]["id"]
        return await self.ledger.get("teams", f"{TENANT_ID}/{conversation}/{activity['id']}")


@pytest.fixture
async def served(candor: Candor, handbook: KnowledgeBase, tmp_path: Path) -> AsyncIterator[Served]:
    policy = tmp_path / "access.yaml"
    policy.write_text(f'- platform: teams\n  knowledge_bases: ["{handbook.name}"]\n', encoding="utf-8")
    settings = candor.settings.model_copy(update={"access_policy": policy})
    answerer = build_answerer(settings, candor.store, candor.embedder, candor.retriever, tracker=candor.tracker)
    core = dataclasses.replace(candor, settings=settings, answerer=answerer)
    ledger = EventLedger(candor.store.engine, lease_seconds=2.0)
    async with FakeConnector() as fake:
        adapter = TeamsAdapter(TeamsConfig(), core, ledger, drain_seconds=5)
        app = build_app(core, max_body_bytes=PLATFORM_BODY_BYTES)
        adapter.mount(app)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        try:
            yield Served(f"http://127.0.0.1:{runner.addresses[0][1]}", fake, ledger, core)
        finally:
            await runner.cleanup()


async def answered(served: Served, activity: dict[str, Any]) -> dict[str, Any]:
    for _ in range(100):
        row = await served.row(activity)
        if row is not None and row["status"] in ("answered", "failed"):
            return row
        await asyncio.sleep(0.1)
    raise AssertionError(f"not answered: {await served.row(activity)}")


async def test_a_personal_question_is_answered_after_the_turn_with_citations_and_the_ai_label(
    served: Served,
) -> None:
    question = personal_message(
        "How much paid parental leave does the primary carer get?", service_url=served.fake.service_url
    )
    assert await served.post(question) in (200, 201, 202)
    (call,) = await served.fake.wait_for(kind="message", timeout=30)
    answer = call.body
    assert call.conversation_id == question["conversation"]["id"]
    assert "16 weeks" in answer["text"] and "[1]" in answer["text"]
    (entity,) = [e for e in answer.get("entities", []) if e.get("@type") == "Message"]
    assert entity["additionalType"] == ["AIGeneratedContent"]
    assert next(c["position"] for c in entity["citation"]) == 1
    assert answer["channelData"]["feedbackLoopEnabled"] is True
    assert served.fake.typing(), "a typing indicator before the answer"

    row = await answered(served, question)
    assert row["status"] == "answered" and row["reply"]["activity_ids"] == [call.new_id]


async def test_the_built_in_feedback_is_stored_for_the_answers_trace(served: Served) -> None:
    question = personal_message("How much is the home office stipend?", service_url=served.fake.service_url)
    await served.post(question)
    row = await answered(served, question)
    (answer_id,) = row["reply"]["activity_ids"]
    vote = feedback_invoke(
        answer_id, "dislike", "It should mention the equipment list", service_url=served.fake.service_url
    )
    assert await served.post(vote) == 200
    trace = await served.core.tracker.trace(str(row["trace_id"]))
    assert trace is not None
    assert [(f["rating"], f["platform"], f["comment"]) for f in trace["feedback"]] == [
        (-1, "teams", "It should mention the equipment list")
    ]


async def test_a_channel_mention_is_stripped_and_answered_in_its_thread(served: Served) -> None:
    question = channel_mention(
        "<at>Candor</at> How many days of paid sick leave do employees get each year?",
        service_url=served.fake.service_url,
    )
    assert await served.post(question) in (200, 201, 202)
    (call,) = await served.fake.wait_for(kind="message", timeout=30)
    assert call.conversation_id == question["conversation"]["id"]
    assert "10 days" in call.body["text"]
    row = await answered(served, question)
    assert row["question"] == "How many days of paid sick leave do employees get each year?"


async def test_a_redelivered_activity_is_answered_once(served: Served) -> None:
    question = personal_message("How much is the home office stipend?", service_url=served.fake.service_url)
    statuses = await asyncio.gather(served.post(question), served.post(question), served.post(question))
    assert all(s in (200, 201, 202) for s in statuses)
    await answered(served, question)
    await asyncio.sleep(0.5)
    assert len([c for c in served.fake.calls if c.delivered and c.body.get("type") == "message"]) == 1


async def test_the_bot_says_hello_when_added(served: Served) -> None:
    assert await served.post(members_added(service_url=served.fake.service_url)) in (200, 201, 202)
    (call,) = await served.fake.wait_for(kind="message", timeout=10)
    assert "Candor" in call.body["text"] and "cite" in call.body["text"].lower()
