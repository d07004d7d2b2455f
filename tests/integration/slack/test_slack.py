"""The Slack adapter end to end: signed events over real HTTP to `candor serve`'s aiohttp app, the real
`slack_bolt` app and `slack_sdk` client talking to a fake Slack Web API on 127.0.0.1, the real
pipeline over the sample handbook in the embedded Postgres, and the event ledger in that Postgres.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import json
import logging
import re
import time
import uuid
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from bot.server import ChatCore
from bot.slack.app import SlackAdapter
from bot.slack.blocks import (
    FEEDBACK_DOWN,
    FEEDBACK_REASON_CALLBACK,
    FEEDBACK_UP,
    HOME_KNOWLEDGE_BASES,
    REASON_ACTION,
    REASON_BLOCK,
)
from bot.slack.config import SlackConfig
from bot.slack.history import MAX_HISTORY_CHARS, MAX_TURN_CHARS, MAX_TURNS
from bot.slack.jobs import PLATFORM, Job
from bot.slack.thread import PAGE_SIZE, READ_SECONDS
from rag.pipeline.critic import EvidenceVerifier
from rag.runtime import Candor, build_answerer
from rag.store.postgres import KnowledgeBase
from rag.tracking.events import EventLedger
from tests.conftest import SAMPLE
from tests.cores import Broken, Held, Recording, SlowRetriever, SlowVerifier, Verbose
from tests.fakes.slack_api import RESPONSE_URL_SECONDS, RESPONSE_URL_USES, Call, FakeSlack
from tests.fakes.slack_events import (
    app_home_opened,
    app_mention,
    assistant_thread_started,
    block_action,
    command_body,
    event_callback,
    form_body,
    json_body,
    message,
    message_changed,
    message_deleted,
    signed_headers,
    slash_command,
    view_submission,
)
from tests.serving import serve_adapter

SECRET = "test-signing-secret"
RESTRICTED_QUESTION = "What is the salary band for an L3 Senior Software Engineer?"
SMS_QUESTION = "How many SMS alerts per month are included with Beacon Pro?"


@pytest.fixture(scope="module")
async def handbook(candor: Candor) -> KnowledgeBase:
    kb = await candor.knowledge_base(f"slack-{uuid.uuid4().hex[:8]}", create=True)
    assert kb is not None
    assert (await candor.ingestor().ingest([SAMPLE], kb=kb)).ok
    await candor.store.analyze()
    return kb


@dataclass
class Served:
    url: str
    fake: FakeSlack
    ledger: EventLedger
    core: Candor
    adapter: SlackAdapter

    async def post(self, body: bytes, headers: Mapping[str, str]) -> tuple[int, str]:
        async with (
            aiohttp.ClientSession() as session,
            session.post(f"{self.url}/slack/events", data=body, headers=dict(headers)) as response,
        ):
            return response.status, await response.text()

    async def event(self, event: dict[str, Any], *, event_id: str | None = None, retry: int | None = None) -> int:
        body = json_body(event_callback(event, event_id=event_id))
        headers = signed_headers(SECRET, body)
        if retry is not None:
            headers = {**headers, "X-Slack-Retry-Num": str(retry), "X-Slack-Retry-Reason": "http_timeout"}
        status, _ = await self.post(body, headers)
        return status

    async def interact(self, payload: dict[str, Any]) -> int:
        body = form_body(payload)
        status, _ = await self.post(body, signed_headers(SECRET, body))
        return status


def policy(path: Path, kb: str) -> Path:
    path.write_text(
        f'- platform: slack\n  knowledge_bases: ["{kb}"]\n'
        f'- platform: slack\n  conversation: "T0001/C0HR*"\n  groups: [hr-confidential]\n  knowledge_bases: ["{kb}"]\n',
        encoding="utf-8",
    )
    return path


@contextlib.asynccontextmanager
async def serving(core: Candor, ledger: EventLedger, answers: ChatCore | None = None) -> AsyncIterator[Served]:
    """`candor serve`'s app with the Slack adapter mounted, on a free port, and a fake Slack; the
    adapter answers with `answers` (default: `core`)."""
    async with FakeSlack() as fake:
        fake.channels["C0HRPRIV"] = {"is_private": True}
        config = SlackConfig(bot_token="xoxb-test", signing_secret=SECRET, api_url=fake.api_url)
        adapter = SlackAdapter(config, answers or core, ledger, drain_seconds=5)
        async with serve_adapter(core, adapter) as url:
            yield Served(url, fake, ledger, core, adapter)


@pytest.fixture
async def core(candor: Candor, handbook: KnowledgeBase, tmp_path: Path) -> Candor:
    settings = candor.settings.model_copy(update={"access_policy": policy(tmp_path / "access.yaml", handbook.name)})
    answerer = build_answerer(settings, candor.store, candor.embedder, candor.retriever, tracker=candor.tracker)
    # one fake user asks here far more often than any person would: the rate limits have their own
    # tests (tests/integration/tracking/test_limits.py, tests/integration/security/)
    return dataclasses.replace(candor, settings=settings, answerer=answerer, limits=None)


@pytest.fixture
async def served(core: Candor) -> AsyncIterator[Served]:
    async with serving(core, EventLedger(core.store.engine, lease_seconds=2.0)) as running:
        yield running


def block_text(call: Call) -> str:
    """Every text in a message's blocks, joined: what a reader sees."""
    out: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("text"), str):
                out.append(node["text"])
            for value in node.values():
                if isinstance(value, dict | list):
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(call.params.get("blocks") or [])
    return "\n".join(out)


