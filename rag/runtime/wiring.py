"""Wiring: build the store, embedder and stages from the settings, once per process, and hand them
to a `Candor` (`rag.runtime.candor`: the commands).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager

from rag.backends.embeddings import backend_in_use, build_embedder
from rag.backends.from_settings import build_reranker, build_verifier, build_writer, close_chat_models, judge_model
from rag.backends.llm_judge import LLMFactComparer
from rag.backends.vector_cache import CachedEmbedder
from rag.config import Settings
from rag.errors import TrackingError
from rag.insights.feedback.export import export_key
from rag.model.ports import Embedder, Reranker, Synthesizer, Verifier
from rag.model.types import AccessScope
from rag.pipeline.access import AccessPolicy
from rag.pipeline.answerer import Answerer, TraceRecorder
from rag.pipeline.contradictions import ContradictionDetector, ValueConflicts
from rag.pipeline.critic import EvidenceVerifier
from rag.pipeline.flow import GatedAttempt, PipelineConfig
from rag.pipeline.rerank import EvidenceReranker, SentenceSource
from rag.pipeline.retrieve import HybridRetriever
from rag.pipeline.selection import LLMSelector
from rag.pipeline.synthesis import ExtractiveSynthesizer
from rag.runtime.candor import Candor
from rag.store.evidence import SentenceEvidence, sentence_evidence, term_frequencies
from rag.store.postgres import PostgresStore
from rag.tracking import TraceStore
from rag.tracking.events import EventLedger
from rag.tracking.limits import QuestionLimits
from rag.tracking.metrics import Metrics
from rag.tracking.pseudonyms import keyed, plain

log = logging.getLogger("candor.runtime")


async def prepare_embedder(settings: Settings) -> str:
    """Load the configured embedder once (exporting its ONNX file on first use: `candor prepare`);
    the backend it runs on. No database is opened."""
    embedder = build_embedder(settings)
    try:
        await embedder.embed(["prepare"])
        return backend_in_use(embedder)
    finally:
        await embedder.aclose()


@asynccontextmanager
async def open_candor(settings: Settings, *, check_embedder: bool = True) -> AsyncIterator[Candor]:
    """Open the database (embedded or external) and build the stages; close on exit.

    With `check_embedder=False` a database embedded by another model still opens (for `--reembed`).
    """
    embedder = build_embedder(settings)
    try:
        store = await PostgresStore.open(settings, embedder=embedder.name, dimension=embedder.dimension)
    except BaseException:
        await embedder.aclose()
        raise
    try:
        if check_embedder:
            store.embedder.check(embedder.name, embedder.dimension)
        retriever = HybridRetriever(
            store,
            embedder,
            candidates=settings.candidates,
            fusion=settings.fusion,
            dense_weight=settings.dense_weight,
            rrf_k=settings.rrf_k,
            max_term_frequency=settings.max_term_frequency,
        )
        pseudonym = keyed(await asyncio.to_thread(export_key, settings)) if settings.store_askers == "keyed" else plain
        tracker = TraceStore(
            store.engine,
            settings.home / "spool",
            spool_max_bytes=settings.spool_max_mb * 1024 * 1024,
            pseudonym=pseudonym,
            retry_seconds=settings.db_retry_seconds,
        )
        try:
            replayed = await tracker.replay_spool()
        except TrackingError as exc:
            log.error("spooled traces are still waiting for the database: %s", exc)
            replayed = 0
        if replayed:
            log.warning("wrote %d traces or votes spooled while the database was away", replayed)
        vectors = CachedEmbedder(embedder)
        reranker = build_reranker(settings, EvidenceReranker(sentence_source(store, vectors), vectors))
        answerer = build_answerer(
            settings, store, embedder, retriever, reranker=reranker, vectors=vectors, tracker=tracker
        )
        metrics = Metrics(spool_size=tracker.spool_stats)
        events = EventLedger(
            store.engine,
            lease_seconds=settings.event_lease_seconds,
            pseudonym=pseudonym,
            on_takeover=metrics.taken_over,
            retry_seconds=settings.db_retry_seconds,
        )
        limits = QuestionLimits(
            store.engine, per_user=settings.rate_limit_user, per_conversation=settings.rate_limit_conversation
        )
        yield Candor(settings, store, embedder, retriever, answerer, tracker, reranker, events, limits, metrics)
    finally:
        await close_chat_models()
        await store.close()
        await embedder.aclose()


def build_answerer(
    settings: Settings,
    store: PostgresStore,
    embedder: Embedder,
    retriever: HybridRetriever,
    *,
    reranker: Reranker | None = None,
    synthesizer: Synthesizer | None = None,
    verifier: Verifier | None = None,
    tracker: TraceRecorder | None = None,
    conflicts: ContradictionDetector | None = None,
    vectors: CachedEmbedder | None = None,
) -> Answerer:
    """The offline default stages unless others are given (tests and model-backed setups).

    `vectors` is the sentence-vector cache the offline reranker and critic share."""

    vectors = vectors or CachedEmbedder(embedder)

    async def frequencies(text: str, scope: AccessScope) -> Mapping[str, float]:
        return await term_frequencies(store, text, scope.knowledge_bases)

    config = PipelineConfig.from_settings(settings)
    reranker = reranker or build_reranker(settings, EvidenceReranker(sentence_source(store, vectors), vectors))
    offline = ExtractiveSynthesizer(answer_threshold=settings.answer_threshold, sections=settings.section_extracts)
    built = synthesizer is None
    if synthesizer is None:
        synthesizer = build_writer(
            settings,
            offline,
            selector=lambda model: LLMSelector(
                model, sections=settings.section_extracts, floor=settings.answer_threshold
            ),
        )
    judge = judge_model(settings)
    verifier = verifier or build_verifier(settings, EvidenceVerifier(vectors, min_support=settings.min_support), judge)
    comparer = LLMFactComparer(judge) if judge is not None else None

    def gated(writer: Synthesizer) -> GatedAttempt:
        return GatedAttempt(
            config, embedder, retriever, frequencies, reranker, writer, verifier, fact_comparer=comparer
        )

    # with a model writing, the documents' own sentences first and the model when they do not answer
    first = built and synthesizer is not offline and settings.extractive_first and settings.model_role == "write"
    policy = AccessPolicy.from_file(settings.access_policy) if settings.access_policy else AccessPolicy()
    conflicts = conflicts or ValueConflicts()
    models = {
        "conflicts": conflicts.name,
        "embedder": embedder.name,
        "reranker": reranker.name,
        "synthesizer": synthesizer.name,
        "verifier": verifier.name,
    }
    return Answerer(
        gated(offline) if first else gated(synthesizer),
        policy,
        config,
        tracker=tracker,
        models=models,
        settings=settings.answer_settings(),
        conflicts=conflicts,
        then=gated(synthesizer) if first else None,
    )


def sentence_source(store: PostgresStore, vectors: CachedEmbedder) -> SentenceSource:
    """A shortlist's stored sentences, their vectors remembered so that the critic need not embed them."""

    async def sentences(chunk_ids: Sequence[int]) -> SentenceEvidence:
        evidence = await sentence_evidence(store, chunk_ids)
        vectors.remember((s.text, s.embedding) for s in evidence.sentences if s.embedding is not None)
        return evidence

    return sentences
