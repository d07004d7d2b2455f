"""Every refusal in Slack offers the hand-off to a person, whichever way the question came and
whichever gate refused it; with no triage channel, nothing is offered.

Real `slack_bolt` against the fake Slack Web API, the real pipeline over the sample handbook in
Postgres (and, for the model-written kinds, the OpenAI-compatible writer on the fake server). Each
path is asked the way Slack sends it (a mention, a thread reply, a DM, an assistant thread, an edit,
`/candor` through its `response_url` or, that refused, `chat.postEphemeral`); the offer is read
from what reached Slack and clicked, and the click must reach the triage channel.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from bot.slack.app import SlackAdapter
from bot.slack.config import SlackConfig
from bot.slack.handoff_blocks import HANDOFF
from rag.experts import Experts
from rag.runtime import Candor, build_answerer
from rag.store.postgres import KnowledgeBase
from rag.tracking.events import EventLedger
from tests.conftest import SAMPLE
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.slack_api import RESPONSE_URL_SECONDS, Call, FakeSlack
from tests.fakes.slack_events import app_mention, block_action, message, message_changed, next_ts
from tests.fakes.writers import Models
from tests.integration.slack.test_slack import (
    SECRET,
    Served,
    block_text,
    command,
    policy,
    trace_id_of,
)
from tests.refusals import LOST, MODEL_REFUSALS, REFUSALS, STIPEND
from tests.serving import serve_adapter

TRIAGE = "C0TRIAGE"
EXPERT = "U0EXPERT"


@dataclasses.dataclass(frozen=True)
class Delivered:
    """What reached Slack for one question, and where a click on it comes from."""

    call: Call
    click: dict[str, Any]


Ask = Callable[[Served, str], Awaitable[Delivered]]


async def _in_channel(served: Served, question: str) -> Delivered:
    mention = app_mention(question, channel="C1")
    await served.event(mention)
    (post,) = await served.fake.wait_for(
        "chat.postMessage", where=lambda c: c.params.get("thread_ts") == mention["ts"] and c.error is None
    )
    return Delivered(post, {"channel": "C1", "thread_ts": mention["ts"]})


async def _thread_reply(served: Served, question: str) -> Delivered:
    first = await _in_channel(served, STIPEND)
    thread = first.click["thread_ts"]
    await served.event(message(question, user="U1", channel="C1", thread_ts=thread))
    posts = await served.fake.wait_for(
        "chat.postMessage", count=2, where=lambda c: c.params.get("thread_ts") == thread and c.error is None
    )
    return Delivered(posts[1], {"channel": "C1", "thread_ts": thread})


async def _direct_message(served: Served, question: str) -> Delivered:
    await served.event(message(question, channel="D1", channel_type="im"))
    (post,) = await served.fake.wait_for(
        "chat.postMessage", where=lambda c: c.params["channel"] == "D1" and c.error is None
    )
    return Delivered(post, {"channel": "D1"})


async def _assistant_thread(served: Served, question: str) -> Delivered:
    started = next_ts()  # an assistant thread: a thread of the DM with the app
    await served.event(message(question, channel="D2", channel_type="im", thread_ts=started))
    (post,) = await served.fake.wait_for(
        "chat.postMessage", where=lambda c: c.params["channel"] == "D2" and c.error is None
    )
    return Delivered(post, {"channel": "D2", "thread_ts": started})


async def _edited(served: Served, question: str) -> Delivered:
    first = await _in_channel(served, STIPEND)
    await served.event(message_changed("C1", first.click["thread_ts"], f"<@UBOT> {question}"))
    (update,) = await served.fake.wait_for("chat.update", where=lambda c: c.error is None)
    return Delivered(update, first.click)


async def _slash_command(served: Served, question: str) -> Delivered:
    url = served.fake.response_url()
    await command(served, question, channel="C5", response_url=url)
    (reply,) = await served.fake.wait_for("response_url", where=lambda c: c.url == url)
    return Delivered(reply, {"channel": "C5", "ephemeral": True})


async def _slash_command_by_post_ephemeral(served: Served, question: str) -> Delivered:
    expired = served.fake.response_url(age=RESPONSE_URL_SECONDS + 1)
    await command(served, question, channel="C6", response_url=expired)
    (whisper,) = await served.fake.wait_for(
        "chat.postEphemeral", where=lambda c: c.params["channel"] == "C6" and c.error is None
    )
    return Delivered(whisper, {"channel": "C6", "ephemeral": True})


PATHS: dict[str, Ask] = {
    "channel mention": _in_channel,
    "thread reply": _thread_reply,
    "direct message": _direct_message,
    "assistant thread": _assistant_thread,
    "edited question": _edited,
    "slash command": _slash_command,
    "slash command, response_url spent": _slash_command_by_post_ephemeral,
}


@pytest.fixture(scope="module")
async def handbook(candor: Candor) -> KnowledgeBase:
    kb = await candor.knowledge_base(f"offer-{uuid.uuid4().hex[:8]}", create=True)
    assert kb is not None
    assert (await candor.ingestor().ingest([SAMPLE], kb=kb)).ok
    await candor.store.analyze()
    return kb


@pytest.fixture
def core(candor: Candor, handbook: KnowledgeBase, tmp_path: Path) -> Candor:
    return built(candor, handbook, tmp_path)


@pytest.fixture
async def model() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as server:
        yield server


def built(candor: Candor, handbook: KnowledgeBase, folder: Path, **chosen: Any) -> Candor:
    """Candor as `candor serve` builds it with these settings, reading the handbook."""
    access = policy(folder / "access.yaml", handbook.name)
    settings = candor.settings.model_copy(update={"access_policy": access, **chosen})
    answerer = build_answerer(settings, candor.store, candor.embedder, candor.retriever, tracker=candor.tracker)
    return dataclasses.replace(candor, settings=settings, answerer=answerer, limits=None)


@contextlib.asynccontextmanager
async def serving(core: Any, candor: Candor, *, triage: bool) -> AsyncIterator[Served]:
    """The Slack adapter answering with `core`, with a triage channel (hand-offs on) or without."""
    ledger = EventLedger(candor.store.engine, lease_seconds=2.0)
    async with FakeSlack() as fake:
        fake.channels[TRIAGE] = {"is_private": True}
        config = SlackConfig(bot_token="xoxb-test", signing_secret=SECRET, api_url=fake.api_url)
        if triage:
            config = dataclasses.replace(config, triage_channel=TRIAGE, experts=Experts.parse(f"slack:{EXPERT}"))
        adapter = SlackAdapter(config, core, ledger, drain_seconds=5)
        async with serve_adapter(candor, adapter) as url:
            yield Served(url, fake, ledger, candor, adapter)


def offered(call: Call) -> str | None:
    """The value of the "Ask a person" button in what reached Slack, if there is one."""
    for block in call.params.get("blocks") or []:
        for element in block.get("elements", []) if block.get("type") == "actions" else []:
            if element.get("action_id") == HANDOFF:
                return str(element["value"])
    return None


async def passes_on(served: Served, value: str, click: dict[str, Any]) -> str:
    """Click "Ask a person": the triage post's text (the hand-off works from where it was offered)."""
    assert await served.interact(block_action(HANDOFF, value, **click)) == 200
    (post,) = await served.fake.wait_for("chat.postMessage", where=lambda c: c.params["channel"] == TRIAGE)
    return block_text(post)


