"""Hand-off to a person in Slack, end to end: "Ask a person" under a refusal (or after a 👎) posts the
question to the triage channel; "Reply to asker" opens a form; the expert's reply reaches the asker's
thread, is stored with the trace, and (when kept) becomes a curated answer that answers the next
asker, cited. Real `slack_bolt` against the fake Slack, the real pipeline and Postgres."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from bot.slack.app import SlackAdapter
from bot.slack.blocks import FEEDBACK_DOWN
from bot.slack.config import SlackConfig
from bot.slack.handoff_blocks import (
    CURATE_ACTION,
    CURATE_BLOCK,
    CURATE_VALUE,
    GROUPS_ACTION,
    GROUPS_BLOCK,
    HANDOFF,
    HANDOFF_REPLY,
    HANDOFF_REPLY_CALLBACK,
    QUESTION_ACTION,
    QUESTION_BLOCK,
    READERS_ACTION,
    READERS_BLOCK,
    REPLY_ACTION,
    REPLY_BLOCK,
)
from rag.experts import Experts
from rag.runtime import Candor, build_answerer
from rag.store.postgres import KnowledgeBase
from rag.tracking.events import EventLedger
from tests.conftest import SAMPLE
from tests.fakes.slack_api import Call, FakeSlack
from tests.fakes.slack_events import app_mention, block_action, form_body, signed_headers, view_submission
from tests.integration.slack.test_slack import RESTRICTED_QUESTION, SECRET, Served, block_text, policy, trace_id_of
from tests.serving import serve_adapter

TRIAGE = "C0TRIAGE"
EXPERT = "U0EXPERT"
BICYCLE = "Where do I store my bicycle at the office?"
BICYCLE_REPLY = "Bicycles go in the locked bike room next to the loading bay; reception has the key fob."


@pytest.fixture(scope="module")
async def handbook(candor: Candor) -> KnowledgeBase:
    kb = await candor.knowledge_base(f"handoff-{uuid.uuid4().hex[:8]}", create=True)
    assert kb is not None
    assert (await candor.ingestor().ingest([SAMPLE], kb=kb)).ok
    return kb


@pytest.fixture
async def served(candor: Candor, handbook: KnowledgeBase, tmp_path: Path) -> AsyncIterator[Served]:
    settings = candor.settings.model_copy(update={"access_policy": policy(tmp_path / "access.yaml", handbook.name)})
    answerer = build_answerer(settings, candor.store, candor.embedder, candor.retriever, tracker=candor.tracker)
    core = dataclasses.replace(candor, settings=settings, answerer=answerer, limits=None)
    ledger = EventLedger(core.store.engine, lease_seconds=2.0)
    async with FakeSlack() as fake:
        fake.channels["C0HRPRIV"] = {"is_private": True}
        fake.channels[TRIAGE] = {"is_private": True}
        fake.users[EXPERT] = {"real_name": "Ana Diaz"}
        config = SlackConfig(
            bot_token="xoxb-test",
            signing_secret=SECRET,
            api_url=fake.api_url,
            triage_channel=TRIAGE,
            experts=Experts.parse(f"slack:{EXPERT}"),
        )
        adapter = SlackAdapter(config, core, ledger, drain_seconds=5)
        async with serve_adapter(core, adapter) as url:
            yield Served(url, fake, ledger, core, adapter)


def button(call: Call, action_id: str) -> dict[str, Any]:
    for block in call.params.get("blocks") or []:
        for element in block.get("elements", []) if block.get("type") == "actions" else []:
            if element.get("action_id") == action_id:
                return dict(element)
    raise AssertionError(f"no {action_id} button in {call.params.get('blocks')}")


def reply_values(
    reply: str, *, curate: bool, question: str = "", groups: str = "", readers: str | None = None
) -> dict[str, dict[str, Any]]:
    chosen = [{"value": CURATE_VALUE, "text": {"type": "plain_text", "text": "Save"}}] if curate else []
    option = {"value": readers, "text": {"type": "plain_text", "text": readers}} if readers else None
    return {
        READERS_BLOCK: {READERS_ACTION: {"type": "radio_buttons", "selected_option": option}},
        REPLY_BLOCK: {REPLY_ACTION: reply},
        CURATE_BLOCK: {CURATE_ACTION: {"type": "checkboxes", "selected_options": chosen}},
        QUESTION_BLOCK: {QUESTION_ACTION: question},
        GROUPS_BLOCK: {GROUPS_ACTION: groups},
    }


async def ask(served: Served, question: str, *, user: str = "U1", channel: str = "C1") -> tuple[dict[str, Any], Call]:
    mention = app_mention(question, user=user, channel=channel)
    assert await served.event(mention) == 200
    (post,) = await served.fake.wait_for(
        "chat.postMessage",
        where=lambda c: c.params.get("thread_ts") == mention["ts"] and c.params["channel"] == channel,
    )
    return mention, post


async def handoff_row(served: Served, trace_id: str) -> dict[str, Any]:
    async with served.core.store.engine.connect() as conn:
        row = (
            (await conn.execute(text("SELECT * FROM handoffs WHERE trace_id = CAST(:t AS uuid)"), {"t": trace_id}))
            .mappings()
            .one()
        )
    return dict(row)


async def test_a_refusal_handed_to_a_person_comes_back_answered_and_the_kept_answer_answers_the_next_asker(
    served: Served,
) -> None:
    mention, answer = await ask(served, BICYCLE)
    assert "I don't know" in block_text(answer)
    offer = button(answer, HANDOFF)
    assert offer["text"]["text"] == "🙋 Ask a person"

    # the asker asks for a person: the question goes to the triage channel, the asker is told
    click = block_action(HANDOFF, offer["value"], user="U1", channel="C1", thread_ts=mention["ts"])
    assert await served.interact(click) == 200
    (triage,) = await served.fake.wait_for("chat.postMessage", where=lambda c: c.params["channel"] == TRIAGE)
    shown = block_text(triage)
    assert f">{BICYCLE}" in shown and "<@U1>" in shown and "<#C1>" in shown and "could not answer" in shown
    assert trace_id_of(answer) in shown
    (told,) = await served.fake.wait_for("chat.postEphemeral", where=lambda c: c.params["user"] == "U1")
    assert f"<#{TRIAGE}>" in told.params["text"]
    row = await handoff_row(served, trace_id_of(answer))
    assert (row["status"], row["reason"], row["triage"]["channel"]) == ("open", "abstained", TRIAGE)

    # the expert replies and keeps the reply as a curated answer
    reply_click = block_action(HANDOFF_REPLY, button(triage, HANDOFF_REPLY)["value"], user=EXPERT, channel=TRIAGE)
    assert await served.interact(reply_click) == 200
    (form,) = await served.fake.wait_for("views.open")
    assert form.params["view"]["callback_id"] == HANDOFF_REPLY_CALLBACK
    handoff_id = form.params["view"]["private_metadata"]
    values = reply_values(BICYCLE_REPLY, curate=True, question=BICYCLE, readers="everyone")
    assert await served.interact(view_submission(HANDOFF_REPLY_CALLBACK, handoff_id, values, user=EXPERT)) == 200

    (delivered,) = await served.fake.wait_for(
        "chat.postMessage", where=lambda c: c.params["channel"] == "C1" and "bike room" in block_text(c)
    )
    assert delivered.params["thread_ts"] == mention["ts"]
    assert "<@U1>" in block_text(delivered) and f"<@{EXPERT}>" in block_text(delivered)
    (done,) = await served.fake.wait_for("chat.update", where=lambda c: c.params["channel"] == TRIAGE)
    assert "Saved as curated answer" in block_text(done)
    assert HANDOFF_REPLY not in json.dumps(done.params["blocks"])  # answered: no second reply button
    row = await handoff_row(served, trace_id_of(answer))
    assert (row["status"], row["reply_text"], row["replied_by"], row["replied_by_name"]) == (
        "replied",
        BICYCLE_REPLY,
        EXPERT,
        "Ana Diaz",
    )
    assert row["curated_id"] is not None

    # the next asker gets the curated answer, cited with who answered and when
    _, next_answer = await ask(served, BICYCLE, user="U2", channel="C2")
    shown = block_text(next_answer)
    assert "bike room" in shown and "I don't know" not in shown
    assert f"answered by Ana Diaz on {datetime.now(UTC).date().isoformat()}" in shown


async def test_a_second_click_finds_the_first_hand_off(served: Served) -> None:
    mention, answer = await ask(served, "Which floor is the table tennis room on?")
    click = button(answer, HANDOFF)["value"]
    for _ in range(2):
        await served.interact(block_action(HANDOFF, click, user="U1", channel="C1", thread_ts=mention["ts"]))
    notes = await served.fake.wait_for("chat.postEphemeral", count=2)
    assert sorted("already with the team" in n.params["text"] for n in notes) == [False, True]
    assert len(served.fake.calls_to("chat.postMessage")) == 2  # the answer and one triage post


async def test_a_thumbs_down_offers_a_person_and_the_reply_goes_to_the_answer_s_thread(served: Served) -> None:
    mention, answer = await ask(served, "How much paid parental leave does the primary carer get?")
    trace_id = trace_id_of(answer)
    vote = block_action(FEEDBACK_DOWN, trace_id, user="U1", channel="C1", thread_ts=mention["ts"])
    assert await served.interact(vote) == 200
    (note,) = await served.fake.wait_for("chat.postEphemeral")
    offer = button(note, HANDOFF)
    assert json.loads(offer["value"]) == {"trace": trace_id, "reason": "down_vote", "thread": mention["ts"]}

    # the offer sits in an ephemeral note: Slack sends no message with the click, the value says where
    assert await served.interact(block_action(HANDOFF, offer["value"], user="U1", channel="C1", ephemeral=True)) == 200
    (triage,) = await served.fake.wait_for("chat.postMessage", where=lambda c: c.params["channel"] == TRIAGE)
    assert "16 weeks" in block_text(triage) and "marked the answer 👎" in block_text(triage)
    handoff_id = button(triage, HANDOFF_REPLY)["value"]
    values = reply_values("Primary carers get 16 weeks at full pay; HR can confirm your dates.", curate=False)
    await served.interact(view_submission(HANDOFF_REPLY_CALLBACK, handoff_id, values, user=EXPERT))
    (delivered,) = await served.fake.wait_for(
        "chat.postMessage", where=lambda c: c.params["channel"] == "C1" and "HR can confirm" in block_text(c)
    )
    assert delivered.params["thread_ts"] == mention["ts"]
    (done,) = await served.fake.wait_for("chat.update", where=lambda c: c.params["channel"] == TRIAGE)
    assert "replied to the asker" in block_text(done) and "curated" not in block_text(done)
    assert (await handoff_row(served, trace_id))["curated_id"] is None


async def test_an_answer_from_restricted_documents_is_not_shown_in_the_triage_channel(served: Served) -> None:
    mention, answer = await ask(served, RESTRICTED_QUESTION, channel="C0HRPRIV")
    assert "Salary" in block_text(answer) or "salary" in block_text(answer)
    await served.interact(block_action(FEEDBACK_DOWN, trace_id_of(answer), channel="C0HRPRIV", thread_ts=mention["ts"]))
    (note,) = await served.fake.wait_for("chat.postEphemeral")
    await served.interact(block_action(HANDOFF, button(note, HANDOFF)["value"], channel="C0HRPRIV", ephemeral=True))
    (triage,) = await served.fake.wait_for("chat.postMessage", where=lambda c: c.params["channel"] == TRIAGE)
    shown = block_text(triage)
    assert "restricted documents" in shown
    assert "Candor's answer" not in shown and "Sources" not in shown


async def test_a_triage_channel_that_refuses_the_post_is_tried_again_on_the_next_click(served: Served) -> None:
    mention, answer = await ask(served, "Is there a quiet room for phone calls?")
    value = button(answer, HANDOFF)["value"]
    served.fake.error("chat.postMessage", "not_in_channel")
    await served.interact(block_action(HANDOFF, value, user="U1", channel="C1", thread_ts=mention["ts"]))
    (sorry,) = await served.fake.wait_for("chat.postEphemeral")
    assert "could not be passed on" in sorry.params["text"]
    assert (await handoff_row(served, trace_id_of(answer)))["triage"] is None  # recorded, not yet posted

    await served.interact(block_action(HANDOFF, value, user="U1", channel="C1", thread_ts=mention["ts"]))
    (triage,) = await served.fake.wait_for(
        "chat.postMessage", where=lambda c: c.params["channel"] == TRIAGE and c.error is None
    )
    assert "quiet room" in block_text(triage)
    notes = await served.fake.wait_for("chat.postEphemeral", count=2)
    assert "passed your question" in notes[1].params["text"]


async def test_a_private_answer_s_hand_off_is_answered_in_a_direct_message(served: Served) -> None:
    _, answer = await ask(served, "Can I bring my dog to the office?")
    value = button(answer, HANDOFF)["value"]
    await served.interact(block_action(HANDOFF, value, user="U3", channel="C4", ephemeral=True))
    (triage,) = await served.fake.wait_for("chat.postMessage", where=lambda c: c.params["channel"] == TRIAGE)
    values = reply_values("Dogs are welcome on Fridays if they are friendly.", curate=False)
    handoff_id = button(triage, HANDOFF_REPLY)["value"]
    await served.interact(view_submission(HANDOFF_REPLY_CALLBACK, handoff_id, values, user=EXPERT))
    (delivered,) = await served.fake.wait_for("chat.postMessage", where=lambda c: "Fridays" in block_text(c))
    assert delivered.params["channel"] == "U3" and delivered.params.get("thread_ts") is None


async def test_an_empty_reply_is_refused_in_the_form_and_nothing_is_sent(served: Served) -> None:
    _, answer = await ask(served, "Where can I charge my electric car?")
    await served.interact(block_action(HANDOFF, button(answer, HANDOFF)["value"], channel="C1"))
    (triage,) = await served.fake.wait_for("chat.postMessage", where=lambda c: c.params["channel"] == TRIAGE)
    handoff_id = button(triage, HANDOFF_REPLY)["value"]
    body = form_body(view_submission(HANDOFF_REPLY_CALLBACK, handoff_id, reply_values("  ", curate=True), user=EXPERT))
    status, response = await served.post(body, signed_headers(SECRET, body))
    assert status == 200
    assert json.loads(response) == {"response_action": "errors", "errors": {REPLY_BLOCK: "Write the answer first."}}
    async with served.core.store.engine.connect() as conn:
        stored = (
            await conn.execute(text("SELECT status FROM handoffs WHERE id = CAST(:id AS uuid)"), {"id": handoff_id})
        ).scalar_one()
    assert stored == "open"


async def test_a_double_click_and_a_form_sent_twice_post_and_keep_once(served: Served) -> None:
    mention, answer = await ask(served, "Is there a shower at the office?")
    value = button(answer, HANDOFF)["value"]
    clicks = [block_action(HANDOFF, value, user="U1", channel="C1", thread_ts=mention["ts"]) for _ in range(2)]
    assert await asyncio.gather(*(served.interact(c) for c in clicks)) == [200, 200]
    notes = await served.fake.wait_for("chat.postEphemeral", count=2)
    assert sorted("already with the team" in n.params["text"] for n in notes) == [False, True]
    (triage,) = await served.fake.wait_for("chat.postMessage", where=lambda c: c.params["channel"] == TRIAGE)

    handoff_id = button(triage, HANDOFF_REPLY)["value"]
    values = reply_values(
        "Yes, on the second floor next to the gym.", curate=True, question="Is there a shower?", readers="everyone"
    )
    forms = [view_submission(HANDOFF_REPLY_CALLBACK, handoff_id, values, user=EXPERT) for _ in range(2)]
    assert await asyncio.gather(*(served.interact(f) for f in forms)) == [200, 200]
    told = await served.fake.wait_for("chat.postEphemeral", count=3)
    assert "answered this question already" in told[2].params["text"]
    delivered = await served.fake.wait_for("chat.postMessage", where=lambda c: "second floor" in block_text(c))
    assert len(delivered) == 1
    (done,) = await served.fake.wait_for("chat.update", where=lambda c: c.params["channel"] == TRIAGE)
    assert "Saved as curated answer" in block_text(done)
    async with served.core.store.engine.connect() as conn:
        kept = (
            await conn.execute(
                text("SELECT count(*) FROM curated_answers WHERE handoff_id = CAST(:h AS uuid)"), {"h": handoff_id}
            )
        ).scalar_one()
    assert kept == 1


async def test_a_restricted_question_s_reply_form_offers_its_cited_documents_groups(served: Served) -> None:
    mention, answer = await ask(served, RESTRICTED_QUESTION, channel="C0HRPRIV")
    await served.interact(block_action(FEEDBACK_DOWN, trace_id_of(answer), channel="C0HRPRIV", thread_ts=mention["ts"]))
    (note,) = await served.fake.wait_for("chat.postEphemeral")
    await served.interact(block_action(HANDOFF, button(note, HANDOFF)["value"], channel="C0HRPRIV", ephemeral=True))
    (triage,) = await served.fake.wait_for("chat.postMessage", where=lambda c: c.params["channel"] == TRIAGE)
    await served.interact(block_action(HANDOFF_REPLY, button(triage, HANDOFF_REPLY)["value"], user=EXPERT))
    (form,) = await served.fake.wait_for(
        "views.open", where=lambda c: c.params["view"]["callback_id"] == HANDOFF_REPLY_CALLBACK
    )
    blocks = form.params["view"]["blocks"]
    groups = next(b for b in blocks if b.get("block_id") == GROUPS_BLOCK)
    assert groups["element"]["initial_value"] == "hr-confidential"
    readers = next(b for b in blocks if b.get("block_id") == READERS_BLOCK)
    assert readers["element"]["initial_option"]["value"] == "cited"
    cited = " ".join(e["text"] for b in blocks if b["type"] == "context" for e in b["elements"])
    assert cited.startswith("Cited: ") and "(hr-confidential)" in cited


def test_an_escaped_question_is_cut_to_slack_s_section_limit() -> None:
    from bot.slack.handoff_blocks import reply_modal, triage_message
    from rag.model.loop import Handoff

    question = "Is R&D <allowed> to expense & claim? " * 120  # escaping makes it far longer than 3,000
    handoff = Handoff("h", "t", "slack", "U1", "abstained", {}, question, "I don't know.", "abstained")
    _, blocks = triage_message(handoff, where="<#C1>")
    shown = [b["text"]["text"] for b in [*blocks, *reply_modal(handoff)["blocks"]] if b["type"] == "section"]
    assert shown and max(len(text) for text in shown) <= 3000
