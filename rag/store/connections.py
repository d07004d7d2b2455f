"""The store's connections: the general pool and the hybrid search's own (on a hot standby with
CANDOR_DATABASE_READ_URL), and how a statement runs on them: in a transaction through SQLAlchemy,
or on the driver (psycopg) connection in autocommit for reads. Every database error leaves here as a
`StoreError`."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Self

import psycopg
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from rag.config import Settings
from rag.errors import StoreError
from rag.store.database import EmbedderRecord, async_url, open_engine, pooled_engine

log = logging.getLogger("candor.store")


class StoreConnections:
    """The engines of `PostgresStore` and the statements that only ask the database about itself."""

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

    @classmethod
    async def open(cls, settings: Settings, *, embedder: str, dimension: int) -> Self:
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

    async def fetch_one(self, sql: str, params: dict[str, Any]) -> tuple[Any, ...]:
        async with self.reading() as driver:
            row = await (await driver.execute(sql, params)).fetchone()
        return tuple(row)

    async def fetch_all(self, sql: str, params: dict[str, Any], *, binary: bool = False) -> list[tuple[Any, ...]]:
        """Rows of one read statement; `binary` fetches in binary format (vectors arrive as raw
        floats instead of text to parse: ten times cheaper for a hundred 384-float rows)."""
        async with self.reading() as driver:
            return [tuple(row) for row in await (await driver.execute(sql, params, binary=binary)).fetchall()]

    async def schema_revision(self) -> str:
        """The migration the schema is at (alembic's `version_num`)."""
        async with self._transaction() as conn:
            return str((await conn.execute(text("SELECT version_num FROM alembic_version"))).scalar_one())

    async def ping(self) -> None:
        """One round trip; `StoreError` when the database does not answer (a health check's question)."""
        async with self._transaction() as conn:
            await conn.execute(text("SELECT 1"))
