"""The Teams adapter end to end: Bot Framework activities posted over real HTTP to `candor serve`'s app,
the real botbuilder `CloudAdapter` (anonymous local-development mode) sending to a fake Bot
Connector on 127.0.0.1, the real pipeline over the sample handbook, the event ledger in Postgres.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import json
import logging
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from botbuilder.schema import ChannelAccount, ConversationAccount, ConversationReference
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from bot.server import ChatCore
from bot.teams.app import PLATFORM, TeamsAdapter, TeamsConfig
from bot.teams.job import TeamsJob
from rag.pipeline.synthesis import ExtractiveSynthesizer
from rag.runtime import Candor, build_answerer
from rag.store.postgres import KnowledgeBase
from rag.tracking.events import EventLedger
from tests.cores import Broken, Defective, Held, SlowWriter, Verbose
from tests.fakes.bot_connector import Call, FakeConnector
from tests.fakes.teams_activities import (
    TEAM_ID,
    TENANT_ID,
    channel_mention,
    feedback_invoke,
    group_chat_mention,
    group_chat_message,
    members_added,
    message_deleted,
    message_edited,
    personal_message,
)
from tests.fakes.teams_server import ingest_handbook
from tests.serving import serve_adapter

HR_CHANNEL = "19:hr-team-channel@thread.tacv2"
HR_ASKER = "29:user-hr"
RESTRICTED_QUESTION = "What is the salary band for an L3 Senior Software Engineer?"


@pytest.fixture(scope="module")
async def handbook(candor: Candor) -> KnowledgeBase:
    return await ingest_handbook(candor, "teams")


@dataclass
class Served:
    url: str
    fake: FakeConnector
    ledger: EventLedger
    core: Candor
    adapter: TeamsAdapter

    async def post(self, activity: dict[str, Any]) -> int:
        return (await self.exchange(activity))[0]

    async def exchange(self, activity: dict[str, Any]) -> tuple[int, Any]:
        async with aiohttp.ClientSession() as session, session.post(f"{self.url}/api/messages", json=activity) as r:
            body = await r.read()
            return r.status, json.loads(body) if body and r.content_type == "application/json" else None

    async def row(self, activity: dict[str, Any]) -> dict[str, Any] | None:
        conversation = activity["conversation"]["id"]
        return await self.ledger.get("teams", f"{TENANT_ID}/{conversation}/{activity['id']}")


def policy(path: Path, kb: str) -> Path:
    """Every Teams conversation reads the handbook; the HR channel also reads hr-confidential, and so
    does an HR person (`HR_ASKER`) where they alone read the answer."""
    path.write_text(
        f'- platform: teams\n  knowledge_bases: ["{kb}"]\n'
        f'- platform: teams\n  conversation: "{TENANT_ID}/{TEAM_ID}/{HR_CHANNEL}"\n'
        f'  groups: [hr-confidential]\n  knowledge_bases: ["{kb}"]\n'
        f'- platform: teams\n  asker: "{HR_ASKER}"\n  groups: [hr-confidential]\n  knowledge_bases: ["{kb}"]\n',
        encoding="utf-8",
    )
    return path


@pytest.fixture
def core(candor: Candor, handbook: KnowledgeBase, tmp_path: Path) -> Candor:
    settings = candor.settings.model_copy(update={"access_policy": policy(tmp_path / "access.yaml", handbook.name)})
    answerer = build_answerer(settings, candor.store, candor.embedder, candor.retriever, tracker=candor.tracker)
    # one fake user asks here far more often than any person would: the rate limits have their own
    # tests (tests/integration/tracking/test_limits.py, tests/integration/security/)
    return dataclasses.replace(candor, settings=settings, answerer=answerer, limits=None)


@contextlib.asynccontextmanager
async def serving(
    core: ChatCore, candor: Candor, ledger: EventLedger | None = None, **adapter: Any
) -> AsyncIterator[Served]:
    """`candor serve`'s app with the Teams adapter mounted, on a free port, and a fake Bot Connector."""
    ledger = ledger or EventLedger(candor.store.engine, lease_seconds=2.0)
    async with FakeConnector() as fake:
        teams = TeamsAdapter(TeamsConfig(), core, ledger, drain_seconds=5, backoff_seconds=0.2, **adapter)
        async with serve_adapter(candor, teams) as url:
            yield Served(url, fake, ledger, candor, teams)


