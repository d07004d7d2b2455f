"""The gates earn their keep: `candor eval` on the sample golden set meets its targets with the real
stages, and falls below them when a stage is swapped for a toy (a verifier that passes
everything, a contradiction detector that never finds one).

The toys are honest implementations of the Protocols, not patches: a team could configure them.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from rag.insights.evaluation.golden import load_golden
from rag.insights.evaluation.run import run_eval, summarise
from rag.model.answers import Question, Verdict
from rag.model.evidence import Draft, ScoredSentence, SynthesisRequest
from rag.model.types import AccessScope, Passage
from rag.pipeline.answerer import Answerer
from rag.pipeline.contradictions import FoundConflict
from rag.pipeline.synthesis import ExtractiveSynthesizer
from rag.runtime import Candor, build_answerer
from rag.store.postgres import KnowledgeBase
from rag.text.exact_checks import quoted
from tests.conftest import REPO, SAMPLE

GOLDEN = load_golden(REPO / "sample" / "golden.yaml")


class AlwaysPass:
    name = "always-pass"

    async def verify(self, sentence: str, evidence: Sequence[str]) -> Verdict:
        return Verdict(True, 1.0)


class NeverConflict:
    name = "never-conflict"

    def find(
        self, chosen: ScoredSentence, shortlist: Sequence[ScoredSentence], *, question: str = ""
    ) -> list[FoundConflict]:
        return []


class MisquotingWriter:
    """The extractive writer, but every number it copies comes out one higher: a writer that
    hallucinates the way language models do, in the detail that matters."""

    name = "misquoting-writer"

    def __init__(self, answer_threshold: float) -> None:
        self.inner = ExtractiveSynthesizer(answer_threshold=answer_threshold)

    async def synthesise(self, request: SynthesisRequest) -> Draft:
        draft = await self.inner.synthesise(request)
        shifted = [replace(s, text=re.sub(r"\d+", lambda m: str(int(m.group(0)) + 1), s.text)) for s in draft.sentences]
        return replace(draft, sentences=tuple(shifted))


@pytest.fixture(scope="module")
async def handbook(candor: Candor) -> KnowledgeBase:
    kb = await candor.knowledge_base(f"toys-{uuid.uuid4().hex[:8]}", create=True)
    assert kb is not None
    assert (await candor.ingestor().ingest([SAMPLE], kb=kb)).ok
    await candor.store.analyze()
    return kb


async def evaluate(candor: Candor, kb: KnowledgeBase, answerer: Answerer) -> dict[str, Any]:
    async def search(text: str, scope: AccessScope) -> list[Passage]:
        return await candor.retriever.run(text, scope, k=5)

    async def reranked(text: str, scope: AccessScope) -> list[Passage]:
        return [r.passage for r in await candor.rerank(text, scope)]

    return summarise(await run_eval(GOLDEN, answerer.answer, search, kb=kb.name, rerank=reranked))


def answerer(candor: Candor, **stages: Any) -> Answerer:
    return build_answerer(candor.settings, candor.store, candor.embedder, candor.retriever, **stages)


def rate(summary: dict[str, Any], key: str) -> float:
    value = summary[key]["rate"]
    assert isinstance(value, float), (key, summary[key])
    return value


async def test_the_real_stages_meet_the_targets(candor: Candor, handbook: KnowledgeBase) -> None:
    summary = await evaluate(candor, handbook, answerer(candor))
    assert rate(summary, "abstention_on_unanswerable") >= 0.95
    assert rate(summary, "wrong_abstention_on_answerable") <= 0.10
    assert rate(summary, "conflict_flag_recall") >= 0.90
    assert rate(summary, "conflict_resolved_correctly") >= 0.90
    assert rate(summary, "false_conflict_rate") <= 0.10
    assert rate(summary, "citations_valid") == 1.0
    assert summary["restricted_leaks"]["n"] == 0
    assert rate(summary, "keyword_accuracy") >= 0.85


async def test_without_the_focus_check_answers_about_the_topic_pass_for_answers(
    candor: Candor, handbook: KnowledgeBase
) -> None:
    # "Is there free parking at the Leeds office?" gets the office's opening hours: cited, faithful, wrong.
    unfocused = candor.settings.model_copy(update={"focus_threshold": 2.0})
    toy = build_answerer(unfocused, candor.store, candor.embedder, candor.retriever)
    summary = await evaluate(candor, handbook, toy)
    assert rate(summary, "abstention_on_unanswerable") < 0.95


async def test_reranking_puts_the_answering_passage_first_more_often_than_retrieval(
    candor: Candor, handbook: KnowledgeBase
) -> None:
    summary = await evaluate(candor, handbook, answerer(candor))
    retrieval, reranked = summary["hit@1"], summary["rerank_hit@1"]
    assert reranked["of"] == retrieval["of"] >= 25
    assert reranked["n"] > retrieval["n"], (retrieval, reranked)
    assert summary["rerank_hit@5"]["n"] >= summary["hit@5"]["n"]


FACT = "# Price list\n\nThe Team plan costs $15 per user per month on monthly billing.\n"
OVERVIEW = "# Team plan overview\n\nThe Team plan is the plan for growing teams.\n"
FILLER = (
    "Customers often ask what the Team plan costs each month. The Team plan is popular with growing "
    "companies. Teams on the Team plan share monitors, alerts and status pages. Many teams move to the "
    "Team plan from the Starter plan. The Team plan suits teams of every size. "
)


async def test_padding_a_passage_with_on_topic_filler_does_not_lift_it_above_the_fact(
    candor: Candor, tmp_path: Path
) -> None:
    question = "How much does the Team plan cost per month?"
    scores = {}
    for variant, overview in (("short", OVERVIEW), ("padded", OVERVIEW + "\n" + FILLER * 3 + "\n")):
        folder = tmp_path / variant
        folder.mkdir()
        (folder / "price-list.md").write_text(FACT, encoding="utf-8")
        (folder / "team-plan-overview.md").write_text(overview, encoding="utf-8")
        kb = await candor.knowledge_base(f"pad-{variant}-{uuid.uuid4().hex[:8]}", create=True)
        assert kb is not None
        assert (await candor.ingestor().ingest([folder], kb=kb)).ok
        ranked = await candor.rerank(question, AccessScope(frozenset(), frozenset([kb.name])))
        assert Path(ranked[0].passage.document).name == "price-list.md", [r.passage.document for r in ranked]
        fact = ranked[0].score
        best_overview = max(r.score for r in ranked if r.passage.document.endswith("team-plan-overview.md"))
        assert best_overview < fact
        scores[variant] = (fact, best_overview)
    assert len(scores) == 2
    # The filler's sentences are closer to the question than the overview's one line, and still lose.
    assert scores["padded"][1] < scores["padded"][0]


async def test_a_detector_that_never_finds_a_conflict_misses_every_planted_one(
    candor: Candor, handbook: KnowledgeBase
) -> None:
    summary = await evaluate(candor, handbook, answerer(candor, conflicts=NeverConflict()))
    assert rate(summary, "conflict_flag_recall") < 0.90
    assert summary["conflict_flag_recall"]["n"] == 0


async def delivered_misquotes(candor: Candor, kb: KnowledgeBase, answerer_: Answerer) -> tuple[int, int]:
    """(delivered sentences, those not found word for word in a source they cite)."""
    delivered = misquoted = 0
    for item in GOLDEN:
        scope = AccessScope(frozenset(item.required_access), frozenset([kb.name]))
        answer = await answerer_.answer(Question(item.question, scope=scope, platform="eval"))
        excerpts = {s.n: s.excerpt for s in answer.sources}
        for sentence in answer.sentences:
            delivered += 1
            misquoted += not quoted(sentence.text, [excerpts[n] for n in sentence.citations])
    return delivered, misquoted


async def test_a_misquoting_writer_is_caught_by_the_critic_but_not_by_a_verifier_that_passes_everything(
    candor: Candor, handbook: KnowledgeBase
) -> None:
    threshold = candor.settings.answer_threshold
    guarded = answerer(candor, synthesizer=MisquotingWriter(threshold))
    toy = answerer(candor, synthesizer=MisquotingWriter(threshold), verifier=AlwaysPass())
    # The real critic drops every misquoted number: what is delivered is what the sources say.
    delivered, misquoted = await delivered_misquotes(candor, handbook, guarded)
    assert misquoted == 0 and delivered < 15
    # A verifier that passes everything lets the misquotes out as answers.
    delivered, misquoted = await delivered_misquotes(candor, handbook, toy)
    assert misquoted >= 20
    summary = await evaluate(candor, handbook, toy)
    assert rate(summary, "keyword_accuracy") < 0.5
    assert summary["critic_dropped_share"]["n"] == 0


def test_golden_file_is_the_sample_one() -> None:
    assert len(GOLDEN) == 40 and Path(SAMPLE).is_dir()
