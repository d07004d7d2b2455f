"""What one sync of a source did (`SyncReport`), and what a caller hears while it runs (`SyncProgress`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from rag.ingest.sources.base import SourceDocument


@dataclass(slots=True)
class SyncReport:
    source: str
    kind: str
    knowledge_base: str
    dry_run: bool = False
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    deleted: int = 0
    fetched: int = 0
    """Documents downloaded in full (a 304 is not one)."""
    skipped: list[tuple[str, str]] = field(default_factory=list)
    """(document, reason) for each that could not be fetched or read; its stored version stays."""
    changes: list[tuple[str, str]] = field(default_factory=list)
    """(added | updated | deleted, document) for each change, in order (what a dry run would do)."""
    listing_error: str | None = None
    """Why the source could not be listed (then nothing was fetched nor removed)."""
    complete: bool = False
    """The whole source was visited: deletions of unseen documents were applied."""
    note: str | None = None
    """Why the run stopped before the end (its budget)."""
    not_synced: Mapping[str, int] = field(default_factory=dict)
    """Files the source holds that Candor does not read, counted by kind (see `Connector.not_synced`)."""
    narrowed: int = 0
    """Documents this run did not fetch (one that failed, or past the budget) whose stored copy was
    restricted in place to what the source's listing now allows (see `narrowed_access`)."""
    retired: bool = False
    """Not a configured source's run: a source no longer in the sources file (removed, renamed, or
    moved to another knowledge base), whose documents were `deleted` (or, kept, `narrowed` to no one)."""

    busy: str | None = None
    """Not run: another run of this source holds its claim now (who, since when); nothing was
    fetched nor removed, and that run does the work (`rag.store.sync_runs`)."""

    @property
    def ok(self) -> bool:
        return self.listing_error is None and not self.skipped

    def counts(self) -> dict[str, int]:
        """The run's counters as `sync_runs` keeps them."""
        return {
            "added": self.added,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "deleted": self.deleted,
            "skipped": len(self.skipped),
            "fetched": self.fetched,
            "narrowed": self.narrowed,
        }


SyncProgress = Callable[[SyncReport, SourceDocument, int, int], None]
"""Called before each document is fetched: the run's report so far, the document, how many were
visited (this one included) and how many are known (listed or led to, within the budget)."""
