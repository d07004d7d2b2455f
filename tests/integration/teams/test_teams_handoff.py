"""Hand-off to a person in Teams, end to end: "Ask a person" under a refusal (or after a 👎) starts a
thread in the triage channel; "Reply to asker" on its card sends the expert's reply to the asker's
conversation (their thread in a channel), stores it with the trace, and (when kept) makes a curated
answer that answers the next asker, cited. Real botbuilder against the fake Bot Connector, the real
pipeline and Postgres."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from bot.teams.app import TeamsAdapter, TeamsConfig
from bot.teams.handoff import ALREADY, FAILED, NOT_HERE, PASSED_ON
from bot.teams.handoff_cards import HANDOFF_VERB, REPLY_VERB
from rag.experts import Experts
from rag.runtime import Candor, build_answerer
from rag.store.postgres import KnowledgeBase
from rag.tracking.events import EventLedger
from tests.fakes.bot_connector import Call, FakeConnector
from tests.fakes.teams_activities import (
    CHANNEL_ID,
    USER_AAD_ID,
    USER_ID,
    card_action,
    channel_mention,
    feedback_invoke,
    personal_message,
)
from tests.fakes.teams_server import ingest_handbook
from tests.integration.teams.test_teams import HR_CHANNEL, RESTRICTED_QUESTION, Served, answered, policy
from tests.serving import serve_adapter

TRIAGE = "19:triage-team-channel@thread.tacv2"
TRIAGE_TEAM = "19:support-team@thread.tacv2"
EXPERT_ID, EXPERT_AAD, EXPERT_NAME = "29:expert-1", "00000000-0000-4000-8000-0000000e0e01", "Ana Diaz"
BICYCLE = "Where do I store my bicycle at the office?"
BICYCLE_REPLY = "Bicycles go in the locked bike room next to the loading bay; reception has the key fob."


@pytest.fixture(scope="module")
async def handbook(candor: Candor) -> KnowledgeBase:
    return await ingest_handbook(candor, "teams-handoff")


@pytest.fixture
async def served(candor: Candor, handbook: KnowledgeBase, tmp_path: Path) -> AsyncIterator[Served]:
    settings = candor.settings.model_copy(update={"access_policy": policy(tmp_path / "access.yaml", handbook.name)})
    answerer = build_answerer(settings, candor.store, candor.embedder, candor.retriever, tracker=candor.tracker)
    core = dataclasses.replace(candor, settings=settings, answerer=answerer, limits=None)
    ledger = EventLedger(core.store.engine, lease_seconds=2.0)
    async with FakeConnector() as fake:
        config = TeamsConfig(triage_channel=TRIAGE, experts=Experts.parse(f"teams:{EXPERT_AAD}"))
        teams = TeamsAdapter(config, core, ledger, drain_seconds=5, backoff_seconds=0.2)
        async with serve_adapter(core, teams) as url:
            yield Served(url, fake, ledger, core, teams)


# --- helpers ---------------------------------------------------------------------------------------


def card_of(body: dict[str, Any]) -> dict[str, Any]:
    (card,) = [a["content"] for a in body.get("attachments", []) if a["contentType"].endswith("card.adaptive")]
    return dict(card)


def execute(card: dict[str, Any], verb: str) -> dict[str, Any]:
    """The card's Action.Execute with this verb."""
    for action in card.get("actions", []):
        if action.get("type") == "Action.Execute" and action.get("verb") == verb:
            return dict(action)
    raise AssertionError(f"no {verb} action in {json.dumps(card)[:500]}")


def shown(card: dict[str, Any]) -> str:
    """Every text the card shows, in order (text blocks, text runs, facts)."""
    texts: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if node.get("type") in ("TextBlock", "TextRun"):
                texts.append(str(node["text"]))
            for key in ("body", "items", "inlines", "facts"):
                walk(node.get(key))
            if "title" in node and "value" in node and "type" not in node:
                texts.append(f"{node['title']}: {node['value']}")
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(card)
    return "\n".join(texts)


