"""What was done about a gap: the hand-offs of its questions and the curated answers that now cover it.

A cluster of `candor gaps` links:
- every hand-off made from one of its traces ("Ask a person"), with its state and who replied;
- every curated answer saved from one of those hand-offs, or whose question is a paraphrase of the
  cluster's (its embedding within the clustering cut of the cluster's representative): one added
  with `candor answers add` for a gap is found so too.

For each linked curated answer the cluster shows whether it worked: the questions (traces) of the
window that cited it (answered with it) since it was saved, beside the cluster's questions (traces:
a question with two unanswered parts counts once; a low-confidence answer counts as not answered)
left unanswered before and after that moment. Repeated questions that stop abstaining once a curated answer exists
show up as "unanswered after: 0, answered with it: N".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine

from rag.errors import StoreError
from rag.model.ports import Embedder

HANDOFFS = text(
    "SELECT h.id::text AS id, h.trace_id::text AS trace_id, h.status, h.reason, h.replied_by_name, h.replied_at, "
    "h.curated_id, h.created_at FROM handoffs h WHERE h.trace_id = ANY(CAST(:ids AS uuid[])) ORDER BY h.created_at"
)
CURATED = text(
    "SELECT c.id, c.question, c.author_name, c.created_at, c.expires_at, c.document_id FROM curated_answers c "
    "WHERE c.created_at < :until ORDER BY c.id"
)
CITED = text(
    "SELECT DISTINCT ts.document AS source, t.id::text AS trace_id, t.created_at "
    "FROM trace_sources ts JOIN traces t ON t.id = ts.trace_id "
    "WHERE ts.document = ANY(CAST(:sources AS text[])) AND t.created_at >= :since AND t.created_at < :until"
)


async def fetch_follow_up(
    engine: AsyncEngine, trace_ids: Sequence[str], since: datetime, until: datetime
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """Hand-offs of `trace_ids`, curated answers made before `until`, and the window's citations of them."""
    try:
        async with engine.connect() as conn:
            handoffs = (await conn.execute(HANDOFFS, {"ids": list(trace_ids)})).mappings().all()
            curated = (await conn.execute(CURATED, {"until": until})).mappings().all()
            sources = [f"curated:{c['id']}" for c in curated]
            cited = (
                (await conn.execute(CITED, {"sources": sources, "since": since, "until": until})).mappings().all()
                if sources
                else []
            )
    except SQLAlchemyError as exc:
        raise StoreError(f"could not read hand-offs and curated answers: {exc}") from exc
    return [dict(h) for h in handoffs], [dict(c) for c in curated], [dict(c) for c in cited]


async def embed_questions(embedder: Embedder, curated: Sequence[Mapping[str, Any]]) -> np.ndarray:
    if not curated:
        return np.zeros((0, embedder.dimension), dtype=np.float32)
    vectors = np.asarray(await embedder.embed([str(c["question"]) for c in curated]), dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)


def follow_up(
    members: Sequence[tuple[str, datetime]],
    representative: np.ndarray,
    handoffs: Sequence[Mapping[str, Any]],
    curated: Sequence[Mapping[str, Any]],
    curated_vectors: np.ndarray,
    cited: Sequence[Mapping[str, Any]],
    *,
    cut: float,
) -> dict[str, Any]:
    """One cluster's follow-up as JSON; `members` are its (trace id, asked at), `representative` its
    medoid's unit vector, `cut` the clustering's cosine distance."""
    traces = {trace_id for trace_id, _ in members}
    own = [h for h in handoffs if h["trace_id"] in traces]
    from_handoffs = {int(h["curated_id"]) for h in own if h["curated_id"] is not None}
    near = (
        {int(c["id"]) for c, v in zip(curated, curated_vectors, strict=True) if 1 - float(v @ representative) <= cut}
        if len(curated)
        else set()
    )
    linked = [c for c in curated if int(c["id"]) in from_handoffs | near]
    return {
        "handoffs": [
            {
                "id": h["id"],
                "trace_id": h["trace_id"],
                "reason": h["reason"],
                "status": h["status"],
                "replied_by": h["replied_by_name"],
                "curated_id": h["curated_id"],
                "created_at": h["created_at"].isoformat(),
            }
            for h in own
        ],
        "curated_answers": [_effect(c, members, cited) for c in linked],
    }


def _effect(
    curated: Mapping[str, Any], members: Sequence[tuple[str, datetime]], cited: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    saved: datetime = curated["created_at"]
    source = f"curated:{curated['id']}"
    before = {trace for trace, asked in members if asked < saved}
    after = {trace for trace, asked in members if asked >= saved}
    answered = {c["trace_id"] for c in cited if c["source"] == source and c["created_at"] >= saved}
    return {
        "id": int(curated["id"]),
        "question": curated["question"],
        "author": curated["author_name"],
        "created_at": saved.isoformat(),
        "live": curated["document_id"] is not None,
        "unanswered_before": len(before),
        "unanswered_after": len(after),
        "answered_with_it": len(answered),
    }
