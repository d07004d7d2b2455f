"""Every refusal in Teams offers the hand-off to a person, whichever conversation it came from and
whichever gate refused it; with no triage channel, nothing is offered.

Real botbuilder against the fake Bot Connector, the real pipeline over the sample handbook in
Postgres (and, for the model-written kinds, the OpenAI-compatible writer on the fake server). Each
path is asked as Teams sends it (a personal chat, a group chat mention, a channel mention, a reply in
a channel thread, an edit, an `expectReplies` turn); the offer is read from what reached the
connector (or the turn's response) and clicked, and the click must reach the triage channel.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from bot.teams.app import TeamsAdapter, TeamsConfig
from bot.teams.handoff import PASSED_ON
from bot.teams.handoff_cards import ADAPTIVE_CARD, HANDOFF_VERB
from rag.experts import Experts
from rag.model.answers import Answer, Question
from rag.runtime import Candor, build_answerer
from rag.store.postgres import KnowledgeBase
from rag.tracking.events import EventLedger
from tests.fakes.bot_connector import FakeConnector
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.teams_activities import (
    CHANNEL_ID,
    GROUP_CHAT_ID,
    card_action,
    channel_mention,
    group_chat_mention,
    message_edited,
    personal_message,
)
from tests.fakes.teams_server import ingest_handbook
from tests.fakes.writers import Models
from tests.integration.teams.test_teams import Served, answered, answered_as, policy
from tests.integration.teams.test_teams_handoff import EXPERT_AAD, TRIAGE, message, shown
from tests.refusals import LOST, MODEL_REFUSALS, REFUSALS, STIPEND
from tests.serving import serve_adapter


@dataclasses.dataclass(frozen=True)
class Delivered:
    """What reached Teams for one question (the activity, its id), its ledger row, and where a click
    on it comes from."""

    activity: dict[str, Any]
    activity_id: str
    row: dict[str, Any]
    click: dict[str, Any]


Ask = Callable[[Served, str], Awaitable[Delivered]]
_chats = iter(range(1, 10_000))


def _personal_chat() -> dict[str, Any]:
    return {"conversation_id": f"a:offer-{next(_chats)}", "conversation_type": "personal"}


async def _sent(served: Served, question: dict[str, Any], click: dict[str, Any]) -> Delivered:
    conversation = question["conversation"]["id"]
    (call,) = await served.fake.wait_for(lambda c: c.conversation_id == conversation, timeout=30)
    return Delivered(call.body, call.new_id or "", await answered(served, question), click)


async def _personal(served: Served, text: str) -> Delivered:
    chat = _personal_chat()
    question = personal_message(text, conversation_id=chat["conversation_id"], service_url=served.fake.service_url)
    await served.post(question)
    return await _sent(served, question, chat)


async def _group_chat(served: Served, text: str) -> Delivered:
    group = f"{GROUP_CHAT_ID}-{next(_chats)}"
    question = group_chat_mention(text, conversation_id=group, service_url=served.fake.service_url)
    await served.post(question)
    return await _sent(served, question, {"conversation_id": group, "conversation_type": "groupChat"})


def _in_thread(question: dict[str, Any]) -> dict[str, Any]:
    conversation = question["conversation"]["id"]
    return {"conversation_id": conversation, "conversation_type": "channel", "channel_id": CHANNEL_ID}


async def _channel(served: Served, text: str) -> Delivered:
    question = channel_mention(text, service_url=served.fake.service_url)
    await served.post(question)
    return await _sent(served, question, _in_thread(question))


async def _channel_thread_reply(served: Served, text: str) -> Delivered:
    first = channel_mention(STIPEND, service_url=served.fake.service_url)
    await served.post(first)
    await answered(served, first)
    reply = channel_mention(text, reply_to_id=first["id"], service_url=served.fake.service_url)
    await served.post(reply)
    thread = reply["conversation"]["id"]
    calls = await served.fake.wait_for(lambda c: c.conversation_id == thread, count=2, timeout=30)
    return Delivered(calls[1].body, calls[1].new_id or "", await answered(served, reply), _in_thread(reply))


async def _edited(served: Served, text: str) -> Delivered:
    chat = _personal_chat()
    question = personal_message(STIPEND, conversation_id=chat["conversation_id"], service_url=served.fake.service_url)
    await served.post(question)
    first = await answered(served, question)
    await served.post(message_edited(question, text))
    (update,) = await served.fake.wait_for(lambda c: c.conversation_id == chat["conversation_id"], operation="update")
    row = await answered_as(served, question, text)
    return Delivered(update.body, first["reply"]["activity_ids"][0], row, chat)


async def _expect_replies(served: Served, text: str) -> Delivered:
    chat = _personal_chat()
    question = personal_message(text, conversation_id=chat["conversation_id"], service_url=served.fake.service_url)
    question["deliveryMode"] = "expectReplies"
    status, body = await served.exchange(question)
    assert status == 200
    (reply,) = [a for a in body["activities"] if a["type"] == "message"]
    return Delivered(reply, question["id"], await answered(served, question), chat)


PATHS: dict[str, Ask] = {
    "personal chat": _personal,
    "group chat": _group_chat,
    "channel": _channel,
    "channel thread reply": _channel_thread_reply,
    "edited question": _edited,
    "expectReplies turn": _expect_replies,
}


@pytest.fixture(scope="module")
async def handbook(candor: Candor) -> KnowledgeBase:
    return await ingest_handbook(candor, "teams-offer")


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
    """The Teams adapter answering with `core`, with a triage channel (hand-offs on) or without."""
    ledger = EventLedger(candor.store.engine, lease_seconds=2.0)
    config = (
        TeamsConfig(triage_channel=TRIAGE, experts=Experts.parse(f"teams:{EXPERT_AAD}")) if triage else TeamsConfig()
    )
    async with FakeConnector() as fake:
        teams = TeamsAdapter(config, core, ledger, drain_seconds=5, backoff_seconds=0.2)
        async with serve_adapter(candor, teams) as url:
            yield Served(url, fake, ledger, candor, teams)


def offered(activity: dict[str, Any]) -> dict[str, Any] | None:
    """The data of the "Ask a person" action in what reached Teams, if there is one."""
    for attached in activity.get("attachments") or ():
        if attached.get("contentType") != ADAPTIVE_CARD:
            continue
        for action in attached["content"].get("actions", ()):
            if action.get("type") == "Action.Execute" and action.get("verb") == HANDOFF_VERB:
                return dict(action["data"])
    return None


async def passes_on(served: Served, delivered: Delivered, data: dict[str, Any]) -> str:
    """Click "Ask a person": the triage post's text (the hand-off works from where it was offered)."""
    click = card_action(
        delivered.activity_id, HANDOFF_VERB, data, service_url=served.fake.service_url, **delivered.click
    )
    status, body = await served.exchange(click)
    assert status == 200 and message(body) == PASSED_ON
    (post,) = await served.fake.wait_for_channel_posts(TRIAGE)
    (card,) = [a["content"] for a in post.body["activity"]["attachments"] if a["contentType"] == ADAPTIVE_CARD]
    return shown(card)