def trace_id_of(call: Call) -> str:
    for block in call.params.get("blocks") or []:
        for element in block.get("elements", []) if block.get("type") == "actions" else []:
            if element.get("action_id") == FEEDBACK_UP:
                return str(element["value"])
    raise AssertionError(f"no feedback buttons in {call.params.get('blocks')}")


async def settle(seconds: float = 0.5) -> None:
    await asyncio.sleep(seconds)


# --- answering ---------------------------------------------------------------------------------


async def test_a_mention_gets_a_threaded_cited_answer_and_a_vote_lands_in_postgres(served: Served) -> None:
    mention = app_mention("How much paid parental leave does the primary carer get?", channel="C1")
    assert await served.event(mention) == 200

    (post,) = await served.fake.wait_for("chat.postMessage")
    assert post.params["channel"] == "C1"
    assert post.params["thread_ts"] == mention["ts"]  # in the thread of the question
    assert post.params["unfurl_links"] is False
    text = block_text(post)
    assert "16 weeks" in text and "[1]" in text
    assert "Sources" in text and "Leave Policy" in text
    await served.fake.wait_for("reactions.remove")
    reactions = [(c.method, c.params["name"]) for c in served.fake.calls if c.method.startswith("reactions.")]
    assert reactions == [("reactions.add", "eyes"), ("reactions.remove", "eyes")]

    trace_id = trace_id_of(post)
    row = await served.ledger.get("slack", f"T0001/C1/{mention['ts']}")
    assert row is not None and row["status"] == "answered" and str(row["trace_id"]) == trace_id

    assert await served.interact(block_action(FEEDBACK_UP, trace_id, user="U7", channel="C1")) == 200
    (note,) = await served.fake.wait_for("chat.postEphemeral")
    assert note.params["user"] == "U7"
    trace = await served.core.tracker.trace(trace_id)
    assert trace is not None and trace["platform"] == "slack"
    assert [(f["rating"], f["user_id"], f["platform"]) for f in trace["feedback"]] == [(1, "U7", "slack")]


async def test_a_conflict_between_sources_is_called_out_with_both_values(served: Served) -> None:
    await served.event(app_mention("How many days of annual leave do full-time employees get?", channel="C11"))
    (post,) = await served.fake.wait_for("chat.postMessage")
    text = block_text(post)
    assert "24 days" in text and "20 days" in text
    assert "disagree" in text and "Preferred" in text and "newer effective date" in text


async def test_a_thumbs_down_opens_a_reason_form_and_the_reason_replaces_the_vote(served: Served) -> None:
    await served.event(app_mention("How many days of paid sick leave do employees get each year?"))
    (post,) = await served.fake.wait_for("chat.postMessage")
    trace_id = trace_id_of(post)

    assert await served.interact(block_action(FEEDBACK_DOWN, trace_id, user="U8")) == 200
    (opened,) = await served.fake.wait_for("views.open")
    assert opened.params["view"]["callback_id"] == FEEDBACK_REASON_CALLBACK
    assert opened.params["view"]["private_metadata"] == trace_id
    reason = {REASON_BLOCK: {REASON_ACTION: "It should say whether a doctor's note is needed"}}
    assert await served.interact(view_submission(FEEDBACK_REASON_CALLBACK, trace_id, reason, user="U8")) == 200

    for _ in range(50):
        trace = await served.core.tracker.trace(trace_id)
        assert trace is not None
        if trace["feedback"] and trace["feedback"][0].get("comment"):
            break
        await settle(0.1)
    assert [(f["rating"], f["user_id"], f["comment"]) for f in trace["feedback"]] == [
        (-1, "U8", "It should say whether a doctor's note is needed")
    ]


async def test_the_reason_form_opens_within_the_trigger_s_life_however_slow_the_rest(served: Served) -> None:
    await served.event(app_mention("How many days of paid sick leave do employees get each year?", channel="C12"))
    (post,) = await served.fake.wait_for("chat.postMessage")
    served.fake.delay("chat.postEphemeral", 3.5, times=1)  # the thank-you is slow to post, past a trigger's 3 s
    assert await served.interact(block_action(FEEDBACK_DOWN, trace_id_of(post), user="U9", channel="C12")) == 200
    (opened,) = await served.fake.wait_for("views.open")
    assert opened.error is None  # opened first, while the trigger id was fresh
    (thanks,) = await served.fake.wait_for("chat.postEphemeral", timeout=10)
    assert thanks.params["user"] == "U9"


async def test_a_direct_message_is_answered_in_place(served: Served) -> None:
    dm = message("How many days of paid sick leave do employees get each year?", channel="D1", channel_type="im")
    assert await served.event(dm) == 200
    (post,) = await served.fake.wait_for("chat.postMessage")
    assert post.params["channel"] == "D1"
    assert post.params.get("thread_ts") in (None, "")
    assert "10 days" in block_text(post)


