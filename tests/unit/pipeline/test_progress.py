"""Which stage is running, as `Question.progress` hears it (rag/pipeline/progress.py): the real
`Answerer` and offline stages with the default embedder, passages kept in memory instead of Postgres."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from rag.backends.embeddings import build_embedder
from rag.config import Settings, load_settings
from rag.model.answers import Answer, Question
from rag.model.evidence import Draft, DraftSentence, SynthesisRequest
from rag.model.ports import Embedder, Synthesizer
from rag.model.progress import Stage
from rag.model.types import AccessScope
from rag.pipeline.access import AccessPolicy
from rag.pipeline.answerer import Answerer
from rag.pipeline.critic import EvidenceVerifier
from rag.pipeline.flow import GatedAttempt, PipelineConfig
from rag.pipeline.progress import Reporter, stage
from rag.pipeline.rerank import EvidenceReranker
from rag.pipeline.synthesis import ExtractiveSynthesizer
from rag.store.evidence import SentenceEvidence, StoredSentence
from tests.unit.pipeline.test_steps import LEAVE, LUNCH, PARKING, MemoryRetriever, no_frequencies

QUESTION = "How many days of annual leave do I get?"
IN_MEMORY_ANSWER_THRESHOLD = 0.3
"""Passages in memory carry none of the stored context that lifts a sentence's score in Postgres."""


@pytest.fixture(scope="module")
def offline(tmp_path_factory: pytest.TempPathFactory, models_dir: Path) -> tuple[Settings, Embedder]:
    home = tmp_path_factory.mktemp("progress-home")
    settings = load_settings(home=home, models_dir=models_dir, database_url=None)
    return settings, build_embedder(settings)


TEXTS = (LEAVE, PARKING, LUNCH)


async def sentences(chunk_ids: Sequence[int]) -> SentenceEvidence:
    """Each passage is one stored sentence (`MemoryRetriever` numbers them from 1), embedded by the reranker."""
    return SentenceEvidence(tuple(StoredSentence(i, 0, TEXTS[i - 1], None, frozenset()) for i in chunk_ids), {})


class MiscitingWriter:
    """Writes the leave sentence citing a passage that does not exist: the critic rejects it, the
    faithfulness gate fails, and a second attempt is made."""

    name = "misciting"

    async def synthesise(self, request: SynthesisRequest) -> Draft:
        return Draft((DraftSentence(LEAVE, (99,), 0),))


def answerer(offline: tuple[Settings, Embedder], writer: Synthesizer | None = None) -> Answerer:
    """The offline stages over the three passages; with `writer`, no rescue (its rejected sentence stays rejected)."""
    settings, embedder = offline
    config = replace(PipelineConfig.from_settings(settings), rescue=writer is None)
    flow = GatedAttempt(
        config,
        embedder,
        MemoryRetriever(embedder, TEXTS),
        no_frequencies,
        EvidenceReranker(sentences, embedder),
        writer or ExtractiveSynthesizer(answer_threshold=IN_MEMORY_ANSWER_THRESHOLD),
        EvidenceVerifier(embedder, min_support=settings.min_support),
    )
    return Answerer(flow, AccessPolicy(), config)


async def ask(core: Answerer, listener: object = None) -> Answer:
    return await core.answer(Question(QUESTION, scope=AccessScope(), progress=listener))  # type: ignore[arg-type]


async def test_each_stage_is_heard_in_order_with_its_counts_and_no_draft_text(
    offline: tuple[Settings, Embedder],
) -> None:
    heard: list[Stage] = []
    answer = await ask(answerer(offline), heard.append)
    assert answer.route == "answered" and "24 days" in answer.text
    assert [s.name for s in heard] == ["understand", "retrieve", "rerank", "synthesise", "critic"]
    assert {s.attempt for s in heard} == {1}
    ranked, checked = heard[2], heard[4]
    assert (ranked.count, ranked.phrase) == (3, "Ranking 3 passages")
    drafted = len(answer.sentences) + len([d for d in answer.dropped if d.attempt == 1])
    assert checked.count == drafted and checked.phrase == f"Checking {drafted} sentence{'s' * (drafted != 1)}"
    assert [s.phrase for s in heard[:2]] == ["Reading the question", "Searching the documents"]
    for said in heard:
        assert all(s.text not in said.phrase for s in answer.sentences)
        assert "24" not in said.phrase, "nothing of what the documents say"


async def test_a_retry_is_heard_and_its_stages_follow_it(offline: tuple[Settings, Embedder]) -> None:
    heard: list[Stage] = []
    answer = await ask(answerer(offline, MiscitingWriter()), heard.append)
    assert [g.passed for g in answer.gates if g.gate == "faithfulness"] == [False, False]
    assert [(s.name, s.attempt) for s in heard] == [
        ("understand", 1),
        ("retrieve", 1),
        ("rerank", 1),
        ("synthesise", 1),
        ("critic", 1),
        ("retry", 2),
        ("retrieve", 2),
        ("rerank", 2),
        ("synthesise", 2),
        ("critic", 2),
    ]
    assert heard[5].phrase == "Trying again with more passages"
    assert all(LEAVE not in s.phrase and "24" not in s.phrase for s in heard), "the rejected draft never shows"


async def test_a_listener_that_raises_costs_nothing_but_its_progress(
    offline: tuple[Settings, Embedder], caplog: pytest.LogCaptureFixture
) -> None:
    core = answerer(offline)
    calls: list[Stage] = []

    def broken(said: Stage) -> None:
        calls.append(said)
        raise RuntimeError("the adapter's listener has a bug")

    with caplog.at_level(logging.WARNING, logger="candor.answer"):
        answer = await ask(core, broken)
    quiet = await ask(core)
    assert (answer.route, answer.text) == (quiet.route, quiet.text)
    assert answer.route == "answered" and "24 days" in answer.text
    assert [s.name for s in calls] == ["understand"], "told nothing more once it failed"
    (warning,) = [r for r in caplog.records if "progress listener failed" in r.getMessage()]
    assert warning.exc_info is not None and "has a bug" in str(warning.exc_info[1])


def test_a_reporter_without_a_listener_does_nothing_and_phrases_count_in_the_singular() -> None:
    Reporter(None)("retrieve")
    assert stage("critic", count=1).phrase == "Checking 1 sentence"
    assert stage("rerank", count=24, attempt=2) == Stage("rerank", "Ranking 24 passages", 2, 24)
