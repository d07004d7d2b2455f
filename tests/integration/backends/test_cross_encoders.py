"""Cross-encoders (`rag/backends/cross_encoders.py`): the plumbing, with tiny models built at test time.

The models are random (`tests/tiny_cross_encoders.py`), so nothing here measures quality: the
quality figures Candor reports are for the offline default (`EvidenceReranker`,
`EvidenceVerifier`), and a real cross-encoder is judged on the golden questions. What is tested:
loading from a folder, and the errors for a missing or broken model; one batched model call per
rerank or verify; passages ordered by the model's score (checked against a plain transformers
forward pass, pair by pair) with the inner reranker's sentences kept; `top_k`; the entailment
column found by its label in any order and case; the exact checks overruling a confident model;
concurrent calls answered correctly, one model call at a time, off the event loop.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rag.backends.cross_encoders import (
    CrossEncoderModel,
    CrossEncoderReranker,
    CrossEncoderVerifier,
    load_cross_encoder,
)
from rag.errors import CandorError, ConfigError, CrossEncoderError
from rag.model.evidence import Query, Ranked, ScoredSentence
from rag.model.types import Passage
from rag.pipeline.rerank import EvidenceReranker
from rag.runtime import Candor
from rag.store.evidence import SentenceEvidence, sentence_evidence
from rag.store.postgres import KnowledgeBase
from tests.contract.corpus import ANNUAL_LEAVE, BEACON_PRO_INTERVAL, PRIMARY_CARER_LEAVE, ingest_corpus, retrieve
from tests.tiny_cross_encoders import TinyCrossEncoders

LEAVE = (
    "Parental leave is paid at the full salary:\n"
    "- Primary carers receive 16 weeks of paid parental leave\n"
    "- Secondary carers receive 4 weeks of paid parental leave\n"
    "Parental leave must start within 12 months of the birth or adoption."
)
CANTEEN = "The canteen serves lunch from noon until two. It is closed on public holidays."
PLANS = "The Business plan costs $29 per user per month. The Business plan supports a maximum of 500 users."
PARAPHRASE = "Primary carers are paid for 16 weeks of parental leave."
"""Supported by LEAVE, but not a verbatim quote: it reaches the model."""


class PredictCalls:
    """Stands in front of one loaded model's `predict` (the library's method, not Candor's code):
    records each call's pair count and how many calls ran at once, pausing in each so that
    overlapping calls would show."""

    def __init__(self, model: CrossEncoderModel, *, pause: float = 0.0) -> None:
        self.predict = model.model.predict
        self.pause = pause
        self.sizes: list[int] = []
        self.running = 0
        self.most_at_once = 0
        self.threads: set[int] = set()
        self._lock = threading.Lock()
        model.model.predict = self

    def __call__(self, pairs: Sequence[tuple[str, str]], **options: Any) -> Any:
        with self._lock:
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
            self.sizes.append(len(pairs))
            self.threads.add(threading.get_ident())
        try:
            time.sleep(self.pause)
            return self.predict(pairs, **options)
        finally:
            with self._lock:
                self.running -= 1


def transformers_logits(folder: Path, first: str, second: str) -> np.ndarray[Any, Any]:
    """The model's logits for one pair from a plain transformers forward pass (no batching, no
    sentence-transformers): the reference the plumbing must reproduce."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    model = AutoModelForSequenceClassification.from_pretrained(folder, local_files_only=True).eval()
    with torch.no_grad():
        logits = model(**tokenizer(first, second, truncation=True, return_tensors="pt")).logits[0]
    return logits.double().numpy()


def load(folder: Path, **options: Any) -> CrossEncoderModel:
    return load_cross_encoder(str(folder), **options)


@pytest.fixture(scope="module")
async def corpus(candor: Candor, tmp_path_factory: pytest.TempPathFactory) -> KnowledgeBase:
    return await ingest_corpus(candor, tmp_path_factory.mktemp("cross-encoder-corpus"))


@pytest.fixture
def inner(candor: Candor) -> EvidenceReranker:
    async def sentences(chunk_ids: Sequence[int]) -> SentenceEvidence:
        return await sentence_evidence(candor.store, chunk_ids)

    return EvidenceReranker(sentences, candor.embedder)