async def test_follow_ups_in_a_thread_the_bot_answered_are_answered_with_history(served: Served) -> None:
    first = app_mention("How much does the Team plan cost per month on monthly billing?", user="U1", channel="C2")
    await served.event(first)
    await served.fake.wait_for("chat.postMessage")

    # The asker follows up without a mention: answered, with the thread as history.
    follow = message("and the Business plan?", user="U1", channel="C2", thread_ts=first["ts"])
    await served.event(follow)
    posts = await served.fake.wait_for("chat.postMessage", count=2)
    assert posts[1].params["thread_ts"] == first["ts"]
    assert "$29" in block_text(posts[1])

    # Someone else chatting in the thread is left alone; someone else asking is answered.
    await served.event(message("thanks, that helps", user="U2", channel="C2", thread_ts=first["ts"]))
    await served.event(message("Is there a free trial?", user="U2", channel="C2", thread_ts=first["ts"]))
    posts = await served.fake.wait_for("chat.postMessage", count=3)
    assert "14-day" in block_text(posts[2])
    await settle()
    assert len(served.fake.calls_to("chat.postMessage")) == 3


# --- a thread's history: what people said there, read back from Slack -------------------------


TEAM_MONTHLY = "How much does the Team plan cost per month on monthly billing?"


async def rewritten(served: Served, post: Call) -> str | None:
    trace = await served.core.tracker.trace(trace_id_of(post))
    assert trace is not None
    return trace["rewritten_question"]


async def test_a_follow_up_is_read_with_the_question_people_asked_before_candor_was_mentioned(
    served: Served,
) -> None:
    fake, channel = served.fake, "C20"
    # people talk in a thread Candor was never part of: the ledger knows none of it
    root = fake.said(message(TEAM_MONTHLY, user="U2", channel=channel))
    aside = fake.said(message("no idea, ask Candor", user="U3", channel=channel, thread_ts=root["ts"]))
    for said in (root, aside):
        assert await served.event(said) == 200
    assert await claims_in(served, channel) == 0
    follow = fake.said(app_mention("and for the Business plan?", user="U1", channel=channel, thread_ts=root["ts"]))
    await served.event(follow)

    (post,) = await fake.wait_for("chat.postMessage")
    assert post.params["thread_ts"] == root["ts"]
    assert await rewritten(served, post) == "How much does the Business plan cost per month on monthly billing?"
    assert "$29" in block_text(post)
    (read,) = fake.calls_to("conversations.replies")
    assert read.error is None
    assert (read.params["channel"], read.params["ts"], read.params["latest"]) == (channel, root["ts"], follow["ts"])
    assert int(read.params["limit"]) == PAGE_SIZE


async def test_a_follow_up_passes_over_people_talking_between_the_answer_and_it(served: Served) -> None:
    fake, channel = served.fake, "C21"
    first = fake.said(app_mention(TEAM_MONTHLY, channel=channel))
    await served.event(first)
    await fake.wait_for("chat.postMessage")
    chat = fake.said(message("thanks, that helps", user="U2", channel=channel, thread_ts=first["ts"]))
    await served.event(chat)  # not a question: left alone, but it is in the thread
    follow = fake.said(message("and the Business plan?", user="U1", channel=channel, thread_ts=first["ts"]))
    await served.event(follow)
    posts = await fake.wait_for("chat.postMessage", count=2)
    assert await rewritten(served, posts[1]) == "How much does the Business plan cost per month on monthly billing?"
    assert "$29" in block_text(posts[1])


async def test_a_very_long_thread_gives_the_pipeline_bounded_history(core: Candor) -> None:
    recording = Recording(core)
    async with serving(core, EventLedger(core.store.engine, lease_seconds=2.0), answers=recording) as served:
        fake, channel = served.fake, "C22"
        root = fake.said(message("Where do we put questions about expenses?", user="U2", channel=channel))
        for n in range(PAGE_SIZE + 50):  # more than one page, each message past a turn's length
            chatter = f"message {n}: " + "lorem ipsum " * 500
            fake.said(message(chatter, user=f"U{n % 5 + 2}", channel=channel, thread_ts=root["ts"]))
        question = fake.said(
            app_mention("How much is the home office stipend?", user="U1", channel=channel, thread_ts=root["ts"])
        )
        await served.event(question)
        (post,) = await fake.wait_for("chat.postMessage")
        assert "$500" in block_text(post)

    reads = fake.calls_to("conversations.replies")
    assert [r.error for r in reads] == [None, None] and "cursor" in reads[1].params  # both pages read
    (asked,) = recording.questions
    assert 0 < len(asked.history) <= MAX_TURNS
    assert all(len(turn.text) <= MAX_TURN_CHARS for turn in asked.history)
    assert sum(len(turn.text) for turn in asked.history) <= MAX_HISTORY_CHARS
    assert asked.history[-1].text.startswith(f"message {PAGE_SIZE + 49}: ")  # the latest are kept
    assert asked.history[-1].author == f"U{(PAGE_SIZE + 49) % 5 + 2}" and not asked.history[-1].from_bot