async def ask_in_channel(served: Served, question: str) -> tuple[dict[str, Any], Call]:
    """A channel mention and Candor's answer in its thread."""
    mention = channel_mention(question, service_url=served.fake.service_url)
    assert await served.post(mention) in (200, 201, 202)
    thread = mention["conversation"]["id"]
    (answer,) = await served.fake.wait_for(lambda c: c.conversation_id == thread, timeout=30)
    return mention, answer


async def ask_person(served: Served, on: Call, data: dict[str, Any], **where: Any) -> dict[str, Any]:
    """A click on "Ask a person" under the message `on`; the invoke's answer."""
    click = card_action(on.new_id or "", HANDOFF_VERB, data, service_url=served.fake.service_url, **where)
    status, body = await served.exchange(click)
    assert status == 200
    return dict(body)


def in_thread(mention: dict[str, Any]) -> dict[str, Any]:
    return {"conversation_id": mention["conversation"]["id"], "conversation_type": "channel", "channel_id": CHANNEL_ID}


async def reply(served: Served, post: Call, fields: dict[str, Any], **who: Any) -> dict[str, Any]:
    """The expert's "Reply to asker" on the triage post; the invoke's answer."""
    triage_card = card_of(post.body["activity"])
    action = execute(triage_card, REPLY_VERB)
    expert = {"user_id": EXPERT_ID, "user_name": EXPERT_NAME, "user_aad_id": EXPERT_AAD, **who}
    click = card_action(
        post.new_id.split(";messageid=")[1] if post.new_id else "",
        REPLY_VERB,
        {**action["data"], **fields},
        conversation_id=post.new_id or "",
        conversation_type="channel",
        channel_id=TRIAGE,
        team_id=TRIAGE_TEAM,
        service_url=served.fake.service_url,
        **expert,
    )
    status, body = await served.exchange(click)
    assert status == 200
    return dict(body)


def form(answer: str, *, curate: bool, question: str = "", groups: str = "", readers: str = "") -> dict[str, str]:
    return {
        "reply": answer,
        "curate": "true" if curate else "false",
        "question": question,
        "groups": groups,
        "readers": readers,
    }


async def handoff_row(served: Served, trace_id: str) -> dict[str, Any]:
    async with served.core.store.engine.connect() as conn:
        found = await conn.execute(text("SELECT * FROM handoffs WHERE trace_id = CAST(:t AS uuid)"), {"t": trace_id})
        return dict(found.mappings().one())


async def trace_of(served: Served, activity: dict[str, Any]) -> str:
    return str((await answered(served, activity))["trace_id"])


def message(body: dict[str, Any]) -> str:
    assert body["statusCode"] == 200 and body["type"] == "application/vnd.microsoft.activity.message", body
    return str(body["value"])


# --- the tests -----------------------------------------------------------------------------------


