"""Opening the database: embedded or external, migrated, with pgvector types registered."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import psycopg
import sqlalchemy.exc
from pgvector.psycopg import register_vector_async
from sqlalchemy import URL, event, text
from sqlalchemy.exc import DBAPIError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from rag.config import Settings
from rag.errors import DatabaseUnavailable, EmbeddingMismatch
from rag.store.embedded import start_embedded
from rag.store.migrate import upgrade_to_head

log = logging.getLogger(__name__)

T = TypeVar("T")


def async_url(url: str) -> str:
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url.removeprefix(prefix)
    return url


async def open_engine(settings: Settings, *, embedder: str, dimension: int) -> tuple[AsyncEngine, EmbedderRecord]:
    """Start or reach Postgres, apply migrations; return an async engine and the stored embedder.

    A fresh database records the configured embedder; an existing one keeps what its vectors were
    made with, and the caller compares (`open_candor(check_embedder=True)`, rag/runtime/wiring.py).
    """
    if settings.database_url is not None:
        url = async_url(settings.database_url.get_secret_value())
    else:
        url = await asyncio.to_thread(start_embedded, settings.pgdata, shared_buffers_mb=settings.db_shared_buffers_mb)
    await asyncio.to_thread(upgrade_to_head, url, embedder=embedder, embedding_dimension=dimension)

    engine = pooled_engine(url, settings, pool_size=settings.db_pool_size, cached_plans=False)
    try:
        async with engine.connect() as conn:
            row = (await conn.execute(text("SELECT value FROM candor_meta WHERE key = 'embedder'"))).one()
    except SQLAlchemyError as exc:
        await engine.dispose()
        raise DatabaseUnavailable(f"cannot reach the database: {exc}") from exc
    return engine, EmbedderRecord(name=str(row[0]["name"]), dimension=int(row[0]["dimension"]))


def pooled_engine(url: str | URL, settings: Settings, *, pool_size: int, cached_plans: bool) -> AsyncEngine:
    """An engine whose connections know pgvector's types and Candor's HNSW settings.

    `cached_plans=False` (Candor's general pool): psycopg prepares a statement run 5 times on a
    connection, and Postgres may then switch it to a generic plan; these connections plan each run
    for its values instead, because a generic plan cannot see a parameter's knowledge-base ids or
    row limit and may scan every chunk instead of using HNSW (measured 50 ms instead of 4 at 100k
    chunks). `cached_plans=True` (the search pool): only the hybrid search's two statements run
    there, written so that a generic plan is the right one (rag/store/queries.py); planning them
    each time cost ~1.4 ms of a search's ~5 ms in Postgres, and switching one connection between
    the two modes around each search cost ~1 ms more than keeping a pool of its own.
    """
    # No overflow: a connection opened past the pool's size is closed again when returned, so every
    # burst beyond it opened new ones (a server process each) and its requests waited ~150 ms for
    # that; waiting for a pooled connection costs about a statement's time (docs/slack.md).
    engine = create_async_engine(url, pool_size=pool_size, max_overflow=0, pool_pre_ping=True)
    ef_search = int(settings.hnsw_ef_search)
    plan_cache_mode = "auto" if cached_plans else "force_custom_plan"

    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        async def prepare(conn: Any) -> None:
            await register_vector_async(conn)
            await conn.execute(f"SET hnsw.ef_search = {ef_search}")
            await conn.execute("SET hnsw.iterative_scan = 'relaxed_order'")
            await conn.execute(f"SET plan_cache_mode = {plan_cache_mode}")
            await conn.commit()

        dbapi_connection.run_async(prepare)

    return engine


async def fill_pool(engine: AsyncEngine, connections: int) -> None:
    """Open `connections` pooled connections now, one after another. Otherwise the first burst of
    requests after start-up opens them all at once (each a new server process, set up for
    pgvector), and every request of the burst waits for that: ~200 ms for 20 Slack events here."""
    opened = 0
    async with contextlib.AsyncExitStack() as held:
        try:
            for _ in range(connections):
                await held.enter_async_context(engine.connect())
                opened += 1
        except SQLAlchemyError as exc:  # e.g. the server's max_connections: serve anyway, open later
            log.warning(
                "opened %d of %d database connections at start-up (CANDOR_DB_POOL_SIZE); the rest open when needed: %s",
                opened,
                connections,
                exc,
            )


@dataclass(frozen=True, slots=True)
class EmbedderRecord:
    """Which embedder made the vectors in this database."""

    name: str
    dimension: int

    def check(self, name: str, dimension: int) -> None:
        if self.name != name or self.dimension != dimension:
            raise EmbeddingMismatch(
                f"the knowledge base was embedded with {self.name} ({self.dimension} dimensions) but the "
                f"configured embedder is {name} ({dimension}); run `candor ingest --reembed`"
            )


def is_transient(exc: BaseException) -> bool:
    """A failure of the connection, not of the statement: Postgres restarting, failing over or out
    of reach. The wrapped causes are looked through (`StoreError(...) from exc`)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, psycopg.errors.QueryCanceled):
            return False  # a statement that ran out of time would run out of time again
        if isinstance(current, DBAPIError) and current.connection_invalidated:
            return True
        if isinstance(current, psycopg.OperationalError | sqlalchemy.exc.OperationalError | OSError):
            return True
        current = current.__cause__ or current.__context__
    return False


async def ride_through(operation: Callable[[], Awaitable[T]], *, within: float, what: str) -> T:
    """`operation()`, tried again while the database is away (a restart or a failover takes seconds),
    for up to `within` seconds; then, or on any other error, its error."""
    deadline = time.monotonic() + within
    delay = 0.1
    while True:
        try:
            return await operation()
        except Exception as exc:
            if not is_transient(exc) or time.monotonic() + delay > deadline:
                raise
            log.warning("%s: the database is out of reach; trying again in %.1f s (%s)", what, delay, exc)
            await asyncio.sleep(delay)
            delay = min(2 * delay, 2.0)
