"""`candor ingest --reembed`: every stored vector replaced by another embedder's, in one transaction.

The column size follows the new embedder (`vector(n)`), so the HNSW index is dropped and rebuilt
around the update; readers keep the old vectors until the transaction commits.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from rag.store.embedding_inputs import chunk_input, input_hash
from rag.store.queries import HNSW_INDEXES, hnsw_index_sql
from rag.store.rows import Vector


async def reembed_all(
    driver: Any,
    name: str,
    dimension: int,
    embed: Callable[[list[str]], Awaitable[Vector]],
    *,
    batch: int = 256,
) -> int:
    """Re-embed every chunk and sentence on `driver` (a psycopg connection inside the caller's
    transaction) with `embed`, recording `name` and `dimension` as the store's embedder; the
    number of texts embedded."""
    for (index,) in await (await driver.execute(HNSW_INDEXES)).fetchall():
        await driver.execute(f'DROP INDEX IF EXISTS "{index}"')
    for table in ("chunks", "sentences"):
        await driver.execute(f"ALTER TABLE {table} ALTER COLUMN embedding DROP NOT NULL")
        await driver.execute(f"ALTER TABLE {table} ALTER COLUMN embedding TYPE vector({int(dimension)}) USING NULL")
    cursor = await driver.execute(
        "SELECT c.id, d.title, c.heading_path, c.text FROM chunks c JOIN documents d ON d.id = c.document_id"
    )
    chunk_inputs = [(r[0], chunk_input(r[1], r[2], r[3])) for r in await cursor.fetchall()]
    cursor = await driver.execute("SELECT id, text FROM sentences")
    sentence_inputs = [(r[0], r[1]) for r in await cursor.fetchall()]
    done = 0
    for table, inputs in (("chunks", chunk_inputs), ("sentences", sentence_inputs)):
        for start in range(0, len(inputs), batch):
            part = inputs[start : start + batch]
            vectors = await embed([text_ for _, text_ in part])
            async with driver.cursor() as cur:
                await cur.executemany(
                    f"UPDATE {table} SET embedding = %s, text_hash = %s WHERE id = %s",
                    [
                        (vec, input_hash(name, text_), row_id)
                        for (row_id, text_), vec in zip(part, vectors, strict=True)
                    ],
                )
            done += len(part)
    await driver.execute("ALTER TABLE chunks ALTER COLUMN embedding SET NOT NULL")
    await driver.execute("SET LOCAL maintenance_work_mem = '1GB'")
    for (kb_id,) in await (await driver.execute("SELECT id FROM knowledge_bases")).fetchall():
        await driver.execute(hnsw_index_sql(kb_id))
    await driver.execute(
        "UPDATE candor_meta SET value = %s WHERE key = 'embedder'",
        (json.dumps({"name": name, "dimension": dimension}),),
    )
    return done