@pytest.mark.parametrize("kind", list(REFUSALS))
@pytest.mark.parametrize("path", list(PATHS))
async def test_a_refusal_offers_a_person_in_every_conversation_and_the_offer_reaches_the_triage_channel(
    core: Candor, path: str, kind: str
) -> None:
    question, reason = REFUSALS[kind]
    async with serving(core, core, triage=True) as served:
        delivered = await PATHS[path](served, question)
        data = offered(delivered.activity)
        assert data is not None, f"no offer of a person under: {delivered.activity.get('text')}"
        assert data == {"trace": str(delivered.row["trace_id"]), "reason": reason}
        assert "58,000" not in await passes_on(served, delivered, data)


@pytest.mark.parametrize("kind", list(MODEL_REFUSALS))
@pytest.mark.parametrize("path", ["personal chat", "group chat", "channel"])
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
        assert offered(delivered.activity) == {"trace": str(delivered.row["trace_id"]), "reason": reason}


@pytest.mark.parametrize("path", list(PATHS))
async def test_without_a_triage_channel_a_refusal_offers_no_person(core: Candor, path: str) -> None:
    async with serving(core, core, triage=False) as served:
        delivered = await PATHS[path](served, REFUSALS["I don't know"][0])
        assert "I don't know" in delivered.activity["text"]
        assert offered(delivered.activity) is None and "attachments" not in delivered.activity


class SpoiltAfterTracing:
    """The real core, whose answer is made and traced, then spoilt so that rendering it fails: a
    defect between the answer and its delivery, which the asker hears of as a failure note."""

    def __init__(self, core: Candor) -> None:
        self.core = core
        self.loop = core.loop  # hand-offs, as the real core records them

    async def answer(self, question: Question) -> Answer:
        made = await self.core.answer(question)
        return dataclasses.replace(made, text=None)  # type: ignore[arg-type]

    async def record_feedback(self, feedback: Any) -> None:
        await self.core.record_feedback(feedback)

    async def knowledge_base_summary(self) -> list[tuple[str, int]]:
        return await self.core.knowledge_base_summary()

    async def forget(self, trace_id: str) -> bool:
        return await self.core.forget(trace_id)


@pytest.mark.parametrize("triage", [True, False], ids=["triage channel", "no triage channel"])
@pytest.mark.parametrize("path", ["personal chat", "group chat", "channel"])
async def test_an_answer_that_failed_after_it_was_made_is_followed_by_a_note_that_offers_a_person(
    core: Candor, path: str, triage: bool
) -> None:
    async with serving(SpoiltAfterTracing(core), core, triage=triage) as served:
        delivered = await PATHS[path](served, REFUSALS["I don't know"][0])
        assert "went wrong" in delivered.activity["text"] and delivered.row["status"] == "failed"
        data = offered(delivered.activity)
        if not triage:
            assert data is None
            return
        assert data == {"trace": str(delivered.row["trace_id"]), "reason": "abstained"}
        assert "store my bicycle" in await passes_on(served, delivered, data)
