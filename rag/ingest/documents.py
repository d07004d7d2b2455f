"""One document into the store, given as bytes or as text: a synced source's page, a curated answer.

The steps every ingest shares are here too (parse, chunk and sentence rows, vectors reused or
embedded), so that a file (rag/ingest/pipeline.py) and a page become the same rows: the same
parsing, dates, trust, chunking, embeddings and single transaction per document.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path
from typing import Literal

import numpy as np

from rag.errors import ConfigError
from rag.ingest.chunking import Chunker
from rag.ingest.document_facts import DocumentFacts, document_facts
from rag.ingest.loaders import load_document
from rag.ingest.pdf import PdfBounds
from rag.model.ports import Embedder
from rag.model.types import clean_text
from rag.store.embedding_inputs import chunk_input, input_hash
from rag.store.postgres import ChunkRow, DocumentRow, KnowledgeBase, PostgresStore, SentenceRow, StoredDocument

_NO_VECTOR = np.zeros(0, dtype=np.float32)

PIPELINE_VERSION = 4
"""Bump when parsing or chunking changes in a way that should re-process unchanged files (2: HTML
through lxml, UTF-8 with stray bytes, CJK chunk sizes, cleaned front matter; 3: a blog's "Posted"
date read as its effective date; 4: a paragraph of "Key: value" lines read as one field per
line; a plain-text file's fixed-width tables, dot-leader definitions and numbered clauses read by
their layout)."""


@dataclass(slots=True)
class IngestReport:
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    pruned: int = 0
    chunks: int = 0
    sentences: int = 0
    embedded: int = 0
    """Texts actually sent to the embedder (chunks and sentences)."""
    reused: int = 0
    """Texts whose stored vector was reused instead."""
    skipped: list[tuple[str, str]] = field(default_factory=list)
    """(path, reason) for every file that could not be ingested."""

    @property
    def ok(self) -> bool:
        return not self.skipped


IngestStatus = Literal["added", "updated", "unchanged"]


@dataclass(frozen=True, slots=True)
class Ingested:
    """What `Ingestor.ingest_bytes` did with one document."""

    status: IngestStatus
    document_id: int | None
    """None only for a document a dry run would add."""
    chunks: int = 0
    embedded: int = 0
    reused: int = 0


@dataclass(slots=True)
class Prepared:
    """A document parsed into its rows, waiting for its vectors and its write."""

    path: Path
    existing_id: int | None
    row: DocumentRow
    chunks: list[ChunkRow]
    pending: dict[str, str]
    """text_hash → embedding input, for texts that still need a vector."""


class DocumentIngestor:
    """Ingest documents given as bytes or text into a knowledge base, one at a time."""

    def __init__(
        self,
        store: PostgresStore,
        embedder: Embedder,
        chunker: Chunker,
        *,
        embed_sentences: bool = True,
        batch_texts: int = 64,
        today: Callable[[], date] = date.today,
        pdf_bounds: PdfBounds | None = None,
    ) -> None:
        """`pdf_bounds`: the most pages and seconds a PDF may take to read (default `PdfBounds()`);
        past them it is skipped."""
        if batch_texts < 1:
            raise ValueError("batch_texts must be at least 1")
        self.store = store
        self.embedder = embedder
        self.chunker = chunker
        self.embed_sentences = embed_sentences
        self.batch_texts = batch_texts
        self.today = today
        self.pdf_bounds = pdf_bounds or PdfBounds()

    async def ingest_text(
        self, source: str, markdown: str, *, kb: KnowledgeBase, access: Sequence[str] = (), kind: str = "md"
    ) -> int:
        """One document given as Markdown text rather than a file (a curated answer is one): the
        same parsing (front matter included), dates, trust, chunking, embeddings and single
        transaction as a file, stored under `source` with format `kind`, replacing what `source`
        held. Returns its document id; an unusable text raises `IngestError`, a failed write `StoreError`."""
        access = [clean_text(group).strip() for group in access]
        if not all(access):
            raise ConfigError("an access group name is blank")
        data = markdown.encode("utf-8")
        name = Path(f"{kind}.md")  # what errors call it; the suffix chooses the Markdown parser
        facts = await asyncio.to_thread(self._parse, name, data, kb, access, self.today())
        facts = replace(facts, format=kind)
        content_hash = hashlib.sha256(data).hexdigest()
        row = document_row(kb, source, facts, content_hash, self._options_hash(kb, access))
        chunk_rows, pending = self._rows(facts)
        await self._embed([Prepared(name, None, row, chunk_rows, pending)], IngestReport())
        return await self.store.write_document(row, chunk_rows)

    async def ingest_bytes(
        self,
        source: str,
        data: bytes,
        suffix: str,
        *,
        kb: KnowledgeBase,
        access: Sequence[str] = (),
        url: str | None = None,
        title: str = "",
        modified: date | None = None,
        previous: StoredDocument | None = None,
        dry_run: bool = False,
    ) -> Ingested:
        """One document given as bytes in the format `suffix` names (`html`, `md`, `txt`, `pdf`): a
        synced source's page, say. The same parsing, dates, trust, chunking, embeddings and single
        transaction as a file, stored under `source` (unique in `kb`) with `url` as its link;
        `previous` is what `source` holds now: unchanged bytes and options are not even parsed.
        `modified` is the date a document without one of its own gets (a file's mtime, for files).
        With `dry_run` nothing is parsed nor written: only whether it would change. An unusable
        document raises `IngestError`, a failed write `StoreError`."""
        access = [clean_text(group).strip() for group in access]
        if not all(access):
            raise ConfigError("an access group name is blank")
        suffix = suffix.lower().lstrip(".")
        content_hash = hashlib.sha256(data).hexdigest()
        options_hash = hashlib.sha256(f"{self._options_hash(kb, access)} {url or ''}".encode()).hexdigest()
        if (
            previous is not None
            and (previous.content_hash, previous.options_hash) == (content_hash, options_hash)
            and (previous.pending_date is None or previous.pending_date > self.today())
        ):
            return Ingested("unchanged", previous.id)
        status: IngestStatus = "added" if previous is None else "updated"
        if dry_run:
            return Ingested(status, None if previous is None else previous.id)
        stem = clean_text(title).replace("/", " ").replace("\\", " ").strip()[:80] or "document"
        name = Path(f"{stem}.{suffix}")  # the suffix chooses the parser; the stem is the last-resort title
        facts = await asyncio.to_thread(self._parse, name, data, kb, access, modified or self.today())
        if url:
            facts = replace(facts, url=url)
        row = document_row(kb, source, facts, content_hash, options_hash)
        chunk_rows, pending = self._rows(facts)
        report = IngestReport()
        await self._embed([Prepared(name, None, row, chunk_rows, pending)], report)
        document_id = await self.store.write_document(row, chunk_rows)
        return Ingested(status, document_id, len(chunk_rows), report.embedded, report.reused)

    def _options_hash(self, kb: KnowledgeBase, access: Sequence[str]) -> str:
        options = {
            "pipeline": PIPELINE_VERSION,
            "embedder": self.embedder.name,
            "chunker": [self.chunker.max_tokens, self.chunker.overlap_sentences],
            "sentences": self.embed_sentences,
            "access": sorted(set(access)),
            "max_authority": kb.max_authority,
        }
        return hashlib.sha256(json.dumps(options, sort_keys=True).encode()).hexdigest()

    def _parse(
        self, path: Path, data: bytes, kb: KnowledgeBase, access: Sequence[str], modified: date
    ) -> DocumentFacts:
        parsed = load_document(path, data, pdf_bounds=self.pdf_bounds)
        return document_facts(
            path,
            parsed,
            self.chunker.chunk(parsed),
            cli_access=access,
            max_authority=kb.max_authority,
            file_date=modified,
            today=self.today(),
        )

    def _hash(self, embedding_input: str) -> str:
        return input_hash(self.embedder.name, embedding_input)

    def _rows(self, facts: DocumentFacts) -> tuple[list[ChunkRow], dict[str, str]]:
        pending: dict[str, str] = {}
        rows: list[ChunkRow] = []
        for draft in facts.chunks:
            embedding_input = chunk_input(facts.title, draft.heading_path, draft.text)
            chunk_hash = self._hash(embedding_input)
            pending[chunk_hash] = embedding_input
            sentence_rows = []
            for position, sentence in enumerate(draft.sentences):
                sentence_hash = self._hash(sentence)
                if self.embed_sentences:
                    pending[sentence_hash] = sentence
                sentence_rows.append(SentenceRow(position, sentence, sentence_hash, None))
            rows.append(
                ChunkRow(draft.position, list(draft.heading_path), draft.text, chunk_hash, _NO_VECTOR, sentence_rows)
            )
        return rows, pending

    async def _embed(self, batch: list[Prepared], report: IngestReport) -> None:
        """Give every chunk (and sentence) of the batch its vector: stored ones reused, the rest embedded."""
        wanted: dict[str, str] = {}
        for prepared in batch:
            wanted.update(prepared.pending)
        vectors = await self.store.known_embeddings(wanted)
        report.reused += len(vectors)
        missing = [h for h in wanted if h not in vectors]
        if missing:
            matrix = await self.embedder.embed([wanted[h] for h in missing])
            vectors.update(zip(missing, matrix, strict=True))
            report.embedded += len(missing)
        for prepared in batch:
            for chunk in prepared.chunks:
                chunk.embedding = vectors[chunk.text_hash]
                for sentence in chunk.sentences:
                    sentence.embedding = vectors.get(sentence.text_hash) if self.embed_sentences else None


def document_row(
    kb: KnowledgeBase, source: str, facts: DocumentFacts, content_hash: str, options_hash: str
) -> DocumentRow:
    return DocumentRow(
        kb_id=kb.id,
        source=source,
        title=facts.title,
        format=facts.format,
        content_hash=content_hash,
        options_hash=options_hash,
        url=facts.url,
        effective_date=facts.effective_date,
        date_source=facts.date_source,
        date_flag=facts.date_flag,
        declared_date=facts.declared_date,
        authority=facts.authority,
        declared_authority=facts.declared_authority,
        access_groups=list(facts.access_groups),
        metadata=facts.metadata,
    )
