"""`candor gaps` shows what was done about a gap: the hand-offs of its questions and the curated answers
that cover it, with whether the repeated question stopped abstaining once one was saved. Real pipeline,
Postgres and embedder; the traces are moved to March 2019, a month no other test uses."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import text

from bot.render.gaps_text import render_gaps
from rag.insights.gaps.find import find_gaps
from rag.insights.report.build import report_window
from rag.model.answers import Answer, Question
from rag.model.loop import CuratedDraft
from rag.model.types import AccessScope
from rag.runtime import Candor
from rag.store.postgres import KnowledgeBase
from tests.conftest import SAMPLE

BICYCLE = [
    "Where do I store my bicycle at the office?",
    "Is there a bike room at the office?",
    "Where can I park my bike at work?",
]
BICYCLE_LATER = ["Where can I leave my bicycle at the office?", "Where do I store my bike at the office?"]
DOGS = ["Can I bring my dog to the office?", "Are dogs allowed in the office?"]
BEFORE = datetime(2019, 3, 4, 9, tzinfo=UTC)
SAVED = datetime(2019, 3, 5, 9, tzinfo=UTC)
AFTER = datetime(2019, 3, 6, 9, tzinfo=UTC)


async def ask(candor: Candor, kb: KnowledgeBase, question: str) -> Answer:
    return await candor.answer(Question(question, scope=AccessScope(frozenset(), frozenset([kb.name]))))


async def move(candor: Candor, table: str, ids: list[Any], at: datetime) -> None:
    async with candor.store.engine.begin() as conn:
        for n, row_id in enumerate(ids):
            moved = {"at": at + timedelta(minutes=n), "id": row_id}
            await conn.execute(text(f"UPDATE {table} SET created_at = :at WHERE id = :id"), moved)


async def test_a_gap_shows_its_hand_offs_and_the_curated_answer_that_closed_it(candor: Candor) -> None:
    kb = await candor.knowledge_base(f"follow-{uuid.uuid4().hex[:8]}", create=True)
    assert kb is not None and (await candor.ingestor().ingest([SAMPLE], kb=kb)).ok
    refused = [await ask(candor, kb, q) for q in BICYCLE + DOGS]
    assert all(a.abstained for a in refused), [a.text for a in refused]
    await move(candor, "traces", [a.trace_id for a in refused], BEFORE)

    # the first asker hands it to a person, who replies and keeps the reply
    handoff, _ = await candor.loop.hand_off(
        refused[0].trace_id, platform="slack", asker="U1", reason="abstained", reply_to={"channel": "C1"}
    )
    await candor.loop.reply_to_handoff(
        handoff.id, "Bikes go in the locked bike room by the loading bay.", by="U9", by_name="Ana"
    )
    bikes = await candor.loop.curate(
        CuratedDraft(
            BICYCLE[0], "Bikes go in the locked bike room by the loading bay.", "U9", "Ana", handoff_id=handoff.id
        ),
        kb=kb.name,
    )
    # and someone adds one for the dogs from the command line, with no hand-off
    dogs = await candor.loop.curate(
        CuratedDraft(DOGS[0], "Dogs are welcome in the office on Fridays.", "hr", "Hana"), kb=kb.name
    )
    await move(candor, "curated_answers", [bikes.id, dogs.id], SAVED)

    later = [await ask(candor, kb, q) for q in BICYCLE_LATER]
    assert all(any(s.document == bikes.source for s in a.sources) for a in later), [a.text for a in later]
    await move(candor, "traces", [a.trace_id for a in later], AFTER)

    window = report_window("2019-03-01", "2019-04-01", kb=kb.name)
    found = await find_gaps(candor.tracker.engine, candor.embedder, candor, window, k=3 * candor.settings.shortlist)

    by_topic = {c["representative"]["text"] in BICYCLE: c for c in found["clusters"]}
    bicycle, dog = by_topic[True], by_topic[False]
    (handed,) = bicycle["follow_up"]["handoffs"]
    assert (handed["status"], handed["replied_by"], handed["curated_id"]) == ("replied", "Ana", bikes.id)
    (closed,) = bicycle["follow_up"]["curated_answers"]
    assert closed["id"] == bikes.id and closed["live"]
    assert (closed["unanswered_before"], closed["unanswered_after"], closed["answered_with_it"]) == (3, 0, 2)
    assert dog["follow_up"]["handoffs"] == []
    assert [c["id"] for c in dog["follow_up"]["curated_answers"]] == [dogs.id]  # found by its question

    shown = render_gaps(found)
    assert "handed to a person: 1 (1 replied, replied by Ana)" in shown
    assert f"curated answer #{bikes.id} by Ana (2019-03-05): since then answered with it 2x, unanswered 0x" in shown
    assert "fill it: candor answers add" not in shown  # both gaps have a curated answer
