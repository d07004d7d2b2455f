"""The `Reranker` contract (STYLE.md 5), run against every implementation.

`RerankerContract` holds the tests; each `Test...` subclass provides a `reranker` fixture. The
passages are real: the documents of `tests/contract/corpus.py`, ingested by the real pipeline and
found by the real hybrid retriever, queried the way the answer pipeline probes them. The tests use
nothing but the Protocol's surface, so a cross-encoder or an LLM reranker subclasses them as is.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Mapping, Sequence
from typing import ClassVar

import pytest

from rag.backends.cross_encoders import CrossEncoderModel, CrossEncoderReranker, load_cross_encoder
from rag.model.evidence import Query, Ranked
from rag.model.ports import Reranker
from rag.model.types import Passage
from rag.pipeline.rerank import EvidenceReranker
from rag.runtime import Candor
from rag.store.evidence import SentenceEvidence, sentence_evidence
from rag.store.postgres import KnowledgeBase
from tests.contract.corpus import (
    ANNUAL_LEAVE,
    BEACON_PRO_INTERVAL,
    PENSION,
    PRIMARY_CARER_LEAVE,
    document_of,
    ingest_corpus,
    retrieve,
)
from tests.contract.known_failures import KnownFailures
from tests.tiny_cross_encoders import TinyCrossEncoders

QUESTIONS = {
    "annual-leave": ANNUAL_LEAVE,
    "beacon-pro": BEACON_PRO_INTERVAL,
    "primary-carers": PRIMARY_CARER_LEAVE,
    "pension": PENSION,
}
"""Answerable ones, and one no passage addresses: every one still gets a full ranking."""

TEAM_PLAN_PHRASINGS = {
    "how-many-users": "How many users can the Team plan have?",
    "user-limit": "What is the user limit on the Team plan?",
}
"""The Team plan trap in two phrasings. The "Our plans" passage says the plan "has a generous user
limit" and is closer to both by cosine than the passage that gives the number (checked below)."""


@pytest.fixture(scope="module")
async def corpus(candor: Candor, tmp_path_factory: pytest.TempPathFactory) -> KnowledgeBase:
    return await ingest_corpus(candor, tmp_path_factory.mktemp("reranker-corpus"))


def _words(text: str) -> str:
    return " ".join(text.split())


def _holding(ranking: Sequence[Ranked], fragment: str) -> int:
    """Position in `ranking` of the one passage whose text holds `fragment`."""
    found = [i for i, r in enumerate(ranking) if fragment in _words(r.passage.text)]
    assert len(found) == 1, f"{fragment!r} is in {len(found)} ranked passages"
    return found[0]


def _sentence_score(ranking: Sequence[Ranked], fragment: str) -> float:
    scores = [s.score for r in ranking for s in r.sentences if fragment in s.text]
    assert len(scores) == 1, f"{fragment!r} is in {len(scores)} scored sentences"
    return scores[0]


class _Shortlist:
    """The query and passages the answer pipeline would hand a reranker for one question."""

    def __init__(self, candor: Candor, kb: KnowledgeBase) -> None:
        self.candor, self.kb = candor, kb

    async def __call__(self, question: str) -> tuple[Query, list[Passage]]:
        return await retrieve(self.candor, self.kb, question)


class RerankerContract(KnownFailures):
    """What every `Reranker` promises. Subclasses provide the `reranker` fixture."""

    @pytest.fixture
    def reranker(self) -> Reranker:
        raise NotImplementedError("a contract subclass provides the reranker")

    @pytest.fixture
    def shortlist(self, candor: Candor, corpus: KnowledgeBase) -> _Shortlist:
        return _Shortlist(candor, corpus)

    def test_has_a_name_and_an_async_rerank(self, reranker: Reranker) -> None:
        assert isinstance(reranker.name, str) and reranker.name.strip()
        assert inspect.iscoroutinefunction(reranker.rerank)

    @pytest.mark.parametrize("question", QUESTIONS.values(), ids=QUESTIONS.keys())
    async def test_ranks_every_passage_once_best_first(
        self, reranker: Reranker, shortlist: _Shortlist, question: str
    ) -> None:
        query, passages = await shortlist(question)
        assert len(passages) >= 4, "the corpus gives a real shortlist"
        ranking = await reranker.rerank(query, passages)
        assert sorted(r.passage.chunk_id for r in ranking) == sorted(p.chunk_id for p in passages)
        scores = [r.score for r in ranking]
        assert all(math.isfinite(s) for s in scores), scores
        assert scores == sorted(scores, reverse=True)

    @pytest.mark.parametrize("question", QUESTIONS.values(), ids=QUESTIONS.keys())
    async def test_each_passage_comes_with_its_own_sentences_best_first(
        self, reranker: Reranker, shortlist: _Shortlist, question: str
    ) -> None:
        query, passages = await shortlist(question)
        for ranked in await reranker.rerank(query, passages):
            assert ranked.sentences, f"no sentence for {ranked.passage.document}"
            scores = [s.score for s in ranked.sentences]
            assert all(math.isfinite(s) for s in scores), scores
            assert scores == sorted(scores, reverse=True)
            for sentence in ranked.sentences:
                assert sentence.passage.chunk_id == ranked.passage.chunk_id
                assert sentence.text.strip()
                assert _words(sentence.text) in _words(ranked.passage.text), "a sentence of another text"

    async def test_top_k_keeps_the_best_k(self, reranker: Reranker, shortlist: _Shortlist) -> None:
        query, passages = await shortlist(ANNUAL_LEAVE)
        full = [r.passage.chunk_id for r in await reranker.rerank(query, passages)]
        top = await reranker.rerank(query, passages, top_k=2)
        assert [r.passage.chunk_id for r in top] == full[:2]
        more = await reranker.rerank(query, passages, top_k=len(passages) + 5)
        assert [r.passage.chunk_id for r in more] == full

    @pytest.mark.parametrize("top_k", [None, 3])
    async def test_no_passages_give_an_empty_ranking(self, reranker: Reranker, top_k: int | None) -> None:
        assert await reranker.rerank(Query(ANNUAL_LEAVE), [], top_k=top_k) == []

    async def test_same_input_same_ranking(self, reranker: Reranker, shortlist: _Shortlist) -> None:
        query, passages = await shortlist(PRIMARY_CARER_LEAVE)
        first, again = await reranker.rerank(query, passages), await reranker.rerank(query, passages)
        assert [r.passage.chunk_id for r in again] == [r.passage.chunk_id for r in first]
        assert [r.score for r in again] == pytest.approx([r.score for r in first], abs=1e-6)
        assert [[s.text for s in r.sentences] for r in again] == [[s.text for s in r.sentences] for r in first]


