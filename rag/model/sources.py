"""The plain data of the dashboard's sources, knowledge bases and documents pages.

What an operator sees of the synced sources (`SourceStatus`, with its runs: `SyncRun`), of each
knowledge base (`KnowledgeBaseStatus`: how many documents and chunks, which groups read which share
of it) and of its documents (`DocumentSearch`, `DocumentPage`: a document's chunks as Candor reads
them and the answers that cited it). Operators see everything, restricted text included, as with
`candor report`: these values are for the admin's pages only.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Literal

RunStatus = Literal["running", "succeeded", "failed", "abandoned"]


@dataclass(frozen=True, slots=True)
class SyncRun:
    """One run of a source (table `sync_runs`), finished or still running."""

    id: int
    trigger: str
    """`candor sync` or `dashboard` (Sync now)."""
    owner: str
    """The host and process that ran it."""
    status: RunStatus
    started_at: datetime
    finished_at: datetime | None
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    deleted: int = 0
    skipped: int = 0
    fetched: int = 0
    narrowed: int = 0
    visited: int = 0
    known: int = 0
    """Documents visited so far of those known (listed or led to): the progress of a running run."""
    complete: bool = False
    """Every document of the source was visited (not stopped at its budget)."""
    note: str | None = None
    error: str | None = None
    skipped_items: tuple[tuple[str, str], ...] = ()
    """(document, reason) of the first skipped documents."""

    @property
    def duration(self) -> timedelta | None:
        return None if self.finished_at is None else self.finished_at - self.started_at


@dataclass(frozen=True, slots=True)
class SourceStatus:
    """A source of the sources file (or one synced before and no longer in it), and how it fares."""

    name: str
    kind: str
    knowledge_base: str
    access: str
    """Who may read its documents, in words."""
    configured: bool = True
    """In this server's sources file (Sync now can run it here)."""
    retired: bool = False
    """Synced before and no longer in the sources file: the next `candor sync` removes its documents."""
    problem: str | None = None
    """Why it cannot start now (an unset credential variable), checked when the page is read."""
    last_run: SyncRun | None = None
    last_success_at: datetime | None = None
    next_run_at: datetime | None = None
    documents: int = 0
    """Documents it holds now."""

    @property
    def warnings(self) -> tuple[str, ...]:
        """Why the page marks it: never run, a failed or abandoned last run, skipped documents, a problem."""
        found: list[str] = []
        if self.problem:
            found.append("cannot start")
        if self.retired:
            found.append("no longer in the sources file")
        run = self.last_run
        if run is None:
            found.append("never run")
        elif run.status in ("failed", "abandoned"):
            found.append(f"last run {run.status}")
        elif run.skipped:
            found.append(f"{run.skipped} skipped")
        return tuple(found)


@dataclass(frozen=True, slots=True)
class AccessShare:
    """The documents of a knowledge base that one set of access groups reads (none: everyone)."""

    groups: tuple[str, ...]
    documents: int
    chunks: int


@dataclass(frozen=True, slots=True)
class KnowledgeBaseStatus:
    name: str
    documents: int
    chunks: int
    shares: tuple[AccessShare, ...]
    newest: date | None
    """The newest effective date of its documents."""
    oldest: date | None
    curated: int
    """Curated answers in it that are live (not expired)."""
    sources: tuple[str, ...] = ()
    """The synced sources that fill it."""


@dataclass(frozen=True, slots=True)
class DocumentSummary:
    """One document as the documents page lists it."""

    id: int
    knowledge_base: str
    title: str
    document: str
    """Its path or URL as ingested (the store's `source`)."""
    url: str | None
    effective_date: date | None
    access_groups: tuple[str, ...]
    chunks: int
    stored_at: datetime
    """When its current version was stored."""
    synced_by: str | None = None
    """The synced source that holds it; None: ingested from files (`candor ingest`) or curated."""
    synced_at: datetime | None = None
    """When that source's sync last saw it."""


@dataclass(frozen=True, slots=True)
class DocumentSearch:
    knowledge_base: str
    query: str
    source: str | None
    page: int
    per_page: int
    total: int
    """Documents that match, on every page."""
    documents: tuple[DocumentSummary, ...]


@dataclass(frozen=True, slots=True)
class ChunkText:
    position: int
    heading: str
    text: str


@dataclass(frozen=True, slots=True)
class CitingAnswer:
    trace_id: str
    created_at: datetime
    question: str
    route: str


@dataclass(frozen=True, slots=True)
class DocumentPage:
    document: DocumentSummary
    format: str
    chunks: tuple[ChunkText, ...]
    cited_by: tuple[CitingAnswer, ...]
    """Answers that cited it in the last `cited_days` days, newest first."""
    cited_days: int = 30


@dataclass(frozen=True, slots=True)
class SyncStart:
    """What pressing Sync now did: `started` a run (its id), or not, and why."""

    started: bool
    message: str
    run_id: int | None = None
