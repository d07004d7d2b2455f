"""Curated answers in Postgres: kept as documents of their own kind, searched, gated and cited like
any document, edited, expired and removed (rag/loop/curated.py)."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from rag.errors import ConfigError, NotFound, UnknownTrace
from rag.model.answers import Question
from rag.model.loop import CuratedDraft
from rag.model.types import AccessScope
from rag.runtime import Candor
from rag.store.postgres import KnowledgeBase
from tests.conftest import SAMPLE

QUESTION = "Where do I store my bicycle at the office?"
ANSWER = "Bicycles go in the locked bike room next to the loading bay; ask reception for the key fob."


@pytest.fixture
async def handbook(candor: Candor, kb: KnowledgeBase) -> KnowledgeBase:
    assert (await candor.ingestor().ingest([SAMPLE], kb=kb)).ok
    return kb


async def ask(candor: Candor, kb: KnowledgeBase, question: str = QUESTION, groups: frozenset[str] = frozenset()):
    return await candor.answer(Question(question, scope=AccessScope(groups, frozenset({kb.name}))))


def draft(**changes: object) -> CuratedDraft:
    values: dict[str, object] = {"question": QUESTION, "answer": ANSWER, "author": "U0EXPERT"}
    return CuratedDraft(**{**values, "author_name": "Ana Diaz", **changes})  # type: ignore[arg-type]


async def test_a_curated_answer_answers_what_the_documents_did_not_and_is_cited_with_its_author(
    candor: Candor, handbook: KnowledgeBase
) -> None:
    before = await ask(candor, handbook)
    assert before.abstained, before.text

    curated = await candor.loop.curate(draft(), kb=handbook.name)

    after = await ask(candor, handbook)
    assert after.route == "answered", after.text
    assert "bike room" in after.text
    cited = [s for s in after.sources if s.document == curated.source]
    assert cited and cited[0].answered_by == "Ana Diaz"
    assert cited[0].effective_date == datetime.now(UTC).date()
    async with candor.store.engine.connect() as conn:
        row = (
            await conn.execute(
                text("SELECT format, authority, title FROM documents WHERE id = :id"), {"id": curated.document_id}
            )
        ).one()
    assert tuple(row) == ("curated", 0, QUESTION)  # an ordinary document's weight: it does not outrank the policy


async def test_a_curated_answer_s_authority_is_set_per_knowledge_base_and_capped(
    candor: Candor, handbook: KnowledgeBase
) -> None:
    for setting, expected in [(f"{handbook.name}=2, *=0", 2), (f"*=0, {handbook.name}=99", handbook.max_authority)]:
        weighted = dataclasses.replace(
            candor, settings=candor.settings.model_copy(update={"curated_authority": setting})
        )
        curated = await weighted.loop.curate(draft(), kb=handbook.name)
        async with candor.store.engine.connect() as conn:
            authority = (
                await conn.execute(text("SELECT authority FROM documents WHERE id = :id"), {"id": curated.document_id})
            ).scalar_one()
        assert authority == expected
        await candor.loop.curated.remove(curated.id)


async def test_an_edit_reindexes_the_answer_and_expiring_or_removing_it_takes_it_out_of_search(
    candor: Candor, handbook: KnowledgeBase
) -> None:
    curated = await candor.loop.curate(draft(), kb=handbook.name)
    edited = await candor.loop.curated.edit(curated.id, answer="Bicycles go in the covered rack behind the car park.")
    assert edited.document_id is not None
    answer = await ask(candor, handbook)
    assert "covered rack" in answer.text and "bike room" not in answer.text

    expired = await candor.loop.curated.expire(curated.id)
    assert expired.document_id is None and expired.expires_at is not None
    assert (await ask(candor, handbook)).abstained
    listed = await candor.loop.curated.find(include_expired=True)
    assert curated.id in {c.id for c in listed}
    assert curated.id not in {c.id for c in await candor.loop.curated.find()}

    await candor.loop.curated.remove(curated.id)
    with pytest.raises(NotFound):
        await candor.loop.curated.get(curated.id)


async def test_a_future_expiry_is_applied_when_it_comes(candor: Candor, handbook: KnowledgeBase) -> None:
    soon = datetime.now(UTC) + timedelta(seconds=1)
    curated = await candor.loop.curate(draft(expires_at=soon), kb=handbook.name)
    assert (await ask(candor, handbook)).route == "answered"
    async with candor.store.engine.begin() as conn:  # time passes
        await conn.execute(
            text("UPDATE curated_answers SET expires_at = now() - interval '1 second' WHERE id = :id"),
            {"id": curated.id},
        )
    assert await candor.loop.curated.expire_due() >= 1
    assert (await candor.loop.curated.get(curated.id)).document_id is None
    assert (await ask(candor, handbook)).abstained


async def test_a_restricted_curated_answer_reaches_only_its_groups(candor: Candor, handbook: KnowledgeBase) -> None:
    await candor.loop.curate(draft(access_groups=("it-staff",)), kb=handbook.name)
    public = await ask(candor, handbook)
    assert public.abstained and "bike room" not in public.text
    staff = await ask(candor, handbook, groups=frozenset({"it-staff"}))
    assert "bike room" in staff.text


OTHER_POLICIES = {
    "parking": "Staff park behind the Leeds office; register your car with reception first.",
    "lunch": "The canteen serves hot lunches from noon until two on weekdays.",
    "laptops": "IT replaces laptops every four years; broken screens are repaired within a week.",
    "travel": "Book trains in standard class through the travel portal, at least a week ahead.",
    "security": "Badges open the front door; lost badges are reported to the security desk at once.",
    "expenses": "Claims need a receipt over 25 pounds and are paid with the next salary.",
}
"""Short documents on other subjects, so that the leave texts' words are rare in the base."""


