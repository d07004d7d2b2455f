"""The weekly review sample in Slack: posted once per week to the review channel however many replicas
try, each sentence beside its passage with a button per label; a click stores the label in Postgres
(and the report's people's rates) and the message says who labelled it. Real `slack_bolt` against the
fake Slack, real pipeline answers moved to August 2019 (a month no other test uses)."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from slack_sdk.errors import SlackApiError
from sqlalchemy import text

from bot.slack.app import SlackAdapter
from bot.slack.config import SlackConfig
from bot.slack.review_blocks import REVIEW_ACTION
from rag.insights.report.build import report_window
from rag.model.answers import Answer, Question
from rag.model.types import AccessScope
from rag.runtime import Candor
from rag.tracking.events import EventLedger
from tests.conftest import SAMPLE
from tests.fakes.slack_api import Call, FakeSlack
from tests.fakes.slack_events import block_action
from tests.integration.slack.test_slack import SECRET, Served, block_text
from tests.serving import serve_adapter

REVIEW = "C0REVIEW"
EXPERT = "U0EXPERT"
SUNDAY = datetime(2019, 8, 11, 12, tzinfo=UTC)
ANSWERED = [
    "How much paid parental leave does the primary carer get?",
    "How many days of paid sick leave do employees get each year?",
]
REFUSED = "Where do I store my bicycle at the office?"
RESTRICTED = "What is the salary band for an L3 Senior Software Engineer?"


@pytest.fixture
async def served(candor: Candor) -> AsyncIterator[Served]:
    ledger = EventLedger(candor.store.engine, lease_seconds=2.0)
    async with FakeSlack() as fake:
        fake.users[EXPERT] = {"real_name": "Ana Diaz"}
        config = SlackConfig(
            bot_token="xoxb-test", signing_secret=SECRET, api_url=fake.api_url, review_channel=REVIEW, review_sample=10
        )
        adapter = SlackAdapter(config, candor, ledger, drain_seconds=5)
        assert adapter.review is not None
        adapter.review.clock = lambda: SUNDAY
        adapter.review.first_check_seconds = 3600  # the test posts when it wants
        async with serve_adapter(candor, adapter) as url:
            yield Served(url, fake, ledger, candor, adapter)


async def seeded(candor: Candor) -> tuple[str, list[Answer]]:
    kb = await candor.knowledge_base(f"weekly-{uuid.uuid4().hex[:8]}", create=True)
    assert kb is not None and (await candor.ingestor().ingest([SAMPLE], kb=kb)).ok
    public = AccessScope(frozenset(), frozenset([kb.name]))
    answers = [await candor.answer(Question(q, scope=public)) for q in [*ANSWERED, REFUSED]]
    hr = AccessScope(frozenset({"hr-confidential"}), frozenset([kb.name]))
    answers.append(await candor.answer(Question(RESTRICTED, scope=hr)))
    assert [a.route for a in answers] == ["answered", "answered", "abstained", "answered"], [a.text for a in answers]
    async with candor.store.engine.begin() as conn:
        for n, answer in enumerate(answers):
            moved = {"at": SUNDAY - timedelta(days=3, hours=n), "id": answer.trace_id}
            await conn.execute(text("UPDATE traces SET created_at = :at WHERE id = :id"), moved)
    return kb.name, answers


def buttons(call: Call) -> list[dict[str, Any]]:
    return [
        element
        for block in call.params.get("blocks") or []
        if block.get("type") == "actions"
        for element in block.get("elements", [])
    ]


async def test_the_weekly_sample_is_posted_once_and_a_click_is_a_stored_label(served: Served) -> None:
    kb, answers = await seeded(served.core)
    review = served.adapter.review
    assert review is not None
    assert await review.post_due() is True
    assert await review.post_due() is False  # the week is claimed: another replica posts nothing

    posts = served.fake.calls_to("chat.postMessage")
    top, items = posts[0], posts[1:]
    assert top.params["channel"] == REVIEW and "3 answers and 1 refusals" not in block_text(top)
    assert "2 answers and 1 refusals" in block_text(top)
    assert "1 more drew on restricted documents" in block_text(top)
    row = await served.ledger.get("review", f"{REVIEW}/2019-W32")
    assert row is not None and row["status"] == "answered"
    assert {p.params.get("thread_ts") for p in items} == {row["reply"]["ts"][0]}  # all in the opening's thread
    shown = "\n".join(block_text(p) for p in items)
    assert RESTRICTED not in shown and "salary" not in shown.lower()
    first = next(p for p in items if ANSWERED[0] in block_text(p))
    answer = next(a for a in answers if a.question == ANSWERED[0])
    assert answer.sentences[0].text[:60] in block_text(first)
    assert answer.sources[0].excerpt[:40] in block_text(first)

    supported = next(b for b in buttons(first) if b["action_id"] == f"{REVIEW_ACTION}supported")
    click = block_action(supported["action_id"], supported["value"], user=EXPERT, channel=REVIEW, message_ts="1.1")
    click["message"]["blocks"] = first.params["blocks"]
    assert await served.interact(click) == 200
    (update,) = await served.fake.wait_for("chat.update")
    assert f"supported, labelled by <@{EXPERT}>" in block_text(update)
    assert len(buttons(update)) == len(buttons(first)) - 3  # that sentence's buttons only

    async with served.core.store.engine.connect() as conn:
        row = (
            await conn.execute(
                text("SELECT position, label, labeller FROM human_labels WHERE trace_id = CAST(:t AS uuid)"),
                {"t": answer.trace_id},
            )
        ).one()
    assert tuple(row) == (0, "supported", "Ana Diaz (Slack)")
    report = await served.core.report(report_window("2019-08-01", "2019-09-01", kb=kb))
    assert report["total"]["human"]["hallucination_rate"]["sample_size"] == 1

    refused = next(p for p in items if "did not answer" in block_text(p))
    wrong = next(b for b in buttons(refused) if b["action_id"] == f"{REVIEW_ACTION}wrong_abstention")
    assert json.loads(wrong["value"])["k"] == "abstention"
    stale = {**json.loads(supported["value"]), "p": 99}
    bad = block_action(supported["action_id"], json.dumps(stale), user=EXPERT, channel=REVIEW)
    assert await served.interact(bad) == 200
    (note,) = await served.fake.wait_for("chat.postEphemeral")
    assert "not stored" in note.params["text"] and "position" in note.params["text"]


async def test_a_running_server_posts_the_week_s_sample_by_itself_once(candor: Candor) -> None:
    later = SUNDAY + timedelta(days=14)  # a week with nothing asked in it
    async with FakeSlack() as fake:
        config = SlackConfig(bot_token="xoxb-test", signing_secret=SECRET, api_url=fake.api_url, review_channel=REVIEW)
        replicas = [SlackAdapter(config, candor, EventLedger(candor.store.engine), drain_seconds=5) for _ in range(2)]
        for n, adapter in enumerate(replicas):
            assert adapter.review is not None
            adapter.review.clock = lambda: later
            adapter.review.first_check_seconds = 0 if n == 0 else 3600
        async with serve_adapter(candor, replicas[0]), serve_adapter(candor, replicas[1]):
            (post,) = await fake.wait_for("chat.postMessage")  # the first replica's own check
            assert post.params["channel"] == REVIEW and "nothing to label" in post.params["text"]
            row = await replicas[0].ledger.get("review", f"{REVIEW}/2019-W34")
            for _ in range(100):  # its claim is completed just after the post
                if row is not None and row["status"] == "answered":
                    break
                await asyncio.sleep(0.05)
                row = await replicas[0].ledger.get("review", f"{REVIEW}/2019-W34")
            assert row is not None and row["status"] == "answered"
            other = replicas[1].review
            assert other is not None and await other.post_due() is False  # the week is taken
        assert len(fake.calls_to("chat.postMessage")) == 1


async def test_a_week_whose_post_failed_is_posted_at_the_next_check(served: Served) -> None:
    review = served.adapter.review
    assert review is not None
    review.clock = lambda: SUNDAY + timedelta(days=28)  # a week of its own
    served.fake.error("chat.postMessage", "ratelimited")
    with pytest.raises(SlackApiError):
        await review.post_due()
    assert await review.post_due() is True  # handed back, not failed: posted now
    posted = [c for c in served.fake.calls_to("chat.postMessage") if c.error is None]
    assert len(posted) == 1 and "nothing to label" in posted[0].params["text"]
