"""The `Candor` class: the core's parts for one process, and the commands `bot/` calls on them
(answer, search, ingest, sync, evaluate, report, the audits, retention). How the parts are built
from the settings is `rag.runtime.wiring`.

The commands over the knowledge base and the gate log import their modules on use: a cold
`candor ask` does not pay for every command.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy.exc import SQLAlchemyError

from rag.backends.embeddings import backend_in_use
from rag.config import Settings, secrets_by_name
from rag.errors import CandorError, QuestionError, RateLimited, StoreError, SyncError
from rag.ingest.chunking import Chunker
from rag.ingest.pipeline import Ingestor, IngestReport
from rag.insights.report.build import Window, build_report
from rag.loop import CuratedAnswers, Handoffs, Loop
from rag.model.answers import Answer, Feedback, Question
from rag.model.evidence import Query, Ranked
from rag.model.ports import Embedder, Reranker
from rag.model.types import AccessScope, Passage
from rag.pipeline.answerer import Answerer
from rag.pipeline.retrieve import HybridRetriever
from rag.store.database import fill_pool, ride_through
from rag.store.evidence import term_frequencies
from rag.store.postgres import KnowledgeBase, PostgresStore
from rag.tracking import TraceStore
from rag.tracking.events import EventLedger
from rag.tracking.limits import QuestionLimits
from rag.tracking.metrics import Metrics
from rag.tracking.retention import Purged, forget_trace, purge_before

if TYPE_CHECKING:  # imported on use (see the commands below)
    from rag.ingest.sources.sync import SyncProgress, SyncReport
    from rag.insights.audit.answers import AuditRequest, AuditResult
    from rag.insights.audit.labels import Imported
    from rag.insights.conflicts.findings import ConflictAudit

log = logging.getLogger("candor.runtime")


@dataclass(frozen=True, slots=True)
class EvalRun:
    """A stored `candor eval` run: its id, summary, per-question results and the embedder used."""

    run_id: int
    summary: dict[str, Any]
    questions: list[dict[str, Any]]
    embedder: dict[str, str]


@dataclass(slots=True)
class Candor:
    """The core's parts for one process: what the CLI and the server hold on to."""

    settings: Settings
    store: PostgresStore
    embedder: Embedder
    retriever: HybridRetriever
    answerer: Answerer
    tracker: TraceStore
    reranker: Reranker
    """The answerer's reranker: `rerank` uses it to show what the stage adds over retrieval alone."""
    events: EventLedger
    """Chat platform events claimed for answering, so each is answered once by one replica."""
    limits: QuestionLimits | None = None
    """Questions per minute per asker and conversation, shared by the replicas; None: no limits."""
    metrics: Metrics | None = None
    """What `/metrics` shows; None: nothing is counted."""

    async def answer(self, question: Question) -> Answer:
        """The gated answer to one question, logged (docs/design.md, "The flow"); `RateLimited` when its
        asker or conversation asked too many just now."""
        try:
            if self.limits is not None:
                await self.limits.admit(question)
            answer = await ride_through(
                lambda: self.answerer.answer(question), within=self.settings.db_retry_seconds, what="an answer"
            )
        except QuestionError as exc:
            if self.metrics is not None:
                self.metrics.refused_question(question, "rate_limited" if isinstance(exc, RateLimited) else "invalid")
            raise
        if self.metrics is not None:
            self.metrics.answered(question, answer)
        return answer

    async def rerank(self, text: str, scope: AccessScope, *, k: int | None = None) -> list[Ranked]:
        """The shortlist for `text` as the answer pipeline orders it (retrieval, then the reranker)."""
        k = k or self.settings.shortlist
        vectors = await self.embedder.embed([text])
        passages = await self.retriever.run(text, scope, k=k, vector=vectors[0])
        query = Query(text, vectors[0], await term_frequencies(self.store, text, scope.knowledge_bases))
        return await self.reranker.rerank(query, passages)

    async def knowledge_base_summary(self) -> list[tuple[str, int]]:
        """Each knowledge base with its number of public documents (what a bot's home page may show)."""
        return await self.store.public_summary()

    async def warm_up(self) -> None:
        """Load the models now, so the first question does not pay for it."""
        await self.embedder.embed(["warm-up"])

    async def open_connections(self) -> None:
        """Open the database pools' connections now (a server's start-up), not in its first burst."""
        await fill_pool(self.store.engine, self.settings.db_pool_size)
        await fill_pool(self.store.search_engine, self.settings.search_pool_size)

    async def record_feedback(self, feedback: Feedback) -> None:
        await self.tracker.record_feedback(feedback)

    async def purge(self, before: datetime) -> Purged:
        """Remove question text and asker ids from every record made before `before` (`candor purge`)."""
        return await purge_before(self.tracker.engine, before)

    async def forget(self, trace_id: str) -> bool:
        """Remove one trace's question text and asker id now (the question was deleted where it was
        asked); False when no such trace is stored."""
        return await forget_trace(self.tracker.engine, trace_id)

    async def purge_while_serving(self, every: float = 24 * 3600) -> None:
        """With CANDOR_RETENTION_DAYS set: purge what is older at start-up and every day after, until cancelled."""
        days = self.settings.retention_days
        if days is None:
            return
        while True:
            try:
                purged = await self.purge(datetime.now(UTC) - timedelta(days=days))
                if purged.traces or purged.votes or purged.events:
                    log.warning("retention: purged %s older than %d days", purged, days)
            except StoreError as exc:
                log.warning("retention: the purge will be tried again later: %s", exc)
            await asyncio.sleep(every)

    async def expire_curated_while_serving(self, every: float = 60.0) -> None:
        """Take curated answers whose expiry has come out of the index every `every` seconds, until cancelled."""
        while True:
            try:
                await self.loop.curated.expire_due()
            except CandorError as exc:
                log.warning("curated answers: expiring will be tried again: %s", exc)
            await asyncio.sleep(every)

    async def refresh_metrics_while_serving(self, every: float = 15.0) -> None:
        """The ledger's gauges from Postgres every `every` seconds, until cancelled (a failed read is
        logged and tried again)."""
        if self.metrics is None:
            return
        while True:
            try:
                await self.metrics.refresh_ledger(self.store.engine)
            except (SQLAlchemyError, OSError) as exc:
                log.warning("metrics: could not read the event ledger: %s", exc)
            await asyncio.sleep(every)

    async def replay_spool_while_serving(self) -> None:
        """Write spooled traces and votes every CANDOR_SPOOL_REPLAY_SECONDS, until cancelled."""
        await self.tracker.replay_while_serving(self.settings.spool_replay_seconds)

    async def report(self, window: Window) -> dict[str, Any]:
        """`candor report`'s object for `window` (the dashboard's page); raises `StoreError`."""
        return await build_report(self.tracker.engine, window)

    async def health(self) -> dict[str, object]:
        """Database reachable and which embedder answers; raises `StoreError` when the database does
        not. Cheap (one `SELECT 1`): load balancers ask it every few seconds, and anyone may."""
        await self.store.ping()
        return {"database": "ok", "embedder": self.embedder.name, "embedder_backend": self.embedder_backend}

    def ingestor(self) -> Ingestor:
        return Ingestor(
            self.store,
            self.embedder,
            Chunker(max_tokens=self.settings.chunk_tokens),
            embed_sentences=self.settings.sentence_embeddings,
        )

    @property
    def loop(self) -> Loop:
        """Hand-offs to a person and curated answers (`rag.loop`); made on each use, holding nothing."""

        async def base(name: str) -> KnowledgeBase | None:
            return await self.knowledge_base(name, create=True)

        curated = CuratedAnswers(self.store, self.ingestor, authority=self.settings.curated_authority)
        return Loop(Handoffs(self.store.engine), curated, knowledge_base=base, default_kb=self.settings.default_kb)

    async def trace(self, trace_id: str) -> dict[str, Any] | None:
        """One trace as JSON with what happened after it (its hand-offs and the curated answers kept
        from them), for the dashboard's trace page; None when there is no such trace."""
        found = await self.tracker.trace(trace_id)
        if found is None:
            return None
        loop = self.loop
        found["handoffs"] = [asdict(h) for h in await loop.handoffs.for_traces([str(found["id"])])]
        curated = await loop.curated.find(include_expired=True, for_trace=str(found["id"]))
        found["curated_answers"] = [c.as_json() for c in curated]
        return found

    async def knowledge_base(self, name: str, *, create: bool = False) -> KnowledgeBase | None:
        cap = self.settings.max_authority if create else None
        return await self.store.knowledge_base(name, create_with_max_authority=cap)

    async def reembed(self) -> int:
        """Re-embed every chunk and sentence with the configured embedder."""
        return await self.store.reembed(self.embedder.name, self.embedder.dimension, self.embedder.embed)

    # --- the commands over the knowledge base and the gate log (what bot/ asks of the core) ------
    # Their modules are imported on use: a cold `candor ask` does not pay for every command.

    @property
    def embedder_backend(self) -> str:
        """What computes the vectors (`onnx-int8 (avx2)`, `onnx`, `torch`, `openai`)."""
        return backend_in_use(self.embedder)

    async def search(self, text: str, scope: AccessScope, *, k: int) -> list[Passage]:
        """Hybrid retrieval alone, best first (`candor search`)."""
        return await self.retriever.run(text, scope, k=k)

    async def ingest(
        self,
        paths: Sequence[Path],
        *,
        kb: str | None = None,
        access: Sequence[str] = (),
        prune: bool = False,
        max_authority: int | None = None,
        on_file: Callable[[Path], None] | None = None,
    ) -> IngestReport:
        """Files and folders into the knowledge base `kb` (the default one when None), made if new;
        `max_authority` caps its front-matter authority from now on."""
        knowledge_base = await self.knowledge_base(kb or self.settings.default_kb, create=True)
        assert knowledge_base is not None  # created when missing
        if max_authority is not None and max_authority != knowledge_base.max_authority:
            knowledge_base = await self.store.set_max_authority(knowledge_base, max_authority)
        return await self.ingestor().ingest(paths, kb=knowledge_base, access=access, prune=prune, on_file=on_file)

    async def sync(
        self,
        config: Path | None = None,
        *,
        only: str | None = None,
        dry_run: bool = False,
        on_document: SyncProgress | None = None,
    ) -> list[SyncReport]:
        """`candor sync`: every source of the sources file (`config`, else CANDOR_SOURCES), or the one
        called `only`, into its knowledge base; one report per source. A source that cannot start
        (an unset credential, a bad setting of its kind) or be listed is reported, removes nothing,
        and the others still run."""
        from rag.ingest.sources.config import load_sources
        from rag.ingest.sources.registry import connector_for
        from rag.ingest.sources.sync import Syncer, SyncReport
        from rag.store.sync_state import SyncState

        path = config or self.settings.sources
        if path is None:
            raise SyncError("no sources file: give --config FILE or set CANDOR_SOURCES")
        sources = load_sources(path)
        if only is not None:
            sources = [s for s in sources if s.name == only]
            if not sources:
                raise SyncError(f"{path} has no source called {only!r}")
        syncer = Syncer(self.store, self.ingestor(), SyncState(self.store.engine))
        reports = []
        for source in sources:
            name = source.kb or self.settings.default_kb
            try:
                # credentials are named, not written, in the sources file: their values come from
                # the environment here, at the moment a source is synced, and are never logged
                connector = connector_for(source, secrets_by_name())
            except SyncError as exc:
                log.warning("sync %s: cannot start, nothing removed: %s", source.name, exc)
                reports.append(SyncReport(source.name, source.kind, name, dry_run=dry_run, listing_error=str(exc)))
                continue
            kb = await self.knowledge_base(name, create=not dry_run) or KnowledgeBase(-1, name, 0)
            try:
                reports.append(await syncer.run(source.name, connector, kb, dry_run=dry_run, on_document=on_document))
            finally:
                await connector.aclose()
        return reports

    async def retire_sources(
        self, config: Path | None = None, *, keep: bool = False, dry_run: bool = False
    ) -> list[SyncReport]:
        """`candor sync`, after its sources: the documents of every synced source the sources file no
        longer has (removed, renamed, or moved to another knowledge base) removed, or with `keep` left
        readable by no one; one report each (`SyncReport.retired`)."""
        from rag.ingest.sources.config import load_sources
        from rag.ingest.sources.retired import retire
        from rag.store.sync_state import SyncState

        path = config or self.settings.sources
        if path is None:
            raise SyncError("no sources file: give --config FILE or set CANDOR_SOURCES")
        configured = [(source.name, source.kb or self.settings.default_kb) for source in load_sources(path)]
        return await retire(self.store, SyncState(self.store.engine), configured, keep=keep, dry_run=dry_run)

    async def evaluate(self, golden: Path, *, kb: str | None) -> EvalRun:
        """Every question of a golden file through the pipeline, scored and stored (`candor eval`)."""
        from rag.insights.evaluation.golden import load_golden
        from rag.insights.evaluation.run import run_eval, summarise

        items = load_golden(golden)
        await self.warm_up()

        async def search(text: str, scope: AccessScope) -> list[Passage]:
            return await self.retriever.run(text, scope, k=5)

        async def reranked(text: str, scope: AccessScope) -> list[Passage]:
            return [r.passage for r in await self.rerank(text, scope)]

        results = await run_eval(items, self.answer, search, kb=kb, rerank=reranked)
        summary = summarise(results)
        per_question = [r.as_json() for r in results]
        config = {**self.settings.answer_settings(), **self.answerer.models, "embedder_backend": self.embedder_backend}
        run_id = await self.tracker.record_eval_run(
            golden=str(golden), knowledge_base=kb, config=config, summary=summary, per_question=per_question
        )
        embedder = {"name": self.embedder.name, "backend": self.embedder_backend}
        return EvalRun(run_id, summary, per_question, embedder)

    async def gaps(self, window: Window, *, min_size: int = 2) -> dict[str, Any]:
        """`candor gaps`: the window's unanswered questions, clustered and re-checked."""
        from rag.insights.gaps.find import find_gaps

        await self.warm_up()
        k = 3 * self.settings.shortlist
        return await find_gaps(self.tracker.engine, self.embedder, self, window, min_size=min_size, k=k)

    async def audit_conflicts(self, kb: KnowledgeBase) -> ConflictAudit:
        """`candor audit conflicts`: pairs of documents of `kb` that give different values."""
        from rag.insights.conflicts.audit import audit_conflicts

        return await audit_conflicts(self.store, self.embedder, kb)

    async def audit_answers(self, request: AuditRequest) -> AuditResult:
        """`candor audit answers`: re-verify a sample of delivered sentences with the audit
        verifier (CANDOR_AUDIT_VERIFIER) and re-check a sample of abstentions."""
        from rag.insights.audit.answers import relaxed_rechecker, run_audit
        from rag.insights.audit.verifier import build_audit_verifier

        await self.warm_up()
        verifier = build_audit_verifier(self.settings, self.embedder)
        config = {
            "command": "candor audit answers",
            "audit_verifier": self.settings.audit_verifier,
            "judge": self.settings.judge,
            "min_support": self.settings.min_support,
        }
        rechecker = relaxed_rechecker(self, shortlist=self.settings.shortlist)
        return await run_audit(self.tracker.engine, verifier, request, rechecker=rechecker, config=config)

    async def review_queue(self, request: AuditRequest) -> dict[str, Any]:
        """The dashboard's review queue: the next sampled answers and abstentions to label."""
        from rag.insights.audit.answers import relaxed_rechecker
        from rag.insights.audit.review import review_queue

        await self.warm_up()
        rechecker = relaxed_rechecker(self, shortlist=self.settings.shortlist)
        return await review_queue(self.tracker.engine, request, rechecker)

    async def store_review_label(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """One label from the review queue, checked and stored at once (`AuditError` says what is wrong)."""
        from rag.insights.audit.review import parse_label, store_review_label

        return await store_review_label(self.tracker.engine, parse_label(body))

    async def export_labels(self, request: AuditRequest, path: Path) -> int:
        """A CSV of a sample for people to label; the number of rows written."""
        from rag.insights.audit.answers import relaxed_rechecker
        from rag.insights.audit.labels import export_labels

        await self.warm_up()
        rechecker = relaxed_rechecker(self, shortlist=self.settings.shortlist)
        return await export_labels(self.tracker.engine, request, path, rechecker)

    async def import_labels(self, path: Path, *, skip_invalid: bool = False) -> Imported:
        """Store the labels of a filled-in CSV (`LabelFileError` for invalid rows)."""
        from rag.insights.audit.labels import import_labels

        return await import_labels(self.tracker.engine, path, skip_invalid=skip_invalid)

    async def export_feedback(self, since: datetime, until: datetime) -> tuple[str, int]:
        """Every vote of the window with its answer, as CSV text, and how many there are."""
        from rag.insights.feedback.export import export_csv

        return await export_csv(self.tracker.engine, self.settings, since, until)