async def test_a_curated_answer_that_a_newer_document_contradicts_is_flagged(
    candor: Candor, kb: KnowledgeBase, tmp_path
) -> None:
    await candor.loop.curate(
        draft(
            question="How many days of annual leave do employees get?",
            answer="Employees get 20 days of annual leave per year.",
        ),
        kb=kb.name,
    )
    newer = tmp_path / "leave.md"
    tomorrow_is_not_allowed = datetime.now(UTC).date()  # a future date is not trusted; today is newest
    newer.write_text(
        f"---\ntitle: Leave policy\ndate: {tomorrow_is_not_allowed.isoformat()}\n---\n"
        "# Annual leave\n\nEmployees get 25 days of annual leave per year.\n"
    )
    # the rest of the base, on other subjects: a word's weight is its rarity in this base alone, and
    # in a base of nothing but the two leave texts every word would be in every chunk
    for name, body in OTHER_POLICIES.items():
        (tmp_path / f"{name}.md").write_text(f"# {name.title()}\n\n{body}\n")
    assert (await candor.ingestor().ingest([tmp_path], kb=kb)).ok
    answer = await ask(candor, kb, "How many days of annual leave do employees get?")
    assert answer.conflicts, answer.text
    values = {v for c in answer.conflicts for v in c.values}
    assert any("20" in v for v in values) and any("25" in v for v in values)


async def test_bad_curated_answers_are_refused_clearly(candor: Candor, kb: KnowledgeBase) -> None:
    with pytest.raises(ConfigError, match="question"):
        await candor.loop.curate(draft(question="   "), kb=kb.name)
    with pytest.raises(ConfigError, match="answer"):
        await candor.loop.curate(draft(answer=""), kb=kb.name)
    with pytest.raises(ConfigError, match="blank"):
        await candor.loop.curate(draft(access_groups=("",)), kb=kb.name)
    with pytest.raises(NotFound):
        await candor.loop.curated.edit(2_000_000_000, answer="x")


async def test_a_curated_answer_whose_indexing_was_lost_is_indexed_by_the_sweep(
    candor: Candor, handbook: KnowledgeBase
) -> None:
    curated = await candor.loop.curate(draft(), kb=handbook.name)
    async with candor.store.engine.begin() as conn:  # as if the write of its document had failed
        await conn.execute(text("DELETE FROM documents WHERE id = :id"), {"id": curated.document_id})
        await conn.execute(
            text("UPDATE curated_answers SET updated_at = now() - interval '2 minutes' WHERE id = :id"),
            {"id": curated.id},
        )
    assert (await candor.loop.curated.get(curated.id)).document_id is None
    assert (await ask(candor, handbook)).abstained

    assert await candor.loop.curated.expire_due() >= 1
    assert (await candor.loop.curated.get(curated.id)).document_id is not None
    assert "bike room" in (await ask(candor, handbook)).text


async def test_a_purged_trace_cannot_be_handed_over_and_a_hand_off_is_replied_to_once(
    candor: Candor, handbook: KnowledgeBase
) -> None:
    answer = await ask(candor, handbook)
    handoff, made = await candor.loop.hand_off(
        answer.trace_id, platform="slack", asker="U1", reason="abstained", reply_to={}
    )
    assert made
    _, now = await candor.loop.reply_to_handoff(handoff.id, "The bike room.", by="U9", by_name="Ana")
    again, later = await candor.loop.reply_to_handoff(handoff.id, "Somewhere else.", by="U8", by_name="Bo")
    assert now and not later
    assert again.reply_text == "The bike room." and again.replied_by_name == "Ana"

    other = await ask(candor, handbook)
    assert await candor.forget(other.trace_id)
    with pytest.raises(UnknownTrace):
        await candor.loop.hand_off(other.trace_id, platform="slack", asker="U1", reason="abstained", reply_to={})
