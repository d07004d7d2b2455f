"""`Ingestor`: files → parsed blocks → chunks and sentences → vectors → one transaction per document.

Re-ingesting costs almost nothing: a file whose bytes and ingest options are unchanged is not
even parsed, and every text whose vector is already stored (same embedder, same input) reuses
it, so a changed file only embeds the chunks that changed. Embedding runs on the embedder's
worker thread while the previous batch is written, and a failing file is reported and skipped
while the run goes on.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from pathlib import Path
from typing import Literal

import numpy as np

from rag.errors import ConfigError, EmptyFile, IngestError, StoreError, UnreadableFile
from rag.ingest.chunking import Chunker
from rag.ingest.discovery import absolute, discover
from rag.ingest.document_facts import DocumentFacts, document_facts
from rag.ingest.loaders import load_document
from rag.ingest.pdf import PdfBounds
from rag.model.ports import Embedder
from rag.model.types import clean_text
from rag.store.embedding_inputs import chunk_input, input_hash
from rag.store.postgres import ChunkRow, DocumentRow, KnowledgeBase, PostgresStore, SentenceRow, StoredDocument

log = logging.getLogger(__name__)

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
class _Prepared:
    path: Path
    existing_id: int | None
    row: DocumentRow
    chunks: list[ChunkRow]
    pending: dict[str, str]
    """text_hash → embedding input, for texts that still need a vector."""


class Ingestor:
    """Ingest files into one knowledge base."""

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

    async def ingest(
        self,
        paths: Sequence[Path],
        *,
        kb: KnowledgeBase,
        access: Sequence[str] = (),
        prune: bool = False,
        on_file: Callable[[Path], None] | None = None,
    ) -> IngestReport:
        access = [clean_text(group).strip() for group in access]
        if not all(access):  # a blank group (an unset shell variable) would make the files public
            raise ConfigError("an access group name is blank: give each --access a name")
        report = IngestReport()
        stored = await self.store.documents(kb)
        options_hash = self._options_hash(kb, access)
        found = list(discover(list(paths)))
        batch: list[_Prepared] = []
        emptied: list[int] = []
        """Stored documents whose file now holds nothing to index: their old chunks would answer on."""
        pending_texts = 0
        writer: asyncio.Task[None] | None = None

        for item in found:
            try:
                if item.error is not None:
                    raise item.error
                prepared = await self._prepare(item.path, kb, access, options_hash, stored, report)
            except IngestError as exc:
                report.skipped.append((str(exc.path), _reason(exc)))
                log.warning("skipped %s", exc)
                prepared = None
                # the file now holds nothing to index: its stored document goes too. Not for a link
                # out (it leads out only from this folder) nor a corrupt, binary (maybe half-written)
                # or unreadable file: those may come back as they were
                if isinstance(exc, EmptyFile) and str(exc.path) in stored:
                    emptied.append(stored[str(exc.path)].id)
            if on_file is not None:
                on_file(item.path)
            if prepared is None:
                continue
            batch.append(prepared)
            pending_texts += len(prepared.pending)
            if pending_texts >= self.batch_texts:
                writer = await self._flush(batch, writer, report)
                batch, pending_texts = [], 0
        writer = await self._flush(batch, writer, report)
        if writer is not None:
            await writer
        report.pruned = await self.store.delete_documents(emptied) if emptied else 0
        if prune:
            report.pruned += await self._prune(paths, stored)
        if report.added or report.updated or report.pruned:
            await self.store.analyze()
        return report

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

    async def _prepare(
        self,
        path: Path,
        kb: KnowledgeBase,
        access: Sequence[str],
        options_hash: str,
        stored: dict[str, StoredDocument],
        report: IngestReport,
    ) -> _Prepared | None:
        data, modified = await asyncio.to_thread(_read, path)
        content_hash = hashlib.sha256(data).hexdigest()
        source = str(path)
        previous = stored.get(source)
        if (
            previous is not None
            and (previous.content_hash, previous.options_hash) == (content_hash, options_hash)
            and (previous.pending_date is None or previous.pending_date > self.today())
        ):
            report.unchanged += 1
            return None
        facts = await asyncio.to_thread(self._parse, path, data, kb, access, modified)
        row = _document_row(kb, source, facts, content_hash, options_hash)
        chunk_rows, pending = self._rows(facts)
        return _Prepared(path, previous.id if previous else None, row, chunk_rows, pending)

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
        row = _document_row(kb, source, facts, content_hash, self._options_hash(kb, access))
        chunk_rows, pending = self._rows(facts)
        await self._embed([_Prepared(name, None, row, chunk_rows, pending)], IngestReport())
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
        row = _document_row(kb, source, facts, content_hash, options_hash)
        chunk_rows, pending = self._rows(facts)
        report = IngestReport()
        await self._embed([_Prepared(name, None, row, chunk_rows, pending)], report)
        document_id = await self.store.write_document(row, chunk_rows)
        return Ingested(status, document_id, len(chunk_rows), report.embedded, report.reused)

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

    async def _flush(
        self, batch: list[_Prepared], writer: asyncio.Task[None] | None, report: IngestReport
    ) -> asyncio.Task[None] | None:
        """Embed this batch (while the previous one is still being written), then start writing it."""
        if not batch:
            return writer
        try:
            await self._embed(batch, report)
        except BaseException:
            if writer is not None:  # the previous batch was embedded: let it land before failing
                await asyncio.gather(writer, return_exceptions=True)
            raise
        if writer is not None:
            await writer
        return asyncio.create_task(self._write(batch, report))

    async def _embed(self, batch: list[_Prepared], report: IngestReport) -> None:
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

    async def _write(self, batch: list[_Prepared], report: IngestReport) -> None:
        """Write the batch in one transaction; if that fails, document by document, so one bad
        document is reported and the others still land."""
        try:
            await self.store.write_documents([(p.row, p.chunks) for p in batch])
            written = batch
        except StoreError as exc:
            log.warning("batch write failed, writing documents one by one: %s", exc)
            written = []
            for prepared in batch:
                try:
                    await self.store.write_document(prepared.row, prepared.chunks)
                    written.append(prepared)
                except StoreError as single:
                    report.skipped.append((str(prepared.path), f"could not be stored ({single})"))
        for prepared in written:
            if prepared.existing_id is None:
                report.added += 1
            else:
                report.updated += 1
            report.chunks += len(prepared.chunks)
            report.sentences += sum(len(c.sentences) for c in prepared.chunks)

    async def _prune(self, paths: Sequence[Path], stored: dict[str, StoredDocument]) -> int:
        def gone() -> list[int]:
            roots = [absolute(p) for p in paths]
            return [
                doc.id
                for source, doc in stored.items()
                if any(Path(source).is_relative_to(root) for root in roots) and _missing(Path(source))
            ]

        return await self.store.delete_documents(await asyncio.to_thread(gone))


def _document_row(
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


def _missing(path: Path) -> bool:
    """Known to be gone; a file in a folder that cannot be read is not known to be gone, and stays."""
    try:
        path.stat()
    except (FileNotFoundError, NotADirectoryError):
        return True
    except OSError:
        return False
    return False


def _read(path: Path) -> tuple[bytes, date]:
    try:
        return path.read_bytes(), datetime.fromtimestamp(path.stat().st_mtime).date()
    except OSError as exc:
        raise UnreadableFile(path, exc.strerror or str(exc)) from exc


def _reason(exc: IngestError) -> str:
    return exc.reason + (f" ({exc.detail})" if exc.detail else "")