async def shortlist(candor: Candor, corpus: KnowledgeBase, question: str) -> tuple[Query, list[Passage]]:
    query, passages = await retrieve(candor, corpus, question)
    assert len(passages) >= 4, "the corpus gives a real shortlist"
    return query, passages


# --- the reranker ---------------------------------------------------------------------------------


async def test_one_batched_call_orders_the_passages_by_the_model(
    candor: Candor, corpus: KnowledgeBase, inner: EvidenceReranker, tiny_cross_encoders: TinyCrossEncoders
) -> None:
    query, passages = await shortlist(candor, corpus, PRIMARY_CARER_LEAVE)
    model = load(tiny_cross_encoders.reranker)
    calls = PredictCalls(model)
    ranking = await CrossEncoderReranker(model, inner).rerank(query, passages)

    assert calls.sizes == [len(passages)], "one predict call for the whole shortlist"
    expected = {
        p.chunk_id: 1 / (1 + np.exp(-transformers_logits(tiny_cross_encoders.reranker, query.text, p.text)[0]))
        for p in passages
    }
    assert [r.score for r in ranking] == pytest.approx([expected[r.passage.chunk_id] for r in ranking], abs=1e-4)
    assert [r.passage.chunk_id for r in ranking] == sorted(expected, key=lambda chunk: -expected[chunk])
    assert all(0.0 < r.score < 1.0 for r in ranking)
    assert min(np.diff(sorted(expected.values()))) > 1e-3, "the tiny model tells the passages apart"
    inner_order = [r.passage.chunk_id for r in await inner.rerank(query, passages)]
    assert [r.passage.chunk_id for r in ranking] != inner_order, "the model reorders, so this test can fail"


async def test_the_inner_rerankers_sentences_are_kept(
    candor: Candor, corpus: KnowledgeBase, inner: EvidenceReranker, tiny_cross_encoders: TinyCrossEncoders
) -> None:
    query, passages = await shortlist(candor, corpus, BEACON_PRO_INTERVAL)
    by_chunk = {r.passage.chunk_id: r for r in await inner.rerank(query, passages)}
    ranking = await CrossEncoderReranker(load(tiny_cross_encoders.reranker), inner).rerank(query, passages)
    assert sorted(r.passage.chunk_id for r in ranking) == sorted(by_chunk)
    for ranked in ranking:
        assert _facts(ranked.sentences) == _facts(by_chunk[ranked.passage.chunk_id].sentences)
        assert ranked.passage == by_chunk[ranked.passage.chunk_id].passage
        assert ranked.score != by_chunk[ranked.passage.chunk_id].score, "the passage score is the model's"


async def test_top_k_keeps_the_models_best_k(
    candor: Candor, corpus: KnowledgeBase, inner: EvidenceReranker, tiny_cross_encoders: TinyCrossEncoders
) -> None:
    query, passages = await shortlist(candor, corpus, ANNUAL_LEAVE)
    model = load(tiny_cross_encoders.reranker)
    reranker = CrossEncoderReranker(model, inner)
    full = [r.passage.chunk_id for r in await reranker.rerank(query, passages)]
    assert [r.passage.chunk_id for r in await reranker.rerank(query, passages, top_k=2)] == full[:2]
    assert [r.passage.chunk_id for r in await reranker.rerank(query, passages, top_k=len(passages) + 3)] == full
    calls = PredictCalls(model)
    assert await reranker.rerank(query, [], top_k=2) == []
    assert calls.sizes == [], "nothing to score, no model call"


async def test_the_saved_activation_does_not_change_the_scale(
    candor: Candor, corpus: KnowledgeBase, inner: EvidenceReranker, tiny_cross_encoders: TinyCrossEncoders
) -> None:
    """The same weights saved with sentence-transformers' default (a sigmoid for one label) and with
    Identity (as the ms-marco rerankers are): `predict` gives probabilities for one, logits for the
    other; the reranker gives the same 0..1 scores for both."""
    query, passages = await shortlist(candor, corpus, PRIMARY_CARER_LEAVE)
    sigmoid_saved, identity_saved = load(tiny_cross_encoders.reranker), load(tiny_cross_encoders.reranker_identity)
    pairs = [(query.text, p.text) for p in passages]
    assert not np.allclose(sigmoid_saved.model.predict(pairs), identity_saved.model.predict(pairs), atol=1e-3)
    first = await CrossEncoderReranker(sigmoid_saved, inner).rerank(query, passages)
    second = await CrossEncoderReranker(identity_saved, inner).rerank(query, passages)
    assert [r.passage.chunk_id for r in first] == [r.passage.chunk_id for r in second]
    assert [r.score for r in first] == pytest.approx([r.score for r in second], abs=1e-6)


