"""The Postgres store: knowledge bases, documents, chunks, sentences and hybrid candidates.

SQLAlchemy Core for the ordinary statements; the driver connection (psycopg 3) for COPY and the
hybrid query (rag/store/hybrid.py), which are the hot paths. `PostgresStore` is one object built in
layers: its connections (rag/store/connections.py), its knowledge bases and their indexes
(rag/store/knowledge_bases.py), and here the documents with their chunks and sentences, and the
search.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Iterable, Sequence
from typing import Any

import numpy as np
from sqlalchemy import delete, select, update

from rag.store.hybrid import hybrid_candidates
from rag.store.knowledge_bases import KnowledgeBases
from rag.store.queries import DOCUMENT_COLUMNS
from rag.store.rows import (
    CHANGED_IN_PLACE,
    Candidate,
    ChunkRow,
    DocumentRow,
    KnowledgeBase,
    SentenceRow,
    StoredDocument,
    Vector,
)
from rag.store.schema import chunks, documents

__all__ = [
    "Candidate",
    "ChunkRow",
    "DocumentRow",
    "KnowledgeBase",
    "PostgresStore",
    "SentenceRow",
    "StoredDocument",
    "Vector",
]


class PostgresStore(KnowledgeBases):
    """Candor's one database. Open with `await PostgresStore.open(settings, ...)`."""

    lexical_budget = 500
    """Rows the full-text side may rank: past it (the two rarest words together), a candidate must
    hold both."""

    # --- documents -----------------------------------------------------------------------

    async def documents(self, kb: KnowledgeBase) -> dict[str, StoredDocument]:
        query = select(
            documents.c.id,
            documents.c.source,
            documents.c.content_hash,
            documents.c.options_hash,
            documents.c.declared_date,
            documents.c.date_flag,
            documents.c.access_groups,
        )
        async with self._transaction() as conn:
            rows = (await conn.execute(query.where(documents.c.kb_id == kb.id))).all()
        return {
            row.source: StoredDocument(
                row.id,
                row.source,
                row.content_hash,
                row.options_hash,
                row.declared_date if row.date_flag == "future" else None,
                tuple(row.access_groups),
            )
            for row in rows
        }

    async def known_embeddings(self, hashes: Iterable[str]) -> dict[str, Vector]:
        """Vectors already stored for these embedding inputs (so no text is embedded twice)."""
        wanted = list(set(hashes))
        if not wanted:
            return {}
        async with self._transaction() as conn:
            driver = await self._driver(conn)
            cursor = await driver.execute(
                "SELECT DISTINCT ON (text_hash) text_hash, embedding FROM chunks WHERE text_hash = ANY(%s) "
                "UNION ALL "
                "SELECT DISTINCT ON (text_hash) text_hash, embedding FROM sentences "
                "WHERE text_hash = ANY(%s) AND embedding IS NOT NULL",
                (wanted, wanted),
            )
            rows = await cursor.fetchall()
        return {row[0]: as_vector(row[1]) for row in rows}

    async def write_document(self, doc: DocumentRow, chunk_rows: Sequence[ChunkRow]) -> int:
        """Insert or replace one document and all its chunks, in one transaction."""
        return (await self.write_documents([(doc, chunk_rows)]))[0]

    async def write_documents(self, batch: Sequence[tuple[DocumentRow, Sequence[ChunkRow]]]) -> list[int]:
        """Insert or replace whole documents with their chunks and sentences, in one transaction.

        A crash leaves each document either as it was or fully replaced, never half-written; a
        handful of statements per batch instead of per document is what makes ingest cheap. The
        commit does not wait for the WAL flush (`synchronous_commit = off`): a crash can lose the
        last batch written, and the next ingest writes it again since its hashes never landed.
        Returns the document ids, in order.
        """
        if not batch:
            return []
        upsert = (
            f"INSERT INTO documents ({DOCUMENT_COLUMNS}, chunk_count) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
            "ON CONFLICT (kb_id, source) DO UPDATE SET "
            + ", ".join(f"{col} = EXCLUDED.{col}" for col in DOCUMENT_COLUMNS.split(", ")[1:])
            + ", chunk_count = EXCLUDED.chunk_count, updated_at = now() RETURNING id"
        )
        async with self._transaction() as conn:
            driver = await self._driver(conn)
            await driver.execute("SET LOCAL synchronous_commit = off")
            document_ids: list[int] = []
            async with driver.cursor() as cur:
                await cur.executemany(
                    upsert, [(*_document_values(doc), len(rows)) for doc, rows in batch], returning=True
                )
                while True:
                    row = await cur.fetchone()
                    document_ids.append(int(row[0]))
                    if not cur.nextset():
                        break
            await driver.execute("DELETE FROM chunks WHERE document_id = ANY(%s)", (document_ids,))
            total = sum(len(rows) for _, rows in batch)
            if total:
                cursor = await driver.execute("SELECT nextval('chunks_id_seq') FROM generate_series(1, %s)", (total,))
                ids = iter([int(r[0]) for r in await cursor.fetchall()])
                placed = [
                    (next(ids), document_id, doc, chunk)
                    for document_id, (doc, rows) in zip(document_ids, batch, strict=True)
                    for chunk in rows
                ]
                await self._copy_chunks(driver, placed)
        return document_ids

    async def _copy_chunks(self, driver: Any, placed: list[tuple[int, int, DocumentRow, ChunkRow]]) -> None:
        async with driver.cursor() as cur:
            async with cur.copy(
                "COPY chunks (id, document_id, kb_id, position, heading_path, heading, text, text_hash, "
                "access_groups, embedding) FROM STDIN WITH (FORMAT BINARY)"
            ) as copy:
                copy.set_types(["int8", "int8", "int4", "int4", "text[]", "text", "text", "text", "text[]", "vector"])
                for chunk_id, document_id, doc, chunk in placed:
                    await copy.write_row(
                        (
                            chunk_id,
                            document_id,
                            doc.kb_id,
                            chunk.position,
                            chunk.heading_path,
                            chunk.heading,
                            chunk.text,
                            chunk.text_hash,
                            doc.access_groups,
                            chunk.embedding,
                        )
                    )
            async with cur.copy(
                "COPY sentences (chunk_id, position, text, text_hash, embedding) FROM STDIN WITH (FORMAT BINARY)"
            ) as copy:
                copy.set_types(["int8", "int4", "text", "text", "vector"])
                for chunk_id, _, _, chunk in placed:
                    for sentence in chunk.sentences:
                        await copy.write_row(
                            (chunk_id, sentence.position, sentence.text, sentence.text_hash, sentence.embedding)
                        )

    async def set_access(self, document_id: int, groups: Sequence[str]) -> None:
        """Who may read a stored document, its chunks with it, in one transaction (a synced document
        whose source narrowed its readers while its content could not be fetched); its options hash
        becomes `CHANGED_IN_PLACE`, so its next ingest writes it whole again."""
        values = sorted(set(groups))
        async with self._transaction() as conn:
            changed = {"access_groups": values, "options_hash": CHANGED_IN_PLACE}
            await conn.execute(update(documents).where(documents.c.id == document_id).values(**changed))
            await conn.execute(update(chunks).where(chunks.c.document_id == document_id).values(access_groups=values))

    async def delete_documents(self, document_ids: Sequence[int]) -> int:
        if not document_ids:
            return 0
        async with self._transaction() as conn:
            result = await conn.execute(delete(documents).where(documents.c.id.in_(list(document_ids))))
        return int(result.rowcount or 0)

    # --- retrieval -----------------------------------------------------------------------

    async def hybrid_candidates(
        self,
        vector: Vector | Awaitable[Vector],
        query: str,
        *,
        knowledge_bases: Sequence[str] | None,
        groups: Sequence[str],
        limit: int,
        max_term_frequency: float = 0.05,
    ) -> list[Candidate]:
        """Top `limit` chunks by cosine and top `limit` by full-text rank, each with both scores
        (rag/store/hybrid.py says how)."""
        return await hybrid_candidates(
            self,
            vector,
            query,
            knowledge_bases=knowledge_bases,
            groups=groups,
            limit=limit,
            max_term_frequency=max_term_frequency,
        )


def as_vector(value: Any) -> Vector:
    """pgvector hands back numpy arrays or its own `Vector` depending on the result format."""
    if hasattr(value, "to_numpy"):
        value = value.to_numpy()
    return np.asarray(value, dtype=np.float32)


def _document_values(doc: DocumentRow) -> tuple[Any, ...]:
    return (
        doc.kb_id,
        doc.source,
        doc.title,
        doc.url,
        doc.format,
        doc.content_hash,
        doc.options_hash,
        doc.effective_date,
        doc.date_source,
        doc.date_flag,
        doc.declared_date,
        doc.authority,
        doc.declared_authority,
        doc.access_groups,
        json.dumps(doc.metadata, default=str),
    )
