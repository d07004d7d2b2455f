"""Sentence-level evidence for the reranker, the writer and the critic, read in one round trip.

Sentences and their vectors were stored at ingest, so answering a question costs one query here
instead of embedding a hundred sentences. Words come back as Postgres' own English lexemes (the
same stemming as the full-text index), with their share of all chunks from the planner's column
statistics: a word's rarity is what makes it a key term of the question.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rag.store.postgres import PostgresStore, Vector, as_vector

SENTENCES_SQL = """
SELECT s.chunk_id, s.position, s.text, s.embedding,
       tsvector_to_array(to_tsvector('english', s.text)) AS lexemes
FROM sentences s
WHERE s.chunk_id = ANY(%(ids)s::bigint[])
ORDER BY s.chunk_id, s.position
"""

CONTEXT_SQL = """
SELECT c.id, tsvector_to_array(to_tsvector('english', d.title || ' ' || c.heading))
FROM chunks c JOIN documents d ON d.id = c.document_id
WHERE c.id = ANY(%(ids)s::bigint[])
"""

# The same statistics LEXICAL_SQL reads: a word missing from them is rarer than the rarest listed.
TERMS_SQL = """
WITH stats AS (
    SELECT s.most_common_elems::text::text[] AS elems, s.most_common_elem_freqs AS freqs
    FROM pg_stats s
    WHERE s.schemaname = current_schema() AND s.tablename = 'chunks' AND s.attname = 'tsv'
),
asked AS (SELECT DISTINCT unnest(tsvector_to_array(to_tsvector('english', %(text)s))) AS lexeme),
common AS (
    SELECT e.lexeme, e.freq FROM stats, unnest(stats.elems, stats.freqs) AS e(lexeme, freq)
    WHERE e.lexeme IN (SELECT lexeme FROM asked)
)
SELECT a.lexeme, coalesce(c.freq, (SELECT freqs[array_length(elems, 1) + 1] FROM stats), 0)
FROM asked a LEFT JOIN common c ON c.lexeme = a.lexeme
"""


@dataclass(frozen=True, slots=True)
class StoredSentence:
    chunk_id: int
    position: int
    text: str
    embedding: Vector | None
    lexemes: frozenset[str]


@dataclass(frozen=True, slots=True)
class SentenceEvidence:
    sentences: tuple[StoredSentence, ...]
    context_lexemes: dict[int, frozenset[str]]
    """Per chunk: the lexemes of its document title and heading path."""


async def sentence_evidence(store: PostgresStore, chunk_ids: Sequence[int]) -> SentenceEvidence:
    """The stored sentences of `chunk_ids`, in order, with vectors and lexemes."""
    ids = list(dict.fromkeys(chunk_ids))
    rows = await store.fetch_all(SENTENCES_SQL, {"ids": ids}, binary=True)
    context = await store.fetch_all(CONTEXT_SQL, {"ids": ids})
    sentences = tuple(
        StoredSentence(
            chunk_id=r[0],
            position=r[1],
            text=r[2],
            embedding=None if r[3] is None else as_vector(r[3]),
            lexemes=frozenset(r[4]),
        )
        for r in rows
    )
    return SentenceEvidence(sentences, {r[0]: frozenset(r[1]) for r in context})


async def term_frequencies(store: PostgresStore, text: str) -> dict[str, float]:
    """The English lexemes of `text`, each with its share of all chunks (stop words are gone)."""
    rows = await store.fetch_all(TERMS_SQL, {"text": text})
    return {r[0]: float(r[1]) for r in rows}


def unit_rows(vectors: Sequence[Vector]) -> np.ndarray:
    matrix = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms)