def test_the_reranker_is_named_for_its_model_and_wants_one_label(
    inner: EvidenceReranker, tiny_cross_encoders: TinyCrossEncoders
) -> None:
    assert CrossEncoderReranker(load(tiny_cross_encoders.reranker), inner).name == "cross-encoder:tiny-reranker"
    as_set = load_cross_encoder(f"cross-encoder:{tiny_cross_encoders.reranker}")  # CANDOR_RERANKER's form
    assert CrossEncoderReranker(as_set, inner).name == "cross-encoder:tiny-reranker"
    with pytest.raises(ConfigError, match=r"tiny-nli.*3 labels"):
        CrossEncoderReranker(load(tiny_cross_encoders.nli), inner)


# --- the verifier ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "label"), [("nli_sure", "entailment"), ("nli_sure_shuffled", "ENTAILMENT")], ids=["usual", "shuffled"]
)
async def test_the_entailment_column_is_found_by_its_label(
    tiny_cross_encoders: TinyCrossEncoders, model: str, label: str
) -> None:
    """Both models give entailment 0.7, contradiction 0.2, neutral 0.1 to every pair, their labels in
    different orders and cases: any other column would score 0.2 or 0.1."""
    folder = getattr(tiny_cross_encoders, model)
    verifier = CrossEncoderVerifier(load(folder))
    assert verifier.label == label
    verdict = await verifier.verify(PARAPHRASE, [LEAVE])
    assert verdict.passed, verdict
    assert verdict.score == pytest.approx(0.7, abs=1e-6)
    assert verdict.reasons == (f"{folder.name}: {label} 0.70, at least 0.50",)


async def test_a_doubtful_model_fails_the_sentence_and_says_what_it_reads(
    tiny_cross_encoders: TinyCrossEncoders,
) -> None:
    verdict = await CrossEncoderVerifier(load(tiny_cross_encoders.nli_doubtful)).verify(PARAPHRASE, [LEAVE])
    assert not verdict.passed
    assert verdict.score == pytest.approx(0.2, abs=1e-6)
    assert verdict.reasons == ("tiny-nli-doubtful: entailment 0.20 below 0.50; the model reads contradiction 0.70",)


@pytest.mark.parametrize("model", ["nli_certain", "fact_check_certain"])
@pytest.mark.parametrize(
    ("sentence", "evidence", "detail"),
    [
        ("Primary carers are paid for 18 weeks of parental leave.", LEAVE, "'18 weeks'"),
        ("The Business plan costs $39 per user per month.", PLANS, "'$39'"),
        ("The Platinum plan supports a maximum of 500 users.", PLANS, "'Platinum'"),
        ("Secondary carers are paid for 16 weeks of parental leave.", LEAVE, "'16 weeks'"),
    ],
    ids=["number", "money", "plan-name", "value-of-another-subject"],
)
async def test_an_exact_fact_absent_from_the_evidence_fails_however_sure_the_model(
    tiny_cross_encoders: TinyCrossEncoders, model: str, sentence: str, evidence: str, detail: str
) -> None:
    verifier = CrossEncoderVerifier(load(getattr(tiny_cross_encoders, model)))
    supported = await verifier.verify(PARAPHRASE, [LEAVE])
    assert supported.passed and supported.score >= 0.95, supported
    verdict = await verifier.verify(sentence, [evidence])
    assert not verdict.passed, verdict
    assert verdict.score >= 0.95, "the score is still the model's"
    assert any(detail in reason for reason in verdict.reasons), verdict.reasons
    assert f"{verifier.label} 0.98 (at least 0.50) overruled by the exact checks" in verdict.reasons[-1]


