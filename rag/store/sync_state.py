"""What `candor sync` remembers between runs (tables `sync_sources` and `sync_items`, migrations 0016
and 0017).

One row per configured source, keyed by its name and the knowledge base it fills (its cursor, when it
last started and last succeeded, its last error): a source renamed, or pointed at another knowledge
base, is a new row, and the old one is left to `retired` (no configured source owns it any more).
And one row per item it has shown (the document it became and the item's own state, such as a page's
ETag). Every write is its own short transaction, made after the document it describes is stored,
so a sync that crashes resumes from what landed: documents are upserts by source, never duplicated.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from rag.errors import StoreError


@dataclass(frozen=True, slots=True)
class SyncedSource:
    id: int
    name: str
    kind: str
    kb_id: int
    kb_name: str
    """The knowledge base it fills: with `name`, what the state is kept under."""
    cursor: Mapping[str, Any]
    last_success_at: datetime | None


@dataclass(frozen=True, slots=True)
class StoredItem:
    document_id: int | None
    state: Mapping[str, Any]
    seen_at: datetime | None = None


_SOURCES = (
    "SELECT s.id, s.name, s.kind, s.kb_id, k.name, s.cursor, s.last_success_at "
    "FROM sync_sources s JOIN knowledge_bases k ON k.id = s.kb_id"
)


class SyncState:
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine

    @asynccontextmanager
    async def _transaction(self) -> AsyncIterator[AsyncConnection]:
        try:
            async with self.engine.begin() as conn:
                yield conn
        except (SQLAlchemyError, psycopg.Error) as exc:
            raise StoreError(f"database error: {exc}") from exc

    async def find(self, name: str, kb_id: int) -> SyncedSource | None:
        async with self._transaction() as conn:
            row = (
                await conn.execute(text(_SOURCES + " WHERE s.name = :n AND s.kb_id = :kb"), {"n": name, "kb": kb_id})
            ).first()
        return None if row is None else SyncedSource(*row)

    async def sources(self) -> list[SyncedSource]:
        """Every source a sync has ever started, configured still or not."""
        async with self._transaction() as conn:
            rows = await conn.execute(text(_SOURCES + " ORDER BY k.name, s.name"))
            return [SyncedSource(*row) for row in rows]

    async def start(self, name: str, kind: str, kb_id: int) -> SyncedSource:
        """The row of source `name` into `kb_id`, made on its first sync there, marked as started now."""
        async with self._transaction() as conn:
            await conn.execute(
                text(
                    "INSERT INTO sync_sources (name, kind, kb_id, last_started_at) VALUES (:n, :k, :kb, now()) "
                    "ON CONFLICT (name, kb_id) DO UPDATE SET kind = EXCLUDED.kind, last_started_at = now()"
                ),
                {"n": name, "k": kind, "kb": kb_id},
            )
        found = await self.find(name, kb_id)
        if found is None:  # pragma: no cover - the row was written just above
            raise StoreError(f"the sync state of source {name!r} could not be read back")
        return found

    async def sole_documents(self, source_id: int, *, besides: Sequence[int] = ()) -> list[int]:
        """The stored documents of the source's items that no item of another source holds, but for
        sources in `besides` (retired too): a source renamed within the same knowledge base meets the
        same pages on its first run, and they are the new name's."""
        async with self._transaction() as conn:
            rows = await conn.execute(
                text(
                    "SELECT DISTINCT i.document_id FROM sync_items i WHERE i.source_id = :s "
                    "AND i.document_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM sync_items o "
                    "WHERE o.document_id = i.document_id AND o.source_id <> ALL(:ignored)) ORDER BY 1"
                ),
                {"s": source_id, "ignored": [source_id, *besides]},
            )
            return [int(row[0]) for row in rows]

    async def forget(self, source_id: int) -> None:
        """The source's row and its items (its documents are the caller's to remove first)."""
        async with self._transaction() as conn:
            await conn.execute(text("DELETE FROM sync_sources WHERE id = :id"), {"id": source_id})

    async def finish(self, source_id: int, *, cursor: Mapping[str, Any] | None, error: str | None) -> None:
        """A run's end: with `cursor` (a complete run) it becomes the last successful sync."""
        statement = (
            "UPDATE sync_sources SET last_error = :e"
            + (", cursor = CAST(:c AS jsonb), last_success_at = now()" if cursor is not None else "")
            + " WHERE id = :id"
        )
        params: dict[str, Any] = {"id": source_id, "e": error}
        if cursor is not None:
            params["c"] = json.dumps(cursor, default=str)
        async with self._transaction() as conn:
            await conn.execute(text(statement), params)

    async def items(self, source_id: int) -> dict[str, StoredItem]:
        async with self._transaction() as conn:
            rows = await conn.execute(
                text("SELECT item_id, document_id, state, seen_at FROM sync_items WHERE source_id = :s"),
                {"s": source_id},
            )
            return {str(r.item_id): StoredItem(r.document_id, dict(r.state), r.seen_at) for r in rows}

    async def save_item(
        self, source_id: int, item_id: str, *, document_id: int | None, state: Mapping[str, Any]
    ) -> None:
        async with self._transaction() as conn:
            await conn.execute(
                text(
                    "INSERT INTO sync_items (source_id, item_id, document_id, state, seen_at) "
                    "VALUES (:s, :i, :d, CAST(:st AS jsonb), now()) ON CONFLICT (source_id, item_id) DO UPDATE SET "
                    "document_id = EXCLUDED.document_id, state = EXCLUDED.state, seen_at = now()"
                ),
                {"s": source_id, "i": item_id, "d": document_id, "st": json.dumps(dict(state), default=str)},
            )

    async def forget_items(self, source_id: int, item_ids: Sequence[str]) -> None:
        if not item_ids:
            return
        async with self._transaction() as conn:
            await conn.execute(
                text("DELETE FROM sync_items WHERE source_id = :s AND item_id = ANY(:ids)"),
                {"s": source_id, "ids": list(item_ids)},
            )
