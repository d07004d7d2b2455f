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
import logging
from collections.abc import Callable, Sequence
from datetime import date, datetime
from pathlib import Path

from rag.errors import ConfigError, EmptyFile, IngestError, StoreError, UnreadableFile
from rag.ingest.discovery import absolute, discover
from rag.ingest.documents import (
    PIPELINE_VERSION,
    DocumentIngestor,
    Ingested,
    IngestReport,
    IngestStatus,
    Prepared,
    document_row,
)
from rag.model.types import clean_text
from rag.store.postgres import KnowledgeBase, StoredDocument

__all__ = ["PIPELINE_VERSION", "IngestReport", "IngestStatus", "Ingested", "Ingestor"]

log = logging.getLogger(__name__)


class Ingestor(DocumentIngestor):
    """Ingest files into one knowledge base (and, through `DocumentIngestor`, documents given as
    bytes or text)."""

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
        batch: list[Prepared] = []
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

    async def _prepare(
        self,
        path: Path,
        kb: KnowledgeBase,
        access: Sequence[str],
        options_hash: str,
        stored: dict[str, StoredDocument],
        report: IngestReport,
    ) -> Prepared | None:
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
        row = document_row(kb, source, facts, content_hash, options_hash)
        chunk_rows, pending = self._rows(facts)
        return Prepared(path, previous.id if previous else None, row, chunk_rows, pending)

    async def _flush(
        self, batch: list[Prepared], writer: asyncio.Task[None] | None, report: IngestReport
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

    async def _write(self, batch: list[Prepared], report: IngestReport) -> None:
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
