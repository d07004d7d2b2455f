"""Sync now: one run of one configured source, started from the dashboard in the serving process.

`SyncNow.start` claims the run in Postgres before anything else (`rag.store.sync_runs`: one
running run per source and knowledge base across every replica, the claim `candor sync` takes too),
then runs it as a task of this process and returns at once; the run writes its progress and
outcome to `sync_runs`, where any replica's page reads them. A source that is running anywhere is
not started again: `SyncStart.started` is False and says who runs it. A source that cannot start
(an unset credential, a bad setting of its kind) is recorded as a failed run with the reason, so
the page shows it as it shows any failure.

`aclose` (the server stopping) cancels the runs this process started; each is recorded as failed,
saying it was stopped, and the next run resumes from what landed (`rag.ingest.sources.sync`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING

from rag.config import secrets_by_name
from rag.errors import CandorError, NotFound, SyncError
from rag.ingest.sources.base import Connector
from rag.ingest.sources.config import SourceConfig, load_sources
from rag.ingest.sources.registry import connector_for
from rag.ingest.sources.sync import Syncer
from rag.model.sources import SyncStart
from rag.store.postgres import KnowledgeBase
from rag.store.sync_runs import RunClaim, SyncRuns
from rag.store.sync_state import SyncState

if TYPE_CHECKING:
    from rag.runtime import Candor

log = logging.getLogger("candor.sync")

TRIGGER = "dashboard"
NO_SOURCES_FILE = "No sources file: set CANDOR_SOURCES to the YAML file of sources (docs/sources.md)."


class SyncNow:
    def __init__(self, core: Candor) -> None:
        self.core = core
        self.runs = SyncRuns(core.store.engine)
        self._tasks: dict[int, asyncio.Task[None]] = {}

    async def configured(self) -> list[SourceConfig]:
        """The sources file's sources, read now (an edit needs no restart); none without a file."""
        path = self.core.settings.sources
        if path is None:
            return []
        return await asyncio.to_thread(load_sources, path)

    def knowledge_base_of(self, source: SourceConfig) -> str:
        return source.kb or self.core.settings.default_kb

    async def start(self, name: str) -> SyncStart:
        """Claim and start one run of source `name`; `NotFound` when the sources file has no such
        source, `SyncError` when there is no sources file or it cannot be read."""
        if self.core.settings.sources is None:
            raise SyncError(NO_SOURCES_FILE)
        source = next((s for s in await self.configured() if s.name == name), None)
        if source is None:
            raise NotFound(f"the sources file has no source called {name!r}")
        kb = await self.core.knowledge_base(self.knowledge_base_of(source), create=True)
        assert kb is not None  # created when missing
        claim = await self.runs.claim(source.name, source.kind, kb.id, trigger=TRIGGER)
        if claim is None:
            holder = await self.runs.holder(source.name, kb.id)
            who = f" ({holder.trigger}, {holder.owner})" if holder else ""
            return SyncStart(False, f"Not started: {source.name} is being synced now{who}; its progress is below.")
        try:
            connector = connector_for(source, secrets_by_name())
        except SyncError as exc:
            await self.runs.finish(claim, "failed", {}, error=f"cannot start: {exc}")
            log.warning("sync %s: cannot start, nothing removed: %s", source.name, exc)
            return SyncStart(False, f"Not started: {exc}", claim.id)
        task = asyncio.create_task(self._run(source, connector, kb, claim), name=f"sync now {source.name}")
        self._tasks[claim.id] = task
        task.add_done_callback(lambda _: self._tasks.pop(claim.id, None))
        log.info("sync %s: started from the dashboard (run %d)", source.name, claim.id)
        return SyncStart(True, f"Started: {source.name} is being synced; its progress is below.", claim.id)

    async def _run(self, source: SourceConfig, connector: Connector, kb: KnowledgeBase, claim: RunClaim) -> None:
        syncer = Syncer(self.core.store, self.core.ingestor(), SyncState(self.core.store.engine), self.runs)
        try:
            report = await syncer.run(source.name, connector, kb, claim=claim, trigger=TRIGGER)
            log.info(
                "sync %s: %d added, %d updated, %d unchanged, %d deleted, %d skipped%s",
                source.name,
                report.added,
                report.updated,
                report.unchanged,
                report.deleted,
                len(report.skipped),
                f"; {report.listing_error}" if report.listing_error else "",
            )
        except CandorError as exc:  # recorded as the run's error already (rag.ingest.sources.runs)
            log.error("sync %s: the run from the dashboard failed: %s", source.name, exc)
        except Exception:  # recorded too; a task's exception must not go unheard
            log.exception("sync %s: the run from the dashboard raised an unexpected error", source.name)
        finally:
            await connector.aclose()

    async def wait(self) -> None:
        """Until every run this process started has ended (tests, a graceful stop)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks.values()), return_exceptions=True)

    async def aclose(self) -> None:
        """Stop the runs this process started (each recorded as stopped)."""
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
