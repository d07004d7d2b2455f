"""The store's connections: the pool a serving process keeps (opened at start-up, never exceeded),
reads in autocommit, driver errors as `StoreError`; and the heap a server freezes after start-up
(bot.server.settle_heap). Against the session's real Postgres."""

from __future__ import annotations

import asyncio
import logging
import socket
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from rag.config import load_settings
from rag.errors import StoreError
from rag.runtime import Candor
from rag.store.database import EmbedderRecord, fill_pool, open_engine, pooled_engine
from rag.store.postgres import ChunkRow, DocumentRow, KnowledgeBase, PostgresStore


@pytest.fixture
async def small_pool(candor: Candor, tmp_path: Path) -> AsyncIterator[AsyncEngine]:
    """An engine on the session's database configured the way `candor serve` is, with 2 connections."""
    url = candor.store.engine.url.render_as_string(hide_password=False)
    settings = load_settings(home=tmp_path, database_url=url, db_pool_size=2)
    engine, _ = await open_engine(settings, embedder=candor.embedder.name, dimension=candor.embedder.dimension)
    try:
        yield engine
    finally:
        await engine.dispose()


async def _backends(candor: Candor) -> set[int]:
    async with candor.store.engine.connect() as conn:
        rows = await conn.execute(text("SELECT pid FROM pg_stat_activity WHERE backend_type = 'client backend'"))
        return {int(row[0]) for row in rows}


async def _pid(engine: AsyncEngine) -> int:
    async with engine.connect() as conn:
        return int((await conn.execute(text("SELECT pg_backend_pid()"))).scalar_one())


async def test_fill_pool_opens_the_connections_at_start_up(small_pool: AsyncEngine, candor: Candor) -> None:
    await fill_pool(small_pool, 2)
    assert small_pool.pool.checkedin() == 2  # type: ignore[attr-defined]
    open_now = await _backends(candor)
    # requests use exactly those connections, several at once: no new server process
    pids = set(await asyncio.gather(*(_pid(small_pool) for _ in range(6))))
    assert len(pids) == 2 and pids <= open_now
    assert await _backends(candor) <= open_now


async def test_a_request_past_the_pool_waits_for_a_connection_instead_of_opening_one(
    small_pool: AsyncEngine, candor: Candor
) -> None:
    await fill_pool(small_pool, 2)
    before = await _backends(candor)
    first, second = await small_pool.connect().start(), await small_pool.connect().start()
    third = asyncio.create_task(_pid(small_pool))
    try:
        await asyncio.sleep(0.3)
        assert not third.done()  # waiting, not connected past the pool
        assert await _backends(candor) <= before
        await first.close()
        await asyncio.wait_for(third, 5)
    finally:
        third.cancel()
        await first.close()  # closing a closed connection does nothing
        await second.close()
    assert third.result() in before
    assert small_pool.pool.checkedin() == 2  # type: ignore[attr-defined]