@pytest.fixture
async def served(core: Candor) -> AsyncIterator[Served]:
    async with serving(core, core) as served:
        yield served


async def answered(served: Served, activity: dict[str, Any]) -> dict[str, Any]:
    for _ in range(100):
        row = await served.row(activity)
        if row is not None and row["status"] in ("answered", "failed"):
            return row
        await asyncio.sleep(0.1)
    raise AssertionError(f"not answered: {await served.row(activity)}")


async def answered_as(served: Served, activity: dict[str, Any], question: str) -> dict[str, Any]:
    """The ledger row of `activity` once its text reads `question` and that text is answered."""
    for _ in range(100):
        row = await served.row(activity)
        if row is not None and row["status"] == "answered" and row["question"] == question:
            return row
        await asyncio.sleep(0.1)
    raise AssertionError(f"{question!r} not answered: {await served.row(activity)}")


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

    changed_mind = feedback_invoke(answer_id, "like", service_url=served.fake.service_url)
    assert await served.post(changed_mind) == 200
    trace = await served.core.tracker.trace(str(row["trace_id"]))
    assert trace is not None
    assert [(f["rating"], f["comment"]) for f in trace["feedback"]] == [(1, None)]  # the later vote replaces


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


# --- slow answers, failures, limits ------------------------------------------------------------


async def test_an_answer_that_takes_20_seconds_still_arrives_after_the_turn_with_typing_meanwhile(
    core: Candor,
) -> None:
    writer = SlowWriter(ExtractiveSynthesizer(answer_threshold=core.settings.answer_threshold), seconds=20)
    answerer = build_answerer(
        core.settings, core.store, core.embedder, core.retriever, synthesizer=writer, tracker=core.tracker
    )
    slow = dataclasses.replace(core, answerer=answerer)
    async with serving(slow, slow) as served:
        question = personal_message("How much is the home office stipend?", service_url=served.fake.service_url)
        assert await served.post(question) in (200, 201, 202)
        assert served.fake.activities() == []  # the turn returned long before the answer
        (call,) = await served.fake.wait_for(kind="message", timeout=60)
        assert "$500" in call.body["text"]
        typing = [c for c in served.fake.calls if c.body.get("type") == "typing" and c.at < call.at]
        assert len(typing) >= 6, "a typing indicator every few seconds while the model writes"
        assert max(b.at - a.at for a, b in itertools.pairwise(typing)) < 10
        # typing only: no text, no informative update or stream (docs/teams.md)
        assert all(not c.body.get("text") and not c.body.get("entities") for c in typing)
        assert [c for c in served.fake.calls if c.at < call.at and c.body.get("type") != "typing"] == []
        row = await answered(served, question)
        assert row["status"] == "answered" and row["reply"]["activity_ids"] == [call.new_id]


async def test_a_throttled_reply_is_sent_again_after_retry_after(served: Served) -> None:
    served.fake.throttle(retry_after=1, times=1)  # the first call: the typing indicator or the answer
    served.adapter.delivery.keep_typing = _no_typing  # type: ignore[method-assign]
    question = personal_message("How much is the home office stipend?", service_url=served.fake.service_url)
    await served.post(question)
    (answer,) = await served.fake.wait_for(kind="message", timeout=30)
    refused, accepted = [c for c in served.fake.calls if c.body.get("type") == "message"]
    assert (refused.status, accepted.status) == (429, 201) and accepted.at - refused.at >= 1.0
    assert "$500" in answer.body["text"]
    assert (await answered(served, question))["reply"]["activity_ids"] == [answer.new_id]


async def _no_typing(reference: object) -> None:
    """Only the answer reaches the fake, so that the scripted failures meet it."""


