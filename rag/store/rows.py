"""The rows the store reads and writes: plain data, no database access."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from typing import Any

from rag.model.types import Vector as Vector


@dataclass(frozen=True, slots=True)
class KnowledgeBase:
    id: int
    name: str
    max_authority: int


CHANGED_IN_PLACE = "changed in place"
"""The options hash of a document whose readers were changed in place (`PostgresStore.set_access`):
it matches no ingest's options, so the next ingest of the same bytes processes it again (and gives it
the groups it is ingested with), and a sync downloads it again rather than trust a "not modified"."""


@dataclass(frozen=True, slots=True)
class StoredDocument:
    id: int
    source: str
    content_hash: str
    options_hash: str
    pending_date: date | None = None
    """A declared future effective date, not yet trusted: re-process once it has passed."""
    access_groups: tuple[str, ...] = ()


@dataclass(slots=True)
class DocumentRow:
    """Everything stored about a document except its chunks."""

    kb_id: int
    source: str
    title: str
    format: str
    content_hash: str
    options_hash: str
    url: str | None = None
    effective_date: date | None = None
    date_source: str | None = None
    date_flag: str | None = None
    declared_date: date | None = None
    authority: int = 0
    declared_authority: int | None = None
    access_groups: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class SentenceRow:
    position: int
    text: str
    text_hash: str
    embedding: Vector | None


@dataclass(slots=True)
class ChunkRow:
    position: int
    heading_path: list[str]
    text: str
    text_hash: str
    embedding: Vector
    sentences: list[SentenceRow] = field(default_factory=list)

    @property
    def heading(self) -> str:
        return " > ".join(self.heading_path)


@dataclass(frozen=True, slots=True)
class Candidate:
    """A chunk found by the dense or the full-text side, with both scores."""

    chunk_id: int
    document_id: int
    source: str
    title: str
    url: str | None
    heading: str
    text: str
    effective_date: date | None
    authority: int
    access_groups: tuple[str, ...]
    knowledge_base: str
    cosine: float
    lexical: float
    dense_rank: int | None
    lexical_rank: int | None
    answered_by: str | None = None
    """A curated answer's author (documents of format `curated` only)."""
    date_source: str | None = None
    """Where `effective_date` came from: front_matter, text or file_time."""
