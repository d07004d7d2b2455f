"""The store's knowledge bases and their indexes: a base is created with its own vector and
full-text indexes, its id is looked up once, and the statistics and vectors of every base are
refreshed in place (`analyze`, `reembed`)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from sqlalchemy import select, text, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncEngine

from rag.store.connections import StoreConnections
from rag.store.database import EmbedderRecord
from rag.store.queries import index_sql
from rag.store.reembed import reembed_all
from rag.store.rows import KnowledgeBase, Vector
from rag.store.schema import knowledge_bases

EVERY_BASE_SECONDS = 5.0
"""How long the list of every knowledge base is reused by unscoped searches."""


class KnowledgeBases(StoreConnections):
    """Knowledge bases, their indexes and what is counted across them."""

    def __init__(
        self,
        engine: AsyncEngine,
        embedder: EmbedderRecord,
        *,
        search_engine: AsyncEngine | None = None,
        searches_on_standby: bool = False,
    ) -> None:
        super().__init__(engine, embedder, search_engine=search_engine, searches_on_standby=searches_on_standby)
        self._kb_ids: dict[str, int] = {}
        self._every_base: tuple[float, tuple[int, ...]] | None = None

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

    async def analyze(self) -> None:
        """Refresh the planner's statistics (its row estimates; the word counts search reads are kept
        exact by migration 0019's triggers)."""
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


async def _ensure_indexes(conn: Any, kb_id: int) -> None:
    """Give a knowledge base its own vector and full-text indexes unless it has them. Looked up
    first: creating an index, even one that exists, locks `chunks` against writes meanwhile."""
    for name, statement in index_sql(kb_id):
        found = await conn.execute(text("SELECT 1 FROM pg_indexes WHERE indexname = :name"), {"name": name})
        if found.first() is None:
            await conn.execute(text(statement))