async def test_a_connector_that_keeps_failing_leaves_the_question_failed_and_logged_with_its_trace(
    served: Served, caplog: pytest.LogCaptureFixture
) -> None:
    served.adapter.delivery.keep_typing = _no_typing  # type: ignore[method-assign]
    served.fake.fail(status=503, times=4)  # every attempt at the answer
    question = personal_message("How much is the home office stipend?", service_url=served.fake.service_url)
    with caplog.at_level(logging.ERROR, logger="candor.teams"):
        await served.post(question)
        row = await answered(served, question)
    assert row["status"] == "failed" and "503" in row["error"]
    assert row["trace_id"] is not None  # the answer was made and traced; only its delivery failed
    assert [c.status for c in served.fake.calls] == [503, 503, 503, 503]
    (logged,) = [r for r in caplog.records if "failed" in r.getMessage()]
    assert getattr(logged, "trace_id", None) == str(row["trace_id"])

    later = personal_message("How much is the home office stipend?", service_url=served.fake.service_url)
    await served.post(later)  # the adapter keeps serving once the connector is back
    (call,) = await served.fake.wait_for(kind="message", timeout=30)
    assert "$500" in call.body["text"]


async def test_a_pipeline_failure_gets_a_friendly_message(core: Candor) -> None:
    async with serving(Broken(core), core) as served:
        question = personal_message("How much is the home office stipend?", service_url=served.fake.service_url)
        await served.post(question)
        (call,) = await served.fake.wait_for(kind="message", timeout=30)
        assert "went wrong" in call.body["text"]
        row = await answered(served, question)
        assert row["status"] == "failed" and "not reachable" in row["error"]


async def test_a_defect_in_answering_still_tells_the_asker(core: Candor) -> None:
    async with serving(Defective(core), core) as served:
        question = personal_message("How much is the home office stipend?", service_url=served.fake.service_url)
        await served.post(question)
        (call,) = await served.fake.wait_for(kind="message", timeout=30)
        assert "went wrong" in call.body["text"]
        row = await answered(served, question)
        assert row["status"] == "failed" and "defect nobody anticipated" in row["error"]


async def test_a_restricted_document_is_answered_only_in_the_channel_granted_its_group(served: Served) -> None:
    elsewhere = channel_mention(RESTRICTED_QUESTION, service_url=served.fake.service_url)
    await served.post(elsewhere)
    (refused,) = await served.fake.wait_for(kind="message", timeout=30)
    assert "58,000" not in refused.body["text"] and "I don't know" in refused.body["text"]
    assert "Salary" not in json.dumps(refused.body.get("entities"))

    hr = channel_mention(RESTRICTED_QUESTION, channel_id=HR_CHANNEL, service_url=served.fake.service_url)
    await served.post(hr)
    _, answered_in_hr = await served.fake.wait_for(kind="message", count=2, timeout=30)
    assert answered_in_hr.conversation_id == hr["conversation"]["id"]
    assert "58,000" in answered_in_hr.body["text"]


async def test_an_oversized_answer_is_shortened_under_80_kb_and_keeps_its_citations(core: Candor) -> None:
    async with serving(Verbose(core, repeat=60, padding=2000), core) as served:
        question = personal_message("How much is the home office stipend?", service_url=served.fake.service_url)
        await served.post(question)
        (call,) = await served.fake.wait_for(kind="message", timeout=30)
        assert call.status == 201
        assert len(json.dumps(call.body).encode()) <= 80_000
        assert "$500" in call.body["text"]
        (entity,) = [e for e in call.body["entities"] if e.get("@type") == "Message"]
        positions = {c["position"] for c in entity["citation"]}
        assert positions and all(f"[{n}]" in call.body["text"] for n in positions)
        assert (await answered(served, question))["status"] == "answered"


async def test_a_follow_up_in_a_personal_chat_is_read_with_the_question_before_it(served: Served) -> None:
    chat = f"a:personal-{uuid.uuid4().hex[:8]}"
    first = personal_message(
        "How much is the home office stipend?", conversation_id=chat, service_url=served.fake.service_url
    )
    await served.post(first)
    await answered(served, first)
    follow_up = personal_message("And what is it for?", conversation_id=chat, service_url=served.fake.service_url)
    await served.post(follow_up)
    row = await answered(served, follow_up)
    trace = await served.core.tracker.trace(str(row["trace_id"]))
    assert trace is not None
    assert trace["question"] == "And what is it for?"
    assert "home office stipend" in trace["rewritten_question"].lower()  # read with the question before it
    assert trace["conversation"] == f"{TENANT_ID}/{chat}"


