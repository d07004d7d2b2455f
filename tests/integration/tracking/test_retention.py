"""`candor purge` / `Candor.purge`: question text and asker ids leave old records, the report's counts stay.

Real Postgres: traces written through `TraceStore`, a vote with a comment, a chat ledger row; the
purge is checked in the rows themselves and in the report over the same window.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import uuid
from datetime import UTC, datetime, timedelta

from pydantic import SecretStr
from sqlalchemy import text

from rag.insights.report.build import Window
from rag.model.answers import Feedback, GateOutcome
from rag.runtime import Candor, open_candor
from tests.integration.tracking.test_tracking import CONFIG, MODELS, make_answer, make_question

QUESTION = "Can Priya in payroll carry over her 7 unused leave days into 2027?"


async def recorded(candor: Candor, *, days_ago: int, asker: str) -> str:
    """A trace made `days_ago` days ago, asked by `asker`, quoting the question in a gate's details."""
    answer = make_answer(
        question=QUESTION,
        trace_id=str(uuid.uuid4()),
        created_at=datetime.now(UTC) - timedelta(days=days_ago),
        unanswered_parts=("Can Priya carry over 7 days?",),
        gates=(
            GateOutcome("premise", True, 1.0, attempt=1, details={"parts": [{"part": QUESTION, "unknown": ["Priya"]}]}),
            GateOutcome("faithfulness", True, 0.9, attempt=1, details={"sentences": 2, "unsupported": 0}),
        ),
    )
    question = dataclasses.replace(make_question(), text=QUESTION, asker=asker)
    assert await candor.tracker.record(question, answer, config=CONFIG, models=MODELS)
    await candor.tracker.record_feedback(Feedback(answer.trace_id, "down", user=asker, comment="Priya here: wrong"))
    return answer.trace_id


async def test_a_purge_removes_question_text_and_ids_and_keeps_the_counts(candor: Candor) -> None:
    asker = f"U{uuid.uuid4().hex[:8]}"
    old = await recorded(candor, days_ago=200, asker=asker)
    recent = await recorded(candor, days_ago=1, asker=asker)
    key = f"T1/C2/{uuid.uuid4().hex}"
    claim = await candor.events.claim(
        "slack", key, {"text": QUESTION, "user": asker}, event_id="Ev1", question=QUESTION, asker=asker
    )
    assert claim is not None
    assert await candor.events.complete(claim, trace_id=old, reply={"ts": ["1.2"], "answer_text": "24 days"})
    window = Window(datetime.now(UTC) - timedelta(days=400), datetime.now(UTC) + timedelta(minutes=1))
    before = (await candor.report(window))["total"]

    purged = await candor.purge(datetime.now(UTC) - timedelta(days=90))

    assert purged.traces >= 1 and purged.votes >= 1 and purged.events >= 1
    trace = await candor.tracker.trace(old)
    assert trace is not None and trace["purged_at"] is not None
    stored = json.dumps(trace)
    for personal in (QUESTION, "Priya", asker):
        assert personal not in stored, personal
    assert trace["parts"] == ["[removed]", "[removed]"]  # as many parts as were asked
    assert trace["answer"]["unanswered_parts"] == ["[removed]"]
    assert trace["answer"]["sentences"][0]["text"] == "Full-time staff get 24 days of annual leave."
    assert trace["route"] == "answered" and len(trace["gates"]) == 2 and len(trace["sources"]) == 2
    (vote,) = trace["feedback"]
    assert vote["rating"] == -1 and vote["comment"] is None and vote["user_id"].startswith("purged-")
    row = await candor.events.get("slack", key)
    assert row is not None and row["question"] is None and row["asker"] is None and row["payload"] == {}
    assert row["reply"] == {"ts": ["1.2"]} and str(row["trace_id"]) == old  # a late vote still finds it

    kept = await candor.tracker.trace(recent)
    assert kept is not None and kept["question"] == QUESTION and kept["asker"] == asker
    assert kept["purged_at"] is None and kept["feedback"][0]["comment"] == "Priya here: wrong"

    assert (await candor.report(window))["total"] == before  # routes, gates, votes, sources: same counts
    again = await candor.purge(datetime.now(UTC) - timedelta(days=90))
    assert (await candor.tracker.trace(old)) == trace and again.traces == 0


