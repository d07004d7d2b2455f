"""The expert role in Teams (issue 37, the high finding; the Slack path is test_curated_experts.py), end
to end: real botbuilder against the fake Bot Connector, the real pipeline and Postgres.

- a member of the triage channel who is not an expert cannot reply or keep a curated answer: the
  invoke is refused (403), nothing is stored, delivered or indexed, and the attempt is logged;
- the members of a configured team are experts (asked of the Bot Connector), and a kept answer is
  signed with the operator's name for an expert when one is set;
- a triage channel whose team has guests gets no hand-off post.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from bot.teams.app import TeamsAdapter, TeamsConfig
from bot.teams.handoff import FAILED, NOT_EXPERT, PASSED_ON
from bot.teams.handoff_cards import HANDOFF_VERB
from rag.experts import Experts
from rag.runtime import Candor, build_answerer
from rag.store.postgres import KnowledgeBase
from rag.tracking.events import EventLedger
from tests.fakes.bot_connector import FakeConnector
from tests.fakes.teams_activities import channel_mention, feedback_invoke
from tests.fakes.teams_server import ingest_handbook
from tests.integration.teams.test_teams import HR_CHANNEL, RESTRICTED_QUESTION, Served, policy
from tests.integration.teams.test_teams_handoff import (
    EXPERT_AAD,
    TRIAGE,
    TRIAGE_TEAM,
    ask_in_channel,
    ask_person,
    card_of,
    execute,
    form,
    in_thread,
    message,
    reply,
)
from tests.serving import serve_adapter

OUTSIDER = {
    "user_id": "29:outsider-1",
    "user_name": "Chief Executive",
    "user_aad_id": "00000000-0000-4000-8000-0000000bad01",
}
MEMBER_AAD = "00000000-0000-4000-8000-0000000e0e02"
MEMBER = {"user_id": "29:member-1", "user_name": "Bo Chen", "user_aad_id": MEMBER_AAD}


@pytest.fixture(scope="module")
async def handbook(candor: Candor) -> KnowledgeBase:
    return await ingest_handbook(candor, "teams-experts")


@contextlib.asynccontextmanager
async def teams(
    candor: Candor, handbook: KnowledgeBase, tmp_path: Path, *, guests: bool = False
) -> AsyncIterator[Served]:
    settings = candor.settings.model_copy(update={"access_policy": policy(tmp_path / "access.yaml", handbook.name)})
    answerer = build_answerer(settings, candor.store, candor.embedder, candor.retriever, tracker=candor.tracker)
    core = dataclasses.replace(candor, settings=settings, answerer=answerer, limits=None)
    ledger = EventLedger(core.store.engine, lease_seconds=2.0)
    async with FakeConnector() as fake:
        support = [{"id": MEMBER["user_id"], "name": "Bo Chen", "aadObjectId": MEMBER_AAD, "userRole": "user"}]
        fake.members[TRIAGE_TEAM] = support
        roster = [*support, {"id": "29:guest-1", "name": "A Guest", "aadObjectId": "g-1", "userRole": "guest"}]
        fake.members[TRIAGE] = roster if guests else support
        experts = Experts.parse(f"teams:{EXPERT_AAD}=Ana Diaz (People team), teams-team:{TRIAGE_TEAM}")
        config = TeamsConfig(triage_channel=TRIAGE, experts=experts)
        adapter = TeamsAdapter(config, core, ledger, drain_seconds=5, backoff_seconds=0.2)
        async with serve_adapter(core, adapter) as url:
            yield Served(url, fake, ledger, core, adapter)


async def handed_off(served: Served, question: str) -> Any:
    mention, answer = await ask_in_channel(served, question)
    data = execute(card_of(answer.body), HANDOFF_VERB)["data"]
    assert message(await ask_person(served, answer, data, **in_thread(mention))) == PASSED_ON
    (post,) = await served.fake.wait_for_channel_posts(TRIAGE)
    return post


async def kept(served: Served, question: str) -> list[dict[str, Any]]:
    async with served.core.store.engine.connect() as conn:
        rows = await conn.execute(
            text("SELECT author, author_name, access_groups FROM curated_answers WHERE question = :q"), {"q": question}
        )
        return [dict(row) for row in rows.mappings()]


async def test_a_non_expert_in_the_triage_channel_is_refused_and_nothing_is_kept(
    candor: Candor, handbook: KnowledgeBase, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    question = "Is there a car park for visitors at the office?"
    async with teams(candor, handbook, tmp_path) as served:
        post = await handed_off(served, question)
        sent_before = len(served.fake.activities())
        fields = form("Visitors park in bays 40 to 44.", curate=True, question=question, readers="everyone")
        refused = await reply(served, post, fields, **OUTSIDER)
        assert (refused["statusCode"], refused["value"]["message"]) == (403, NOT_EXPERT)
        assert await kept(served, question) == []
        assert len(served.fake.activities()) == sent_before  # nothing delivered, the card not edited
        assert any(
            "not an expert" in r.getMessage() and OUTSIDER["user_aad_id"] in r.getMessage() for r in caplog.records
        )


async def test_a_member_of_the_expert_team_replies_and_keeps_an_answer_signed_with_teams_name(
    candor: Candor, handbook: KnowledgeBase, tmp_path: Path
) -> None:
    question = "Is there a helicopter pad on the office roof?"
    async with teams(candor, handbook, tmp_path) as served:
        post = await handed_off(served, question)
        fields = form("At reception.", curate=True, question=question, readers="everyone")
        done = await reply(served, post, fields, **MEMBER)
        assert done["statusCode"] == 200, done
        assert await kept(served, question) == [{"author": MEMBER_AAD, "author_name": "Bo Chen", "access_groups": []}]


async def test_a_named_expert_signs_with_the_operator_s_name(
    candor: Candor, handbook: KnowledgeBase, tmp_path: Path
) -> None:
    question = "Does the office have a rooftop beehive?"
    async with teams(candor, handbook, tmp_path) as served:
        post = await handed_off(served, question)
        done = await reply(served, post, form("No beehive.", curate=True, question=question, readers="everyone"))
        assert done["statusCode"] == 200, done
        assert await kept(served, question) == [
            {"author": EXPERT_AAD, "author_name": "Ana Diaz (People team)", "access_groups": []}
        ]


async def test_a_triage_channel_in_a_team_with_guests_gets_no_hand_off(
    candor: Candor, handbook: KnowledgeBase, tmp_path: Path
) -> None:
    async with teams(candor, handbook, tmp_path, guests=True) as served:
        mention, answer = await ask_in_channel(served, "Can I bring my bicycle on the shuttle bus?")
        data = execute(card_of(answer.body), HANDOFF_VERB)["data"]
        assert message(await ask_person(served, answer, data, **in_thread(mention))) == FAILED
        assert served.fake.channel_posts(TRIAGE) == []


async def test_an_expert_s_reply_to_an_hr_answer_is_kept_for_hr_only_and_the_card_names_no_group(
    candor: Candor, handbook: KnowledgeBase, tmp_path: Path
) -> None:
    question = "When is the L3 salary band reviewed?"
    async with teams(candor, handbook, tmp_path) as served:
        service = served.fake.service_url
        mention = channel_mention(RESTRICTED_QUESTION, channel_id=HR_CHANNEL, service_url=service)
        await served.post(mention)
        thread = mention["conversation"]["id"]
        (answer,) = await served.fake.wait_for(lambda c: c.conversation_id == thread, timeout=30)
        vote = feedback_invoke(
            answer.new_id or "", "dislike", conversation_id=thread, conversation_type="channel", service_url=service
        )
        assert await served.post(vote) == 200
        (thanks,) = await served.fake.wait_for(lambda c: c.conversation_id == thread and "attachments" in c.body)
        data = execute(card_of(thanks.body), HANDOFF_VERB)["data"]
        where = {"conversation_id": thread, "conversation_type": "channel", "channel_id": HR_CHANNEL}
        assert message(await ask_person(served, thanks, data, **where)) == PASSED_ON
        (post,) = await served.fake.wait_for_channel_posts(TRIAGE)
        assert "hr-confidential" not in json.dumps(post.body)  # the whole triage channel sees the card

        fields = form("The L3 band is reviewed each April.", curate=True, question=question, readers="cited")
        done = await reply(served, post, fields)
        assert done["statusCode"] == 200, done
        assert await kept(served, question) == [
            {"author": EXPERT_AAD, "author_name": "Ana Diaz (People team)", "access_groups": ["hr-confidential"]}
        ]
        _, public = await ask_in_channel(served, question)  # a channel whose readers hold no group
        assert "each April" not in json.dumps(public.body)