async def test_expect_replies_gets_the_answer_in_the_http_response(served: Served) -> None:
    question = personal_message("How much is the home office stipend?", service_url=served.fake.service_url)
    question["deliveryMode"] = "expectReplies"
    status, body = await served.exchange(question)
    assert status == 200
    (reply,) = [a for a in body["activities"] if a["type"] == "message"]
    assert "$500" in reply["text"]
    assert served.fake.activities() == []  # nothing went through the connector
    assert (await answered(served, question))["status"] == "answered"


async def test_a_question_too_long_to_answer_gets_a_clear_message(served: Served) -> None:
    question = personal_message("Where is the office? " * 400, service_url=served.fake.service_url)
    assert await served.post(question) in (200, 201, 202)
    (call,) = await served.fake.wait_for(kind="message", timeout=30)
    assert "too long" in call.body["text"] and "at most 4000" in call.body["text"]
    row = await answered(served, question)
    assert row["status"] == "failed"


async def test_with_the_database_away_the_asker_is_told_and_the_server_keeps_serving(core: Candor) -> None:
    unreachable = create_async_engine("postgresql+psycopg://x@127.0.0.1:1/none", connect_args={"connect_timeout": 2})
    try:
        async with serving(core, core, EventLedger(unreachable, lease_seconds=2.0)) as down:
            question = personal_message("How much is the home office stipend?", service_url=down.fake.service_url)
            assert await down.post(question) in (200, 201, 202)
            (note,) = await down.fake.wait_for(kind="message", timeout=30)
            assert "went wrong" in note.body["text"]
            vote = feedback_invoke("1:some-answer", "like", service_url=down.fake.service_url)
            assert await down.post(vote) == 503  # Teams tells the voter; nothing pretends to be stored
            assert await down.post(members_added(service_url=down.fake.service_url)) in (200, 201, 202)
            await down.fake.wait_for(kind="message", count=2, timeout=30)  # still serving
    finally:
        await unreachable.dispose()


async def test_a_question_no_replica_could_finish_is_given_up_and_the_asker_is_told(core: Candor) -> None:
    ledger = EventLedger(core.store.engine, lease_seconds=0.5, max_attempts=1)
    dead = EventLedger(core.store.engine, owner="dead-replica", lease_seconds=0.5, max_attempts=1)
    conversation = f"a:giveup-{uuid.uuid4().hex[:8]}"
    async with serving(core, core, ledger) as served:
        reference = ConversationReference(
            activity_id="1",
            user=ChannelAccount(id="29:asker"),
            bot=ChannelAccount(id="28:candor"),
            conversation=ConversationAccount(id=conversation, conversation_type="personal", tenant_id="tenant-1"),
            channel_id="msteams",
            service_url=served.fake.service_url,
        )
        job = TeamsJob(reference.serialize(), "Leave days?", "29:asker", conversation, "personal", "tenant-1")
        assert await dead.claim(PLATFORM, conversation, job.as_payload(), question=job.text) is not None
        # the only owner allowed (max_attempts=1) stops without answering: its lease runs out

        def in_conversation(call: Call) -> bool:
            return call.conversation_id == conversation

        (call,) = await served.fake.wait_for(in_conversation, timeout=15)
        assert "went wrong" in call.body["text"]
        await asyncio.sleep(1.5)  # more polls: the asker is told once
        assert len(await served.fake.wait_for(in_conversation)) == 1
    row = await ledger.get(PLATFORM, conversation)
    assert row is not None and row["status"] == "failed" and "given up after 1 attempts" in row["error"]