@pytest.mark.parametrize("failure", ["rate limited", "missing scope", "server error", "too slow"])
async def test_when_slack_will_not_give_the_thread_the_follow_up_is_read_with_the_ledger_s_turns(
    served: Served, caplog: pytest.LogCaptureFixture, failure: str
) -> None:
    fake, channel = served.fake, f"C23{failure.replace(' ', '').upper()}"
    first = fake.said(app_mention(TEAM_MONTHLY, channel=channel))
    await served.event(first)
    await fake.wait_for("chat.postMessage")
    if failure == "rate limited":
        fake.rate_limit("conversations.replies", retry_after=60)  # not waited out: the answer goes on
    elif failure == "missing scope":
        fake.scopes = ",".join(s for s in fake.scopes.split(",") if s != "channels:history")
    elif failure == "server error":
        fake.fail("conversations.replies", status=500)
    else:
        fake.delay("conversations.replies", READ_SECONDS + 3, times=1)  # given up after READ_SECONDS
    follow = message("and the Business plan?", user="U1", channel=channel, thread_ts=first["ts"])
    with caplog.at_level(logging.WARNING, logger="candor.slack"):
        await served.event(follow)
        posts = await fake.wait_for("chat.postMessage", count=2, timeout=15)
    assert "$29" in block_text(posts[1])
    assert await rewritten(served, posts[1]) == "How much does the Business plan cost per month on monthly billing?"
    (read,) = fake.calls_to("conversations.replies")  # one try, no retry
    expected = {"rate limited": "ratelimited", "missing scope": "missing_scope", "server error": "fatal_error"}
    assert read.error == expected.get(failure)
    warned = [r for r in caplog.records if r.name == "candor.slack" and "could not read Slack thread" in r.getMessage()]
    assert len(warned) == 1 and getattr(warned[0], "key", None) == f"T0001/{channel}/{follow['ts']}"


async def claims_in(served: Served, channel: str) -> int:
    """Questions claimed in a channel. A listener claims a question before Slack gets its 200, so
    once the event is acknowledged this count is final: nothing to wait for."""
    async with served.ledger.engine.connect() as conn:
        found = await conn.execute(
            text("SELECT count(*) FROM platform_events WHERE platform = 'slack' AND conversation = :c"), {"c": channel}
        )
        return int(found.scalar_one())


async def test_a_thread_the_bot_never_answered_in_is_left_alone(served: Served) -> None:
    channel = "C3LEFTALONE"
    thread = message("What is the mileage rate?", user="U1", channel=channel, thread_ts="1690000000.000001")
    assert await served.event(thread) == 200
    assert await served.event(message("What is the mileage rate?", user="U1", channel=channel)) == 200  # no mention
    assert await claims_in(served, channel) == 0
    assert served.fake.calls_to("chat.postMessage") == []


async def test_retries_duplicates_and_the_mention_message_pair_are_answered_once(served: Served) -> None:
    mention = app_mention("Within how many days do I have to submit an expense claim?", channel="C4")
    same_message = message(mention["text"], channel="C4", ts=mention["ts"])
    statuses = await asyncio.gather(
        served.event(mention, event_id="Ev1"),
        served.event(mention, event_id="Ev1", retry=1),
        served.event(same_message, event_id="Ev2"),
        served.event(mention, event_id="Ev1", retry=2),
    )
    assert statuses == [200, 200, 200, 200]
    await served.fake.wait_for("chat.postMessage")
    await settle(1.0)
    assert len(served.fake.calls_to("chat.postMessage")) == 1
    row = await served.ledger.get("slack", f"T0001/C4/{mention['ts']}")
    assert row is not None and set(row["event_ids"]) >= {"Ev1"}


async def test_own_and_other_bots_messages_are_ignored(served: Served) -> None:
    channel = "D1BOTS"
    own = message("How much is the home office stipend?", user="UBOT", channel=channel, channel_type="im")
    other = message("How much is the home office stipend?", user="U9", channel=channel, channel_type="im", bot_id="B9")
    assert await served.event(own) == 200
    assert await served.event(other) == 200
    assert await claims_in(served, channel) == 0
    # a person's question in the same DM is claimed: the count above could have seen one
    assert await served.event(message("How much is the home office stipend?", user="U1", channel=channel)) == 200
    assert await claims_in(served, channel) == 1
    await served.fake.wait_for("chat.postMessage")


@pytest.mark.parametrize(
    "tamper",
    ["unsigned", "wrong secret", "stale"],
)
async def test_requests_not_signed_by_slack_are_refused(served: Served, tamper: str) -> None:
    body = json_body(event_callback(app_mention("How much is the home office stipend?")))
    headers = {
        "unsigned": {"Content-Type": "application/json"},
        "wrong secret": signed_headers("not-the-secret", body),
        "stale": signed_headers(SECRET, body, timestamp=int(time.time()) - 6 * 60),
    }[tamper]
    status, _ = await served.post(body, headers)
    assert status == 401
    await settle(0.3)
    assert served.fake.calls_to("chat.postMessage") == []


async def test_a_restricted_document_never_reaches_a_public_channel(served: Served) -> None:
    # The access rule grants hr-confidential to C0HR* channels; C0HRPUB is public, C0HRPRIV private.
    served.fake.channels["C0HRPUB"] = {"is_private": False}
    await served.event(app_mention(RESTRICTED_QUESTION, channel="C0HRPUB"))
    (public,) = await served.fake.wait_for("chat.postMessage")
    assert "58,000" not in block_text(public) and "Salary Bands" not in block_text(public)
    assert "I don't know" in block_text(public)

    await served.event(app_mention(RESTRICTED_QUESTION, channel="C0HRPRIV"))
    posts = await served.fake.wait_for("chat.postMessage", count=2)
    assert "58,000" in block_text(posts[1])


