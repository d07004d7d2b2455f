"""Hybrid ranking on the sample handbook: the document that states the fact comes first."""

from __future__ import annotations

import pytest

from rag.model.types import AccessScope
from rag.runtime import Candor
from rag.store.postgres import KnowledgeBase
from tests.conftest import SAMPLE

QUESTIONS = [
    ("How many days of unused annual leave can be carried over into the next year?", "hr-leave-policy"),
    ("What is the data retention period for Beacon Pro?", "beacon-pro-spec"),
    ("How many hosts can the NW-200X collector handle?", "beacon-pro-spec"),
    ("What is the first response time for a priority 1 incident?", "support-sla"),
    ("What is the home office stipend for remote employees?", "remote-work-policy"),
    ("How much is the daily meal allowance when travelling?", "hr-expenses-policy"),
    ("Which plan includes single sign-on?", "security-policy"),
    ("What should I do if my laptop is lost or stolen?", "it-equipment-policy"),
]


@pytest.fixture
async def handbook(candor: Candor, kb: KnowledgeBase) -> KnowledgeBase:
    report = await candor.ingestor().ingest([SAMPLE], kb=kb)
    assert report.ok and report.added == len(list(SAMPLE.iterdir()))
    return kb


@pytest.mark.parametrize(("question", "stem"), QUESTIONS)
async def test_right_document_first(candor: Candor, handbook: KnowledgeBase, question: str, stem: str) -> None:
    scope = AccessScope(knowledge_bases=frozenset([handbook.name]))
    passages = await candor.retriever.run(question, scope, k=5)
    assert passages, question
    assert passages[0].document.rsplit("/", 1)[-1].rsplit(".", 1)[0] == stem, [p.document for p in passages]


async def test_both_sides_of_a_planted_conflict_are_retrieved(candor: Candor, handbook: KnowledgeBase) -> None:
    """The old FAQ (20 days) and the current policy (24 days) state the same fact in nearly the same
    words; which ranks first is a coin toss, but conflict detection needs both in the shortlist."""
    scope = AccessScope(knowledge_bases=frozenset([handbook.name]))
    passages = await candor.retriever.run("How many days of paid annual leave do full-time employees get?", scope, k=5)
    top = {p.document.rsplit("/", 1)[-1] for p in passages}
    assert {"hr-leave-policy.md", "employee-faq-2024.md"} <= top
    texts = " ".join(p.text for p in passages)
    assert "24 days" in texts and "20 days" in texts


async def test_scores_are_ordered_and_dense_cosine_is_absolute(candor: Candor, handbook: KnowledgeBase) -> None:
    scope = AccessScope(knowledge_bases=frozenset([handbook.name]))
    on_topic = await candor.retriever.run("How many days of annual leave do employees get?", scope, k=5)
    off_topic = await candor.retriever.run("What is the boiling point of liquid nitrogen?", scope, k=5)
    assert [p.score for p in on_topic] == sorted((p.score for p in on_topic), reverse=True)
    # The fused score of the top hit says nothing across queries; the cosine does.
    assert on_topic[0].dense_score is not None and off_topic[0].dense_score is not None
    assert on_topic[0].dense_score > off_topic[0].dense_score + 0.2