async def test_a_question_deleted_in_teams_loses_its_answer_and_its_text(served: Served) -> None:
    question = personal_message(
        "How much is the home office stipend?", service_url=served.fake.service_url, conversation_id="a:deleting"
    )
    assert await served.post(question) in (200, 201, 202)
    (reply,) = await served.fake.wait_for(lambda c: c.body.get("type") == "message", timeout=30)
    row = await answered(served, question)
    trace_id = str(row["trace_id"])

    assert await served.post(message_deleted(question)) in (200, 201, 202)

    for _ in range(100):
        if served.fake.calls_to("delete"):
            break
        await asyncio.sleep(0.1)
    (removed,) = served.fake.calls_to("delete")
    assert (removed.conversation_id, removed.activity_id) == ("a:deleting", reply.new_id)
    row = await served.row(question)
    assert row is not None and row["status"] == "deleted" and row["question"] is None and row["asker"] is None
    trace = await served.core.tracker.trace(trace_id)
    assert trace is not None and trace["purged_at"] is not None
    assert "home office stipend" not in json.dumps(trace["question"]) and trace["asker"] is None


# --- edits and deletions -------------------------------------------------------------------------


async def test_an_edited_question_is_answered_again_in_the_same_message(served: Served) -> None:
    question = personal_message(
        "How much is the home office stipend?", conversation_id="a:editing", service_url=served.fake.service_url
    )
    await served.post(question)
    first = await answered(served, question)
    (answer_id,) = first["reply"]["activity_ids"]

    assert await served.post(message_edited(question, "How much is the internet allowance?")) in (200, 201, 202)
    (update,) = await served.fake.wait_for(operation="update", timeout=30)
    assert (update.conversation_id, update.activity_id) == ("a:editing", answer_id)  # replaced in place
    assert "$40" in update.body["text"] and "$500" not in update.body["text"]
    row = await answered_as(served, question, "How much is the internet allowance?")
    assert row["reply"]["activity_ids"] == [answer_id] and row["trace_id"] != first["trace_id"]
    assert len(messages(served.fake)) == 1  # no second answer was posted

    # a vote on the message is a vote on what it now says
    assert await served.post(feedback_invoke(answer_id, "like", service_url=served.fake.service_url)) == 200
    trace = await served.core.tracker.trace(str(row["trace_id"]))
    assert trace is not None and [f["rating"] for f in trace["feedback"]] == [1]


async def test_an_edit_made_while_the_answer_is_written_updates_that_answer(core: Candor) -> None:
    held = Held(core)
    async with serving(held, core) as served:
        question = personal_message(
            "How much is the home office stipend?", conversation_id="a:edit-early", service_url=served.fake.service_url
        )
        await served.post(question)
        await asyncio.wait_for(held.writing.wait(), 30)  # the answer is being written
        assert await served.post(message_edited(question, "How much is the internet allowance?")) in (200, 201, 202)
        held.release.set()
        (update,) = await served.fake.wait_for(operation="update", timeout=30)
        row = await answered_as(served, question, "How much is the internet allowance?")

    (sent,) = messages(served.fake)  # the first answer went out once
    assert "$500" in sent["text"]
    assert update.activity_id == row["reply"]["activity_ids"][0] and "$40" in update.body["text"]
    assert held.asked == ["How much is the home office stipend?", "How much is the internet allowance?"]


async def test_a_question_deleted_while_its_answer_is_written_loses_that_answer_and_its_text(core: Candor) -> None:
    held = Held(core)
    conversation = f"a:delete-early-{uuid.uuid4().hex[:8]}"
    async with serving(held, core) as served:
        question = personal_message(
            "How much is the home office stipend?", conversation_id=conversation, service_url=served.fake.service_url
        )
        await served.post(question)
        await asyncio.wait_for(held.writing.wait(), 30)
        assert await served.post(message_deleted(question)) in (200, 201, 202)
        held.release.set()
        (sent,) = await served.fake.wait_for(kind="message", timeout=30)
        (removed,) = await served.fake.wait_for(operation="delete", kind=None, timeout=30)
        assert (removed.conversation_id, removed.activity_id) == (conversation, sent.new_id)

        for _ in range(50):  # the trace's text goes just after the answer
            traces = await traces_in(served, f"{TENANT_ID}/{conversation}")
            if traces and all(purged for _, purged in traces):
                break
            await asyncio.sleep(0.1)
    assert traces == [("[removed]", True)]
    row = await served.row(question)
    assert row is not None and row["status"] == "deleted" and row["question"] is None


