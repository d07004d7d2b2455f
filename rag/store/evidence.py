"""Sentence-level evidence for the reranker, the writer and the critic, read in one round trip.

Sentences and their vectors were stored at ingest, so answering a question costs one query here
instead of embedding a hundred sentences. Words come back as Postgres' own English lexemes (the
same stemming as the full-text index), with their share of the asked knowledge bases' chunks
(counted exactly, migration 0019): a word's rarity is what makes it a key term of the question.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
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

# The same counts LEXICAL_SQL reads (migration 0019): the searched bases' chunks, and how many hold
# each of the text's words (NULL bases: every base)
TERMS_SQL = """
WITH scope AS (SELECT id FROM knowledge_bases WHERE %(kbs)s::int[] IS NULL OR id = ANY(%(kbs)s::int[])),
total AS (SELECT coalesce(sum(chunks), 0) AS n FROM kb_chunk_counts WHERE kb_id IN (SELECT id FROM scope)),
asked AS (SELECT DISTINCT unnest(tsvector_to_array(to_tsvector('english', %(text)s))) AS lexeme)
SELECT a.lexeme, coalesce(sum(k.chunks), 0), (SELECT n FROM total)
FROM asked a LEFT JOIN kb_terms k ON k.lexeme = a.lexeme AND k.kb_id IN (SELECT id FROM scope)
GROUP BY a.lexeme
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


async def term_frequencies(store: PostgresStore, text: str, knowledge_bases: Iterable[str] | None) -> dict[str, float]:
    """The English lexemes of `text` (stop words are gone), each with its share of the chunks of
    `knowledge_bases` (None: every base). A word none of them holds counts as if one did: as rare as
    a word can be there, whatever other bases hold (a base's answers are its own)."""
    kb_ids = None if knowledge_bases is None else list(await store.knowledge_base_ids(sorted(knowledge_bases)))
    rows = await store.fetch_all(TERMS_SQL, {"text": text, "kbs": kb_ids})
    return {r[0]: max(1, int(r[1])) / max(1, int(r[2])) for r in rows}


def unit_rows(vectors: Sequence[Vector]) -> np.ndarray:
    matrix = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms)
