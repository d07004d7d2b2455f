"""Nobody publishes for everyone by accident (issue 37, the high finding), end to end through the real
`slack_bolt` against the fake Slack, the real pipeline and Postgres:

- only configured experts may reply to a hand-off or keep a curated answer: anyone else in the triage
  channel is refused in the form, and nothing is stored, delivered or indexed;
- a user group's members are experts (`usergroups.users.list`), and a kept answer is signed with the
  name the operator gave, not the Slack profile the expert can edit;
- a kept answer is readable by the cited documents' readers by default, so a reply to an HR answer
  reaches HR askers only, never the next public asker;
- a curated answer weighs no more than an ordinary document in a conflict (authority 0 by default);
- a public triage channel refuses to start, and no hand-off is ever posted to one.

The Teams path has the same tests in test_curated_experts_teams.py.
"""

from __future__ import annotations

import contextlib
import dataclasses
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from bot.slack.app import SlackAdapter
from bot.slack.blocks import FEEDBACK_DOWN
from bot.slack.config import SlackConfig
from bot.slack.handoff import NOT_EXPERT
from bot.slack.handoff_blocks import HANDOFF, HANDOFF_REPLY, HANDOFF_REPLY_CALLBACK, REPLY_BLOCK
from rag.errors import ConfigError
from rag.experts import Experts
from rag.runtime import Candor, build_answerer
from rag.store.postgres import KnowledgeBase
from rag.tracking.events import EventLedger
from tests.conftest import SAMPLE
from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_events import block_action, form_body, signed_headers, view_submission
from tests.integration.slack.test_slack import RESTRICTED_QUESTION, SECRET, Served, block_text, policy, trace_id_of
from tests.integration.slack.test_slack_handoff import ask, button, reply_values
from tests.serving import serve_adapter

TRIAGE = "C0TRIAGE"
EXPERT, MEMBER, OUTSIDER = "U0EXPERT", "U0MEMBER", "U0OUTSIDER"
EXPERT_GROUP = "S0EXPERTS"
HR = "C0HRPRIV"
PARKING = "Is there a car park for visitors at the office?"
PARKING_REPLY = "Visitors park in bays 40 to 44 behind building B; reception issues a permit."


@pytest.fixture(scope="module")
async def handbook(candor: Candor) -> KnowledgeBase:
    kb = await candor.knowledge_base(f"experts-{uuid.uuid4().hex[:8]}", create=True)
    assert kb is not None
    assert (await candor.ingestor().ingest([SAMPLE], kb=kb)).ok
    return kb


@contextlib.asynccontextmanager
async def slack(
    candor: Candor,
    handbook: KnowledgeBase,
    tmp_path: Path,
    *,
    triage: dict[str, Any] | None = None,
    unreachable_at_start: bool = False,
) -> AsyncIterator[Served]:
    settings = candor.settings.model_copy(update={"access_policy": policy(tmp_path / "access.yaml", handbook.name)})
    answerer = build_answerer(settings, candor.store, candor.embedder, candor.retriever, tracker=candor.tracker)
    core = dataclasses.replace(candor, settings=settings, answerer=answerer, limits=None)
    ledger = EventLedger(core.store.engine, lease_seconds=2.0)
    async with FakeSlack() as fake:
        fake.channels[HR] = {"is_private": True}
        fake.channels[TRIAGE] = triage if triage is not None else {"is_private": True}
        fake.usergroups[EXPERT_GROUP] = [MEMBER]
        if unreachable_at_start:
            fake.fail("conversations.info", status=500)
        for user in (EXPERT, MEMBER, OUTSIDER):  # what each may set on their own Slack profile
            fake.users[user] = {"real_name": "Chief Executive"}
        config = SlackConfig(
            bot_token="xoxb-test",
            signing_secret=SECRET,
            api_url=fake.api_url,
            triage_channel=TRIAGE,
            experts=Experts.parse(f"slack:{EXPERT}=Ana Diaz (People team), slack-group:{EXPERT_GROUP}"),
        )
        adapter = SlackAdapter(config, core, ledger, drain_seconds=5)
        async with serve_adapter(core, adapter) as url:
            yield Served(url, fake, ledger, core, adapter)


