"""The SQL of `candor gaps` (`rag.insights.gaps.find`): the questions Candor could not answer, read from the traces.

A gap is an abstained or low-confidence trace (its question, as rewritten when the pipeline rewrote
a follow-up), or an answered trace with unanswered parts (each part). Only the most recent
`:limit` such traces are read; `COUNT` says how many the window holds.

With a knowledge base (`:kb`), a trace is kept when its stored scope names it, when it cites one of
its documents, or when it has no stored scope or a scope over every knowledge base: a chat question's
scope comes from the access policy and is not stored, and such an asker could have been answered
from this knowledge base. A trace scoped to other knowledge bases only is left out.

Parameters: `since`, `until` (timestamptz, until excluded), `kb` (a name or NULL), `limit`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine

from rag.errors import StoreError

GAPS = """
WITH gaps AS (
    SELECT t.id, t.created_at, t.route, COALESCE(NULLIF(t.rewritten_question, ''), t.question) AS question,
           t.scope,
           CASE WHEN jsonb_typeof(t.answer -> 'unanswered_parts') = 'array'
                THEN t.answer -> 'unanswered_parts' ELSE '[]'::jsonb END AS unanswered
    FROM traces t
    WHERE t.created_at >= :since AND t.created_at < :until
      AND (
        CAST(:kb AS text) IS NULL
        OR t.scope IS NULL
        OR jsonb_typeof(t.scope -> 'knowledge_bases') IS DISTINCT FROM 'array'
        OR t.scope -> 'knowledge_bases' @> jsonb_build_array(CAST(:kb AS text))
        OR EXISTS (
            SELECT 1 FROM trace_sources ts
            JOIN documents d ON d.id = ts.document_id
            JOIN knowledge_bases k ON k.id = d.kb_id
            WHERE ts.trace_id = t.id AND k.name = CAST(:kb AS text)
        )
      )
)
"""

WHERE_GAP = """
WHERE route IN ('abstained', 'low_confidence')
   OR (route = 'answered' AND jsonb_array_length(unanswered) > 0)
"""

ROWS = text(
    GAPS
    + "SELECT id, created_at, route, question, scope, unanswered FROM gaps"
    + WHERE_GAP
    + "ORDER BY created_at DESC, id LIMIT :limit"
)
COUNT = text(GAPS + "SELECT count(*) AS traces FROM gaps" + WHERE_GAP)


@dataclass(frozen=True, slots=True)
class GapRow:
    """One trace with a gap, as stored."""

    trace_id: str
    created_at: datetime
    route: str
    question: str
    scope: Mapping[str, Any] | None
    unanswered_parts: tuple[str, ...]


async def fetch_gap_rows(engine: AsyncEngine, params: Mapping[str, Any]) -> tuple[list[GapRow], int]:
    """The most recent `limit` traces with a gap, newest first, and how many the window holds."""
    try:
        async with engine.connect() as conn:
            await conn.execution_options(isolation_level="REPEATABLE READ")
            async with conn.begin():
                rows = (await conn.execute(ROWS, dict(params))).mappings().all()
                total = (await conn.execute(COUNT, dict(params))).scalar_one()
    except SQLAlchemyError as exc:
        raise StoreError(f"could not read the traces: {exc}") from exc
    return [_row(dict(r)) for r in rows], int(total)


def _row(r: Mapping[str, Any]) -> GapRow:
    parts = r["unanswered"] if isinstance(r["unanswered"], list) else []
    scope = r["scope"] if isinstance(r["scope"], dict) else None
    return GapRow(
        str(r["id"]),
        r["created_at"],
        str(r["route"]),
        str(r["question"]),
        scope,
        tuple(str(p) for p in parts if str(p).strip()),
    )