async def command(served: Served, text: str, *, channel: str, response_url: str, user: str = "U5") -> dict[str, str]:
    """Send `/candor text` as `user` in `channel`; the command as sent, once Slack has its ack."""
    sent = slash_command(text, user=user, channel=channel, response_url=response_url)
    body = command_body(sent)
    status, acked = await served.post(body, signed_headers(SECRET, body))
    assert status == 200 and "only you" in acked
    return sent


async def finished(served: Served, key: str) -> dict[str, Any]:
    """The ledger row of `key` once it is no longer being answered (answered or failed)."""
    for _ in range(100):
        row = await served.ledger.get(PLATFORM, key)
        if row is not None and row["status"] != "claimed":
            return row
        await settle(0.1)
    raise AssertionError(f"{key} was still being answered: {row}")


async def test_a_slash_command_is_answered_privately_through_its_response_url(served: Served) -> None:
    url = served.fake.response_url()
    sent = await command(served, SMS_QUESTION, channel="C5", response_url=url)
    (reply,) = await served.fake.wait_for("response_url")
    assert reply.url == url and reply.status == 200
    assert reply.params["response_type"] == "ephemeral" and reply.params["replace_original"] is False
    assert "1,000" in block_text(reply)
    trace_id_of(reply)  # 👍/👎 under the answer
    assert served.fake.calls_to("chat.postEphemeral") == [] and served.fake.calls_to("chat.postMessage") == []
    row = await finished(served, f"T0001/command/{sent['trigger_id']}")
    assert row["status"] == "answered" and row["payload"]["response_url"] == url  # for a takeover


@pytest.mark.parametrize(
    ("channel", "info"),
    [("C0OUTSIDE", {}), ("D0PEOPLE", {"is_im": True}), ("G0GROUPDM", {"is_mpim": True, "is_private": True})],
    ids=["a channel the bot is not in", "a DM between two people", "a group DM"],
)
async def test_a_slash_command_where_the_bot_is_not_a_member_reaches_the_asker_and_takes_votes(
    served: Served, channel: str, info: dict[str, Any]
) -> None:
    served.fake.channel(channel, member=False, **info)
    url = served.fake.response_url()
    await command(served, SMS_QUESTION, channel=channel, response_url=url)
    (reply,) = await served.fake.wait_for("response_url", where=lambda c: c.url == url)
    assert reply.status == 200 and reply.params["response_type"] == "ephemeral"
    assert "1,000" in block_text(reply)
    trace_id = trace_id_of(reply)

    # 👍 on that ephemeral answer: stored, and thanked through the action's own response_url
    thanks_url = served.fake.response_url()
    vote = block_action(FEEDBACK_UP, trace_id, user="U5", channel=channel, ephemeral=True, response_url=thanks_url)
    assert await served.interact(vote) == 200
    (thanks,) = await served.fake.wait_for("response_url", where=lambda c: c.url == thanks_url)
    assert thanks.status == 200 and "Thanks" in thanks.params["text"]
    assert thanks.params["replace_original"] is False  # the answer stays
    trace = await served.core.tracker.trace(trace_id)
    assert trace is not None and [(f["rating"], f["user_id"]) for f in trace["feedback"]] == [(1, "U5")]
    assert [c.method for c in served.fake.calls if c.method.startswith("chat.") and c.error is None] == []


async def test_a_long_private_answer_takes_several_response_url_posts(served: Served) -> None:
    served.adapter.responder.core = Verbose(served.core, repeat=150, padding=2000)  # a few messages
    served.fake.channel("C0OUTSIDE2", member=False)
    url = served.fake.response_url()
    sent = await command(served, "How much is the home office stipend?", channel="C0OUTSIDE2", response_url=url)
    row = await finished(served, f"T0001/command/{sent['trigger_id']}")
    assert row["status"] == "answered"
    posts = served.fake.calls_to("response_url")
    assert 2 <= len(posts) <= RESPONSE_URL_USES and all(p.url == url and p.status == 200 for p in posts)
    assert all(len(p.params["blocks"]) <= 50 for p in posts) and any("$500" in block_text(p) for p in posts)
    trace_id_of(posts[-1])  # the feedback buttons close the last message


async def test_past_five_response_url_posts_the_rest_of_an_answer_goes_by_chat_post_ephemeral(served: Served) -> None:
    served.adapter.responder.core = Verbose(served.core, repeat=350, padding=2000)  # over five messages
    url = served.fake.response_url()
    sent = await command(served, "How much is the home office stipend?", channel="C14", response_url=url)
    row = await finished(served, f"T0001/command/{sent['trigger_id']}")
    assert row["status"] == "answered"
    posts = served.fake.calls_to("response_url")
    assert [p.error for p in posts] == [None] * RESPONSE_URL_USES + ["used_url"]
    whispers = served.fake.calls_to("chat.postEphemeral")
    assert whispers and all(w.error is None and w.params["channel"] == "C14" for w in whispers)
    assert whispers[0].params["text"] == posts[-1].params["text"]  # the refused message, then the rest
    trace_id_of(whispers[-1])


