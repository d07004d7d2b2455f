"""What `candor sync` remembers between runs (tables `sync_sources` and `sync_items`, migration 0016).

One row per configured source (its cursor, when it last started and last succeeded, its last error)
and one per item it has shown (the document it became and the item's own state, such as a page's
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
    """The knowledge base it last filled completely (a source moved to another one keeps this until
    its first complete sync there)."""
    cursor: Mapping[str, Any]
    last_success_at: datetime | None


@dataclass(frozen=True, slots=True)
class StoredItem:
    document_id: int | None
    state: Mapping[str, Any]
    seen_at: datetime | None = None


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

    async def find(self, name: str) -> SyncedSource | None:
        async with self._transaction() as conn:
            row = (
                await conn.execute(
                    text(
                        "SELECT s.id, s.name, s.kind, s.kb_id, k.name, s.cursor, s.last_success_at "
                        "FROM sync_sources s JOIN knowledge_bases k ON k.id = s.kb_id WHERE s.name = :n"
                    ),
                    {"n": name},
                )
            ).first()
        return None if row is None else SyncedSource(*row)

    async def start(self, name: str, kind: str, kb_id: int) -> SyncedSource:
        """The source's row, made on its first sync (into `kb_id`), marked as started now. A known
        source keeps its knowledge base: a move is recorded by `moved` once it is complete."""
        async with self._transaction() as conn:
            await conn.execute(
                text(
                    "INSERT INTO sync_sources (name, kind, kb_id, last_started_at) VALUES (:n, :k, :kb, now()) "
                    "ON CONFLICT (name) DO UPDATE SET kind = EXCLUDED.kind, last_started_at = now()"
                ),
                {"n": name, "k": kind, "kb": kb_id},
            )
        found = await self.find(name)
        if found is None:  # pragma: no cover - the row was written just above
            raise StoreError(f"the sync state of source {name!r} could not be read back")
        return found

    async def moved(self, source_id: int, kb_id: int) -> None:
        """The source now fills `kb_id` (its documents in the old base are removed)."""
        async with self._transaction() as conn:
            statement = text("UPDATE sync_sources SET kb_id = :kb WHERE id = :id")
            await conn.execute(statement, {"kb": kb_id, "id": source_id})

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