async def test_the_best_cited_passage_counts_and_all_are_scored_in_one_call(
    tiny_cross_encoders: TinyCrossEncoders,
) -> None:
    folder = tiny_cross_encoders.nli
    model = load(folder)
    calls = PredictCalls(model)
    sentence = "Secondary carers receive four weeks."
    cited = [LEAVE, CANTEEN, PLANS]
    verdict = await CrossEncoderVerifier(model).verify(sentence, [LEAVE, "  ", CANTEEN, "", PLANS])
    assert calls.sizes == [3], "one call, blank passages left out"
    entailment = []
    for passage in cited:
        logits = transformers_logits(folder, passage, sentence)
        entailment.append(float(np.exp(logits[1]) / np.exp(logits).sum()))
    assert verdict.score == pytest.approx(max(entailment), abs=1e-4)
    assert len({round(e, 3) for e in entailment}) == 3, "the passages score differently, so the maximum matters"


async def test_the_threshold_decides(tiny_cross_encoders: TinyCrossEncoders) -> None:
    model = load(tiny_cross_encoders.nli_sure)
    strict = await CrossEncoderVerifier(model, threshold=0.75).verify(PARAPHRASE, [LEAVE])
    assert not strict.passed
    assert strict.reasons == ("tiny-nli-sure: entailment 0.70 below 0.75",)
    assert (await CrossEncoderVerifier(model, threshold=0.7).verify(PARAPHRASE, [LEAVE])).passed
    for wrong in (0.0, -0.1, 1.5):
        with pytest.raises(ConfigError, match="threshold"):
            CrossEncoderVerifier(model, threshold=wrong)


async def test_settled_cases_need_no_model_call(tiny_cross_encoders: TinyCrossEncoders) -> None:
    model = load(tiny_cross_encoders.nli_certain)
    calls = PredictCalls(model)
    verifier = CrossEncoderVerifier(model)
    assert (await verifier.verify(" ", [LEAVE])).reasons == ("empty sentence",)
    assert (await verifier.verify(PARAPHRASE, ["", " "])).reasons == ("no evidence cited",)
    quoted = await verifier.verify("Primary carers receive 16 weeks of paid parental leave.", [LEAVE])
    assert (quoted.passed, quoted.score) == (True, 1.0)
    assert calls.sizes == []


def test_a_verifier_needs_an_entailment_label_or_a_single_one(tiny_cross_encoders: TinyCrossEncoders) -> None:
    with pytest.raises(ConfigError, match="LABEL_0, LABEL_1, LABEL_2"):
        CrossEncoderVerifier(load(tiny_cross_encoders.generic_labels))
    fact_check = CrossEncoderVerifier(load(tiny_cross_encoders.fact_check_certain))
    assert (fact_check.name, fact_check.label) == ("cross-encoder:tiny-fact-check", "supported")
    assert CrossEncoderVerifier(load(tiny_cross_encoders.reranker)).label == "support"


# --- loading and failing --------------------------------------------------------------------------


def test_a_missing_model_is_a_config_error_naming_it(tmp_path: Path, tiny_cross_encoders: TinyCrossEncoders) -> None:
    empty = tmp_path / "empty-model"
    empty.mkdir()
    corrupt = tmp_path / "corrupt-model"
    corrupt.mkdir()
    for name in ("config.json", "vocab.txt", "tokenizer_config.json"):
        (corrupt / name).write_bytes((tiny_cross_encoders.reranker / name).read_bytes())
    (corrupt / "model.safetensors").write_text("not weights")
    cases = {
        str(tmp_path / "no-such-model"): "no such folder",
        "./no-such-model": "no such folder",
        "candor-tests/no-such-model": "not in the local Hugging Face cache",
        str(empty): "holds no model",
        str(corrupt): "cannot load",
    }
    for spec, problem in cases.items():
        with pytest.raises(ConfigError) as caught:
            load_cross_encoder(spec)
        assert spec in str(caught.value) and problem in str(caught.value), caught.value
        assert len(str(caught.value)) < 500
    with pytest.raises(ConfigError, match="a folder on disk or a hub name"):
        load_cross_encoder("  ")


def test_allowing_the_hub_says_when_hf_hub_offline_keeps_it_away(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ConfigError, match="HF_HUB_OFFLINE"):
        load_cross_encoder("candor-tests/no-such-model", allow_hub=True)