@pytest.mark.parametrize("spent", ["expired", "used up"])
async def test_a_spent_response_url_falls_back_to_chat_post_ephemeral(served: Served, spent: str) -> None:
    if spent == "expired":  # e.g. another replica took the question over more than 30 minutes on
        url = served.fake.response_url(age=RESPONSE_URL_SECONDS + 1)
    else:
        url = served.fake.response_url()
        async with aiohttp.ClientSession() as session:
            for _ in range(RESPONSE_URL_USES):
                async with session.post(url, json={"text": "earlier"}) as response:
                    assert response.status == 200
    await command(served, SMS_QUESTION, channel="C13", response_url=url)
    (whisper,) = await served.fake.wait_for("chat.postEphemeral")
    assert whisper.params["user"] == "U5" and whisper.params["channel"] == "C13"
    assert "1,000" in block_text(whisper)
    trace_id_of(whisper)
    refused = served.fake.calls_to("response_url")[-1]
    assert refused.status == 404 and refused.error == ("expired_url" if spent == "expired" else "used_url")


async def test_an_answer_that_reaches_no_one_is_logged_with_its_trace_and_the_worker_goes_on(
    served: Served, caplog: pytest.LogCaptureFixture
) -> None:
    served.fake.channel("C0GONE", member=False)
    expired = served.fake.response_url(age=RESPONSE_URL_SECONDS + 1)
    with caplog.at_level(logging.WARNING, logger="candor.slack"):
        sent = await command(served, SMS_QUESTION, channel="C0GONE", response_url=expired)
        row = await finished(served, f"T0001/command/{sent['trigger_id']}")
    assert row["status"] == "failed" and row["trace_id"] is not None
    trace_id = str(row["trace_id"])
    ours = [r for r in caplog.records if r.name == "candor.slack"]
    warnings = [r.getMessage() for r in ours if r.levelno == logging.WARNING]
    assert any("response_url" in m and "expired_url" in m for m in warnings)
    errors = [r.getMessage() for r in ours if r.levelno >= logging.ERROR]
    assert errors and all(trace_id in m for m in errors)
    assert [c.error for c in served.fake.calls_to("chat.postEphemeral")] == ["not_in_channel"] * 2  # answer, note

    url = served.fake.response_url()  # the worker goes on: the next command is answered
    await command(served, SMS_QUESTION, channel="C0GONE", response_url=url)
    (reply,) = await served.fake.wait_for("response_url", where=lambda c: c.url == url)
    assert reply.status == 200 and "1,000" in block_text(reply)


async def test_an_edited_question_updates_its_answer_and_a_deleted_one_removes_it(served: Served) -> None:
    mention = app_mention("How much is the home office stipend?", channel="C6")
    await served.event(mention)
    (post,) = await served.fake.wait_for("chat.postMessage")
    assert "$500" in block_text(post)
    await settle(0.3)
    first = await served.ledger.get("slack", f"T0001/C6/{mention['ts']}")
    assert first is not None and len(first["reply"]["ts"]) == 1

    await served.event(message_changed("C6", mention["ts"], "<@UBOT> How much is the internet allowance?"))
    (update,) = await served.fake.wait_for("chat.update")
    assert update.params["channel"] == "C6"
    assert update.params["ts"] == first["reply"]["ts"][0]  # the answer itself is replaced, not a new one posted
    assert "$40" in block_text(update)

    await served.event(message_deleted("C6", mention["ts"]))
    deleted = await served.fake.wait_for("chat.delete")
    # the answer goes, and nothing else: when the deletion lands while the edit is still being
    # completed, the worker removes the message it posted too (the same ts, twice)
    assert {d.params["ts"] for d in deleted} == {update.params["ts"]}
    row = await served.ledger.get("slack", f"T0001/C6/{mention['ts']}")
    assert row is not None and row["status"] == "deleted"

    # deleted where it was asked: the question's text (as asked and as edited) leaves every record
    assert row["question"] is None and row["asker"] is None and "answer_text" not in row["reply"]
    assert row["payload"] == {}
    for _ in range(50):
        traces = [await served.core.tracker.trace(t) for t in (first["trace_id"], row["trace_id"])]
        if all(t is not None and t["purged_at"] for t in traces):
            break
        await settle(0.1)
    for trace in traces:
        assert trace is not None and trace["purged_at"] is not None
        assert trace["question"] == "[removed]" and trace["asker"] is None
        stored = json.dumps(trace)  # document text may say "stipend"; the question as asked is gone
        assert "How much is the home office stipend" not in stored
        assert "How much is the internet allowance" not in stored
    async with served.core.store.engine.connect() as connection:
        kept = await connection.execute(
            text("SELECT count(*) FROM platform_events AS e WHERE CAST(row_to_json(e) AS text) LIKE :asked"),
            {"asked": "%internet allowance%"},
        )
    assert kept.scalar_one() == 0  # nor does the ledger keep the edited text anywhere


async def answered_as(served: Served, key: str, question: str) -> dict[str, Any]:
    """The ledger row of `key` once its text reads `question` and that text is answered."""
    for _ in range(100):
        row = await served.ledger.get("slack", key)
        if row is not None and row["status"] == "answered" and row["question"] == question:
            return row
        await settle(0.1)
    raise AssertionError(f"{question!r} not answered: {await served.ledger.get('slack', key)}")