async def test_a_refusal_handed_to_a_person_comes_back_answered_and_the_kept_answer_answers_the_next_asker(
    served: Served,
) -> None:
    mention, answer = await ask_in_channel(served, BICYCLE)
    assert "I don't know" in answer.body["text"]
    offer = execute(card_of(answer.body), HANDOFF_VERB)
    assert offer["title"] == "🙋 Ask a person"
    trace_id = await trace_of(served, mention)
    assert offer["data"] == {"trace": trace_id, "reason": "abstained"}

    # the asker asks for a person: a new thread in the triage channel, and the asker is told in theirs
    assert message(await ask_person(served, answer, offer["data"], **in_thread(mention))) == PASSED_ON
    (post,) = await served.fake.wait_for_channel_posts(TRIAGE)
    triage = shown(card_of(post.body["activity"]))
    assert BICYCLE in triage and "Ada asked in a channel" in triage and "Candor could not answer" in triage
    assert f"Trace: {trace_id}" in triage
    (told,) = await served.fake.wait_for(lambda c: c.conversation_id == mention["conversation"]["id"] and c != answer)
    assert "passed your question to the team" in told.body["text"]
    row = await handoff_row(served, trace_id)
    assert (row["status"], row["reason"], row["asker"], row["triage"]["channel"]) == (
        "open",
        "abstained",
        USER_AAD_ID,
        TRIAGE,
    )

    # the expert replies and keeps the reply as a curated answer
    done = await reply(served, post, form(BICYCLE_REPLY, curate=True, question=BICYCLE, readers="everyone"))
    assert done["type"] == "application/vnd.microsoft.card.adaptive"
    assert f"{EXPERT_NAME} replied to the asker" in shown(done["value"]) and "Saved as curated answer" in shown(
        done["value"]
    )
    assert "actions" not in done["value"]  # answered: no second reply from this card
    (delivered,) = await served.fake.wait_for(lambda c: "bike room" in c.body.get("text", ""))
    assert delivered.conversation_id == mention["conversation"]["id"]  # the asker's thread
    assert delivered.body["text"].startswith("<at>Ada</at> **Ana Diaz** answered your question")
    assert "not checked against the documents" in delivered.body["text"]
    (mentioned,) = [e for e in delivered.body["entities"] if e.get("type") == "mention"]
    assert mentioned["mentioned"]["id"] == USER_ID and mentioned["text"] == "<at>Ada</at>"
    (edit,) = served.fake.calls_to("update")  # everyone in the triage channel sees it answered
    assert (edit.conversation_id, edit.activity_id) == (post.new_id, (post.new_id or "").split(";messageid=")[1])
    assert "replied to the asker" in shown(card_of(edit.body))

    row = await handoff_row(served, trace_id)
    assert (row["status"], row["reply_text"], row["replied_by"], row["replied_by_name"]) == (
        "replied",
        BICYCLE_REPLY,
        EXPERT_AAD,
        EXPERT_NAME,
    )
    assert row["curated_id"] is not None

    # the next asker gets the curated answer, cited with who answered and when
    later = personal_message(BICYCLE, conversation_id="a:personal-next", service_url=served.fake.service_url)
    await served.post(later)
    (next_answer,) = await served.fake.wait_for(lambda c: c.conversation_id == "a:personal-next", timeout=30)
    assert "bike room" in next_answer.body["text"] and "I don't know" not in next_answer.body["text"]
    citations = json.dumps(next_answer.body["entities"], ensure_ascii=False)
    assert f"answered by {EXPERT_NAME} on {datetime.now(UTC).date().isoformat()}" in citations
    assert "attachments" not in next_answer.body  # answered: nothing to hand off


async def test_a_thumbs_down_offers_a_person_and_the_reply_goes_to_the_voters_chat(served: Served) -> None:
    chat = "a:personal-parental"
    question = personal_message(
        "How much paid parental leave does the primary carer get?",
        conversation_id=chat,
        service_url=served.fake.service_url,
    )
    await served.post(question)
    trace_id = await trace_of(served, question)
    (answer,) = await served.fake.wait_for(lambda c: c.conversation_id == chat)
    assert "16 weeks" in answer.body["text"] and "attachments" not in answer.body  # answered: no offer under it

    vote = feedback_invoke(answer.new_id or "", "dislike", conversation_id=chat, service_url=served.fake.service_url)
    assert await served.post(vote) == 200
    (thanks,) = await served.fake.wait_for(lambda c: c.conversation_id == chat and "attachments" in c.body)
    offer = execute(card_of(thanks.body), HANDOFF_VERB)
    assert offer["data"] == {"trace": trace_id, "reason": "down_vote"}

    assert message(await ask_person(served, thanks, offer["data"], conversation_id=chat)) == PASSED_ON
    (post,) = await served.fake.wait_for_channel_posts(TRIAGE)
    triage = shown(card_of(post.body["activity"]))
    assert "16 weeks" in triage and "marked the answer 👎" in triage and "a personal chat" in triage
    assert "Sources" in triage

    done = await reply(served, post, form("Primary carers get 16 weeks at full pay; HR can confirm.", curate=False))
    assert "replied to the asker" in shown(done["value"]) and "curated" not in shown(done["value"])
    (delivered,) = await served.fake.wait_for(lambda c: "HR can confirm" in c.body.get("text", ""))
    assert delivered.conversation_id == chat
    assert (await handoff_row(served, trace_id))["curated_id"] is None