@pytest.fixture
async def served(candor: Candor, handbook: KnowledgeBase, tmp_path: Path) -> AsyncIterator[Served]:
    async with slack(candor, handbook, tmp_path) as served:
        yield served


async def hand_off(served: Served, question: str, *, channel: str = "C1") -> tuple[str, dict[str, Any]]:
    """Ask, get a refusal (or an answer), ask for a person; the hand-off id and the triage post."""
    mention, answer = await ask(served, question, channel=channel)
    await served.interact(block_action(FEEDBACK_DOWN, trace_id_of(answer), channel=channel, thread_ts=mention["ts"]))
    (note,) = await served.fake.wait_for("chat.postEphemeral", where=lambda c: c.params["channel"] == channel)
    await served.interact(block_action(HANDOFF, button(note, HANDOFF)["value"], channel=channel, ephemeral=True))
    (triage,) = await served.fake.wait_for("chat.postMessage", where=lambda c: c.params["channel"] == TRIAGE)
    return button(triage, HANDOFF_REPLY)["value"], {"answer": answer, "mention": mention}


async def stored(served: Served, handoff_id: str) -> tuple[str, int]:
    async with served.core.store.engine.connect() as conn:
        status = (
            await conn.execute(text("SELECT status FROM handoffs WHERE id = CAST(:h AS uuid)"), {"h": handoff_id})
        ).scalar_one()
        kept = (
            await conn.execute(
                text("SELECT count(*) FROM curated_answers WHERE handoff_id = CAST(:h AS uuid)"), {"h": handoff_id}
            )
        ).scalar_one()
    return str(status), int(kept)


async def test_a_non_expert_in_the_triage_channel_can_neither_reply_nor_publish(
    served: Served, caplog: pytest.LogCaptureFixture
) -> None:
    handoff_id, _ = await hand_off(served, PARKING)

    # the button: refused privately, no form opens
    assert await served.interact(block_action(HANDOFF_REPLY, handoff_id, user=OUTSIDER, channel=TRIAGE)) == 200
    (refusal,) = await served.fake.wait_for("chat.postEphemeral", where=lambda c: c.params["user"] == OUTSIDER)
    assert refusal.params["text"] == NOT_EXPERT
    assert not [
        c for c in served.fake.calls_to("views.open") if c.params["view"]["callback_id"] == HANDOFF_REPLY_CALLBACK
    ]

    # the form sent anyway (a forged or stale view): refused in the form; nothing stored or sent
    values = reply_values(PARKING_REPLY, curate=True, question=PARKING, readers="everyone")
    body = form_body(view_submission(HANDOFF_REPLY_CALLBACK, handoff_id, values, user=OUTSIDER))
    status, response = await served.post(body, signed_headers(SECRET, body))
    assert status == 200 and NOT_EXPERT in response and REPLY_BLOCK in response
    await served.fake.wait_for("chat.postEphemeral", where=lambda c: c.params["user"] == OUTSIDER)  # the refusal
    assert await stored(served, handoff_id) == ("open", 0)
    assert not served.fake.calls_to("chat.update")  # the triage post is not marked answered
    assert not [c for c in served.fake.calls_to("chat.postMessage") if "bays 40 to 44" in block_text(c)]
    assert any(OUTSIDER in r.getMessage() and "not an expert" in r.getMessage() for r in caplog.records)

    # the next asker is not answered with it
    _, later = await ask(served, PARKING, user="U7", channel="C7")
    assert "bays 40 to 44" not in block_text(later)


