"""What every source (a website, a wiki, a drive) gives the sync: the `Connector` Protocol and its data.

A sync asks the connector for its listing (`listing`): the documents it can name without reading them
(a website's sitemap and start pages). It then fetches each (`fetch`), passing what it remembered of
the item last time (`ItemState`: validators such as an ETag, the links a page held), and gets back
either the content (`Fetched`, bytes in a format the loaders read, plus any documents it led to),
`NotModified` (nothing downloaded), or `Gone` (the source says the item no longer exists). A
document the source lists nowhere in a complete run is a deletion; a listing that fails raises
`SourceError`, and then nothing stored is removed.

Permissions are the source's truth: `SourceDocument.access` holds the access groups that may read
it, `()` for public, and `NO_ONE` when the source's permissions could not be mapped to groups.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol

from rag.model.types import NO_ONE

Format = Literal["html", "md", "txt", "pdf"]

__all__ = ["NO_ONE", "Connector", "Fetched", "Format", "Gone", "ItemState", "NotModified", "Outcome", "SourceDocument"]


@dataclass(frozen=True, slots=True)
class SourceDocument:
    id: str
    """Stable within the source (a page's normalised URL); the document's `source` in the store."""
    url: str
    """Where a reader opens it: citations link here."""
    title: str = ""
    modified: datetime | None = None
    access: tuple[str, ...] = ()
    """Access groups that may read it: `()` public, `(NO_ONE,)` when unmappable."""


@dataclass(frozen=True, slots=True)
class ItemState:
    """What the sync remembers of one item between runs (stored as JSON in `sync_items.state`)."""

    values: Mapping[str, Any] = field(default_factory=dict)
    document_id: int | None = None


@dataclass(frozen=True, slots=True)
class Fetched:
    document: SourceDocument
    data: bytes
    format: Format
    state: Mapping[str, Any]
    """What to remember for the next run (validators, links)."""
    leads_to: Sequence[SourceDocument] = ()
    """Documents this one revealed (a page's same-site links, a folder's files)."""


@dataclass(frozen=True, slots=True)
class NotModified:
    document: SourceDocument
    leads_to: Sequence[SourceDocument] = ()


@dataclass(frozen=True, slots=True)
class Gone:
    """The source says this item no longer exists (a 404 or 410): its document is deleted."""

    document: SourceDocument
    reason: str


Outcome = Fetched | NotModified | Gone


class Connector(Protocol):
    """One configured source. `listing` raises `SourceError`; `fetch` raises `ItemError` for one item."""

    kind: str
    max_documents: int
    """The most documents one sync visits; a run that reaches it deletes only what the source said is gone."""

    @property
    def not_synced(self) -> Mapping[str, int]:
        """What the last listing found and leaves out because Candor does not read it, counted by kind
        ("Google Sheets", ".pptx files"): shown in the sync's summary, so nobody wonders where a file went."""
        ...

    async def listing(self) -> Sequence[SourceDocument]: ...

    async def fetch(self, document: SourceDocument, previous: ItemState | None) -> Outcome: ...

    async def aclose(self) -> None: ...
