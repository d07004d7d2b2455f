"""Hybrid retrieval: pgvector HNSW (cosine) + Postgres full-text, fused, filtered by access scope.

`HybridRetriever.run()` is the stage the answer pipeline calls. Each `Passage` carries the fused
score (for ranking) and the raw dense cosine (for gating: a fused rank score says nothing about
absolute relevance).
"""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from rag.errors import RetrievalError
from rag.model.ports import Embedder
from rag.model.types import AccessScope, Passage, clean_text
from rag.store.postgres import Candidate, Vector

Fusion = Literal["rrf", "weighted"]

MAX_QUERY_CHARS = 4000
PUBLIC = AccessScope()


class CandidateSource(Protocol):
    async def hybrid_candidates(
        self,
        vector: Vector | Awaitable[Vector],
        query: str,
        *,
        knowledge_bases: Sequence[str] | None,
        groups: Sequence[str],
        limit: int,
        max_term_frequency: float = ...,
    ) -> list[Candidate]: ...


@dataclass(frozen=True, slots=True)
class Scored:
    candidate: Candidate
    score: float


def fuse_rrf(candidates: Sequence[Candidate], *, k: int = 60) -> list[Scored]:
    """Reciprocal rank fusion over the dense and full-text ranks."""
    scored = []
    for c in candidates:
        score = 0.0
        if c.dense_rank is not None:
            score += 1.0 / (k + c.dense_rank)
        if c.lexical_rank is not None:
            score += 1.0 / (k + c.lexical_rank)
        scored.append(Scored(c, score))
    return sorted(scored, key=lambda s: (-s.score, s.candidate.chunk_id))


def fuse_weighted(candidates: Sequence[Candidate], *, dense_weight: float = 0.7) -> list[Scored]:
    """A convex mix of the cosine and the full-text rank, each scaled to [0, 1] over the candidates."""
    if not candidates:
        return []
    cosines = [c.cosine for c in candidates]
    low, high = min(cosines), max(cosines)
    top_lexical = max(c.lexical for c in candidates)
    scored = []
    for c in candidates:
        dense = (c.cosine - low) / (high - low) if high > low else 1.0
        lexical = c.lexical / top_lexical if top_lexical > 0 else 0.0
        scored.append(Scored(c, dense_weight * dense + (1.0 - dense_weight) * lexical))
    return sorted(scored, key=lambda s: (-s.score, s.candidate.chunk_id))


class HybridRetriever:
    """Embed the query, gather dense and full-text candidates in one query, fuse, keep k."""

    def __init__(
        self,
        store: CandidateSource,
        embedder: Embedder,
        *,
        k: int = 5,
        candidates: int = 40,
        fusion: Fusion = "weighted",
        dense_weight: float = 0.7,
        rrf_k: int = 60,
        max_term_frequency: float = 0.05,
    ) -> None:
        if k < 1 or candidates < 1:
            raise RetrievalError("k and candidates must be at least 1")
        if fusion not in ("rrf", "weighted"):
            raise RetrievalError(f"unknown fusion {fusion!r}")
        if not 0.0 <= dense_weight <= 1.0:
            raise RetrievalError("dense_weight must lie in [0, 1]")
        self.store = store
        self.embedder = embedder
        self.k = k
        self.candidates = candidates
        self.fusion = fusion
        self.dense_weight = dense_weight
        self.rrf_k = rrf_k
        self.max_term_frequency = max_term_frequency

    async def _embed_query(self, query: str) -> Vector:
        row: Vector = (await self.embedder.embed([query]))[0]
        return row

    async def run(
        self,
        query: str,
        scope: AccessScope = PUBLIC,
        *,
        k: int | None = None,
        fusion: Fusion | None = None,
        dense_weight: float | None = None,
        vector: Vector | None = None,
    ) -> list[Passage]:
        """The k best passages for `query` in `scope`; `vector` skips embedding the query again."""
        query = " ".join(clean_text(query).split())
        if not query:
            raise RetrievalError("the query is empty")
        if len(query) > MAX_QUERY_CHARS:
            raise RetrievalError(f"the query is too long ({len(query)} characters, at most {MAX_QUERY_CHARS})")
        k = self.k if k is None else k
        if k < 1:
            raise RetrievalError("k must be at least 1")
        found = await self.store.hybrid_candidates(
            self._embed_query(query) if vector is None else vector,
            query,
            knowledge_bases=None if scope.knowledge_bases is None else sorted(scope.knowledge_bases),
            groups=sorted(scope.groups),
            limit=max(self.candidates, k),
            max_term_frequency=self.max_term_frequency,
        )
        if (fusion or self.fusion) == "rrf":
            ranked = fuse_rrf(found, k=self.rrf_k)
        else:
            ranked = fuse_weighted(found, dense_weight=self.dense_weight if dense_weight is None else dense_weight)
        return [_passage(s) for s in ranked[:k]]


def _passage(scored: Scored) -> Passage:
    c = scored.candidate
    return Passage(
        chunk_id=c.chunk_id,
        document_id=c.document_id,
        document=c.source,
        title=c.title,
        heading=c.heading,
        text=c.text,
        score=scored.score,
        dense_score=c.cosine,
        lexical_score=c.lexical,
        url=c.url,
        effective_date=c.effective_date,
        authority=c.authority,
        knowledge_base=c.knowledge_base,
        access_groups=c.access_groups,
        answered_by=c.answered_by,
        dated_by=c.date_source,
    )