def test_settle_heap_freezes_start_up_objects_and_later_garbage_is_still_collected() -> None:
    script = textwrap.dedent(
        """
        import gc
        from bot.server import settle_heap
        settle_heap()
        frozen = gc.get_freeze_count()
        class Node:
            pass
        a, b = Node(), Node()
        a.other, b.other = b, a
        del a, b
        print(frozen, gc.collect())
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    frozen, collected = (int(word) for word in done.stdout.split())
    assert frozen > 10_000  # the modules bot.server imports, at least
    assert collected >= 2  # the cycle made after freezing


async def test_a_read_runs_outside_a_transaction_and_leaves_the_connection_transactional(
    small_pool: AsyncEngine, candor: Candor
) -> None:
    """`fetch_all` reads in autocommit (no BEGIN/COMMIT round trips); the pooled connection goes back
    in its usual mode, so a later transaction on it still rolls back."""
    store = PostgresStore(small_pool, EmbedderRecord(candor.embedder.name, candor.embedder.dimension))
    rows = await store.fetch_all("SELECT now() = statement_timestamp(), pg_backend_pid()", {})
    assert rows[0][0] is True  # outside a transaction block, now() is this statement's own time
    read_on = rows[0][1]
    for _ in range(2):  # the pool holds the one connection the read used: check it, twice
        async with small_pool.connect() as conn:
            pid = int((await conn.execute(text("SELECT pg_backend_pid()"))).scalar_one())
            await conn.execute(text("CREATE TEMP TABLE rolled_back (x int)"))
            await conn.rollback()
            gone = (await conn.execute(text("SELECT to_regclass('pg_temp.rolled_back') IS NULL"))).scalar_one()
            assert gone, f"connection {pid} was left in autocommit"
            await conn.rollback()
    assert read_on in await _backends(candor)


async def test_a_failing_read_is_a_store_error_and_the_pool_recovers(small_pool: AsyncEngine, candor: Candor) -> None:
    store = PostgresStore(small_pool, EmbedderRecord(candor.embedder.name, candor.embedder.dimension))
    with pytest.raises(StoreError, match="no_such_column"):
        await store.fetch_all("SELECT no_such_column FROM chunks", {})
    with pytest.raises(StoreError):
        await store.fetch_one("SELECT 1/0", {})
    assert await store.fetch_one("SELECT 41 + 1", {}) == (42,)
    assert small_pool.pool.checkedout() == 0  # type: ignore[attr-defined]


async def test_a_pool_that_cannot_open_at_start_up_is_logged_not_fatal(caplog: pytest.LogCaptureFixture) -> None:
    """E.g. the server's max_connections reached by other replicas: `candor serve` still starts, and
    its connections open when needed. Here nothing listens on the port."""
    from sqlalchemy.ext.asyncio import create_async_engine

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    engine = create_async_engine(f"postgresql+psycopg://candor@127.0.0.1:{port}/candor", pool_size=3, max_overflow=0)
    try:
        with caplog.at_level(logging.WARNING, logger="rag.store.database"):
            await fill_pool(engine, 3)
    finally:
        await engine.dispose()
    assert "opened 0 of 3 database connections" in caplog.text


async def test_a_driver_error_in_a_bulk_write_is_a_store_error_and_writes_nothing(
    candor: Candor, kb: KnowledgeBase
) -> None:
    """COPY goes through psycopg directly; a row Postgres refuses (a vector of the wrong size) fails
    the document as `StoreError`, and none of its rows stay."""
    good = np.ones(candor.embedder.dimension, dtype=np.float32) / np.sqrt(candor.embedder.dimension)
    rows = [
        ChunkRow(0, ["Intro"], "A fine chunk.", "h0", good),
        ChunkRow(1, ["Intro"], "A chunk with a short vector.", "h1", np.ones(3, dtype=np.float32)),
    ]
    document = DocumentRow(
        kb_id=kb.id, source="driver-error.md", title="Driver error", format="md", content_hash="x", options_hash="o"
    )
    with pytest.raises(StoreError, match="dimension"):
        await candor.store.write_document(document, rows)
    assert await candor.store.counts(kb) == {**await candor.store.counts(kb), "documents": 0, "chunks": 0}


async def test_connections_plan_every_run_for_its_values(small_pool: AsyncEngine) -> None:
    """psycopg prepares a statement after 5 runs; a generic plan then could not see the
    knowledge-base ids and would scan every chunk instead of using HNSW (~50 ms at 100k)."""
    async with small_pool.connect() as conn:
        assert (await conn.execute(text("SHOW plan_cache_mode"))).scalar_one() == "force_custom_plan"


@pytest.fixture
async def one_connection_each(candor: Candor, tmp_path: Path) -> AsyncIterator[PostgresStore]:
    """A store on the session's database with one general and one search connection."""
    url = candor.store.engine.url.render_as_string(hide_password=False)
    settings = load_settings(home=tmp_path, database_url=url, db_pool_size=1)
    engine, record = await open_engine(settings, embedder=candor.embedder.name, dimension=candor.embedder.dimension)
    searches = pooled_engine(engine.url, settings, pool_size=1, cached_plans=True)
    try:
        yield PostgresStore(engine, record, search_engine=searches)
    finally:
        await engine.dispose()
        await searches.dispose()


async def _written(
    candor: Candor, kb: KnowledgeBase, texts: list[str], *, source: str = "leave.md", groups: list[str] | None = None
) -> None:
    vectors = await candor.embedder.embed(texts)
    rows = [ChunkRow(i, ["Leave"], t, f"h{i}", v) for i, (t, v) in enumerate(zip(texts, vectors, strict=True))]
    document = DocumentRow(
        kb_id=kb.id,
        source=source,
        title="Leave",
        format="md",
        content_hash="x",
        options_hash="o",
        access_groups=groups or [],
    )
    await candor.store.write_document(document, rows)


async def test_access_groups_written_into_the_search_statements_are_quoted(
    candor: Candor, kb: KnowledgeBase, one_connection_each: PostgresStore
) -> None:
    """The reader's groups are part of the statements' text (for the cached plans): quotes, `%`,
    braces and commas in a group name neither break the statement nor widen what is visible."""
    odd = "o'brien {50%}, \\board"
    await _written(candor, kb, ["Board pay is reviewed each March."], source="board.md", groups=[odd])
    store = one_connection_each
    vector = (await candor.embedder.embed(["board pay review"]))[0]

    async def texts(groups: list[str]) -> set[str]:
        found = await store.hybrid_candidates(vector, "board pay", knowledge_bases=[kb.name], groups=groups, limit=5)
        return {c.text for c in found}

    assert await texts([odd]) == {"Board pay is reviewed each March."}
    assert await texts(["o'brien {50%}", "board", "%s", "'); DROP TABLE chunks; --"]) == set()
    assert await texts([]) == set()
    assert await texts(["staff", odd]) == {"Board pay is reviewed each March."}
    with pytest.raises(StoreError, match="access groups"):  # Postgres text cannot hold a NUL byte
        await texts(["hr\x00"])


async def test_the_search_pool_runs_on_cached_plans_and_the_general_pool_plans_each_run(
    candor: Candor, kb: KnowledgeBase, one_connection_each: PostgresStore
) -> None:
    """Planning the two search statements each time was ~1.4 ms of a search's Postgres time: they
    run on connections of their own that keep cached plans, while every other statement keeps
    being planned for its values."""
    await _written(candor, kb, ["Annual leave is 25 days a year.", "Parental leave is 26 weeks."])
    store = one_connection_each
    vector = (await candor.embedder.embed(["annual leave"]))[0]
    for _ in range(12):  # psycopg prepares after 5 runs; Postgres weighs a generic plan after 5 more
        found = await store.hybrid_candidates(vector, "annual leave", knowledge_bases=[kb.name], groups=[], limit=5)
        assert "Annual leave is 25 days a year." in {c.text for c in found}
    async with store.searching() as driver:
        assert (await (await driver.execute("SHOW plan_cache_mode")).fetchone())[0] == "auto"
        rows = await (
            await driver.execute(
                "SELECT generic_plans + custom_plans FROM pg_prepared_statements WHERE statement LIKE %s",
                ("%embedding <=>%",),
            )
        ).fetchall()
    # prepared once and run from the server's plan cache since (whether Postgres then keeps a generic
    # plan is its own cost decision, which moves with what else the database holds)
    assert len(rows) == 1 and rows[0][0] >= 5, f"the dense statement runs as a prepared statement: {rows}"
    async with store.reading() as driver:
        assert (await (await driver.execute("SHOW plan_cache_mode")).fetchone())[0] == "force_custom_plan"
    assert store.engine.pool.checkedout() == store.search_engine.pool.checkedout() == 0  # type: ignore[attr-defined]


async def test_a_failed_query_embedding_gives_the_searchs_connection_back(candor: Candor, kb: KnowledgeBase) -> None:
    """The full-text query runs on the search's connection while the query is embedded; when the
    embedding fails, the error is the embedder's, the connection goes back idle, and the next
    search on the pool works."""
    from rag.errors import EmbeddingError

    async def failing() -> np.ndarray:
        await asyncio.sleep(0)  # the full-text query has been sent and is running
        raise EmbeddingError("the embedder is gone")

    pool = candor.store.search_engine.pool
    with pytest.raises(EmbeddingError):
        await candor.store.hybrid_candidates(failing(), "annual leave", knowledge_bases=[kb.name], groups=[], limit=5)
    assert pool.checkedout() == 0  # type: ignore[attr-defined]
    vector = (await candor.embedder.embed(["annual leave"]))[0]
    assert (
        await candor.store.hybrid_candidates(vector, "annual leave", knowledge_bases=[kb.name], groups=[], limit=5)
        == []
    )


async def test_a_search_without_a_database_stops_the_query_embedding_it_started() -> None:
    """The query embedding starts before the knowledge-base lookup and the connection checkout;
    when no connection comes, the error is the store's and the embedding is cancelled, not left
    running unobserved."""
    from sqlalchemy.ext.asyncio import create_async_engine

    unreachable = create_async_engine("postgresql+psycopg://x@127.0.0.1:1/none", connect_args={"connect_timeout": 2})
    store = PostgresStore(unreachable, EmbedderRecord(name="none", dimension=3))

    async def slow_embedding() -> np.ndarray:
        await asyncio.sleep(30)
        return np.zeros(3, dtype=np.float32)

    embedding = asyncio.ensure_future(slow_embedding())
    try:
        with pytest.raises(StoreError):
            await store.hybrid_candidates(embedding, "annual leave", knowledge_bases=None, groups=[], limit=5)
        await asyncio.sleep(0)
        assert embedding.cancelled()
        # the same when the knowledge-base lookup (before the checkout) is what fails
        embedding = asyncio.ensure_future(slow_embedding())
        with pytest.raises(StoreError):
            await store.hybrid_candidates(embedding, "annual leave", knowledge_bases=["handbook"], groups=[], limit=5)
        await asyncio.sleep(0)
        assert embedding.cancelled()
    finally:
        await unreachable.dispose()
