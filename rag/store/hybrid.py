"""The hybrid query: pgvector HNSW (cosine) and Postgres full-text candidates, each with both scores.

Two statements on one pooled driver connection (rag/store/queries.py): the full-text side starts
at once and runs while the query is still being embedded; the dense side, with the passages,
follows. Both run on the search pool, whose connections keep cached plans (rag/store/database.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import psycopg

from rag.errors import StoreError
from rag.store.queries import search_statements
from rag.store.rows import Candidate, Vector

if TYPE_CHECKING:
    from rag.store.postgres import PostgresStore


async def hybrid_candidates(
    store: PostgresStore,
    vector: Vector | Awaitable[Vector],
    query: str,
    *,
    knowledge_bases: Sequence[str] | None,
    groups: Sequence[str],
    limit: int,
    max_term_frequency: float,
) -> list[Candidate]:
    """Top `limit` chunks by cosine and top `limit` by full-text rank, each with both scores.

    `vector` may still be on its way (an awaitable, which this call then owns: it is cancelled if
    the search fails first): the full-text query needs only the text, so it runs on the server
    while the query is being embedded.

    The full-text side works like an inverse-document-frequency cut, from the searched bases' exact
    word counts (`kb_terms`, migration 0019): words found in more than `max_term_frequency` of their
    chunks are left out (unless all are that common), a chunk must contain one of the two rarest
    remaining words (passing over a word no chunk in scope holds) to be a candidate (both, when
    the two together are in more than `store.lexical_budget` chunks: one rare word beside a common
    one would otherwise match thousands; at most four times the budget are ranked), and candidates
    are ranked by all of them. Without the cut a question's common words match a third of the
    corpus, and ranking those costs more than the rest of the search.
    """
    # the embedding starts first: the knowledge-base lookup and the checkout (~0.4 ms) run meanwhile
    embedding = None if isinstance(vector, np.ndarray) else asyncio.ensure_future(vector)
    try:
        kb_ids = None if knowledge_bases is None else tuple(await store.knowledge_base_ids(knowledge_bases))
        every_base = await store.every_knowledge_base_id() if kb_ids is None else ()
        try:
            lexical_sql, dense_sql = search_statements(
                kb_ids, tuple(sorted(groups)), limit, 4 * store.lexical_budget, every_base
            )
        except psycopg.Error as exc:  # a group name Postgres cannot hold (a NUL byte)
            raise StoreError(f"cannot search with these access groups: {exc}") from exc
        lexical_params = {"text": query, "max_df": max_term_frequency, "budget": store.lexical_budget}
        async with store.searching() as driver:  # one checkout for both statements
            lexical = asyncio.create_task(_fetch_one(driver, lexical_sql, lexical_params))
            try:
                if embedding is not None:
                    vector = await embedding
            except BaseException:
                # the connection is busy with the full-text query: let it finish before giving it back
                await asyncio.gather(lexical, return_exceptions=True)
                raise
            tsquery, lexical_ids = await lexical
            params = {"vec": vector, "tsq": tsquery, "lex_ids": lexical_ids}
            # ~80 passages' text and scores: binary rows parse faster
            cursor = await driver.execute(dense_sql, params, binary=True)
            rows = await cursor.fetchall()
    finally:
        if embedding is not None:  # it failed before anyone awaited the embedding: stop it, mark it seen
            embedding.cancel()
            if embedding.done() and not embedding.cancelled():
                embedding.exception()
    return [
        Candidate(
            chunk_id=r[0],
            document_id=r[1],
            source=r[2],
            title=r[3],
            url=r[4],
            heading=r[5],
            text=r[6],
            effective_date=r[7],
            authority=r[8],
            access_groups=tuple(r[9]),
            knowledge_base=r[10],
            cosine=float(r[11]),
            lexical=float(r[12]),
            dense_rank=r[13],
            lexical_rank=r[14],
            answered_by=r[15],
            date_source=r[16],
        )
        for r in rows
    ]


async def _fetch_one(driver: Any, sql: str, params: dict[str, Any]) -> tuple[Any, ...]:
    row = await (await driver.execute(sql, params)).fetchone()
    return tuple(row)