async def test_an_edit_made_while_the_answer_is_written_replaces_that_answer(core: Candor) -> None:
    held = Held(core)
    async with serving(core, EventLedger(core.store.engine, lease_seconds=2.0), answers=held) as served:
        mention = app_mention("How much is the home office stipend?", channel="C14")
        await served.event(mention)
        await asyncio.wait_for(held.writing.wait(), 30)  # the answer is being written
        edited = "<@UBOT> How much is the internet allowance?"
        assert await served.event(message_changed("C14", mention["ts"], edited)) == 200
        held.release.set()
        row = await answered_as(served, f"T0001/C14/{mention['ts']}", edited)

    (post,) = served.fake.calls_to("chat.postMessage")  # the first answer went out once
    (update,) = served.fake.calls_to("chat.update")  # and was replaced by the answer to the edited text
    assert "$500" in block_text(post)
    assert update.params["ts"] == row["reply"]["ts"][0] and "$40" in block_text(update)
    assert str(row["trace_id"]) == trace_id_of(update)
    assert row["reply"]["earlier_traces"] == [trace_id_of(post)]  # a deletion removes the first answer's text too
    assert held.asked == [mention["text"], edited]


async def test_quick_edits_while_the_answer_is_written_are_answered_once_with_the_last_text(core: Candor) -> None:
    held = Held(core)
    async with serving(core, EventLedger(core.store.engine, lease_seconds=2.0), answers=held) as served:
        mention = app_mention("How much is the home office stipend?", channel="C15")
        await served.event(mention)
        await asyncio.wait_for(held.writing.wait(), 30)
        first = message_changed("C15", mention["ts"], "<@UBOT> How much is the internet allowance?")
        last = "<@UBOT> How many days of paid sick leave do employees get each year?"
        assert await served.event(first, event_id="EvEdit1") == 200
        assert await served.event(message_changed("C15", mention["ts"], last)) == 200
        assert await served.event(first, event_id="EvEdit1", retry=1) == 200  # Slack's retry of an older edit
        assert await served.event(message_changed("C15", mention["ts"], last)) == 200  # a newer edit, same text
        held.release.set()
        row = await answered_as(served, f"T0001/C15/{mention['ts']}", last)

    assert held.asked == [mention["text"], last]  # the intermediate and the unchanged edits were never answered
    (update,) = served.fake.calls_to("chat.update")
    assert update.params["ts"] == row["reply"]["ts"][0] and "10 days" in block_text(update)
    assert len(served.fake.calls_to("chat.postMessage")) == 1


async def test_the_app_home_says_what_the_bot_knows(served: Served, handbook: KnowledgeBase) -> None:
    await served.event(app_home_opened(user="U3"))
    (published,) = await served.fake.wait_for("views.publish")
    assert published.params["user_id"] == "U3"
    assert published.params["view"]["type"] == "home"
    view = json.dumps(published.params["view"])
    summary = await served.core.store.public_summary()  # the session's database holds other tests' bases too
    assert any(name == handbook.name and count > 0 for name, count in summary)
    shown, more = summary[:HOME_KNOWLEDGE_BASES], len(summary) - HOME_KNOWLEDGE_BASES
    assert all(f"*{name}*: {count} document" in view for name, count in shown)
    assert (f"and {more} more" in view) == (more > 0)


async def test_a_rate_limited_post_is_retried_after_retry_after(served: Served) -> None:
    served.fake.rate_limit("chat.postMessage", retry_after=1)
    await served.event(app_mention("How much is the home office stipend?", channel="C7"))
    posts = await served.fake.wait_for("chat.postMessage", count=2, timeout=15)
    assert [p.status for p in posts] == [429, 200]
    assert posts[1].at - posts[0].at >= 1.0


async def test_a_pipeline_failure_gets_a_friendly_message_and_the_event_is_recorded(served: Served) -> None:
    served.adapter.responder.core = Broken(served.core)  # type: ignore[assignment]
    mention = app_mention("How much is the home office stipend?", channel="C8")
    await served.event(mention)
    (post,) = await served.fake.wait_for("chat.postMessage")
    assert post.params["thread_ts"] == mention["ts"]
    assert "went wrong" in block_text(post) + post.params.get("text", "")
    for _ in range(50):  # the failure is recorded just after the note is posted
        row = await served.ledger.get("slack", f"T0001/C8/{mention['ts']}")
        if row is not None and row["status"] != "claimed":
            break
        await settle(0.1)
    assert row is not None and row["status"] == "failed" and "not reachable" in row["error"]


async def test_a_question_no_replica_could_finish_is_given_up_and_the_asker_is_told(core: Candor) -> None:
    ledger = EventLedger(core.store.engine, lease_seconds=0.5, max_attempts=1)
    dead = EventLedger(core.store.engine, owner="dead-replica", lease_seconds=0.5, max_attempts=1)
    channel = f"CGIVE{uuid.uuid4().hex[:6].upper()}"
    job = Job(
        team="T0001",
        channel=channel,
        ts="1700000000.000100",
        user="U1",
        text="Leave days?",
        reply_thread="1700000000.000100",
    )
    async with serving(core, ledger) as served:
        assert await dead.claim(PLATFORM, job.key, job.as_payload(), question=job.text) is not None
        # the only owner allowed (max_attempts=1) stops without answering: its lease runs out
        (post,) = await served.fake.wait_for("chat.postMessage", where=lambda c: c.params.get("channel") == channel)
        assert post.params["thread_ts"] == job.ts
        assert "went wrong" in block_text(post) + post.params.get("text", "")
        removed = served.fake.calls_to("reactions.remove")
        assert any(c.params.get("channel") == channel and c.params.get("timestamp") == job.ts for c in removed)
        await settle(1.5)  # more polls: it is told once, not at every poll
        told = [c for c in served.fake.calls_to("chat.postMessage") if c.params.get("channel") == channel]
        assert len(told) == 1
    row = await ledger.get(PLATFORM, job.key)
    assert row is not None and row["status"] == "failed" and "given up after 1 attempts" in row["error"]


