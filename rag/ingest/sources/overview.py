"""What the dashboard shows of the synced sources, the knowledge bases and their documents, and its
Sync now (`rag.ingest.sources.sync_now`): `SourceOverview`, one per serving process.

Sources are the sources file's (CANDOR_SOURCES, read on each page: an edit needs no restart), each
with its latest run, its documents and, checked as the page is read, whether it can start (its
credential variables set); then any source a sync ran before that the file no longer has. A server
without a sources file shows every source a sync ran, from the database, and cannot Sync now. The
reads are in `rag.store.sources_view`. Operators see everything, restricted text included, as with
`candor report`: every value here is for the admin's pages.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from rag.config import secrets_by_name
from rag.errors import NotFound, SyncError
from rag.ingest.sources.config import SourceConfig, resolve_credentials
from rag.ingest.sources.report import SyncReport
from rag.ingest.sources.sync_now import SyncNow
from rag.model.sources import (
    DocumentPage,
    DocumentSearch,
    KnowledgeBaseStatus,
    SourceStatus,
    SyncRun,
    SyncStart,
)
from rag.store import sources_view

if TYPE_CHECKING:
    from rag.runtime import Candor

PER_PAGE = 50
NO_FILE_HERE = "CANDOR_SOURCES is not set on this server: Sync now and the source's settings are not available here"
_PER_DOCUMENT = {"confluence": "Confluence", "sharepoint": "SharePoint", "gdrive": "Google Drive"}


class SourceOverview:
    def __init__(self, core: Candor) -> None:
        self.core = core
        self.sync_now = SyncNow(core)

    async def sources(self) -> list[SourceStatus]:
        """The configured sources in the file's order, then those synced before and no longer in it.
        `SyncError` when the sources file cannot be read (the page says why)."""
        configured = await self.sync_now.configured()
        wanted = [(s.name, self.sync_now.knowledge_base_of(s)) for s in configured]
        listed = set(wanted)
        retired = [row for row in await sources_view.synced_sources(self.core.store) if (row[0], row[2]) not in listed]
        rows = await sources_view.source_rows(self.core.store, wanted + [(name, kb) for name, _, kb in retired])
        found: list[SourceStatus] = []
        for source, (success, next_run, documents, run) in zip(configured, rows, strict=False):
            found.append(
                SourceStatus(
                    name=source.name,
                    kind=source.kind,
                    knowledge_base=self.sync_now.knowledge_base_of(source),
                    access=access_in_words(source),
                    problem=_problem(source),
                    last_run=run,
                    last_success_at=success,
                    next_run_at=next_run,
                    documents=documents,
                )
            )
        has_file = self.core.settings.sources is not None
        for (name, kind, kb), (success, next_run, documents, run) in zip(retired, rows[len(configured) :], strict=True):
            found.append(
                SourceStatus(
                    name=name,
                    kind=kind,
                    knowledge_base=kb,
                    access="as last synced" + ("" if has_file else " (this server has no sources file)"),
                    configured=False,
                    retired=has_file,
                    problem=None if has_file else NO_FILE_HERE,
                    last_run=run,
                    last_success_at=success,
                    next_run_at=next_run,
                    documents=documents,
                )
            )
        return found

    async def source(self, name: str, kb: str | None = None) -> tuple[SourceStatus, list[SyncRun]]:
        """One source (in `kb` when several share the name) and its latest runs; `NotFound` if unknown."""
        for status in await self.sources():
            if status.name == name and kb in (None, status.knowledge_base):
                return status, await sources_view.runs_of(self.core.store, name, status.knowledge_base)
        raise NotFound(f"no source called {name!r}")

    async def knowledge_bases(self) -> list[KnowledgeBaseStatus]:
        return await sources_view.knowledge_bases(self.core.store)

    async def documents(
        self, kb: str, query: str = "", *, source: str | None = None, page: int = 1, per_page: int = PER_PAGE
    ) -> DocumentSearch:
        """The documents of `kb` whose title, path or URL holds `query`; `NotFound` for an unknown base."""
        base = await self.core.store.knowledge_base(kb)
        if base is None:
            raise NotFound(f"no knowledge base called {kb!r}")
        return await sources_view.search_documents(
            self.core.store, base.id, kb, query.strip(), source=source or None, page=max(1, page), per_page=per_page
        )

    async def document(self, document_id: int) -> DocumentPage:
        found = await sources_view.document_page(self.core.store, document_id)
        if found is None:
            raise NotFound(f"no document {document_id}")
        return found

    async def start_sync(self, name: str) -> SyncStart:
        """Sync now: one run of source `name` in this process, claimed in Postgres first."""
        return await self.sync_now.start(name)

    async def note_next_runs(self, reports: Sequence[SyncReport], at: datetime | None) -> None:
        """When the next scheduled sync of each source of `reports` is due (`candor sync --every`)."""
        for report in reports:
            if report.retired or report.dry_run:
                continue
            kb = await self.core.store.knowledge_base(report.knowledge_base)
            if kb is not None:
                await self.sync_now.runs.schedule(report.source, kb.id, at)

    async def aclose(self) -> None:
        await self.sync_now.aclose()


def access_in_words(source: SourceConfig) -> str:
    """Who may read a source's documents, as its sources-file entry says it."""
    groups = f"the groups {', '.join(source.access)}" if source.access else "everyone who may ask (public)"
    if source.kind in _PER_DOCUMENT:
        words = f"as each document's own permissions in {_PER_DOCUMENT[source.kind]} allow, mapped to access groups"
        if source.options.get("permissions"):
            words += " by its `permissions`"
        spaces = source.options.get("space_access")
        if isinstance(spaces, dict) and spaces:
            words += f"; unrestricted pages of {', '.join(sorted(map(str, spaces)))}: as `space_access` says"
        return words + (f"; `access`: {', '.join(source.access)}" if source.access else "")
    words = f"every document: {groups}"
    subtrees = source.options.get("page_access")
    if isinstance(subtrees, dict) and subtrees:
        words += f"; {len(subtrees)} subtrees with groups of their own (`page_access`)"
    return words


def _problem(source: SourceConfig) -> str | None:
    """Why the source cannot start now (a credential variable unset), None when it can."""
    try:
        resolve_credentials(source, secrets_by_name())
    except SyncError as exc:
        return str(exc)
    return None
