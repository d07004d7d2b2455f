"""A chat question's scope comes from the access policy, and that scope is what the trace stores:
so `candor report --kb` counts the abstentions of a channel the policy maps to the knowledge base
(they cite nothing, so only the stored scope can place them)."""

from __future__ import annotations

import dataclasses
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

from rag.insights.report.build import build_report, report_window
from rag.model.answers import Question
from rag.runtime import Candor, build_answerer
from tests.conftest import SAMPLE

MOON = "What is the gravity on the surface of the Moon?"
"""Nothing in the handbook is about it: abstained (with per-base word counts, a question that
shares a company name with the handbook is not reliably refused, as it is not for a user whose
database holds only the handbook)."""


async def test_a_channel_abstention_counts_for_the_knowledge_base_its_policy_maps_it_to(
    candor: Candor, tmp_path: Path
) -> None:
    kb = await candor.knowledge_base(f"scope-{uuid.uuid4().hex[:8]}", create=True)
    assert kb is not None
    assert (await candor.ingestor().ingest([SAMPLE], kb=kb)).ok
    policy = tmp_path / "access.yaml"
    policy.write_text(
        f'- platform: slack\n  conversation: "T9/C-HR"\n  groups: [hr-confidential]\n'
        f'  knowledge_bases: ["{kb.name}"]\n',
        encoding="utf-8",
    )
    settings = candor.settings.model_copy(update={"access_policy": policy})
    answerer = build_answerer(settings, candor.store, candor.embedder, candor.retriever, tracker=candor.tracker)
    core = dataclasses.replace(candor, settings=settings, answerer=answerer)
    since = datetime.now(UTC) - timedelta(seconds=1)

    asked = [
        Question(MOON, platform="slack", conversation="T9/C-HR"),
        Question("How many days of annual leave do employees get?", platform="slack", conversation="T9/C-HR"),
        Question(MOON, platform="slack", conversation="T9/C-OTHER"),
    ]
    answers = [await core.answer(q) for q in asked]
    assert [a.route for a in answers] == ["abstained", "answered", "abstained"]

    traces = [await candor.tracker.trace(a.trace_id) for a in answers]
    assert traces[0] is not None and traces[0]["scope"] == {"groups": ["hr-confidential"], "knowledge_bases": [kb.name]}
    assert traces[2] is not None and traces[2]["scope"] == {"groups": [], "knowledge_bases": None}

    window = report_window("1h", kb=kb.name, now=datetime.now(UTC) + timedelta(seconds=1))
    window = dataclasses.replace(window, since=since)
    total = (await build_report(candor.tracker.engine, window))["total"]
    # the HR channel's two questions (one by its scope alone); the other channel's abstention is no one's
    assert total["questions"] == 2
    assert total["routes"]["abstained"] == {"n": 1, "of": 2, "rate": 0.5}