async def test_an_assistant_thread_offers_prompts_and_shows_that_it_is_thinking(served: Served) -> None:
    started = assistant_thread_started(channel="D2", user="U4")
    await served.event(started)
    (prompts,) = await served.fake.wait_for("assistant.threads.setSuggestedPrompts")
    thread_ts = started["assistant_thread"]["thread_ts"]
    assert prompts.params["thread_ts"] == thread_ts and len(prompts.params["prompts"]) >= 2

    question = message("How much is the home office stipend?", user="U4", channel="D2", thread_ts=thread_ts)
    await served.event(question)
    (post,) = await served.fake.wait_for("chat.postMessage")
    assert post.params["thread_ts"] == thread_ts and "$500" in block_text(post)
    statuses = [c.params["status"] for c in served.fake.calls_to("assistant.threads.setStatus")]
    assert statuses[0] == "is thinking…"
    assert served.fake.calls_to("reactions.add") == []


async def test_an_assistant_threads_status_follows_the_stages_at_most_once_a_second_without_the_draft(
    core: Candor,
) -> None:
    # searching and checking each take 1.5 s, longer than the second between two statuses: both show
    critic = SlowVerifier(EvidenceVerifier(core.embedder, min_support=core.settings.min_support), seconds=1.5)
    answerer = build_answerer(
        core.settings,
        core.store,
        core.embedder,
        SlowRetriever(core.retriever, seconds=1.5),  # type: ignore[arg-type]
        verifier=critic,
        tracker=core.tracker,
    )
    slow = dataclasses.replace(core, answerer=answerer)
    async with serving(slow, EventLedger(core.store.engine, lease_seconds=5.0)) as served:
        thread_ts = "1700000100.000100"
        question = message("How much is the home office stipend?", user="U4", channel="D3", thread_ts=thread_ts)
        await served.event(question)
        (post,) = await served.fake.wait_for("chat.postMessage", timeout=30)
        assert "$500" in block_text(post)
        await served.fake.wait_for("assistant.threads.setStatus", where=lambda c: c.params["status"] == "")
        calls = served.fake.calls_to("assistant.threads.setStatus")

    assert all(c.params["thread_ts"] == thread_ts and c.params["channel_id"] == "D3" for c in calls)
    statuses = [c.params["status"] for c in calls]
    assert statuses[0] == "is thinking…" and statuses[-1] == "", statuses
    searching = statuses.index("is searching the documents…")
    checking = next(i for i, s in enumerate(statuses) if re.fullmatch(r"is checking \d+ sentences?…", s))
    assert searching < checking < len(statuses) - 1, statuses
    assert 1 <= int(statuses[checking].split()[2]) <= len(critic.checked)
    assert statuses.count("") == 1, "cleared once, at the end"

    shown = [c for c in calls if c.params["status"]]
    assert all(b.at - a.at >= 0.9 for a, b in itertools.pairwise(shown)), "about one update a second at most"
    assert all(c.at < post.at for c in shown), "every stage before the answer"
    drafted = set(critic.checked)
    assert drafted and all(sentence not in c.params["status"] for c in shown for sentence in drafted)
    assert not any("$" in c.params["status"] or "500" in c.params["status"] for c in shown)
    assert served.fake.calls_to("reactions.add") == []


async def test_a_long_answer_is_split_within_slacks_limits_and_nothing_is_lost(served: Served) -> None:
    served.adapter.responder.core = Verbose(served.core)
    await served.event(app_mention("How much is the home office stipend?", channel="C9"))
    await served.fake.wait_for("chat.postMessage")
    await settle(1.0)
    posts = served.fake.calls_to("chat.postMessage")
    assert sum(len(block_text(p)) for p in posts) > 4000
    assert all(p.status == 200 for p in posts)
    for post in posts:
        blocks = post.params["blocks"]
        assert len(blocks) <= 50
        assert all(len(b["text"]["text"]) <= 3000 for b in blocks if b["type"] == "section" and "text" in b)
    assert any("$500" in block_text(p) for p in posts)
    trace_id_of(posts[-1])  # the feedback buttons close the last message


async def test_with_the_database_away_slack_is_asked_to_retry_and_the_last_retry_tells_the_asker(
    core: Candor,
) -> None:
    unreachable = create_async_engine("postgresql+psycopg://x@127.0.0.1:1/none", connect_args={"connect_timeout": 2})
    try:
        async with serving(core, EventLedger(unreachable, lease_seconds=2.0)) as down:
            mention = app_mention("How much is the home office stipend?", channel="C10")
            assert await down.event(mention, event_id="EvDown") == 500  # not acknowledged: Slack sends it again
            assert await down.event(mention, event_id="EvDown", retry=1) == 500
            await settle()
            assert down.fake.calls_to("chat.postMessage") == []  # a later retry may still be answered
            assert await down.event(mention, event_id="EvDown", retry=3) == 500
            (note,) = await down.fake.wait_for("chat.postMessage")
            assert note.params["thread_ts"] == mention["ts"] and "went wrong" in block_text(note) + note.params["text"]
    finally:
        await unreachable.dispose()
