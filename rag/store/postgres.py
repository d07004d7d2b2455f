"""The Postgres store: knowledge bases, documents, chunks, sentences and hybrid candidates.

SQLAlchemy Core for the ordinary statements; the driver connection (psycopg 3) for COPY and the
hybrid query (rag/store/hybrid.py), which are the hot paths.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import numpy as np
import psycopg
from sqlalchemy import delete, select, text, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from rag.config import Settings
from rag.errors import StoreError
from rag.store.database import EmbedderRecord, async_url, open_engine, pooled_engine
from rag.store.hybrid import hybrid_candidates
from rag.store.queries import DOCUMENT_COLUMNS, index_sql
from rag.store.reembed import reembed_all
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
from rag.store.schema import chunks, documents, knowledge_bases

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


log = logging.getLogger("candor.store")


EVERY_BASE_SECONDS = 5.0
"""How long the list of every knowledge base is reused by unscoped searches."""


class PostgresStore:
    """Candor's one database. Open with `await PostgresStore.open(settings, ...)`."""

    def __init__(
        self,
        engine: AsyncEngine,
        embedder: EmbedderRecord,
        *,
        search_engine: AsyncEngine | None = None,
        searches_on_standby: bool = False,
    ) -> None:
        self.engine = engine
        self.search_engine = search_engine or engine
        """The hybrid search's own pool, on cached plans (`pooled_engine`); by default the general one.
        With CANDOR_DATABASE_READ_URL, on a hot standby: writes, the ledger and every other read stay
        on the primary."""
        self.searches_on_standby = searches_on_standby
        """A search the standby cannot take (down, restarting) runs on the primary instead (logged)."""
        self.embedder = embedder
        self._kb_ids: dict[str, int] = {}
        self._every_base: tuple[float, tuple[int, ...]] | None = None
        self.lexical_budget = 500
        """Rows the full-text side may rank: past it, candidates must hold both rarest words."""

    @classmethod
    async def open(cls, settings: Settings, *, embedder: str, dimension: int) -> PostgresStore:
        engine, record = await open_engine(settings, embedder=embedder, dimension=dimension)
        standby = settings.database_read_url
        url = engine.url if standby is None else async_url(standby.get_secret_value())
        searches = pooled_engine(url, settings, pool_size=settings.search_pool_size, cached_plans=True)
        return cls(engine, record, search_engine=searches, searches_on_standby=standby is not None)

    async def close(self) -> None:
        await self.engine.dispose()
        if self.search_engine is not self.engine:
            await self.search_engine.dispose()

    @asynccontextmanager
    async def _transaction(self) -> AsyncIterator[AsyncConnection]:
        try:
            async with self.engine.begin() as conn:
                yield conn
        except (SQLAlchemyError, psycopg.Error) as exc:  # psycopg's own: COPY and re-embed use the driver
            raise StoreError(f"database error: {exc}") from exc

    @asynccontextmanager
    async def reading(self) -> AsyncIterator[Any]:
        """The driver (psycopg) connection of a pooled connection, in autocommit, for read
        statements: no BEGIN and COMMIT round trips (~1 ms of a 5 ms hybrid query). Driver errors
        (the server gone mid-query) become `StoreError` like SQLAlchemy's. Several statements in a
        row should share one: a checkout (with its liveness ping) costs ~0.6 ms here."""
        async with self._autocommit(self.engine) as driver:
            yield driver

    @asynccontextmanager
    async def searching(self) -> AsyncIterator[Any]:
        """Like `reading`, from the search pool, whose connections keep cached plans: for the
        hybrid search's own statements only (rag/store/hybrid.py). On a standby that cannot be
        reached, the search runs on the primary (a search already running there is not retried)."""
        connected = False
        try:
            async with self._autocommit(self.search_engine) as driver:
                connected = True
                yield driver
        except StoreError as exc:
            if connected or not self.searches_on_standby:
                raise
            log.warning("the read standby is unavailable (%s): searching the primary", exc)
            async with self._autocommit(self.engine) as driver:
                yield driver

    @asynccontextmanager
    async def _autocommit(self, engine: AsyncEngine) -> AsyncIterator[Any]:
        try:
            async with engine.connect() as conn:
                driver = await self._driver(conn)
                await driver.set_autocommit(True)
                try:
                    yield driver
                finally:
                    if not driver.closed:
                        await driver.set_autocommit(False)
        except (SQLAlchemyError, psycopg.Error) as exc:
            raise StoreError(f"database error: {exc}") from exc

    async def _driver(self, conn: AsyncConnection) -> Any:
        raw = await conn.get_raw_connection()
        return raw.driver_connection

    # --- knowledge bases -----------------------------------------------------------------

    async def knowledge_base(self, name: str, *, create_with_max_authority: int | None = None) -> KnowledgeBase | None:
        """The knowledge base called `name`; created when `create_with_max_authority` is given."""
        async with self._transaction() as conn:
            if create_with_max_authority is not None:
                await conn.execute(
                    insert(knowledge_bases)
                    .values(name=name, max_authority=create_with_max_authority)
                    .on_conflict_do_nothing(index_elements=["name"])
                )
            row = (await conn.execute(select(knowledge_bases).where(knowledge_bases.c.name == name))).first()
            if row is not None and create_with_max_authority is not None:
                await _ensure_indexes(conn, row.id)
                self._every_base = None
        return None if row is None else KnowledgeBase(row.id, row.name, row.max_authority)

    async def every_knowledge_base_id(self) -> tuple[int, ...]:
        """The ids of all knowledge bases, read again after EVERY_BASE_SECONDS: an unscoped search
        needs them, and reading them each time cost a checkout on the answer path. A base another
        process has just made is searched from then on; one made here, at once."""
        now = time.monotonic()
        if self._every_base is not None and now - self._every_base[0] < EVERY_BASE_SECONDS:
            return self._every_base[1]
        async with self.reading() as driver:
            rows = await (await driver.execute("SELECT id FROM knowledge_bases ORDER BY id")).fetchall()
        ids = tuple(int(r[0]) for r in rows)
        self._every_base = (now, ids)
        return ids

    async def set_max_authority(self, kb: KnowledgeBase, value: int) -> KnowledgeBase:
        async with self._transaction() as conn:
            await conn.execute(update(knowledge_bases).where(knowledge_bases.c.id == kb.id).values(max_authority=value))
        return KnowledgeBase(kb.id, kb.name, value)

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

    async def knowledge_base_ids(self, names: Sequence[str]) -> list[int]:
        """Ids for knowledge base names (cached: bases are created, never renamed)."""
        missing = [name for name in names if name not in self._kb_ids]
        if missing:
            async with self._transaction() as conn:
                rows = await conn.execute(
                    select(knowledge_bases.c.name, knowledge_bases.c.id).where(knowledge_bases.c.name.in_(missing))
                )
                self._kb_ids.update({row.name: row.id for row in rows})
        return [self._kb_ids[name] for name in names if name in self._kb_ids]

    async def fetch_one(self, sql: str, params: dict[str, Any]) -> tuple[Any, ...]:
        async with self.reading() as driver:
            row = await (await driver.execute(sql, params)).fetchone()
        return tuple(row)

    async def fetch_all(self, sql: str, params: dict[str, Any], *, binary: bool = False) -> list[tuple[Any, ...]]:
        """Rows of one read statement; `binary` fetches in binary format (vectors arrive as raw
        floats instead of text to parse: ten times cheaper for a hundred 384-float rows)."""
        async with self.reading() as driver:
            return [tuple(row) for row in await (await driver.execute(sql, params, binary=binary)).fetchall()]

    async def analyze(self) -> None:
        """Refresh the planner's statistics (the full-text side reads its word frequencies)."""
        async with self._transaction() as conn:
            await conn.execute(text("ANALYZE chunks"))

    async def public_summary(self) -> list[tuple[str, int]]:
        """Every knowledge base with its count of public documents (restricted ones are not revealed)."""
        query = text(
            "SELECT kb.name, count(d.id) FILTER (WHERE cardinality(d.access_groups) = 0) "
            "FROM knowledge_bases kb LEFT JOIN documents d ON d.kb_id = kb.id GROUP BY kb.name ORDER BY kb.name"
        )
        async with self._transaction() as conn:
            return [(str(name), int(n)) for name, n in (await conn.execute(query)).all()]

    async def schema_revision(self) -> str:
        """The migration the schema is at (alembic's `version_num`)."""
        async with self._transaction() as conn:
            return str((await conn.execute(text("SELECT version_num FROM alembic_version"))).scalar_one())

    async def ping(self) -> None:
        """One round trip; `StoreError` when the database does not answer (a health check's question)."""
        async with self._transaction() as conn:
            await conn.execute(text("SELECT 1"))

    async def counts(self, kb: KnowledgeBase | None = None) -> dict[str, int]:
        """Documents, chunks and sentences, in one knowledge base or all."""
        query = text(
            "SELECT (SELECT count(*) FROM documents WHERE CAST(:kb AS integer) IS NULL OR kb_id = :kb), "
            "(SELECT count(*) FROM chunks WHERE CAST(:kb AS integer) IS NULL OR kb_id = :kb), "
            "(SELECT count(*) FROM sentences s JOIN chunks c ON c.id = s.chunk_id "
            "WHERE CAST(:kb AS integer) IS NULL OR c.kb_id = :kb)"
        )
        async with self._transaction() as conn:
            row = (await conn.execute(query, {"kb": None if kb is None else kb.id})).one()
        return {"documents": int(row[0]), "chunks": int(row[1]), "sentences": int(row[2])}

    async def reembed(
        self,
        name: str,
        dimension: int,
        embed: Callable[[list[str]], Awaitable[Vector]],
        *,
        batch: int = 256,
    ) -> int:
        """Replace every vector with the given embedder's, changing the column size if needed.

        One transaction: readers see the old vectors until the new ones are all in place.
        """
        async with self._transaction() as conn:
            done = await reembed_all(await self._driver(conn), name, dimension, embed, batch=batch)
        self.embedder = EmbedderRecord(name, dimension)
        return done

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


async def _ensure_indexes(conn: Any, kb_id: int) -> None:
    """Give a knowledge base its own vector and full-text indexes unless it has them. Looked up
    first: creating an index, even one that exists, locks `chunks` against writes meanwhile."""
    for name, statement in index_sql(kb_id):
        found = await conn.execute(text("SELECT 1 FROM pg_indexes WHERE indexname = :name"), {"name": name})
        if found.first() is None:
            await conn.execute(text(statement))