@pytest.mark.parametrize("kind", list(REFUSALS))
@pytest.mark.parametrize("path", list(PATHS))
async def test_a_refusal_offers_a_person_on_every_path_and_the_offer_reaches_the_triage_channel(
    core: Candor, path: str, kind: str
) -> None:
    question, reason = REFUSALS[kind]
    async with serving(core, core, triage=True) as served:
        delivered = await PATHS[path](served, question)
        value = offered(delivered.call)
        assert value is not None, f"no offer of a person under: {block_text(delivered.call)}"
        assert json.loads(value) == {"trace": trace_id_of(delivered.call), "reason": reason}
        assert "58,000" not in await passes_on(served, value, delivered.click)


@pytest.mark.parametrize("kind", list(MODEL_REFUSALS))
@pytest.mark.parametrize("path", ["channel mention", "direct message", "slash command"])
async def test_a_model_written_refusal_offers_a_person(
    candor: Candor, handbook: KnowledgeBase, model: FakeOpenAI, tmp_path: Path, path: str, kind: str
) -> None:
    writer, reason = MODEL_REFUSALS[kind]
    model.responder = Models(writer)
    core = built(
        candor, handbook, tmp_path, writer="openai:writer-model", model_role="write", openai_base_url=model.base_url
    )
    async with serving(core, core, triage=True) as served:
        delivered = await PATHS[path](served, LOST)
        value = offered(delivered.call)
        assert value is not None, f"no offer of a person under: {block_text(delivered.call)}"
        assert json.loads(value) == {"trace": trace_id_of(delivered.call), "reason": reason}


@pytest.mark.parametrize("path", list(PATHS))
async def test_without_a_triage_channel_a_refusal_offers_no_person(core: Candor, path: str) -> None:
    async with serving(core, core, triage=False) as served:
        delivered = await PATHS[path](served, REFUSALS["I don't know"][0])
        assert "I don't know" in block_text(delivered.call)
        assert offered(delivered.call) is None
        trace_id_of(delivered.call)  # 👍/👎 as ever


FAILED_DELIVERY = {  # the answer was made (and traced); Slack refused it once, then took the apology
    "channel mention": "chat.postMessage",
    "direct message": "chat.postMessage",
    "edited question": "chat.update",
    "slash command, response_url spent": "chat.postEphemeral",
}


@pytest.mark.parametrize("triage", [True, False], ids=["triage channel", "no triage channel"])
@pytest.mark.parametrize("path", list(FAILED_DELIVERY))
async def test_an_answer_slack_refused_is_followed_by_an_apology_that_offers_a_person(
    core: Candor, path: str, triage: bool
) -> None:
    async with serving(core, core, triage=triage) as served:
        served.fake.error(FAILED_DELIVERY[path], "invalid_blocks")
        delivered = await PATHS[path](served, REFUSALS["I don't know"][0])
        assert "went wrong" in block_text(delivered.call)
        value = offered(delivered.call)
        if not triage:
            assert value is None
            return
        assert value is not None, f"no offer of a person under: {block_text(delivered.call)}"
        trace = json.loads(value)["trace"]
        assert f"trace {trace}" in block_text(delivered.call) and json.loads(value)["reason"] == "abstained"
        assert "store my bicycle" in await passes_on(served, value, delivered.click)