class RerankerQualityContract(RerankerContract):
    """The traps a reranker exists to avoid: for rerankers whose quality is claimed (the offline
    default, or a real model), not for the tiny random models that prove the plumbing."""

    @pytest.mark.parametrize("question", TEAM_PLAN_PHRASINGS.values(), ids=TEAM_PLAN_PHRASINGS.keys())
    async def test_a_passing_mention_ranks_below_the_stated_fact(
        self, reranker: Reranker, shortlist: _Shortlist, question: str
    ) -> None:
        query, passages = await shortlist(question)
        ranking = await reranker.rerank(query, passages)
        fact, passing = _holding(ranking, "maximum of 50 users"), _holding(ranking, "generous user limit")
        assert fact < passing, [(r.passage.document, round(r.score, 3)) for r in ranking]
        assert "50 users" in ranking[fact].sentences[0].text
        # Sentence scores are compared across passages too (the extractive writer quotes the best).
        assert _sentence_score(ranking, "maximum of 50 users") > _sentence_score(ranking, "generous user limit")

    async def test_the_named_product_beats_its_sibling(self, reranker: Reranker, shortlist: _Shortlist) -> None:
        query, passages = await shortlist(BEACON_PRO_INTERVAL)
        ranking = await reranker.rerank(query, passages)
        assert document_of(ranking[0].passage) == "beacon-pro-spec.md", ranking[0].passage.document
        assert "Beacon Pro is 30 seconds" in ranking[0].sentences[0].text
        assert _holding(ranking, "Beacon is 60 seconds") > 0
        assert _sentence_score(ranking, "Beacon Pro is 30 seconds") > _sentence_score(ranking, "Beacon is 60 seconds")


class TestEvidenceReranker(RerankerQualityContract):
    known_failures: ClassVar[Mapping[str, pytest.MarkDecorator]] = {}

    @pytest.fixture
    def reranker(self, candor: Candor) -> Reranker:
        async def sentences(chunk_ids: Sequence[int]) -> SentenceEvidence:
            return await sentence_evidence(candor.store, chunk_ids)

        return EvidenceReranker(sentences, candor.embedder)


@pytest.fixture(scope="module")
def tiny_reranker(tiny_cross_encoders: TinyCrossEncoders) -> CrossEncoderModel:
    return load_cross_encoder(str(tiny_cross_encoders.reranker))


class TestCrossEncoderReranker(RerankerContract):
    """Over a tiny random model (tests/tiny_cross_encoders.py): the shape of the contract holds. The
    quality traps (`RerankerQualityContract`) are a matter of the model, which a random one lacks;
    quality figures are for the offline default."""

    @pytest.fixture
    def reranker(self, candor: Candor, tiny_reranker: CrossEncoderModel) -> Reranker:
        async def sentences(chunk_ids: Sequence[int]) -> SentenceEvidence:
            return await sentence_evidence(candor.store, chunk_ids)

        return CrossEncoderReranker(tiny_reranker, EvidenceReranker(sentences, candor.embedder))


async def test_the_team_plan_trap_is_real(candor: Candor, corpus: KnowledgeBase) -> None:
    """The passing mention is closer by cosine, so a reranker that sorts by similarity fails the trap."""
    for question in TEAM_PLAN_PHRASINGS.values():
        _, passages = await retrieve(candor, corpus, question)
        fact = next(p for p in passages if "maximum of 50 users" in p.text)
        passing = next(p for p in passages if "generous user limit" in p.text)
        assert fact.dense_score is not None and passing.dense_score is not None
        assert passing.dense_score > fact.dense_score, question