async def test_a_model_failing_at_run_time_degrades_the_reranker_and_raises_from_the_verifier(
    tiny_cross_encoders: TinyCrossEncoders,
    candor: Candor,
    corpus: KnowledgeBase,
    inner: EvidenceReranker,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The broken model loads, but its embedding table is smaller than its vocabulary. The reranker
    falls back to the inner order (logged); the verifier raises a CandorError (FallbackVerifier's to catch)."""
    broken = load(tiny_cross_encoders.broken)
    query, passages = await shortlist(candor, corpus, PRIMARY_CARER_LEAVE)
    expected = await inner.rerank(query, passages)
    with caplog.at_level("WARNING"):
        ranked = await CrossEncoderReranker(broken, inner).rerank(query, passages)
    assert [r.passage.chunk_id for r in ranked] == [r.passage.chunk_id for r in expected]
    assert any("inner reranker's order is used" in r.getMessage() for r in caplog.records)
    with pytest.raises(CrossEncoderError, match="tiny-broken") as caught:
        await CrossEncoderVerifier(broken).verify(PARAPHRASE, [LEAVE])
    assert isinstance(caught.value, CandorError) and caught.value.__cause__ is not None


# --- concurrency ----------------------------------------------------------------------------------


async def test_concurrent_reranks_answer_correctly_one_model_call_at_a_time(
    candor: Candor, corpus: KnowledgeBase, inner: EvidenceReranker, tiny_cross_encoders: TinyCrossEncoders
) -> None:
    model = load(tiny_cross_encoders.reranker)
    reranker = CrossEncoderReranker(model, inner)
    probes = [await shortlist(candor, corpus, q) for q in (PRIMARY_CARER_LEAVE, BEACON_PRO_INTERVAL, ANNUAL_LEAVE)]
    alone = [await reranker.rerank(query, passages) for query, passages in probes]
    calls = PredictCalls(model, pause=0.05)
    together = await asyncio.gather(*(reranker.rerank(query, passages) for query, passages in probes))
    assert calls.most_at_once == 1 and len(calls.sizes) == 3
    assert len(calls.threads) == 1 and threading.get_ident() not in calls.threads
    for one, other in zip(alone, together, strict=True):
        assert _ids_and_scores(other) == pytest.approx(_ids_and_scores(one), abs=1e-6)


async def test_concurrent_verdicts_answer_correctly_one_model_call_at_a_time(
    tiny_cross_encoders: TinyCrossEncoders,
) -> None:
    model = load(tiny_cross_encoders.nli)
    verifier = CrossEncoderVerifier(model, threshold=0.3)
    cases = [(PARAPHRASE, [LEAVE]), ("The canteen serves lunch at noon.", [CANTEEN, LEAVE]), (PARAPHRASE, [PLANS])]
    alone = [await verifier.verify(sentence, evidence) for sentence, evidence in cases]
    calls = PredictCalls(model, pause=0.05)
    together = await asyncio.gather(*(verifier.verify(sentence, evidence) for sentence, evidence in cases))
    assert calls.most_at_once == 1 and sorted(calls.sizes) == [1, 1, 2]
    for one, other in zip(alone, together, strict=True):
        assert (other.passed, other.reasons) == (one.passed, one.reasons)
        assert other.score == pytest.approx(one.score, abs=1e-6)
    assert len({round(v.score, 3) for v in alone}) == 3, "different answers, so a mix-up would show"


async def test_the_event_loop_runs_while_the_model_does(tiny_cross_encoders: TinyCrossEncoders) -> None:
    model = load(tiny_cross_encoders.nli)
    PredictCalls(model, pause=0.2)
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.01)

    ticker = asyncio.create_task(tick())
    await asyncio.sleep(0)
    before = ticks
    await CrossEncoderVerifier(model).verify(PARAPHRASE, [LEAVE])
    during = ticks - before
    ticker.cancel()
    assert during >= 5, f"the loop ticked {during} times in a 0.2 s model call"


def _facts(sentences: Sequence[ScoredSentence]) -> list[tuple[object, ...]]:
    """What a scored sentence says, its vector as a tuple (arrays do not compare with ==)."""
    return [
        (
            s.passage.chunk_id,
            s.position,
            s.text,
            s.score,
            s.meaning,
            s.terms,
            s.type_match,
            () if s.vector is None else tuple(s.vector.tolist()),
        )
        for s in sentences
    ]


def _ids_and_scores(ranking: Sequence[Ranked]) -> list[float]:
    return [x for r in ranking for x in (float(r.passage.chunk_id), r.score)]