def messages(fake: FakeConnector) -> list[dict[str, Any]]:
    """The message activities delivered (sent or replied), in arrival order."""
    return [body for body in fake.activities() if body.get("type") == "message"]


async def traces_in(served: Served, conversation: str) -> list[tuple[str, bool]]:
    """(question, purged) of every trace of a conversation."""
    async with served.core.store.engine.connect() as connection:
        rows = await connection.execute(
            text("SELECT question, purged_at IS NOT NULL FROM traces WHERE conversation = :c"), {"c": conversation}
        )
        return [(question, purged) for question, purged in rows.all()]


# --- group chats ---------------------------------------------------------------------------------


async def test_a_group_chat_mention_is_answered_there_without_the_askers_own_groups(served: Served) -> None:
    chat = f"19:group-{uuid.uuid4().hex[:8]}@thread.v2"
    asked_here = group_chat_mention(
        RESTRICTED_QUESTION, conversation_id=chat, user_id=HR_ASKER, service_url=served.fake.service_url
    )
    assert await served.post(asked_here) in (200, 201, 202)
    (reply,) = await served.fake.wait_for(kind="message", timeout=30)
    assert reply.conversation_id == chat  # answered in the group chat
    assert "58,000" not in reply.body["text"] and "I don't know" in reply.body["text"]
    row = await answered(served, asked_here)
    assert row["question"] == RESTRICTED_QUESTION  # the mention is stripped
    trace = await served.core.tracker.trace(str(row["trace_id"]))
    assert trace is not None and trace["scope"]["groups"] == []  # others read it: the asker's groups do not count

    # the same person alone with Candor: their own groups count there
    alone = personal_message(
        RESTRICTED_QUESTION,
        user_id=HR_ASKER,
        conversation_id=f"a:hr-{uuid.uuid4().hex[:8]}",
        service_url=served.fake.service_url,
    )
    await served.post(alone)
    _, private = await served.fake.wait_for(kind="message", count=2, timeout=30)
    assert "58,000" in private.body["text"]


async def test_a_follow_up_in_a_group_chat_is_read_with_the_earlier_turns(served: Served) -> None:
    chat = f"19:group-{uuid.uuid4().hex[:8]}@thread.v2"
    first = group_chat_mention(
        "How much is the home office stipend?", conversation_id=chat, service_url=served.fake.service_url
    )
    await served.post(first)
    await answered(served, first)
    follow_up = group_chat_mention(
        "And what is it for?",
        conversation_id=chat,
        user_id="29:user-2",
        user_name="Grace",
        service_url=served.fake.service_url,
    )
    await served.post(follow_up)
    row = await answered(served, follow_up)
    trace = await served.core.tracker.trace(str(row["trace_id"]))
    assert trace is not None
    assert "home office stipend" in trace["rewritten_question"].lower()  # read with the question before it
    assert trace["conversation"] == f"{TENANT_ID}/{chat}"
    replies = await served.fake.wait_for(kind="message", count=2, timeout=30)
    assert {call.conversation_id for call in replies} == {chat}


async def test_a_group_chat_message_that_does_not_mention_the_bot_is_left_alone(served: Served) -> None:
    chat = f"19:group-{uuid.uuid4().hex[:8]}@thread.v2"
    chatter = group_chat_message(
        "How much is the home office stipend?", conversation_id=chat, service_url=served.fake.service_url
    )
    assert await served.post(chatter) in (200, 201, 202)
    # the turn records a question before it returns: once it has, this is final
    assert await served.row(chatter) is None
    asked = group_chat_mention(
        "How much is the home office stipend?", conversation_id=chat, service_url=served.fake.service_url
    )
    assert await served.post(asked) in (200, 201, 202)
    assert await served.row(asked) is not None  # a mention in the same chat is taken