async def test_forgetting_one_trace_removes_its_text_at_once(candor: Candor) -> None:
    trace_id = await recorded(candor, days_ago=0, asker="U-forget")
    assert await candor.forget(trace_id)
    trace = await candor.tracker.trace(trace_id)
    assert trace is not None and QUESTION not in json.dumps(trace) and trace["asker"] is None
    assert not await candor.forget(str(uuid.uuid4()))


async def test_a_retention_setting_purges_while_serving(candor: Candor) -> None:
    old = await recorded(candor, days_ago=40, asker="U-retained")
    kept = await recorded(candor, days_ago=20, asker="U-retained")
    serving = dataclasses.replace(candor, settings=candor.settings.model_copy(update={"retention_days": 30}))
    task = asyncio.create_task(serving.purge_while_serving(every=0.1))
    try:
        for _ in range(100):
            trace = await candor.tracker.trace(old)
            if trace is not None and trace["purged_at"] is not None:
                break
            await asyncio.sleep(0.1)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    assert trace is not None and trace["purged_at"] is not None
    recent = await candor.tracker.trace(kept)
    assert recent is not None and recent["question"] == QUESTION


async def test_without_a_retention_setting_nothing_is_purged_while_serving(candor: Candor) -> None:
    assert candor.settings.retention_days is None  # the default: kept until `candor purge`
    await asyncio.wait_for(candor.purge_while_serving(every=0.1), timeout=5)  # returns at once


async def test_keyed_askers_are_stored_as_the_same_pseudonym_everywhere(candor: Candor) -> None:
    """CANDOR_STORE_ASKERS=keyed: the trace, the vote and the chat ledger hold one keyed hash per person,
    never the id; a second vote by the same person still replaces the first."""
    settings = candor.settings.model_copy(
        update={"store_askers": "keyed", "export_key": SecretStr("a-test-key-of-32-characters-long")}
    )
    asker = f"U{uuid.uuid4().hex[:10]}"
    async with open_candor(settings) as keyed_core:
        trace_id = await recorded(keyed_core, days_ago=0, asker=asker)
        await keyed_core.tracker.record_feedback(Feedback(trace_id, "up", user=asker))
        claim = await keyed_core.events.claim("slack", f"T1/C9/{uuid.uuid4().hex}", {}, asker=asker)
        assert claim is not None
        row = await keyed_core.events.get("slack", claim.key)
    trace = await candor.tracker.trace(trace_id)
    assert trace is not None and asker not in json.dumps(trace) and row is not None
    assert trace["asker"].startswith("k:") and len(trace["asker"]) == 18
    (vote,) = trace["feedback"]  # the same pseudonym: the "up" replaced the "down"
    assert vote["user_id"] == trace["asker"] == row["asker"] and vote["rating"] == 1


async def test_a_purge_removes_who_handed_a_question_over_and_where_they_waited(candor: Candor) -> None:
    asker = f"U{uuid.uuid4().hex[:8]}"
    old = await recorded(candor, days_ago=200, asker=asker)
    recent = await recorded(candor, days_ago=1, asker=asker)
    where = {"channel": "C0PRIYA", "thread_ts": "1.5"}
    for trace_id in (old, recent):
        handoff, _ = await candor.loop.hand_off(
            trace_id, platform="slack", asker=asker, reason="down_vote", reply_to=where
        )
        await candor.loop.reply_to_handoff(handoff.id, "Priya, yes: up to 5 days.", by="U0HR", by_name="Hana")

    await candor.purge(datetime.now(UTC) - timedelta(days=90))

    async with candor.store.engine.connect() as conn:
        rows = {
            str(row.trace_id): row
            for row in await conn.execute(
                text("SELECT * FROM handoffs WHERE trace_id = ANY(CAST(:ids AS uuid[]))"), {"ids": [old, recent]}
            )
        }
    purged, kept = rows[old], rows[recent]
    assert purged.asker.startswith("purged-") and purged.reply_to == {} and purged.reply_text is None
    assert (purged.reason, purged.status, purged.replied_by_name) == ("down_vote", "replied", "Hana")
    assert kept.asker == asker and kept.reply_to == where and "Priya" in kept.reply_text
    assert asker not in json.dumps(await candor.tracker.trace(old), default=str)
