"""Reads for the conflict audit (`rag.insights.conflicts.audit`): which chunks of a knowledge base lie close
to chunks of other documents, and those chunks as passages.

The pairs come from pgvector: for every chunk of the base, its nearest chunks of *other*
documents (the HNSW index walks the graph with pgvector's iterative scan, so the document filter
does not starve the result). A chunk has at most `neighbours` partners, so the work grows with
the number of chunks, not with its square, and only the sentences of close chunk pairs are ever
compared.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from rag.model.types import Passage
from rag.store.postgres import KnowledgeBase, PostgresStore

NEIGHBOURS_SQL = """
SELECT a.id, b.id, b.cosine
FROM chunks a
CROSS JOIN LATERAL (
    SELECT c.id, 1 - (c.embedding <=> a.embedding) AS cosine
    FROM chunks c
    WHERE c.kb_id = %(kb)s AND c.document_id <> a.document_id  -- a constant, so the index of that base serves (0012)
    ORDER BY c.embedding <=> a.embedding
    LIMIT %(neighbours)s
) b
WHERE a.kb_id = %(kb)s AND b.cosine >= %(min_cosine)s
"""

PASSAGES_SQL = """
SELECT c.id, c.document_id, d.source, d.title, c.heading, c.text, d.url, d.effective_date, d.authority,
       c.access_groups, d.date_source
FROM chunks c JOIN documents d ON d.id = c.document_id
WHERE c.id = ANY(%(ids)s::bigint[])
"""


@dataclass(frozen=True, slots=True)
class ChunkPair:
    """Two chunks of different documents whose embeddings are close (ids in ascending order)."""

    first: int
    second: int
    cosine: float


async def close_chunk_pairs(
    store: PostgresStore, kb: KnowledgeBase, *, neighbours: int, min_cosine: float
) -> list[ChunkPair]:
    """Each unordered pair once, with its cosine, closest first (ties by ids, for a stable order)."""
    rows = await store.fetch_all(NEIGHBOURS_SQL, {"kb": kb.id, "neighbours": neighbours, "min_cosine": min_cosine})
    return unordered_pairs((int(a), int(b), float(cosine)) for a, b, cosine in rows)


def unordered_pairs(found: Iterable[tuple[int, int, float]]) -> list[ChunkPair]:
    """A neighbour found from either side is one pair: A near B and B near A are the same finding."""
    best: dict[tuple[int, int], float] = {}
    for a, b, cosine in found:
        key = (min(a, b), max(a, b))
        best[key] = max(cosine, best.get(key, cosine))
    return sorted((ChunkPair(a, b, c) for (a, b), c in best.items()), key=lambda p: (-p.cosine, p.first, p.second))


async def chunk_passages(
    store: PostgresStore, kb: KnowledgeBase, chunk_ids: Iterable[int]
) -> tuple[dict[int, Passage], dict[int, str | None]]:
    """The chunks as passages (document title, path, URL, effective date, authority), by chunk id;
    and where each document's date came from (front_matter, text, file_time), by document id."""
    ids = sorted(set(chunk_ids))
    if not ids:
        return {}, {}
    rows = await store.fetch_all(PASSAGES_SQL, {"ids": ids})
    passages = {
        int(r[0]): Passage(
            chunk_id=int(r[0]),
            document_id=int(r[1]),
            document=r[2],
            title=r[3],
            heading=r[4],
            text=r[5],
            score=0.0,
            dense_score=None,
            lexical_score=None,
            url=r[6],
            effective_date=r[7],
            authority=int(r[8]),
            knowledge_base=kb.name,
            access_groups=tuple(r[9]),
            dated_by=r[10],
        )
        for r in rows
    }
    return passages, {int(r[1]): r[10] for r in rows}