async def test_a_group_expert_s_reply_to_an_hr_answer_is_kept_for_hr_only_signed_as_configured(
    served: Served,
) -> None:
    handoff_id, _ = await hand_off(served, RESTRICTED_QUESTION, channel=HR)
    assert await served.interact(block_action(HANDOFF_REPLY, handoff_id, user=MEMBER, channel=TRIAGE)) == 200
    await served.fake.wait_for("views.open", where=lambda c: c.params["view"]["callback_id"] == HANDOFF_REPLY_CALLBACK)
    reply = "The L3 band is reviewed each April; your manager has the exact figures for your role."
    values = reply_values(reply, curate=True, question=RESTRICTED_QUESTION, readers="cited")
    assert await served.interact(view_submission(HANDOFF_REPLY_CALLBACK, handoff_id, values, user=MEMBER)) == 200
    await served.fake.wait_for("chat.update", where=lambda c: c.params["channel"] == TRIAGE)
    async with served.core.store.engine.connect() as conn:
        row = (
            (
                await conn.execute(
                    text(
                        "SELECT c.access_groups, c.author, c.author_name, d.authority FROM curated_answers c "
                        "JOIN documents d ON d.id = c.document_id WHERE c.handoff_id = CAST(:h AS uuid)"
                    ),
                    {"h": handoff_id},
                )
            )
            .mappings()
            .one()
        )
    # the cited salary document's group, not every group the asker holds; an ordinary document's weight
    assert (list(row["access_groups"]), row["author"], row["authority"]) == (["hr-confidential"], MEMBER, 0)
    assert row["author_name"] == "Chief Executive"  # a group member with no configured name: Slack's, frozen

    # the next public asker does not get it; an HR asker does, cited
    review = "When is the L3 salary band reviewed?"
    _, public = await ask(served, review, user="U8", channel="C8")
    assert "each April" not in block_text(public)
    _, hr = await ask(served, review, user="U9", channel=HR)
    assert "each April" in block_text(hr) and "answered by Chief Executive" in block_text(hr)


async def test_a_named_expert_is_signed_with_the_operator_s_name_not_their_profile(served: Served) -> None:
    handoff_id, _ = await hand_off(served, "Where do visitors sign in at the office?")
    values = reply_values(PARKING_REPLY, curate=True, question="Where do visitors sign in?", readers="everyone")
    assert await served.interact(view_submission(HANDOFF_REPLY_CALLBACK, handoff_id, values, user=EXPERT)) == 200
    await served.fake.wait_for("chat.update", where=lambda c: c.params["channel"] == TRIAGE)
    async with served.core.store.engine.connect() as conn:
        name = (
            await conn.execute(
                text("SELECT author_name FROM curated_answers WHERE handoff_id = CAST(:h AS uuid)"), {"h": handoff_id}
            )
        ).scalar_one()
    assert name == "Ana Diaz (People team)"


async def test_keeping_an_answer_that_cited_nothing_needs_an_explicit_choice_of_readers(served: Served) -> None:
    handoff_id, _ = await hand_off(served, "Can I bring my bicycle on the shuttle bus?")
    values = reply_values("Folding bicycles only.", curate=True, question="Bicycles on the shuttle?")
    body = form_body(view_submission(HANDOFF_REPLY_CALLBACK, handoff_id, values, user=EXPERT))
    status, response = await served.post(body, signed_headers(SECRET, body))
    assert status == 200 and "Choose who may read the curated answer." in response
    assert await stored(served, handoff_id) == ("open", 0)


@pytest.mark.parametrize(
    ("triage", "says"),
    [
        ({"is_private": False, "name": "help"}, "is a public channel"),
        ({"is_private": True, "is_ext_shared": True, "name": "help"}, "is shared with another workspace"),
    ],
)
async def test_a_public_or_shared_triage_channel_refuses_to_start(
    candor: Candor, handbook: KnowledgeBase, tmp_path: Path, triage: dict[str, Any], says: str
) -> None:
    with pytest.raises(ConfigError, match=f"SLACK_TRIAGE_CHANNEL {TRIAGE} \\(#help\\) {says}"):
        async with slack(candor, handbook, tmp_path, triage=triage):
            pass


async def test_a_public_triage_channel_unchecked_at_start_gets_no_hand_off(
    candor: Candor, handbook: KnowledgeBase, tmp_path: Path
) -> None:
    # Slack did not answer at start-up (the server starts); the first hand-off asks again
    async with slack(candor, handbook, tmp_path, triage={"is_private": False}, unreachable_at_start=True) as served:
        mention, answer = await ask(served, "Is there a creche for staff children at the office?")
        click = block_action(HANDOFF, button(answer, HANDOFF)["value"], channel="C1", thread_ts=mention["ts"])
        await served.interact(click)
        (told,) = await served.fake.wait_for("chat.postEphemeral")
        assert "could not be passed on" in told.params["text"]
        assert [c.params["channel"] for c in served.fake.calls_to("chat.postMessage")] == ["C1"]  # the answer only
        assert len(served.fake.calls_to("conversations.info")) >= 2