async def test_a_second_click_finds_the_first_hand_off(served: Served) -> None:
    mention, answer = await ask_in_channel(served, "Which floor is the table tennis room on?")
    data = execute(card_of(answer.body), HANDOFF_VERB)["data"]
    assert message(await ask_person(served, answer, data, **in_thread(mention))) == PASSED_ON
    assert message(await ask_person(served, answer, data, **in_thread(mention))) == ALREADY
    assert len(served.fake.channel_posts(TRIAGE)) == 1


async def test_a_triage_post_that_failed_is_tried_again_on_the_next_click(served: Served) -> None:
    mention, answer = await ask_in_channel(served, "Is there a quiet room for phone calls?")
    data = execute(card_of(answer.body), HANDOFF_VERB)["data"]
    served.fake.fail(status=403)  # e.g. Candor is not installed in the triage channel's team
    assert message(await ask_person(served, answer, data, **in_thread(mention))) == FAILED
    assert (await handoff_row(served, data["trace"]))["triage"] is None  # recorded, not yet posted

    assert message(await ask_person(served, answer, data, **in_thread(mention))) == PASSED_ON
    (post,) = await served.fake.wait_for_channel_posts(TRIAGE)
    assert "quiet room" in shown(card_of(post.body["activity"]))
    assert (await handoff_row(served, data["trace"]))["triage"]["activity_id"] == (post.new_id or "").split("=")[1]


async def test_an_answer_from_restricted_documents_is_not_shown_in_the_triage_channel(served: Served) -> None:
    mention = channel_mention(RESTRICTED_QUESTION, channel_id=HR_CHANNEL, service_url=served.fake.service_url)
    await served.post(mention)
    thread = mention["conversation"]["id"]
    (answer,) = await served.fake.wait_for(lambda c: c.conversation_id == thread, timeout=30)
    assert "58,000" in answer.body["text"]
    vote = feedback_invoke(
        answer.new_id or "",
        "dislike",
        conversation_id=thread,
        conversation_type="channel",
        service_url=served.fake.service_url,
    )
    assert await served.post(vote) == 200
    (thanks,) = await served.fake.wait_for(lambda c: c.conversation_id == thread and "attachments" in c.body)
    data = execute(card_of(thanks.body), HANDOFF_VERB)["data"]
    where = {"conversation_id": thread, "conversation_type": "channel", "channel_id": HR_CHANNEL}
    assert message(await ask_person(served, thanks, data, **where)) == PASSED_ON
    (post,) = await served.fake.wait_for_channel_posts(TRIAGE)
    triage = json.dumps(post.body, ensure_ascii=False)
    assert "restricted documents" in triage
    assert "58,000" not in triage and "Candor's answer" not in triage and "Sources" not in triage
    assert "hr-confidential" not in triage  # the card is the whole channel's: it names no access group


async def test_an_empty_reply_is_refused_on_the_card_and_nothing_is_sent(served: Served) -> None:
    mention, answer = await ask_in_channel(served, "Where can I charge my electric car?")
    data = execute(card_of(answer.body), HANDOFF_VERB)["data"]
    await ask_person(served, answer, data, **in_thread(mention))
    (post,) = await served.fake.wait_for_channel_posts(TRIAGE)
    sent_before = len(served.fake.activities())

    refused = await reply(served, post, form("   ", curate=True, question="Where can I charge my electric car?"))
    assert refused["type"] == "application/vnd.microsoft.card.adaptive"
    assert "Write the answer first." in shown(refused["value"])
    execute(refused["value"], REPLY_VERB)  # the form stays, with what was typed
    assert "Where can I charge my electric car?" in json.dumps(refused["value"])

    # a reply from outside the triage channel is not taken either
    elsewhere = card_action(
        answer.new_id or "",
        REPLY_VERB,
        {"handoff": execute(card_of(post.body["activity"]), REPLY_VERB)["data"]["handoff"], **form("Hi", curate=False)},
        service_url=served.fake.service_url,
        **in_thread(mention),
    )
    status, body = await served.exchange(elsewhere)
    assert status == 200 and body["statusCode"] == 403 and body["value"]["message"] == NOT_HERE

    # the invokes are answered once their work is done: nothing was delivered, edited or stored
    assert len(served.fake.activities()) == sent_before and served.fake.calls_to("update") == []
    assert (await handoff_row(served, data["trace"]))["status"] == "open"
